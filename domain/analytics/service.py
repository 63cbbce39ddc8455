"""Analytics reads: validate ranges, aggregate the marts in SQL, recompute rates from sums."""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from connectors.platforms import profile_url
from domain.analytics import best_times as wording
from domain.analytics import definitions, rates
from domain.analytics.breakouts_schemas import Breakouts
from domain.analytics.schemas import (
    Basis,
    Benchmark,
    BestTimeBlock,
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
    GroupBy,
    Insight,
    Insights,
    Metrics,
    PlatformMetrics,
    PostAnalytics,
    PostTotals,
    Provenance,
    Range,
    Ranking,
    SeriesPoint,
    Snapshot,
    Source,
    UnifiedAnalytics,
    ViralTrend,
    ViralTrends,
    Window,
)
from domain.errors import InvalidState, NotFound, ValidationFailed, found
from domain.pagination import PageRequest
from domain.schemas import Deleted, Page, from_row, iso_z
from warehouse import analytics as repo
from warehouse import best_times as best_times_repo
from warehouse import buckets
from warehouse import posts as posts_repo
from warehouse import provenance as provenance_repo
from warehouse import workspaces as ws_repo
from warehouse.analytics import COUNTERS
from warehouse.ids import from_db, utcnow
from warehouse.rows import Cursor, Row
from warehouse.store import Transaction

# -- shared ------------------------------------------------------------------------------------


def snapshot_at(snapshot: Snapshot, now: float) -> Snapshot:
    """``snapshot`` with its freshness measured at ``now`` (epoch seconds)."""
    if snapshot.data_through is None:
        return snapshot
    freshness = round(now - snapshot.data_through.timestamp(), 6)
    return snapshot.model_copy(update={"freshness_seconds": freshness})


#: An answer that carries the snapshot it was read from.
Answer = TypeVar(
    "Answer",
    UnifiedAnalytics,
    ViralTrends,
    Insights,
    BestTimes,
    Creators,
    Competitors,
    PostAnalytics,
    Breakouts,
)


def answer_at(found: Answer, now: float) -> Answer:
    """``found`` as of ``now`` (epoch seconds): only its freshness moves."""
    return found.model_copy(update={"snapshot": snapshot_at(found.snapshot, now)})


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


def _source(row: Row) -> Source:
    """A source row as the answer names it: a capture stream or an imported file."""
    # readings come from a connector's captures or from an imported file, nothing else
    kind: Literal["capture", "import"] = (
        "import" if str(row["source"]).startswith("import:") else "capture"
    )
    return Source(
        kind=kind,
        platform=row["platform"],
        origin=row["origin"],
        import_id=row["newest_batch"] if kind == "import" else None,
        first_read_at=_utc(row["first_read_at"]),
        last_read_at=_utc(row["last_read_at"]),
        readings=int(row["readings"]),
    )


def provenance(
    cur: Cursor, scope: provenance_repo.Scope | None, names: tuple[str, ...]
) -> Provenance:
    """The lake snapshot ``cur`` reads, the sources of ``scope``'s readings (none: no
    figure drew on a reading), and the definitions of the figures ``names``."""
    window = None
    if scope is not None and scope.since is not None and scope.until is not None:
        window = Window(from_=_utc(scope.since), to=_utc(scope.until))
    return Provenance(
        snapshot_id=provenance_repo.snapshot_id(cur),
        window=window,
        sources=[] if scope is None else [_source(r) for r in provenance_repo.sources(cur, scope)],
        definitions=definitions.of(names),
    )


def kept_provenance(
    txn: Transaction, scope: provenance_repo.Scope | None, names: tuple[str, ...]
) -> Provenance:
    """``provenance`` remembered with the marts' version, as the cached reads keep theirs:
    the readings' scan runs once per pipeline run, not on every request."""
    return repo.cache.value(
        txn, ("provenance", scope, names), lambda cur: provenance(cur, scope, names)
    )


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


# -- labels: what a person recognises a post or an account by (docs/api/analytics.md) -----------

LABEL_LENGTH = 100  # YouTube's longest title: a video's label is its whole title


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_LENGTH else text[: LABEL_LENGTH - 1].rstrip() + "…"


def post_label(text: str | None, fallback: str) -> str:
    """A post's title or first non-blank line (YouTube's text starts with its title), cut."""
    for line in (text or "").splitlines():
        if line.strip():
            return _cut(line.strip())
    return fallback


def account_label(display_name: str | None, handle: str | None, fallback: str) -> str:
    """An account's display name, else its @handle."""
    if display_name and display_name.strip():
        return _cut(display_name.strip())
    name = (handle or "").strip().lstrip("@")
    return _cut(f"@{name}") if name else fallback


def link(value: Any) -> str | None:
    """A URL a page may link to or show (http or https), else None: platforms' data is untrusted."""
    if not isinstance(value, str):
        return None
    url = value.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def _post_names(row: Row, external_id: str) -> dict[str, Any]:
    """label, url and thumbnail_url of the post a row describes (``post_*`` columns)."""
    return {
        "label": post_label(row.get("post_text"), external_id),
        "url": link(row.get("post_url")),
        "thumbnail_url": link(row.get("post_thumbnail_url")),
    }


def _account_names(row: Row, handle: str | None, fallback: str) -> dict[str, Any]:
    """label, url and thumbnail_url of the account a row describes (``account_*`` columns)."""
    return {
        "label": account_label(
            row.get("account_display_name"), row.get("account_handle") or handle, fallback
        ),
        "url": link(row.get("account_url")),
        "thumbnail_url": link(row.get("account_thumbnail_url")),
    }


# -- unified -----------------------------------------------------------------------------------

# The default range, in buckets of the granularity counting the current one, and the longest
# range each allows (docs/api/analytics.md): a series is at most a few hundred buckets long.
DEFAULT_BUCKETS: dict[str, int] = {"hour": 48, "day": 28, "week": 12, "month": 12}
MAX_RANGE: dict[str, timedelta] = {
    "hour": timedelta(days=14),
    "day": timedelta(days=400),
    "week": timedelta(days=3 * 365 + 1),
    "month": timedelta(days=5 * 365 + 2),
}
_TICK = timedelta(microseconds=1)


def time_zone(name: str) -> str:
    """``name`` as IANA spells it (any case is taken), or VALIDATION_ERROR on ``tz``."""
    found = buckets.zone_name(name)
    if found is None:
        raise ValidationFailed.on(
            "tz",
            "unknown_time_zone",
            "`tz` must be an IANA time zone name, such as `UTC`, `Europe/Paris` or "
            "`America/New_York`.",
        )
    return found


def clock_window(granularity: Granularity, tz: str, now: float) -> tuple[float, float]:
    """The bucket holding ``now`` (epoch seconds): a range ending now keeps its buckets in it."""
    zone = buckets.zone(tz)
    start = buckets.floor(datetime.fromtimestamp(now, UTC), granularity, zone)
    return start.timestamp(), buckets.following(start, granularity, zone).timestamp()


def resolve_range(
    start: datetime | None,
    end: datetime | None,
    granularity: Granularity,
    tz: str,
    now: datetime,
) -> tuple[datetime, datetime]:
    """The requested [from, to) with defaults (the last N buckets in ``tz``), checked."""
    zone = buckets.zone(tz)
    count = DEFAULT_BUCKETS[granularity]
    if end is None:
        end = now
        if start is None:
            start = buckets.last_buckets(now, count, granularity, zone)
    elif start is None:
        start = buckets.last_buckets(end - _TICK, count, granularity, zone)
    if start >= end:
        raise ValidationFailed.on("from", "invalid_range", "`from` must be before `to`.")
    longest = MAX_RANGE[granularity]
    if end - start > longest:
        # The day's limit is the contract's original one, on `to`; the others name the choice.
        field = "to" if granularity == "day" else "granularity"
        raise ValidationFailed.on(
            field,
            "range_too_long",
            f"granularity={granularity} allows a range of at most {longest.days} days.",
        )
    return start, end


def _metrics(
    row: Mapping[str, Any],
    basis: rates.RateBasis | None = None,
    parts: list[Row] | None = None,
) -> dict[str, Any]:
    """A row's counters and its rate (``basis``: its series group's; ``parts``: its platforms')."""
    measured = rates.measure(row, basis=basis, parts=parts)
    out: dict[str, Any] = {c: int(row.get(c) or 0) for c in COUNTERS}
    out.update(
        engagement_rate=measured.value,
        engagement_rate_basis=measured.basis,
        engagement_rate_coverage=measured.coverage,
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


# A series group: (platform, account_external_id), either None above its grouping's level.
GroupKey = tuple[str | None, str | None]


@dataclass
class _Span:
    """A group's readings from the first to the newest: the buckets its series has data for."""

    account_id: str | None
    first: datetime
    last: datetime

    def covers(self, start: datetime, end: datetime) -> bool:
        """Whether [start, end) meets [first, last]."""
        return self.first < end and self.last >= start


def _group_spans(where: repo.UnifiedFilter, accounts: list[Row]) -> dict[GroupKey, _Span]:
    """Each group's span: the hull of its accounts' (from the first publication, `published`)."""
    spans: dict[GroupKey, _Span] = {}
    for row in accounts:
        first = row["first_published" if where.basis == "published" else "first_at"]
        last = row["last_at"]
        if first is None or last is None or first > last:
            continue
        key: GroupKey = (
            None if where.group_by == "total" else row["platform"],
            row["account_external_id"] if where.group_by == "account" else None,
        )
        found = spans.get(key)
        if found is None:
            account_id = row["account_id"] if where.group_by == "account" else None
            spans[key] = _Span(account_id, first, last)
        else:
            found.first, found.last = min(found.first, first), max(found.last, last)
    return spans


def _after(page: PageRequest) -> tuple[datetime, str, str] | None:
    """The page's keyset position: (bucket, platform, account), None as ''."""
    if page.after is None:
        return None
    try:
        bucket, platform, account = page.after
        return datetime.fromisoformat(bucket), platform or "", account or ""
    except (TypeError, ValueError) as exc:
        raise ValidationFailed.on(
            "cursor", "invalid", "The cursor is not one this endpoint issued."
        ) from exc


# A read bucket's (index, group) → where the interval its growth covers starts (None: unknown).
Covers = dict[tuple[int, GroupKey], datetime | None]


def _read_buckets(
    where: repo.UnifiedFilter, rows: list[Row], readings: repo.Readings, tz: str
) -> Covers:
    """The buckets holding a reading of their group, each with the start of what it covers.

    A reading is a growth row (``active_posts``: a post read in the bucket, changed or not), a
    first-seen reading or, above hours, a follower figure. A read bucket's growth accrued
    since the group's previous reading: it covers from the end of the bucket holding that one
    (docs/api/analytics.md, "The series: groups, coverage, 0 and null").
    """
    edges = where.edges
    index = {e: i for i, e in enumerate(edges[:-1])}
    daily = where.granularity != "hour"  # follower figures are daily

    def group(platform: str | None, account: str | None) -> GroupKey:
        return (
            None if where.group_by == "total" else platform,
            account if where.group_by == "account" else None,
        )

    read: dict[GroupKey, set[int]] = {}
    for r in rows:
        if int(r["active_posts"] or 0) > 0 or (daily and r["followers"] is not None):
            read.setdefault(group(r.get("platform"), r.get("account_external_id")), set()).add(
                index[r["bucket"]]
            )
    for bucket, platform, account in readings.first_seen:
        read.setdefault(group(platform, account), set()).add(index[bucket])
    previous: dict[GroupKey, datetime] = {}
    for (platform, account), at in readings.previous.items():
        key = group(platform, account)
        previous[key] = max(previous.get(key, at), at)
    zone = buckets.zone(tz)
    out: Covers = {}
    for key, held in read.items():
        since: datetime | None = None
        if key in previous:
            start = buckets.floor(previous[key].replace(tzinfo=UTC), where.granularity, zone)
            since = buckets.following(start, where.granularity, zone).replace(tzinfo=None)
        for i in sorted(held):
            out[(i, key)] = since
            since = edges[i + 1]
    return out


def _series(
    where: repo.UnifiedFilter,
    rows: list[Row],
    accounts: list[Row],
    page: PageRequest,
    covers: Covers | None = None,
) -> Page[SeriesPoint]:
    """Every bucket for every group whose span meets the range: numbers where the group was
    read (``covers``: the activity basis's read buckets; without, the whole span), else null."""
    edges = where.edges
    spans = _group_spans(where, accounts)
    groups = sorted(
        (key for key, span in spans.items() if span.covers(edges[0], edges[-1])),
        key=lambda k: (k[0] or "", k[1] or ""),
    )
    found = {(r["bucket"], r.get("platform"), r.get("account_external_id")): r for r in rows}
    # Each group's rate has one basis over the range (its totals'): a line never mixes
    # buckets per impression with buckets per view.
    sums: dict[GroupKey, list[int]] = {}
    for r in rows:
        acc = sums.setdefault((r.get("platform"), r.get("account_external_id")), [0, 0])
        acc[0] += int(r["impressions"] or 0)
        acc[1] += int(r["views"] or 0)
    bases = {key: rates.basis_of(i, v) for key, (i, v) in sums.items()}
    after = _after(page)
    first = 0 if after is None else max(0, bisect_left(edges, after[0]))
    points: list[tuple[int, GroupKey]] = []
    for i in range(first, len(edges) - 1):
        for key in groups:
            if after is not None and (edges[i], key[0] or "", key[1] or "") <= after:
                continue
            points.append((i, key))
            if len(points) == page.fetch:
                break
        if len(points) == page.fetch:
            break

    def point(at: tuple[int, GroupKey]) -> SeriesPoint:
        i, key = at
        start, end = edges[i], edges[i + 1]
        span = spans[key]
        names: dict[str, Any] = {
            "bucket": _utc(start),
            "bucket_end": _utc(end),
            "platform": key[0],
            "account_id": span.account_id,
            "account_external_id": key[1],
        }
        if not span.covers(start, end) or (covers is not None and (i, key) not in covers):
            return SeriesPoint(**names, **dict.fromkeys(_SERIES_METRICS))
        if covers is not None:
            since = covers[(i, key)]
            names["covers_from"] = None if since is None else _utc(since)
            names["covers_hours"] = None if since is None else (end - since) / timedelta(hours=1)
        metrics = _metrics(found.get((start, *key), {}), bases.get(key))
        if where.granularity == "hour":  # follower figures are daily
            metrics.update(followers=None, follower_growth=None)
        return SeriesPoint(**names, **metrics)

    return page.page(
        points,
        point,
        lambda at: [edges[at[0]].isoformat(), at[1][0], at[1][1]],
    )


_SERIES_METRICS = (
    *COUNTERS,
    "engagement_rate",
    "engagement_rate_basis",
    "engagement_rate_coverage",
    "posts",
    "active_posts",
    "followers",
    "follower_growth",
)


def _marts(where: repo.UnifiedFilter) -> list[str]:
    """The marts a read draws on (their snapshot rows say how fresh it is)."""
    if where.basis == "published":
        return ["mart_post_daily", "mart_account_daily"]
    daily = ["mart_post_daily"] if where.whole_days() else []
    hourly = ["mart_post_hourly"] if where.split_days else []
    return [*daily, *hourly, "mart_account_daily"]


def unified(
    txn: Transaction,
    workspace_id: str,
    start: datetime | None,
    end: datetime | None,
    granularity: Granularity,
    tz: str,
    basis: Basis,
    group_by: GroupBy,
    platform: str | None,
    account_id: str | None,
    page: PageRequest,
    now: datetime,
) -> UnifiedAnalytics:
    start, end = resolve_range(start, end, granularity, tz, now)
    edges = buckets.edges(start, end, granularity, buckets.zone(tz))
    naive = tuple(e.replace(tzinfo=None) for e in edges)
    where = repo.UnifiedFilter(
        workspace_id=workspace_id,
        start=naive[0],
        end=naive[-1],
        platform=platform,
        account_id=account_id,
        granularity=granularity,
        basis=basis,
        group_by=group_by,
        edges=naive,
    )
    marts = _marts(where)
    # A published read sums each post's growth up to now, whatever the range's end.
    last_day = date.max if basis == "published" else where.last_day
    # One version check per request: the reads are remembered together, the accounts' spans
    # (which no range bounds) apart, for every range of the workspace.
    platforms, rows, snapshot_row, sources = repo.cache.value(
        txn,
        ("unified", where.cache_key()),
        lambda cur: (
            repo.unified_by_platform(cur, where),
            repo.unified_series(cur, where),
            repo.snapshot(cur, marts, where.first_day, last_day),
            provenance(cur, _unified_scope(where), definitions.UNIFIED),
        ),
    )
    accounts = repo.cache.value(
        txn,
        ("unified_spans", workspace_id, platform, account_id, basis),
        lambda cur: repo.unified_spans(cur, where),
    )
    covers = None
    if basis == "activity":
        # which buckets a reading falls in: the others between readings are null, not 0
        readings = repo.cache.value(
            txn,
            ("unified_readings", where.cache_key()),
            lambda cur: repo.unified_readings(cur, where, followers=granularity != "hour"),
        )
        covers = _read_buckets(where, rows, readings, tz)
    totals_row: dict[str, Any] = {c: sum(int(r[c]) for r in platforms) for c in COUNTERS}
    for name in ("posts", "active_posts"):
        totals_row[name] = sum(int(r[name]) for r in platforms)
    totals_row["followers"] = _sum_optional([r["followers"] for r in platforms])
    totals_row["follower_growth"] = _sum_optional([r["follower_growth"] for r in platforms])
    for name in ("fs_posts", *(f"fs_{c}" for c in COUNTERS), *repo.COVERAGE):
        totals_row[name] = sum(int(r[name] or 0) for r in platforms)
    return UnifiedAnalytics(
        range=Range(from_=start, to=end, first_bucket=_utc(naive[0]), last_bucket=_utc(naive[-2])),
        granularity=granularity,
        tz=tz,
        basis=basis,
        group_by=group_by,
        totals=Metrics(**_metrics(totals_row, parts=platforms), first_seen=_first_seen(totals_row)),
        by_platform=[
            PlatformMetrics(
                platform=r["platform"], **_metrics(r, parts=[r]), first_seen=_first_seen(r)
            )
            for r in platforms
        ],
        series=_series(where, rows, accounts, page, covers),
        snapshot=snapshot_out(snapshot_row, marts),
        provenance=sources,
    )


def _unified_scope(where: repo.UnifiedFilter) -> provenance_repo.Scope:
    """The readings of a unified read: own posts' in the range, or (``published``) every
    reading of the own posts published in it."""
    scope = provenance_repo.Scope(
        where.workspace_id, kinds=("own",), platform=where.platform, account_id=where.account_id
    )
    if where.basis == "published":
        return replace(scope, published_from=where.start, published_to=where.end)
    return replace(scope, since=where.start, until=where.end)


def unified_at(found: UnifiedAnalytics, now: float, *, clock: bool) -> UnifiedAnalytics:
    """``found`` as of ``now``: its freshness and, for a range ending now, the range's end.

    The rest depends on the range's buckets only, which the caller keeps fixed (the bucket
    holding the clock is in its cache key).
    """
    update: dict[str, Any] = {"snapshot": snapshot_at(found.snapshot, now)}
    if clock:
        update["range"] = found.range.model_copy(update={"to": datetime.fromtimestamp(now, UTC)})
    return found.model_copy(update=update)


# -- viral trends ------------------------------------------------------------------------------


def viral_trends(
    txn: Transaction, workspace_id: str, where: repo.TrendFilter, page: PageRequest
) -> ViralTrends:
    after = tuple(page.after) if page.after else None

    def read(cur: Cursor) -> tuple[list[Row], Row, Provenance]:
        rows = repo.list_viral_trends(cur, workspace_id, where, page.after, page.fetch)
        scope = _trend_scope(workspace_id, where, rows)
        return (
            rows,
            repo.snapshot(cur, ["mart_viral_trends"]),
            provenance(cur, scope, definitions.TRENDS),
        )

    rows, snapshot_row, sources = repo.cache.value(
        txn, ("viral_trends", workspace_id, where, after, page.fetch), read
    )
    found = page.page(
        rows,
        lambda r: from_row(
            ViralTrend, r, **_trend_names(r), evidence=_evidence(_json(r["evidence"]))
        ),
        lambda r: [r["falling"], r["score"], r["entity"], r["id"]],
    )
    return ViralTrends(
        items=found.items,
        pagination=found.pagination,
        snapshot=snapshot_out(snapshot_row, ["mart_viral_trends"]),
        provenance=sources,
    )


def _trend_scope(
    workspace_id: str, where: repo.TrendFilter, rows: list[Row]
) -> provenance_repo.Scope | None:
    """The readings a judged window's trends are computed from: every post's of the
    workspace (the peers too) in the span its judgments read back (none listed: none)."""
    if not rows:
        return None
    end = max(r["window_end"] for r in rows)
    widest = max(float(_json(r["evidence"]).get("window_hours") or 0) for r in rows)
    span = max(
        timedelta(days=definitions.TREND_LOOKBACK_DAYS),
        definitions.TREND_WINDOWS * timedelta(hours=widest),
    )
    return provenance_repo.Scope(workspace_id, since=end - span, until=end, platform=where.platform)


def _trend_names(row: Row) -> dict[str, Any]:
    """A post trend's post; a hashtag's #tag and a topic's name span platforms: no link."""
    entity = str(row["entity"])
    if row["entity_type"] == "post":
        return _post_names(row, entity)
    label = "#" + entity.lstrip("#") if row["entity_type"] == "hashtag" else entity
    return {"label": label, "url": None, "thumbnail_url": None}


# -- insights ----------------------------------------------------------------------------------


def account_keys(txn: Transaction, workspace_id: str, account_id: str) -> tuple[str, list[str]]:
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
        _, external_ids = account_keys(txn, workspace_id, account_id)
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
        lambda r: from_row(
            Insight, r, **_insight_names(r), evidence=_evidence(_json(r["evidence"]))
        ),
        lambda r: [r["score"], r["id"]],
    )
    snapshot = read_snapshot(cur, ["mart_insights", "mart_best_times", "mart_anomalies"])
    scope = None
    if snapshot.data_through is not None:
        # the widest of the insights' windows: best times' posts of the last 90 days
        until = snapshot.data_through.replace(tzinfo=None) + timedelta(hours=1)
        scope = provenance_repo.Scope(
            workspace_id,
            since=until - timedelta(days=definitions.BEST_TIMES_DAYS),
            until=until,
            kinds=("own", "competitor"),
            platform=platform,
            accounts=None if external_ids is None else tuple(external_ids),
        )
    return Insights(
        items=found.items,
        pagination=found.pagination,
        snapshot=snapshot,
        provenance=kept_provenance(txn, scope, definitions.INSIGHTS),
    )


def _insight_names(row: Row) -> dict[str, Any]:
    """Top content names its post (the evidence's), other insights their account, if any."""
    post = row.get("post_external_id")
    if row["kind"] == "top_content" and post:
        names = _post_names(row, str(post))
        evidence = _json(row["evidence"])
        if names["url"] is None and isinstance(evidence, dict):
            names["url"] = link(evidence.get("url"))  # the permalink the mart saw
        return names
    account = row["account_external_id"]
    if account:
        return _account_names(row, None, str(account))
    return {"label": None, "url": None, "thumbnail_url": None}


def _cell(weekday: int, hour: int, row: Row | None, tz: str) -> BestTimeCell:
    label = wording.cell_label(weekday, hour, tz)
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
        **wording.estimate(row),
    )


def _block(row: Row, tz: str) -> BestTimeBlock:
    first, end = wording.hours(row["block"])
    return BestTimeBlock(
        day_type="weekend" if row["weekend"] else "weekday",
        start_hour=first,
        end_hour=end,
        label=wording.block_label(row["weekend"], row["block"], tz),
        prior_posts=int(row["prior_posts"]),
        **wording.estimate(row),
    )


def best_times(txn: Transaction, workspace_id: str, account_id: str, tz: str = "UTC") -> BestTimes:
    """One account's cells, blocks and recommendation in ``tz`` (computed in SQL, kept)."""
    platform, external_ids = account_keys(txn, workspace_id, account_id)

    def read(cur: Cursor) -> tuple[best_times_repo.BestTimeRows, Row, Provenance]:
        snapshot_row = repo.snapshot(cur, ["mart_best_times"])
        scope = None
        if snapshot_row["data_through"] is not None:
            # the platform's posts of the window, every account's: the cells shrink toward
            # the platform's pattern
            until = snapshot_row["data_through"] + timedelta(hours=1)
            scope = provenance_repo.Scope(
                workspace_id,
                platform=platform,
                published_from=until - timedelta(days=definitions.BEST_TIMES_DAYS),
                published_to=until,
            )
        return (
            best_times_repo.best_times(cur, workspace_id, platform, external_ids, tz),
            snapshot_row,
            provenance(cur, scope, definitions.BEST_TIMES),
        )

    found, snapshot_row, sources = repo.cache.value(
        txn, ("best_times", workspace_id, platform, tuple(external_ids), tz), read
    )
    by_slot = {(int(r["weekday"]), int(r["hour"])): r for r in found.cells}
    grid = [_cell(d, h, by_slot.get((d, h)), tz) for d in range(7) for h in range(24)]
    ranked = sorted(
        (c for c in grid if c.shrunk_index is not None and c.confidence not in {"low", "none"}),
        key=lambda c: (-(c.shrunk_index or 0.0), c.weekday, c.hour),
    )
    rec = found.recommendation
    return BestTimes(
        account_id=account_id,
        platform=platform,
        tz=tz,
        grid=grid,
        blocks=[_block(r, tz) for r in found.blocks],
        best=ranked[:3],
        recommendation=None if rec is None else wording.recommendation(rec, tz),
        computed_at=from_db(found.computed_at),
        snapshot=snapshot_out(snapshot_row, ["mart_best_times"]),
        provenance=sources,
    )


# -- creators and competitors ------------------------------------------------------------------


def ranking_out(row: Row) -> Ranking:
    parts = _json(row["parts"])
    measured = row["engagement_rate"]
    estimate = rates.estimate_of(measured, row["engagement_rate_shrunk"], parts)
    return Ranking(
        kind=row["kind"],
        platform=row["platform"],
        account_external_id=row["account_external_id"],
        handle=row["handle"],
        **_account_names(row, row["handle"], row["account_external_id"]),
        category=row["category"],
        followers=row["followers"],
        posts=int(row["posts"]),
        engagement_rate=measured,
        engagement_rate_basis=rates.ranking_basis(measured, parts),
        engagement_rate_coverage=rates.ranking_coverage(measured, parts),
        engagement_rate_estimate=estimate,
        # the mart keeps the group's prior for an unmeasured rate: never served as one
        engagement_rate_shrunk=None if estimate is None else estimate.value,
        growth_rate=row["growth_rate"],
        avg_reach=row["avg_reach"],
        score=row["score"],
        rank=int(row["rank"]),
        parts=parts,
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
    scope = provenance_repo.Scope(
        workspace_id,
        kinds=("creator",),
        platform=platform,
        source_days=definitions.RANKING_DAYS,
    )
    return Creators(
        items=found.items,
        pagination=found.pagination,
        snapshot=read_snapshot(cur, ["mart_creator_rankings"]),
        provenance=kept_provenance(txn, scope, definitions.RANKINGS),
    )


class _Baseline:
    """Our own rates (the benchmark window's) and followers per platform, read once."""

    def __init__(self, txn: Transaction, workspace_id: str) -> None:
        # The benchmark insight's "your rate" comes from the same function on the same marts.
        self.ours = repo.cache.value(
            txn, ("own_rates", workspace_id), lambda cur: rates.own_rates(cur, workspace_id)
        )
        self.followers = {
            r["platform"]: r["followers"] for r in repo.own_followers(txn.analytics, workspace_id)
        }

    def benchmark(self, platform: str, ranking: Ranking | None) -> Benchmark:
        ours = self.ours.by_platform.get(platform, rates.Rate())
        theirs = None if ranking is None else ranking.engagement_rate
        their_basis = None if ranking is None else ranking.engagement_rate_basis
        # a rate per impression against one per view compares nothing
        comparable = theirs is not None and ours.value and their_basis == ours.basis
        ratio = theirs / ours.value if comparable and theirs is not None and ours.value else None
        our_followers = self.followers.get(platform)
        return Benchmark(
            their_engagement_rate=theirs,
            their_engagement_rate_basis=their_basis,
            our_engagement_rate=ours.value,
            our_engagement_rate_basis=ours.basis,
            our_engagement_rate_coverage=ours.coverage,
            our_window=self.ours.window,
            ratio=ratio,
            their_followers=None if ranking is None else ranking.followers,
            our_followers=None if our_followers is None else int(our_followers),
        )


def _competitor_out(
    row: repo.CompetitorRow, ranking_row: Row | None, baseline: _Baseline
) -> Competitor:
    ranking = None if ranking_row is None else ranking_out(ranking_row)
    # Until the platform is read, it is known by the handle the user tracks it by.
    tracked = account_label(None, row.handle, row.handle)
    return Competitor(
        id=row.id,
        platform=row.platform,
        handle=row.handle,
        label=tracked if ranking is None else ranking.label,
        url=(ranking and ranking.url) or profile_url(row.platform, row.handle),
        thumbnail_url=None if ranking is None else ranking.thumbnail_url,
        created_at=_utc(row.created_at),
        ranking=ranking,
        benchmark=baseline.benchmark(row.platform, ranking),
    )


# A competitor's place in the list: ranked ones by rank, then the ones not ranked yet, newest
# first. The cursor holds it: [0, rank, id] or [1, 0, id].
_Position = tuple[int, int, str]


def _position(row: repo.CompetitorRow, ranking_row: Row | None) -> _Position:
    """Where a tracked competitor is listed."""
    if ranking_row is None:
        return (1, 0, row.id)
    return (0, int(ranking_row["rank"]), row.id)


def _follows(position: _Position, after: _Position) -> bool:
    """Whether ``position`` comes after ``after`` (unranked ones run by id, descending)."""
    if position[0] != after[0]:
        return position[0] > after[0]
    if position[0] == 0:
        return position[1:] > after[1:]
    return position[2] < after[2]


def competitors(txn: Transaction, workspace_id: str, page: PageRequest) -> Competitors:
    # Ranks live in the lake, tracking in the publishing store: the workspace's tracked
    # competitors (a handful) are read whole, ranked, and cut into pages here.
    rows = repo.live_competitors(txn.cur, workspace_id)
    cur = txn.analytics
    rankings = repo.competitor_rankings(cur, workspace_id, rows)
    placed = [(_position(r, rankings.get(r.id)), r) for r in rows]
    ranked = sorted((t for t in placed if t[0][0] == 0), key=lambda t: t[0])
    unranked = sorted((t for t in placed if t[0][0] == 1), key=lambda t: t[0], reverse=True)
    ordered = ranked + unranked
    after = page.after
    if after is not None:
        try:
            mark: _Position = (int(after[0]), int(after[1]), str(after[2]))
        except (TypeError, ValueError, IndexError) as exc:
            raise ValidationFailed.on(
                "cursor", "invalid", "The cursor is not one this endpoint issued."
            ) from exc
        ordered = [t for t in ordered if _follows(t[0], mark)]
    baseline = _Baseline(txn, workspace_id)
    found = page.page(
        ordered[: page.fetch],
        lambda t: _competitor_out(t[1], rankings.get(t[1].id), baseline),
        lambda t: list(t[0]),
    )
    scope = provenance_repo.Scope(
        workspace_id, kinds=("competitor",), source_days=definitions.RANKING_DAYS
    )
    return Competitors(
        items=found.items,
        pagination=found.pagination,
        snapshot=read_snapshot(cur, ["mart_creator_rankings", "mart_post_daily"]),
        provenance=kept_provenance(txn, scope, definitions.COMPETITORS),
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
    baseline = _Baseline(txn, workspace_id)
    return _competitor_out(row, rankings.get(competitor_id), baseline)


def untrack_competitor(cur: Cursor, workspace_id: str, competitor_id: str) -> Deleted:
    if not repo.untrack_competitor(cur, workspace_id, competitor_id):
        raise NotFound.resource("competitor", competitor_id)
    return Deleted(id=competitor_id)


# -- a post's own analytics --------------------------------------------------------------------


def _per_post(rows: list[Row]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each platform-side post's counters summed over its rows."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        acc = found.setdefault(
            (row["platform"], row["external_id"]),
            {"platform": row["platform"], **dict.fromkeys(COUNTERS, 0)},
        )
        for c in COUNTERS:
            acc[c] += int(row[c])
    return found


def _totals(rows: list[Row]) -> PostTotals:
    """Summed counters and the rate over the posts with its basis (as a unified total)."""
    posts = _per_post(rows)
    sums = {c: sum(int(r[c]) for r in rows) for c in COUNTERS}
    by_platform = [
        {"platform": name, **rates.post_sums(p for p in posts.values() if p["platform"] == name)}
        for name in sorted({p["platform"] for p in posts.values()})
    ]
    measured = rates.measure({**sums, **rates.post_sums(posts.values())}, parts=by_platform)
    return PostTotals(
        **sums,
        engagement_rate=measured.value,
        engagement_rate_basis=measured.basis,
        engagement_rate_coverage=measured.coverage,
    )


def _day_point(row: Row, basis: rates.RateBasis | None) -> DayPoint:
    measured = rates.measure(row, basis=basis)
    return DayPoint(
        day=datetime.combine(row["day"], time(), tzinfo=UTC),
        **{c: int(row[c]) for c in COUNTERS},
        engagement_rate=measured.value,
        engagement_rate_basis=measured.basis,
    )


def post_analytics(txn: Transaction, workspace_id: str, post_id: str) -> PostAnalytics:
    post = posts_repo.get_post(txn.cur, workspace_id, post_id)
    if post is None:
        raise NotFound.resource("post", post_id)
    destinations = posts_repo.destinations_of(txn.cur, [post_id])[post_id]
    cur = txn.analytics
    rows = repo.post_daily(cur, workspace_id, post_id)
    groups: dict[tuple[str, str | None, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row["platform"], row["account_id"], row["external_id"]), []).append(row)
    described = repo.post_descriptions(
        cur,
        workspace_id,
        sorted(
            {(key[0], key[2]) for key in groups}
            | {(d.platform, d.platform_post_id) for d in destinations if d.platform_post_id}
        ),
    )

    def names(
        platform: str, external_ids: list[str], permalink: str | None, fallback: str
    ) -> dict[str, Any]:
        """The post as the platform describes it, else as we wrote it (our text, our link)."""
        read = next(
            (described[(platform, e)] for e in external_ids if (platform, e) in described), None
        )
        ours = post_label(post.text, fallback)
        if read is None:
            return {"label": ours, "url": link(permalink), "thumbnail_url": None}
        return {
            "label": post_label(read["post_text"], ours),
            "url": link(read["post_url"]) or link(permalink),
            "thumbnail_url": link(read["post_thumbnail_url"]),
        }

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
        ids = [e for e in [dest.platform_post_id, *(key[2] for key in mine)] if e]
        out.append(
            DestinationAnalytics(
                destination_id=dest.id,
                account_id=dest.account_id,
                platform=dest.platform,
                platform_post_id=dest.platform_post_id,
                **names(dest.platform, ids, dest.platform_url, dest.platform_post_id or post_id),
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
                **names(key[0], [key[2]], None, key[2]),
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
    read = tuple(sorted({d.platform_post_id for d in out if d.platform_post_id}))
    scope = provenance_repo.Scope(workspace_id, posts=read) if read else None
    return PostAnalytics(
        post_id=post_id,
        totals=_totals(rows),
        destinations=out,
        snapshot=snapshot,
        provenance=kept_provenance(txn, scope, definitions.POST),
    )


def _daily(rows: list[Row]) -> list[DayPoint]:
    """One point per day (a destination's platform-side posts summed), rated as its totals."""
    posts = _per_post(rows)
    basis = rates.basis_of(
        sum(p["impressions"] for p in posts.values()), sum(p["views"] for p in posts.values())
    )
    covered = {key for key, p in posts.items() if basis is not None and p[basis] > 0}
    by_day: dict[date, dict[str, Any]] = {}
    for row in rows:
        acc = by_day.setdefault(
            row["day"], {"day": row["day"], **dict.fromkeys((*COUNTERS, *repo.COVERAGE), 0)}
        )
        for c in COUNTERS:
            acc[c] += int(row[c])
        if (row["platform"], row["external_id"]) in covered:
            acc[f"cov_eng_{basis}"] += int(row["engagements"])
    return [_day_point(by_day[d], basis) for d in sorted(by_day)]
