"""Analytics reads: validate ranges, aggregate the marts in SQL, recompute rates from sums."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from api.analytics.schemas import (
    Benchmark,
    BestTimeCell,
    BestTimes,
    Competitor,
    CompetitorCreate,
    Competitors,
    Creators,
    DayPoint,
    DestinationAnalytics,
    FirstSeen,
    Granularity,
    Insight,
    Insights,
    Metrics,
    PlatformMetrics,
    PostAnalytics,
    PostTotals,
    Range,
    Ranking,
    SeriesPoint,
    Snapshot,
    UnifiedAnalytics,
    ViralTrend,
    ViralTrends,
)
from api.errors import InvalidState, NotFound, ValidationFailed, found
from api.pagination import PageRequest
from api.schemas import Deleted, iso_z
from warehouse import analytics as repo
from warehouse import posts as posts_repo
from warehouse import workspaces as ws_repo
from warehouse.analytics import COUNTERS
from warehouse.ids import from_db, to_db, utcnow
from warehouse.rows import Cursor, Row
from warehouse.store import Transaction

DEFAULT_RANGE = timedelta(days=28)
MAX_RANGE = timedelta(days=400)
MAX_HOURLY_RANGE = timedelta(days=14)
BENCHMARK_WINDOW = timedelta(days=28)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


# -- shared ------------------------------------------------------------------------------------


def rate(row: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """Engagement rate from summed counters: per impression, else per view, else none."""
    engagements = int(row.get("engagements") or 0)
    impressions = int(row.get("impressions") or 0)
    views = int(row.get("views") or 0)
    if impressions > 0:
        return engagements / impressions, "impressions"
    if views > 0:
        return engagements / views, "views"
    return None, None


def snapshot_at(snapshot: Snapshot, now: float) -> Snapshot:
    """``snapshot`` with its freshness measured at ``now`` (epoch seconds)."""
    if snapshot.data_through is None:
        return snapshot
    freshness = round(now - snapshot.data_through.timestamp(), 6)
    return snapshot.model_copy(update={"freshness_seconds": freshness})


def snapshot_out(row: Row, marts: list[str]) -> Snapshot:
    data_through = row["data_through"]
    freshness = None if data_through is None else (utcnow() - data_through).total_seconds()
    return Snapshot(
        computed_at=from_db(row["computed_at"]),
        data_through=from_db(data_through),
        freshness_seconds=freshness,
        partitions=int(row["partitions"] or 0),
        marts=marts,
    )


def read_snapshot(
    cur: Cursor, marts: list[str], first_day: date | None = None, last_day: date | None = None
) -> Snapshot:
    return snapshot_out(repo.snapshot(cur, marts, first_day, last_day), marts)


def _json(value: Any) -> Any:
    """A JSON column as its value (DuckDB returns JSON as text)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# An instant as the pipeline writes it into JSON: the store's UTC, often without an offset.
_INSTANT = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?$"
)


def _evidence(value: Any) -> Any:
    """Evidence JSON with every instant in it as the API returns instants: UTC, `Z`, ms."""
    if isinstance(value, dict):
        return {k: _evidence(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_evidence(v) for v in value]
    if isinstance(value, str) and _INSTANT.match(value):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return value
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)  # the store keeps UTC
        return iso_z(parsed)
    return value


def _utc(value: datetime) -> datetime:
    found = from_db(value)
    assert found is not None
    return found


# -- unified -----------------------------------------------------------------------------------


def resolve_range(
    start: datetime | None, end: datetime | None, granularity: Granularity
) -> tuple[datetime, datetime]:
    """The requested [from, to) with defaults (the last 28 days), checked against the limits."""
    if end is None:
        end = datetime.now(UTC)
    if start is None:
        start = end - DEFAULT_RANGE
    if start >= end:
        raise ValidationFailed.on("from", "invalid_range", "`from` must be before `to`.")
    if end - start > MAX_RANGE:
        raise ValidationFailed.on(
            "to", "range_too_long", f"The range may span at most {MAX_RANGE.days} days."
        )
    if granularity == "hour" and end - start > MAX_HOURLY_RANGE:
        raise ValidationFailed.on(
            "granularity",
            "range_too_long",
            f"granularity=hour allows a range of at most {MAX_HOURLY_RANGE.days} days.",
        )
    return start, end


def _metrics(row: Mapping[str, Any]) -> dict[str, Any]:
    er, basis = rate(row)
    out: dict[str, Any] = {c: int(row.get(c) or 0) for c in COUNTERS}
    out.update(
        engagement_rate=er,
        engagement_rate_basis=basis,
        posts=int(row.get("posts") or 0),
        active_posts=int(row.get("active_posts") or 0),
        followers=None if row.get("followers") is None else int(row["followers"]),
        follower_growth=(
            None if row.get("follower_growth") is None else int(row["follower_growth"])
        ),
    )
    return out


def _first_seen(row: Mapping[str, Any]) -> FirstSeen:
    return FirstSeen(
        posts=int(row.get("fs_posts") or 0),
        **{c: int(row.get(f"fs_{c}") or 0) for c in COUNTERS},
    )


def _sum_optional(values: list[Any]) -> int | None:
    present = [int(v) for v in values if v is not None]
    return sum(present) if present else None


def unified(
    txn: Transaction,
    workspace_id: str,
    start: datetime | None,
    end: datetime | None,
    granularity: Granularity,
    platform: str | None,
    account_id: str | None,
    page: PageRequest,
) -> UnifiedAnalytics:
    start, end = resolve_range(start, end, granularity)
    naive_start, naive_end = to_db(start), to_db(end)
    assert naive_start is not None
    assert naive_end is not None
    if granularity == "hour":
        first = naive_start.replace(minute=0, second=0, microsecond=0)
        last = (naive_end - timedelta(microseconds=1)).replace(minute=0, second=0, microsecond=0)
    else:
        first = datetime.combine(naive_start.date(), time())
        last = datetime.combine((naive_end - timedelta(microseconds=1)).date(), time())
    where = repo.UnifiedFilter(
        workspace_id=workspace_id,
        start=first,
        end=naive_end,
        platform=platform,
        account_id=account_id,
        granularity=granularity,
    )
    marts = [
        "mart_post_hourly" if granularity == "hour" else "mart_post_daily",
        "mart_account_daily",
    ]
    after = tuple(page.after) if page.after else None
    # One version check per request: the three reads are remembered together.
    platforms, rows, snapshot_row = repo.cache.value(
        txn,
        ("unified", where.cache_key(), after, page.fetch),
        lambda cur: (
            repo.unified_by_platform(cur, where),
            repo.unified_series(cur, where, page.after, page.fetch),
            repo.snapshot(cur, marts, where.first_day, where.last_day),
        ),
    )
    totals_row: dict[str, Any] = {c: sum(int(r[c]) for r in platforms) for c in COUNTERS}
    for name in ("posts", "active_posts"):
        totals_row[name] = sum(int(r[name]) for r in platforms)
    totals_row["followers"] = _sum_optional([r["followers"] for r in platforms])
    totals_row["follower_growth"] = _sum_optional([r["follower_growth"] for r in platforms])
    for name in ("fs_posts", *(f"fs_{c}" for c in COUNTERS)):
        totals_row[name] = sum(int(r[name] or 0) for r in platforms)
    series = page.page(
        rows,
        lambda r: SeriesPoint(
            bucket=_utc(r["bucket"]),
            platform=r["platform"],
            account_id=r["account_id"],
            account_external_id=r["account_external_id"],
            **_metrics(r),
        ),
        lambda r: [r["bucket"].isoformat(), r["platform"], r["account_external_id"]],
    )
    return UnifiedAnalytics(
        range=Range(from_=start, to=end, first_bucket=_utc(first), last_bucket=_utc(last)),
        granularity=granularity,
        totals=Metrics(**_metrics(totals_row), first_seen=_first_seen(totals_row)),
        by_platform=[
            PlatformMetrics(platform=r["platform"], **_metrics(r), first_seen=_first_seen(r))
            for r in platforms
        ],
        series=series,
        snapshot=snapshot_out(snapshot_row, marts),
    )


def unified_at(found: UnifiedAnalytics, now: float, *, default_range: bool) -> UnifiedAnalytics:
    """``found`` as of ``now``: its freshness and, for the default range, the range's bounds.

    The rest of a daily read depends on the range's days only, which the caller keeps
    fixed (the clock's UTC day is in its cache key).
    """
    update: dict[str, Any] = {"snapshot": snapshot_at(found.snapshot, now)}
    if default_range:
        end = datetime.fromtimestamp(now, UTC)
        update["range"] = found.range.model_copy(update={"from_": end - DEFAULT_RANGE, "to": end})
    return found.model_copy(update=update)


def viral_trends_at(found: ViralTrends, now: float) -> ViralTrends:
    """``found`` as of ``now``: only its freshness moves."""
    return found.model_copy(update={"snapshot": snapshot_at(found.snapshot, now)})


# -- viral trends ------------------------------------------------------------------------------


def viral_trends(
    txn: Transaction, workspace_id: str, where: repo.TrendFilter, page: PageRequest
) -> ViralTrends:
    after = tuple(page.after) if page.after else None
    rows, snapshot_row = repo.cache.value(
        txn,
        ("viral_trends", workspace_id, where, after, page.fetch),
        lambda cur: (
            repo.list_viral_trends(cur, workspace_id, where, page.after, page.fetch),
            repo.snapshot(cur, ["mart_viral_trends"]),
        ),
    )
    found = page.page(
        rows,
        lambda r: ViralTrend(
            id=r["id"],
            entity_type=r["entity_type"],
            entity=r["entity"],
            platform=r["platform"],
            score=r["score"],
            status=r["status"],
            velocity=r["velocity"],
            baseline=r["baseline"],
            window_end=_utc(r["window_end"]),
            computed_at=_utc(r["computed_at"]),
            evidence=_evidence(_json(r["evidence"])),
        ),
        lambda r: [r["score"], r["entity"], r["id"]],
    )
    return ViralTrends(
        items=found.items,
        pagination=found.pagination,
        snapshot=snapshot_out(snapshot_row, ["mart_viral_trends"]),
    )


# -- insights ----------------------------------------------------------------------------------


def _account_keys(txn: Transaction, workspace_id: str, account_id: str) -> tuple[str, list[str]]:
    """A connected account's platform and every platform-side id the marts may know it by."""
    account = found(ws_repo.get_account(txn.cur, workspace_id, account_id), "account", account_id)
    return account.platform, repo.account_external_ids(txn.analytics, account)


def insights(
    txn: Transaction,
    workspace_id: str,
    kind: str | None,
    platform: str | None,
    account_id: str | None,
    page: PageRequest,
) -> Insights:
    external_ids = None
    if account_id is not None:
        _, external_ids = _account_keys(txn, workspace_id, account_id)
    cur = txn.analytics
    rows = repo.list_insights(
        cur,
        workspace_id,
        kind=kind,
        platform=platform,
        external_ids=external_ids,
        after=page.after,
        limit=page.fetch,
    )
    found = page.page(
        rows,
        lambda r: Insight(
            id=r["id"],
            kind=r["kind"],
            platform=r["platform"],
            account_external_id=r["account_external_id"],
            title=r["title"],
            body=r["body"],
            score=r["score"],
            evidence=_evidence(_json(r["evidence"])),
            computed_at=_utc(r["computed_at"]),
        ),
        lambda r: [r["score"], r["id"]],
    )
    return Insights(
        items=found.items,
        pagination=found.pagination,
        snapshot=read_snapshot(cur, ["mart_insights", "mart_best_times", "mart_anomalies"]),
    )


def _cell(weekday: int, hour: int, row: Row | None) -> BestTimeCell:
    label = f"{WEEKDAYS[weekday]} {hour:02d}:00 UTC"
    if row is None:
        return BestTimeCell(
            weekday=weekday,
            hour=hour,
            label=label,
            posts=0,
            raw_index=None,
            shrunk_index=None,
            ci_low=None,
            ci_high=None,
            confidence="none",
        )
    return BestTimeCell(
        weekday=weekday,
        hour=hour,
        label=label,
        posts=int(row["posts"]),
        raw_index=row["raw_index"],
        shrunk_index=row["shrunk_index"],
        ci_low=row["ci_low"],
        ci_high=row["ci_high"],
        confidence=row["confidence"],
    )


def best_times(txn: Transaction, workspace_id: str, account_id: str) -> BestTimes:
    platform, external_ids = _account_keys(txn, workspace_id, account_id)
    cur = txn.analytics
    rows = repo.best_times(cur, workspace_id, platform, external_ids)
    by_slot = {(int(r["weekday"]), int(r["hour"])): r for r in rows}
    grid = [_cell(d, h, by_slot.get((d, h))) for d in range(7) for h in range(24)]
    ranked = sorted(
        (c for c in grid if c.shrunk_index is not None and c.confidence not in {"low", "none"}),
        key=lambda c: (-(c.shrunk_index or 0.0), c.weekday, c.hour),
    )
    computed = max((r["computed_at"] for r in rows), default=None)
    return BestTimes(
        account_id=account_id,
        platform=platform,
        grid=grid,
        best=ranked[:3],
        computed_at=from_db(computed),
        snapshot=read_snapshot(cur, ["mart_best_times"]),
    )


# -- creators and competitors ------------------------------------------------------------------


def ranking_out(row: Row) -> Ranking:
    return Ranking(
        kind=row["kind"],
        platform=row["platform"],
        account_external_id=row["account_external_id"],
        handle=row["handle"],
        category=row["category"],
        followers=row["followers"],
        posts=int(row["posts"]),
        engagement_rate=row["engagement_rate"],
        engagement_rate_shrunk=row["engagement_rate_shrunk"],
        growth_rate=row["growth_rate"],
        avg_reach=row["avg_reach"],
        score=row["score"],
        rank=int(row["rank"]),
        parts=_json(row["parts"]),
        computed_at=_utc(row["computed_at"]),
    )


def creators(
    txn: Transaction,
    workspace_id: str,
    platform: str | None,
    category: str | None,
    page: PageRequest,
) -> Creators:
    cur = txn.analytics
    rows = repo.list_creators(
        cur, workspace_id, platform=platform, category=category, after=page.after, limit=page.fetch
    )
    found = page.page(
        rows, ranking_out, lambda r: [int(r["rank"]), r["platform"], r["account_external_id"]]
    )
    return Creators(
        items=found.items,
        pagination=found.pagination,
        snapshot=read_snapshot(cur, ["mart_creator_rankings"]),
    )


class _Baseline:
    """The workspace's own engagement and followers per platform, read once per request."""

    def __init__(self, cur: Cursor, workspace_id: str) -> None:
        since = (utcnow() - BENCHMARK_WINDOW).date()
        self.rates = {
            r["platform"]: rate(r)[0] for r in repo.own_engagement(cur, workspace_id, since)
        }
        self.followers = {
            r["platform"]: r["followers"] for r in repo.own_followers(cur, workspace_id)
        }

    def benchmark(self, platform: str, ranking: Ranking | None) -> Benchmark:
        ours = self.rates.get(platform)
        theirs = None
        if ranking is not None:
            theirs = (
                ranking.engagement_rate
                if ranking.engagement_rate is not None
                else ranking.engagement_rate_shrunk
            )
        ratio = theirs / ours if theirs is not None and ours else None
        our_followers = self.followers.get(platform)
        return Benchmark(
            their_engagement_rate=theirs,
            our_engagement_rate=ours,
            ratio=ratio,
            their_followers=None if ranking is None else ranking.followers,
            our_followers=None if our_followers is None else int(our_followers),
        )


def _competitor_out(
    row: repo.CompetitorRow, ranking_row: Row | None, baseline: _Baseline
) -> Competitor:
    ranking = None if ranking_row is None else ranking_out(ranking_row)
    return Competitor(
        id=row.id,
        platform=row.platform,
        handle=row.handle,
        created_at=_utc(row.created_at),
        ranking=ranking,
        benchmark=baseline.benchmark(row.platform, ranking),
    )


def competitors(txn: Transaction, workspace_id: str, page: PageRequest) -> Competitors:
    rows = repo.list_competitors(txn.cur, workspace_id, page.after_value(), page.fetch)
    kept = rows[: page.limit]
    cur = txn.analytics
    rankings = repo.competitor_rankings(cur, workspace_id, kept)
    baseline = _Baseline(cur, workspace_id)
    found = page.page(
        rows, lambda r: _competitor_out(r, rankings.get(r.id), baseline), lambda r: [r.id]
    )
    return Competitors(
        items=found.items,
        pagination=found.pagination,
        snapshot=read_snapshot(cur, ["mart_creator_rankings", "mart_post_daily"]),
    )


def track_competitor(txn: Transaction, workspace_id: str, body: CompetitorCreate) -> Competitor:
    cur = txn.cur
    handle = body.handle.strip().lstrip("@")
    if not handle:
        raise ValidationFailed.on("handle", "min_length", "The handle is empty.")
    # Two concurrent requests for the same handle both touch this row, so one of them
    # conflicts and is retried by the client, and the duplicate check below stays sound.
    ws_repo.serialize_on_workspace(cur, workspace_id)
    existing = repo.find_live_competitor(cur, workspace_id, body.platform, handle)
    if existing is not None:
        raise InvalidState(
            f"{body.platform} account {handle!r} is already tracked as {existing.id}."
        )
    competitor_id = repo.insert_competitor(cur, workspace_id, body.platform, handle)
    row = repo.get_live_competitor(cur, workspace_id, competitor_id)
    assert row is not None
    rankings = repo.competitor_rankings(txn.analytics, workspace_id, [row])
    baseline = _Baseline(txn.analytics, workspace_id)
    return _competitor_out(row, rankings.get(competitor_id), baseline)


def untrack_competitor(cur: Cursor, workspace_id: str, competitor_id: str) -> Deleted:
    if not repo.untrack_competitor(cur, workspace_id, competitor_id):
        raise NotFound.resource("competitor", competitor_id)
    return Deleted(id=competitor_id)


# -- a post's own analytics --------------------------------------------------------------------


def _totals(rows: list[Row]) -> PostTotals:
    sums = {c: sum(int(r[c]) for r in rows) for c in COUNTERS}
    er, basis = rate(sums)
    return PostTotals(**sums, engagement_rate=er, engagement_rate_basis=basis)


def _day_point(row: Row) -> DayPoint:
    er, _ = rate(row)
    return DayPoint(
        day=datetime.combine(row["day"], time(), tzinfo=UTC),
        **{c: int(row[c]) for c in COUNTERS},
        engagement_rate=er,
    )


def post_analytics(txn: Transaction, workspace_id: str, post_id: str) -> PostAnalytics:
    if posts_repo.get_post(txn.cur, workspace_id, post_id) is None:
        raise NotFound.resource("post", post_id)
    destinations = posts_repo.destinations_of(txn.cur, [post_id])[post_id]
    cur = txn.analytics
    rows = repo.post_daily(cur, workspace_id, post_id)
    groups: dict[tuple[str, str | None, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row["platform"], row["account_id"], row["external_id"]), []).append(row)
    out: list[DestinationAnalytics] = []
    matched: set[tuple[str, str | None, str]] = set()
    for dest in destinations:
        mine = [
            key
            for key in groups
            if key not in matched
            and key[0] == dest.platform
            and (key[2] == dest.platform_post_id or key[1] == dest.account_id)
        ]
        matched.update(mine)
        dest_rows = sorted((r for key in mine for r in groups[key]), key=lambda r: r["day"])
        out.append(
            DestinationAnalytics(
                destination_id=dest.id,
                account_id=dest.account_id,
                platform=dest.platform,
                platform_post_id=dest.platform_post_id,
                totals=_totals(dest_rows),
                series=_daily(dest_rows),
            )
        )
    for key, key_rows in groups.items():
        if key in matched:
            continue
        out.append(
            DestinationAnalytics(
                destination_id=None,
                account_id=key[1],
                platform=key[0],
                platform_post_id=key[2],
                totals=_totals(key_rows),
                series=_daily(key_rows),
            )
        )
    days = repo.post_days(cur, workspace_id, post_id)
    snapshot = (
        read_snapshot(cur, ["mart_post_daily"], days["first_day"], days["last_day"])
        if days["first_day"] is not None
        else read_snapshot(cur, ["mart_post_daily"])
    )
    return PostAnalytics(post_id=post_id, totals=_totals(rows), destinations=out, snapshot=snapshot)


def _daily(rows: list[Row]) -> list[DayPoint]:
    """One point per day (several platform-side posts of one destination are summed)."""
    by_day: dict[date, dict[str, Any]] = {}
    for row in rows:
        acc = by_day.setdefault(row["day"], {"day": row["day"], **dict.fromkeys(COUNTERS, 0)})
        for c in COUNTERS:
            acc[c] += int(row[c])
    return [_day_point(by_day[d]) for d in sorted(by_day)]
