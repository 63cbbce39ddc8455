"""Staging and mart assets, with their checks beside them.

Daily assets rebuild their UTC days (one day, or a range in a single run) with one
server-side transaction each; the insight assets recompute from bounded recent windows.
"""

import json
import uuid
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from functools import partial
from typing import Any

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    BackfillPolicy,
    BetaWarning,
    MaterializeResult,
    asset,
)

from domain.analytics import best_times as wording
from domain.analytics import rates
from domain.analytics.schemas import BestTimeRecommendation
from pipelines.analytics import breakouts, insights
from pipelines.ingest.assets import INGEST_ASSETS
from pipelines.partitions import DAILY, HOURS_OF_DAY, NEWEST_HOUR, tagged_later, tagged_ranges
from pipelines.resources import StoreResource
from warehouse import best_times as best_time_reads
from warehouse import breakouts as breakout_reads
from warehouse.marts import checks, scripts
from warehouse.marts.definitions import METRICS, NewRows
from warehouse.marts.insights import (
    AccountWindows,
    Window,
    account_days,
    capture_cadence_hours,
    mart_rows,
    platform_data_ends,
    post_cadences,
    post_rates,
    ranked_accounts,
    trend_windows,
    workspace_data_ends,
    workspace_handles,
)
from warehouse.rows import Cursor
from warehouse.store import Lakehouse

FRESHNESS_HOURS = 26  # newest raw capture older than this: the freshness check warns

Result = MaterializeResult[Any] | AssetCheckResult
ScriptFn = Callable[..., str]


def _now(context: AssetExecutionContext) -> datetime:
    """The run's clock: the ``murmur/now`` tag when run_all sets one, else now (naive UTC)."""
    tag = context.run.tags.get("murmur/now")
    moment = datetime.fromisoformat(tag) if tag else datetime.now(UTC)
    return moment.astimezone(UTC).replace(tzinfo=None)


def _ranges(context: AssetExecutionContext) -> list[tuple[date, date]]:
    """The half-open day ranges the run rebuilds: its partition window, or the ranges tagged."""
    window = context.partition_time_window
    return tagged_ranges(context.run.tags, window.start.date(), window.end.date())


def _later(context: AssetExecutionContext) -> tuple[list[tuple[date, date]], NewRows | None]:
    """The half-open later ranges the run rebuilds for new rows' posts alone, and those rows."""
    window = context.partition_time_window
    return tagged_later(context.run.tags, window.start.date(), window.end.date())


def _segments(
    context: AssetExecutionContext,
) -> tuple[list[tuple[date, date]], list[tuple[date, date, NewRows | None]]]:
    """The days checked (whole ranges, else later ones) and every range to rebuild, in order."""
    # each range with the new rows whose posts alone it is rebuilt for (None: every post)
    whole = _ranges(context)
    later, new = _later(context)
    # in day order: a day's deltas start from the peaks staged on the days before it
    ordered = [(a, b, None) for a, b in whole] + [(a, b, new) for a, b in later]
    return (whole or later), sorted(ordered, key=lambda r: r[0])


def _key(*names: str) -> AssetKey:
    return AssetKey(["analytics", *names])


def _check(name: str, table_key: AssetKey, description: str) -> AssetCheckSpec:
    return AssetCheckSpec(name=name, asset=table_key, description=description)


def _unique(
    s: Lakehouse, name: str, table: str, keys: tuple[str, ...], span: checks.Spans | None
) -> AssetCheckResult:
    dupes = s.run(lambda cur: checks.count_duplicate_keys(cur, table, keys, span))
    return AssetCheckResult(
        check_name=name, passed=dupes == 0, metadata={"duplicate_keys": dupes, "key": str(keys)}
    )


def _non_negative(
    s: Lakehouse, name: str, table: str, cols: tuple[str, ...], span: checks.Spans | None
) -> AssetCheckResult:
    bad = s.run(lambda cur: checks.count_negative(cur, table, cols, span))
    return AssetCheckResult(check_name=name, passed=bad == 0, metadata={"negative_rows": bad})


def _daily_asset(**kwargs: Any) -> Callable[..., AssetsDefinition]:
    """``@asset`` for a daily asset: partitioned by UTC day, a backfill in one run."""
    with warnings.catch_warnings():
        # backfill_policy is marked beta; a single-run backfill is what the ranges need
        warnings.simplefilter("ignore", BetaWarning)
        decorator: Callable[..., AssetsDefinition] = asset(
            partitions_def=DAILY, backfill_policy=BackfillPolicy.single_run(), **kwargs
        )
    return decorator


# -- staging ------------------------------------------------------------------------------------

STG = _key("stg_engagement_deltas")


@_daily_asset(
    key=STG,
    group_name="staging",
    deps=[AssetDep(a.key, partition_mapping=HOURS_OF_DAY) for a in INGEST_ASSETS],
    description="Per post and snapshot, the counters' increase since the previous snapshot.",
    kinds={"duckdb"},
    check_specs=[
        _check(
            "raw_snapshot_keys_unique",
            STG,
            "One raw_engagement_snapshots row per (workspace, platform, post, captured_at)"
            " in each batch.",
        ),
        _check("raw_counters_non_negative", STG, "No raw counter below zero."),
        _check(
            "raw_account_keys_unique",
            STG,
            "One raw_account_snapshots row per (workspace, platform, account, captured_at)"
            " in each batch.",
        ),
        _check(
            "counter_drops_reported",
            STG,
            "Cumulative counters that went down (clamped to 0); warns with the count.",
        ),
        _check("raw_fresh", STG, f"The newest raw capture is under {FRESHNESS_HOURS} h old."),
        _check("stg_keys_unique", STG, "One delta per (workspace, platform, post, captured_at)."),
    ],
)
def stg_engagement_deltas(context: AssetExecutionContext, store: StoreResource) -> Iterator[Result]:
    """Rebuild the days' engagement deltas (and upsert the post and account dimensions)."""
    days, segments = _segments(context)
    later, new = _later(context)
    now = _now(context)
    span = ("captured_at", [(_midnight(a), _midnight(b)) for a, b in days])
    with store.open() as s:
        for start, end, only in segments:
            s.execute_script(
                scripts.staging_script(
                    start, end, run_id=context.run.run_id, computed_at=now, later=only
                ),
                upserts_dimensions=only is None,
            )
        rewritten = (
            s.run(lambda cur: checks.later_rows(cur, later, new)) if new is not None else (0, 0)
        )
        meta = s.run(lambda cur: checks.partition_meta(cur, "stg_engagement_deltas", days))
        snaps, drops = s.run(lambda cur: checks.counter_drops(cur, days))
        snap_key = ("workspace_id", "platform", "external_id", "captured_at")
        stg_unique = _unique(s, "stg_keys_unique", "stg_engagement_deltas", snap_key, span)
        # Staging holds one row per distinct raw key of the days: with staging unique, as
        # many raw rows as staged rows proves every reading held once, by one batch, without
        # grouping the raw rows (the usual case, and a scheduled run's).
        raw = s.run(lambda cur: checks.count_rows(cur, "raw_engagement_snapshots", span))
        staged = s.run(lambda cur: checks.count_rows(cur, "stg_engagement_deltas", span))
        held_once = stg_unique.passed and raw == staged
        overlaps = (
            0 if held_once else s.run(lambda cur: checks.readings_in_several_batches(cur, days))
        )
        yield MaterializeResult(
            metadata={
                **meta,
                "counter_drops": drops,
                "snapshots_with_drops": snaps,
                # two batches (an export imported twice, or two overlapping exports) holding
                # the same reading: staging counts it once, with the latest ingest's values
                "readings_in_several_batches": overlaps,
                # days after an older import's, rebuilt for its posts alone: what they cost
                "later_days": sum((b - a).days for a, b in later),
                "later_rows": rewritten[0],
                "later_posts": rewritten[1],
            }
        )
        batch_key = (*snap_key, "ingest_batch")
        if held_once:
            yield AssetCheckResult(
                check_name="raw_snapshot_keys_unique",
                passed=True,
                metadata={"duplicate_keys": 0, "key": str(batch_key)},
            )
        else:
            # A reading in two batches is reconciled (the latest ingest's counts); one batch
            # holding a reading twice is a loader's bug.
            yield _unique(
                s, "raw_snapshot_keys_unique", "raw_engagement_snapshots", batch_key, span
            )
        yield _non_negative(
            s, "raw_counters_non_negative", "raw_engagement_snapshots", METRICS, span
        )
        yield _unique(
            s,
            "raw_account_keys_unique",
            "raw_account_snapshots",
            ("workspace_id", "platform", "external_id", "captured_at", "ingest_batch"),
            span,
        )
        yield AssetCheckResult(
            check_name="counter_drops_reported",
            passed=drops == 0,
            severity=AssetCheckSeverity.WARN,
            metadata={"counter_drops": drops, "snapshots_with_drops": snaps},
            description=f"{drops} counters went down in {snaps} snapshots (clamped to 0).",
        )
        if days[-1][1] <= now.date():
            # Past days (an export's, or a rebuild): how old their captures are says nothing
            # about whether ingest keeps up, so freshness is not evaluated for them.
            yield AssetCheckResult(
                check_name="raw_fresh",
                passed=True,
                severity=AssetCheckSeverity.WARN,
                metadata={"evaluated": False},
                description="Not evaluated: the days are past.",
            )
        else:
            raw_table = "raw_engagement_snapshots"
            # The hours freshness is judged on, not the history (zone maps skip the rest: a
            # scheduled run costs what its new data costs); all of it only when they hold
            # nothing, to say how stale it is.
            recent = now - timedelta(hours=FRESHNESS_HOURS)
            newest = s.run(lambda cur: checks.newest_capture(cur, raw_table, recent)) or s.run(
                lambda cur: checks.newest_capture(cur, raw_table)
            )
            age_h = (now - newest).total_seconds() / 3600 if newest else None
            yield AssetCheckResult(
                check_name="raw_fresh",
                passed=age_h is not None and age_h <= FRESHNESS_HOURS,
                severity=AssetCheckSeverity.WARN,
                metadata={"newest_capture": str(newest), "age_hours": age_h if age_h else -1.0},
            )
        yield stg_unique


def _midnight(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time())


# -- unified marts ------------------------------------------------------------------------------


def _daily_mart(
    name: str,
    script: ScriptFn,
    upstream: AssetKey,
    description: str,
    keys: tuple[str, ...],
    counters: tuple[str, ...],
) -> AssetsDefinition:
    key = _key(name)

    @_daily_asset(
        key=key,
        group_name="marts",
        deps=[upstream],
        description=description,
        kinds={"duckdb"},
        check_specs=[
            _check(f"{name}_keys_unique", key, f"One row per {', '.join(keys)}."),
            _check(f"{name}_non_negative", key, "Counters are never negative."),
            _check(
                f"{name}_totals_match",
                key,
                "Engagements equal the staged deltas' sum over the same days.",
            ),
        ],
    )
    def _mart(context: AssetExecutionContext, store: StoreResource) -> Iterator[Result]:
        days, segments = _segments(context)
        now = _now(context)
        with store.open() as s:
            for start, end, only in segments:
                s.execute_script(
                    script(start, end, run_id=context.run.run_id, computed_at=now, later=only)
                )
            meta = s.run(lambda cur: checks.partition_meta(cur, name, days))
            yield MaterializeResult(metadata=meta)
            span = ("day", days)
            yield _unique(s, f"{name}_keys_unique", name, keys, span)
            yield _non_negative(s, f"{name}_non_negative", name, counters, span)
            totals = s.run(lambda cur: checks.totals_match(cur, days))
            own = totals["daily"] if name != "mart_post_hourly" else totals["hourly"]
            if name == "mart_account_daily":
                own = s.run(lambda cur: checks.account_engagements(cur, days))
            yield AssetCheckResult(
                check_name=f"{name}_totals_match",
                passed=own == totals["staging"],
                metadata={"mart": own, "staging": totals["staging"]},
            )

    return _mart


mart_post_hourly = _daily_mart(
    "mart_post_hourly",
    scripts.post_hourly_script,
    STG,
    "Unified analytics per post and UTC hour: the counters' increase in that hour.",
    ("workspace_id", "platform", "external_id", "hour"),
    (*METRICS, "engagements"),
)
mart_post_daily = _daily_mart(
    "mart_post_daily",
    scripts.post_daily_script,
    mart_post_hourly.key,
    "Unified analytics per post and UTC day, with engagement rate (engagements / impressions,"
    " else / views).",
    ("workspace_id", "platform", "external_id", "day"),
    (*METRICS, "engagements"),
)
mart_account_daily = _daily_mart(
    "mart_account_daily",
    scripts.account_daily_script,
    mart_post_daily.key,
    "Per account and UTC day: followers (last snapshot), growth, engagement.",
    ("workspace_id", "platform", "account_external_id", "day"),
    ("impressions", "engagements"),
)


# -- insights (non-partitioned, bounded windows) --------------------------------------------------

_SCHEMAS: dict[str, dict[str, Any]] = {
    "mart_best_times": {
        "workspace_id": pl.String,
        "platform": pl.String,
        "account_external_id": pl.String,
        "kind": pl.String,
        "external_id": pl.String,
        "published_at": pl.Datetime("us"),
        "engagement_rate": pl.Float64,
        "rate_index": pl.Float64,
        "dates_only": pl.Boolean,
        "computed_at": pl.Datetime("us"),
    },
    "mart_anomalies": {
        "workspace_id": pl.String,
        "day": pl.Date,
        "platform": pl.String,
        "account_external_id": pl.String,
        "metric": pl.String,
        "value": pl.Float64,
        "baseline_median": pl.Float64,
        "baseline_mad": pl.Float64,
        "robust_z": pl.Float64,
        "direction": pl.String,
        "computed_at": pl.Datetime("us"),
    },
    "mart_insights": {
        "workspace_id": pl.String,
        "kind": pl.String,
        "platform": pl.String,
        "account_external_id": pl.String,
        "title": pl.String,
        "body": pl.String,
        "score": pl.Float64,
        "evidence": pl.String,
        "computed_at": pl.Datetime("us"),
    },
    "mart_viral_trends": {
        "workspace_id": pl.String,
        "entity_type": pl.String,
        "entity": pl.String,
        "platform": pl.String,
        "score": pl.Float64,
        "status": pl.String,
        "velocity": pl.Float64,
        "baseline": pl.Float64,
        "evidence": pl.String,
        "window_end": pl.Datetime("us"),
        "computed_at": pl.Datetime("us"),
    },
    "mart_breakouts": {
        "id": pl.String,
        "workspace_id": pl.String,
        "platform": pl.String,
        "account_external_id": pl.String,
        "external_id": pl.String,
        "post_id": pl.String,
        "published_at": pl.Datetime("us"),
        "started_at": pl.Datetime("us"),
        "last_breakout_at": pl.Datetime("us"),
        "ongoing": pl.Boolean,
        "window_start": pl.Datetime("us"),
        "observed": pl.Float64,
        "expected": pl.Float64,
        "band_low": pl.Float64,
        "band_high": pl.Float64,
        "peak_observed": pl.Float64,
        "peak_expected": pl.Float64,
        "evidence": pl.String,
        "computed_at": pl.Datetime("us"),
    },
    "mart_creator_rankings": {
        "workspace_id": pl.String,
        "kind": pl.String,
        "platform": pl.String,
        "account_external_id": pl.String,
        "handle": pl.String,
        "category": pl.String,
        "followers": pl.Int64,
        "posts": pl.Int64,
        "engagement_rate": pl.Float64,
        "engagement_rate_shrunk": pl.Float64,
        "growth_rate": pl.Float64,
        "avg_reach": pl.Float64,
        "score": pl.Float64,
        "rank": pl.Int32,
        "parts": pl.String,
        "computed_at": pl.Datetime("us"),
    },
}


def write_mart(
    store: StoreResource,
    s: Lakehouse,
    table: str,
    rows: list[dict[str, Any]],
    *,
    run_id: str,
    computed_at: datetime,
    workspace_ids: list[str],
    data_through: datetime | None = None,
) -> int:
    """Swap a non-partitioned mart's rows for these workspaces in one server-side transaction."""
    frame = (
        pl.DataFrame(rows, schema=_SCHEMAS[table], orient="row")
        if rows
        else pl.DataFrame(schema=_SCHEMAS[table])
    )
    path = store.landing_dir / f"{table}-{uuid.uuid4().hex}.parquet"
    frame.write_parquet(path)
    try:
        s.execute_script(
            scripts.replace_from_parquet_script(
                table,
                path.resolve(),
                run_id=run_id,
                computed_at=computed_at,
                workspace_ids=workspace_ids,
                data_through=data_through,
            )
        )
    finally:
        path.unlink(missing_ok=True)
    return frame.height


def _windows(s: Lakehouse, now: datetime, days: int) -> list[Window]:
    ends = s.run(workspace_data_ends)
    return [
        Window(ws, min(end, now) - timedelta(days=days), min(end, now))
        for ws, end in sorted(ends.items())
    ]


def _insight_asset(
    name: str,
    description: str,
    deps: list[AssetKey],
    specs: list[AssetCheckSpec],
    compute: Callable[
        [Lakehouse, datetime], tuple[list[dict[str, Any]], list[str], dict[str, Any]]
    ],
    check_fn: Callable[[Lakehouse], Iterator[AssetCheckResult]],
) -> AssetsDefinition:
    key = _key(name)

    @asset(
        key=key,
        group_name="insights",
        deps=deps,
        description=description,
        kinds={"python", "duckdb"},
        check_specs=specs,
    )
    def _insight(context: AssetExecutionContext, store: StoreResource) -> Iterator[Result]:
        now = _now(context)
        with store.open() as s:
            rows, workspaces, extra = compute(s, now)
            n = write_mart(
                store,
                s,
                name,
                rows,
                run_id=context.run.run_id,
                computed_at=now,
                workspace_ids=workspaces,
            )
            yield MaterializeResult(metadata={"rows": n, "workspaces": len(workspaces), **extra})
            yield from check_fn(s)

    return _insight


def _platform_windows(s: Lakehouse, now: datetime, days: int) -> dict[str, list[Window]]:
    """Per workspace, a window per platform: each source ends at its own newest data (a
    2017 export beside this week's captures is read over its own last days)."""
    by_workspace: dict[str, list[Window]] = {}
    for (ws, platform), end in sorted(s.run(platform_data_ends).items()):
        last = min(end, now)
        by_workspace.setdefault(ws, []).append(
            Window(ws, last - timedelta(days=days), last, platform)
        )
    return by_workspace


def _best_times(
    s: Lakehouse, now: datetime
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    by_workspace = _platform_windows(s, now, insights.BEST_TIMES_DAYS)
    for ws, windows in by_workspace.items():
        # every kind's posts: the competitors' and creators' are the platform's pattern
        kinds = ["own", "competitor", "creator"]
        rows += insights.best_times(ws, post_rates(s, windows, kinds), now)
    return rows, sorted(by_workspace), {"window_days": insights.BEST_TIMES_DAYS}


def _best_times_checks(s: Lakehouse) -> Iterator[AssetCheckResult]:
    yield _unique(
        s,
        "mart_best_times_keys_unique",
        "mart_best_times",
        ("workspace_id", "platform", "external_id"),
        None,
    )
    bad = s.run(partial(checks.count_bad_rows, mart="mart_best_times"))
    yield AssetCheckResult(
        check_name="mart_best_times_well_formed", passed=bad == 0, metadata={"bad_rows": bad}
    )


def _anomalies(
    s: Lakehouse, now: datetime
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    # every judged day and the 28 before the first of them
    wins = _windows(s, now, insights.ANOMALY_DAYS + insights.ANOMALY_BASELINE_DAYS)
    for w in wins:
        days = s.run(partial(account_days, w=w, kinds=insights.ANOMALY_KINDS))
        last_day = (w.end - timedelta(microseconds=1)).date()
        rows += insights.anomalies(w.workspace_id, days, last_day, now)
    extra = {"baseline_days": insights.ANOMALY_BASELINE_DAYS, "days": insights.ANOMALY_DAYS}
    return rows, [w.workspace_id for w in wins], extra


def _anomaly_checks(s: Lakehouse) -> Iterator[AssetCheckResult]:
    bad = s.run(partial(checks.count_bad_rows, mart="mart_anomalies"))
    yield AssetCheckResult(
        check_name="mart_anomalies_flagged_consistently",
        passed=bad == 0,
        metadata={"bad_rows": bad},
    )


def _trends(s: Lakehouse, now: datetime) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    wins = _windows(s, now, insights.TREND_LOOKBACK_DAYS)
    for w in wins:
        # Windows as long as each post's own reading interval (6 h for hourly captures, a
        # day for daily exports), over as many days as the windows need; a post read once
        # in the window takes the workspace's interval.
        usual = capture_cadence_hours(s, w)
        cadences = post_cadences(s, w)

        width_of = insights.post_widths(cadences, usual)
        found: list[dict[str, Any]] = []
        for width in sorted({insights.trend_width(h) for h in (usual, *cadences.values())}):
            # every post read in the windows of the judged ends: the peers of those judged
            posts = trend_windows(s, w, width, insights.trend_reach(width))
            mine = {(p["platform"], p["external_id"]) for p in posts if width_of(p) == width}
            found += insights.viral_trends(w.workspace_id, posts, w.end, now, width, mine)
        rows += insights.strongest(found)
    return rows, [w.workspace_id for w in wins], {"window_hours": insights.TREND_WINDOW_HOURS}


def _trend_checks(s: Lakehouse) -> Iterator[AssetCheckResult]:
    yield _unique(
        s,
        "mart_viral_trends_keys_unique",
        "mart_viral_trends",
        ("workspace_id", "entity_type", "entity", "platform", "window_end"),
        None,
    )


def _rankings(
    s: Lakehouse, now: datetime
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    # every workspace with data, each account over the source that read it last
    workspaces = sorted({ws for ws, _ in s.run(platform_data_ends)})
    for ws in workspaces:
        windows = AccountWindows(ws, insights.RANKING_DAYS, now)
        accounts = ranked_accounts(s, windows)
        posts = post_rates(s, windows, ["creator", "competitor"], published_in_window=False)
        rows += insights.creator_rankings(ws, accounts, posts, now)
    return rows, workspaces, {"window_days": insights.RANKING_DAYS}


def _ranking_checks(s: Lakehouse) -> Iterator[AssetCheckResult]:
    yield _unique(
        s,
        "mart_creator_rankings_keys_unique",
        "mart_creator_rankings",
        ("workspace_id", "kind", "platform", "account_external_id"),
        None,
    )


def _insights(
    s: Lakehouse, now: datetime
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    handles = s.run(workspace_handles)
    wins = _windows(s, now, insights.TOP_CONTENT_DAYS)
    for w in wins:
        ws = w.workspace_id
        own = post_rates(s, [w], ["own"])
        saved = {
            t: s.run(partial(mart_rows, table=t, workspace_id=ws))
            for t in ("mart_anomalies", "mart_creator_rankings")
        }
        rows += insights.best_time_insights(ws, s.run(partial(_recommended, ws=ws)), handles, now)
        rows += insights.top_content(ws, own, now)
        rows += insights.anomaly_insights(ws, saved["mart_anomalies"], handles, now)
        # our rate as the unified answer gives it (the one function /competitors reads too)
        ours = s.run(partial(rates.own_rates, workspace_id=ws))
        rows += insights.benchmarks(ws, saved["mart_creator_rankings"], ours, now)
    return rows, [w.workspace_id for w in wins], {"window_days": insights.TOP_CONTENT_DAYS}


def _recommended(cur: Cursor, ws: str) -> list[tuple[str, str, BestTimeRecommendation]]:
    """Each own account's best-times recommendation in UTC, as /insights/best-times reads it."""
    return [
        (platform, account, wording.recommendation(found.recommendation, "UTC"))
        for (platform, account), found in best_time_reads.own_best_times(cur, ws, "UTC").items()
        if found.recommendation is not None
    ]


def _insight_checks(s: Lakehouse) -> Iterator[AssetCheckResult]:
    bad = s.run(partial(checks.count_bad_rows, mart="mart_insights"))
    yield AssetCheckResult(
        check_name="mart_insights_well_formed", passed=bad == 0, metadata={"bad_rows": bad}
    )


def _spec(name: str, check: str, description: str) -> AssetCheckSpec:
    return _check(check, _key(name), description)


mart_best_times = _insight_asset(
    "mart_best_times",
    "Best times to post: each post's publication and rate over its account's mean (the cells,"
    " blocks and recommendation are read per time zone).",
    [mart_post_daily.key],
    [
        _spec("mart_best_times", "mart_best_times_keys_unique", "One row per post."),
        _spec(
            "mart_best_times",
            "mart_best_times_well_formed",
            "Each post has its publication, a rate and an index of 0 or more.",
        ),
    ],
    _best_times,
    _best_times_checks,
)
mart_anomalies = _insight_asset(
    "mart_anomalies",
    "Own and competitor accounts' every day of the last 28 vs the median and MAD of the 28"
    " days before it (|robust z| ≥ 3.5).",
    [mart_account_daily.key],
    [
        _spec(
            "mart_anomalies",
            "mart_anomalies_flagged_consistently",
            "Only |z| ≥ 3.5, with the direction matching the sign.",
        )
    ],
    _anomalies,
    _anomaly_checks,
)
mart_viral_trends = _insight_asset(
    "mart_viral_trends",
    "Posts, hashtags and topics whose engagement velocity is abnormal for their baseline, one"
    " judged window a day.",
    [mart_post_hourly.key],
    [
        _spec(
            "mart_viral_trends",
            "mart_viral_trends_keys_unique",
            "One row per entity and judged window.",
        )
    ],
    _trends,
    _trend_checks,
)
mart_creator_rankings = _insight_asset(
    "mart_creator_rankings",
    "Creators and competitors ranked by shrunk engagement rate, growth and reach (28 days).",
    [mart_post_daily.key, mart_account_daily.key],
    [
        _spec(
            "mart_creator_rankings",
            "mart_creator_rankings_keys_unique",
            "One row per ranked account.",
        )
    ],
    _rankings,
    _ranking_checks,
)
mart_insights = _insight_asset(
    "mart_insights",
    "Plain-words insights: best times, top content, anomalies, benchmarks, recommendations.",
    [mart_best_times.key, mart_anomalies.key, mart_creator_rankings.key, mart_post_daily.key],
    [_spec("mart_insights", "mart_insights_well_formed", "Known kinds, non-empty text.")],
    _insights,
    _insight_checks,
)


def _fresh(rows: list[dict[str, Any]], ends: dict[str, datetime]) -> list[dict[str, Any]]:
    """The breakouts to push: those started within ``ALERT_HOURS`` of their data's end (a new
    store's history, or an export of last month, is listed, not pushed)."""
    window = timedelta(hours=breakouts.ALERT_HOURS)
    return [r for r in rows if ends[r["workspace_id"]] - r["started_at"] <= window]


@asset(
    key=_key("mart_breakouts"),
    # its own group: the hourly capture's job runs it too (pipelines/ingest/schedules.py)
    group_name="breakouts",
    deps=[
        AssetDep(spec.key, partition_mapping=NEWEST_HOUR) for a in INGEST_ASSETS for spec in a.specs
    ],
    description="Own posts growing above the band their own history predicts, judged after"
    " every capture and import; one analytics.breakout webhook event per breakout.",
    kinds={"python", "duckdb"},
    check_specs=[_spec("mart_breakouts", "mart_breakouts_keys_unique", "One row per breakout.")],
)
def mart_breakouts(context: AssetExecutionContext, store: StoreResource) -> Iterator[Result]:
    """Judge every own post of the look-back; write the mart, then push the new breakouts."""
    from domain.analytics.breakouts import send_breakouts

    now = _now(context)
    with store.open() as s:
        since = now - timedelta(days=breakouts.LOOKBACK_DAYS)
        readings = s.run(lambda cur: breakout_reads.own_post_readings(cur, since, now))
        posts = breakouts.posts_of(readings)
        ends: dict[str, datetime] = {}
        for r in readings:
            ends[r["workspace_id"]] = max(
                ends.get(r["workspace_id"], r["captured_at"]), r["captured_at"]
            )
        rows = [{**r, "computed_at": now} for r in breakouts.breakouts(posts, ends)]
        # a workspace whose posts left the look-back loses its breakouts too: none stays
        # "ongoing" because nothing was read since
        workspaces = sorted(set(ends) | set(s.run(breakout_reads.judged_workspaces)))
        for r in rows:
            r["evidence"] = json.dumps(r["evidence"])
        n = write_mart(
            store,
            s,
            "mart_breakouts",
            rows,
            run_id=context.run.run_id,
            computed_at=now,
            workspace_ids=workspaces,
            data_through=max(ends.values(), default=None),
        )
        # After the lake's commit: a run killed between the two sends on the next run (the
        # mart holds the breakout, no event is recorded yet), never twice (the record is the
        # event's, in one publishing transaction).
        fresh = _fresh(rows, ends)
        sent = s.publishing.run(lambda cur: send_breakouts(cur, fresh, now)) if fresh else 0
        yield MaterializeResult(
            metadata={"rows": n, "workspaces": len(workspaces), "posts": len(posts), "events": sent}
        )
        yield _unique(
            s, "mart_breakouts_keys_unique", "mart_breakouts", ("workspace_id", "id"), None
        )


DAILY_ASSETS = [stg_engagement_deltas, mart_post_hourly, mart_post_daily, mart_account_daily]
INSIGHT_ASSETS = [
    mart_best_times,
    mart_anomalies,
    mart_viral_trends,
    mart_creator_rankings,
    mart_insights,
    mart_breakouts,
]
