"""Analytics: reads over the marts (unified, insights, trends, rankings) and tracked competitors.

Every read is bounded by the workspace and, where the mart is per day or hour, by the
requested range, and aggregates in SQL so that a response costs the range, not the history.
The marts are written by the Dagster assets in pipelines/; these reads see the last
committed version of each (DuckDB's MVCC) and never wait for a run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, TypeVar, cast

from warehouse import buckets, resources
from warehouse.ids import new_id, utcnow
from warehouse.reads import newest_first, select_row, select_rows
from warehouse.rows import Cursor, Row, TableRow, fetch_all, fetch_one
from warehouse.store import Transaction
from warehouse.workspaces import AccountRow

T = TypeVar("T")
Granularity = buckets.Granularity
Basis = Literal["activity", "published"]
GroupBy = Literal["total", "platform", "account"]

# The additive counters every unified mart carries, in the order the API shows them.
COUNTERS = (
    "impressions",
    "reach",
    "views",
    "likes",
    "comments",
    "shares",
    "saves",
    "clicks",
    "engagements",
)
_SUMS = ", ".join(f"sum({c})::BIGINT AS {c}" for c in COUNTERS)
_COALESCED = ", ".join(f"coalesce(p.{c}, 0)::BIGINT AS {c}" for c in COUNTERS)


@dataclass(frozen=True)
class UnifiedFilter:
    """What a unified read covers: the workspace, its buckets, a basis, a grouping, narrowing."""

    workspace_id: str
    start: datetime  # naive UTC, inclusive: the first bucket's start
    end: datetime  # naive UTC, exclusive
    platform: str | None
    account_id: str | None
    granularity: Granularity
    basis: Basis = "activity"
    group_by: GroupBy = "account"
    # The buckets' boundaries, naive UTC: bucket i is [edges[i], edges[i + 1]). Left empty:
    # the UTC days (or hours) from ``start`` to the first boundary at or after ``end``.
    edges: tuple[datetime, ...] = ()

    def __post_init__(self) -> None:
        if not self.edges:
            found = buckets.edges(
                self.start.replace(tzinfo=UTC),
                self.end.replace(tzinfo=UTC),
                self.granularity,
                buckets.zone("UTC"),
            )
            object.__setattr__(self, "edges", tuple(e.replace(tzinfo=None) for e in found))

    @property
    def first_day(self) -> date:
        """The UTC day of the first bucket's start."""
        return self.edges[0].date()

    @property
    def last_day(self) -> date:
        """The UTC day holding the last instant of the last bucket."""
        return (self.edges[-1] - timedelta(microseconds=1)).date()

    @property
    def split_days(self) -> tuple[date, ...]:
        """The UTC days a bucket boundary cuts (off midnight): read by the hour, the rest by day."""
        return tuple(sorted({e.date() for e in self.edges if e.time() != time()}))

    def whole_days(self) -> bool:
        """Whether a UTC day of the range lies wholly in one bucket (read from the daily mart)."""
        return len(self.split_days) < (self.last_day - self.first_day).days + 1

    def reading_times(self) -> tuple[list[datetime], list[datetime]]:
        """Each instant a growth row of the range is dated at, and its bucket's start.

        A whole day's row is dated at its midnight, a cut day's at its hours' starts: an hour
        counts in the bucket holding its start.
        """
        split = set(self.split_days)
        edges, start, end = self.edges, self.edges[0], self.edges[-1]
        times: list[datetime] = []
        day = self.first_day
        while day <= self.last_day:
            midnight = datetime.combine(day, time())
            if day in split:
                times.extend(
                    h
                    for h in (midnight + timedelta(hours=i) for i in range(24))
                    if start <= h < end
                )
            else:
                times.append(midnight)
            day += timedelta(days=1)
        return times, [edges[buckets.bucket_of(t, edges)] for t in times]

    def cache_key(self) -> tuple[Any, ...]:
        """What the reads depend on."""
        narrow = (self.platform, self.account_id, self.granularity, self.basis, self.group_by)
        return (self.workspace_id, *narrow, self.edges)

    def _bounds(self) -> list[Any]:
        return [self.workspace_id, self.first_day, self.last_day]

    def _narrow(self) -> list[Any]:
        return [self.platform, self.platform, self.account_id, self.account_id]


class SnapshotCache:
    """Mart reads remembered while the marts are unchanged (an LRU of ``size`` entries).

    Every pipeline write to a mart upserts its ``mart_snapshots`` rows with a new
    ``computed_at`` in the same transaction (warehouse/marts/scripts.py), so the table's newest
    ``computed_at``, row count and summed rows identify the marts' version, and a read
    keyed by it returns what the query would. The version is read in the request's own
    transaction, and only when the store's change token moved since it was last read
    (warehouse/changes.py): a dashboard polling an unchanged store touches no table at all,
    and after any write elsewhere (a post, an inbox sync) it pays one small query, not the
    aggregate (murmur bench: unified analytics on 100k posts, ~100 ms of DuckDB CPU).
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._computing: dict[Hashable, threading.Lock] = {}
        self._checked: tuple[bytes, tuple[Any, ...]] | None = None

    @staticmethod
    def _read_version(cur: Cursor) -> tuple[Any, ...]:
        cur.execute("SELECT max(computed_at), count(*), sum(rows), max(run_id) FROM mart_snapshots")
        found = cur.fetchone()
        return tuple(found) if found else ()

    def version(self, txn: Transaction) -> tuple[Any, ...]:
        """The marts' version as ``txn`` sees it, re-read only when the change token moved.

        A read ``as_of`` a past snapshot (``txn.as_of``) is keyed by that snapshot's id, which
        names one immutable lake: no statement, and neither it nor the newest version's
        entries and check (the token's) stand for the other.
        """
        if txn.as_of is not None:
            return ("lake_snapshot", txn.as_of.id)
        with self._lock:
            checked = self._checked
        if checked is not None and checked[0] == txn.token:
            return checked[1]
        found = self._read_version(txn.analytics)
        with self._lock:
            self._checked = (txn.token, found)
        return found

    def value(self, txn: Transaction, key: Hashable, compute: Callable[[Cursor], T]) -> T:
        """``compute(cur)``, remembered under ``key`` and the marts' version (read-only)."""
        full = (key, self.version(txn))
        with self._lock:
            if full in self._entries:
                self._entries.move_to_end(full)
                return cast("T", self._entries[full])
        # One computation per key at a time: 32 dashboards asking at once after a pipeline
        # run would otherwise all run the same aggregate (seen as a 2.6 s p99 in the bench).
        with self._lock:
            gate = self._computing.setdefault(full, threading.Lock())
        with gate:
            with self._lock:
                if full in self._entries:
                    return cast("T", self._entries[full])
            found = compute(txn.analytics)
            with self._lock:
                self._computing.pop(full, None)
                self._entries[full] = found
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return found

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._checked = None


cache = SnapshotCache()


# Own posts only: competitors' and creators' posts share these marts (kind) but are not ours.
_NARROW = (
    "workspace_id = ? AND kind = 'own' AND (? IS NULL OR platform = ?)"
    " AND (? IS NULL OR account_id = ?)"
)
_KEYS = "platform, account_external_id, account_id, external_id"
_COUNTER_COLS = ", ".join(COUNTERS)
_FS_SUMS = ", ".join(f"sum({c})::BIGINT AS fs_{c}" for c in COUNTERS)
_FS_COLS = ", ".join(f"f.fs_{c}" for c in COUNTERS)
# mart_account_daily with each day's newest reading (its partition's data_through): a day's
# follower figure is its last reading, dated at that reading's hour (23:00 UTC if unknown).
_ACCOUNT_DAYS = (
    "mart_account_daily LEFT JOIN (SELECT try_cast(partition_key AS DATE) AS day,"
    " date_trunc('hour', max(data_through)) AS newest FROM mart_snapshots"
    " WHERE mart = 'mart_account_daily' AND partition_key BETWEEN ? AND ? GROUP BY 1)"
    " USING (day)"
)
_EVER = ["0000-01-01", "9999-12-31"]  # every day partition's key lies between
_DATED = (
    "greatest(day::TIMESTAMP, least(day + INTERVAL 23 HOUR,"
    " coalesce(newest, day + INTERVAL 23 HOUR)))"
)


def _params(f: UnifiedFilter) -> list[Any]:
    """The bound values of ``_NARROW``."""
    return [f.workspace_id, f.platform, f.platform, f.account_id, f.account_id]


def _growth(f: UnifiedFilter) -> tuple[str, list[Any]]:
    """Own posts' growth rows of the range, each dated ``t`` (its day's or its hour's start).

    A UTC day wholly inside one bucket is read from the daily mart; a day a boundary cuts
    (another zone's midnight, an hour) from the hourly mart, by the hour.
    """
    split = list(f.split_days)
    parts: list[str] = []
    params: list[Any] = []
    if f.whole_days():
        parts.append(
            f"SELECT day::TIMESTAMP AS t, {_KEYS}, {_COUNTER_COLS} FROM mart_post_daily"  # noqa: S608
            f" WHERE {_NARROW} AND day BETWEEN ? AND ? AND NOT list_contains(?::DATE[], day)"
        )
        params += [*_params(f), f.first_day, f.last_day, split]
    if split:
        days = "" if not f.whole_days() else " AND day IN (SELECT unnest(?::DATE[]))"
        parts.append(
            f"SELECT hour AS t, {_KEYS}, {_COUNTER_COLS} FROM mart_post_hourly"  # noqa: S608
            f" WHERE {_NARROW} AND day BETWEEN ? AND ? AND hour >= ? AND hour < ?{days}"
        )
        params += [*_params(f), split[0], split[-1], f.edges[0], f.edges[-1]]
        params += [split] if days else []
    return " UNION ALL ".join(parts), params


def _first_seen(f: UnifiedFilter) -> tuple[str, list[Any]]:
    """First-seen readings of own posts in the range, dated at the reading."""
    return (
        f"SELECT captured_at AS t, {_KEYS}, {_COUNTER_COLS} FROM mart_post_first_seen"  # noqa: S608
        f" WHERE {_NARROW} AND day BETWEEN ? AND ? AND captured_at >= ? AND captured_at < ?",
        [*_params(f), f.first_day, f.last_day, f.edges[0], f.edges[-1]],
    )


def _accounts(f: UnifiedFilter, *, posts: bool) -> tuple[str, list[Any]]:
    """Own accounts' follower figures (and, with ``posts``, publications) dated ``t``, in range.

    Follower figures come from the daily account mart; publications from ``dim_posts``, each
    own post dated at its publication instant, so a post counts on its newest publication
    time whatever days the marts have rebuilt (docs/api/analytics.md).
    """
    sql = (
        f"SELECT {_DATED} AS t, platform, account_external_id, account_id,"  # noqa: S608
        f" followers, follower_growth, 0 AS posts FROM {_ACCOUNT_DAYS}"
        f" WHERE {_NARROW} AND day BETWEEN ? AND ?"
    )
    days = [f.first_day.isoformat(), f.last_day.isoformat()]
    params = [*days, *_params(f), f.first_day, f.last_day]
    if posts:
        # A post's account id is its account's (dim_accounts); a post's own kind decides
        # whether it is ours, as it does in the post marts.
        sql += (
            " UNION ALL SELECT published_at, platform, account_external_id, account_id,"  # noqa: S608 - constants
            " NULL, NULL, 1 FROM (SELECT p.published_at, p.platform, p.account_external_id,"
            " a.account_id, p.kind, p.workspace_id FROM dim_posts p LEFT JOIN dim_accounts a"
            " ON a.workspace_id = p.workspace_id AND a.platform = p.platform"
            " AND a.external_id = p.account_external_id"
            " WHERE p.workspace_id = ? AND p.published_at >= ? AND p.published_at < ?)"
            f" WHERE {_NARROW}"
        )
        params += [f.workspace_id, f.edges[0], f.edges[-1], *_params(f)]
    ranged = f"SELECT * FROM ({sql}) WHERE t >= ? AND t < ?"  # noqa: S608 - constants
    return ranged, [*params, f.edges[0], f.edges[-1]]


def _lifetimes(f: UnifiedFilter) -> tuple[str, list[Any]]:
    """Own posts published in the range: publication ``t`` and lifetime totals (their peaks).

    A post's lifetime is its first-seen total plus all its growth, read from the range's
    first day on (a post is read after it is published), whatever the range's end.
    """
    fs_sums = ", ".join(
        f"coalesce(sum({c}) FILTER (WHERE fs), 0)::BIGINT AS fs_{c}" for c in COUNTERS
    )
    sums = ", ".join(f"sum({c})::BIGINT AS {c}" for c in COUNTERS)
    rows = f"{_KEYS}, {_COUNTER_COLS}, day"
    sql = f"""
        SELECT p.published_at AS t, l.* FROM (
            SELECT platform, external_id,
                   arg_max(account_external_id, day) AS account_external_id,
                   arg_max(account_id, day) AS account_id, {sums}, {fs_sums},
                   bool_or(NOT fs) AS grew, bool_or(fs) AS seen_first
            FROM (
                SELECT {rows}, false AS fs FROM mart_post_daily SEMI JOIN pub
                    USING (platform, external_id) WHERE {_NARROW} AND day >= ?
                UNION ALL
                SELECT {rows}, true AS fs FROM mart_post_first_seen SEMI JOIN pub
                    USING (platform, external_id) WHERE {_NARROW} AND day >= ?
            )
            GROUP BY platform, external_id
        ) l JOIN pub p USING (platform, external_id)
    """  # noqa: S608 - only this module's constants are interpolated
    pub = (
        "pub AS (SELECT platform, external_id, published_at FROM dim_posts"
        " WHERE workspace_id = ? AND published_at >= ? AND published_at < ?"
        " AND (? IS NULL OR platform = ?))"
    )
    params = [f.workspace_id, f.edges[0], f.edges[-1], f.platform, f.platform]
    return f"{pub}, lp AS ({sql})", [*params, *_params(f), f.first_day, *_params(f), f.first_day]


def _per_account(table: str) -> str:
    """Follower figures and publications of ``table``'s rows, summed to one row per group."""
    return (
        "arg_max(followers, t) FILTER (WHERE followers IS NOT NULL) AS followers,"
        " sum(follower_growth) AS follower_growth, sum(posts) AS posts"
        f" FROM {table} GROUP BY ALL"
    )


_ACCOUNT_SUMS = (
    "sum(followers)::BIGINT AS followers, sum(follower_growth)::BIGINT AS follower_growth,"
    " sum(posts)::BIGINT AS posts"
)

# A rate's coverage (docs/api/analytics.md, "engagement_rate"): per basis, the engagements of
# the posts whose denominator is above 0 in the scope, how many posts those are, and how many
# posts with engagements lack it, so that a rate divides the engagements and the impressions
# (or views) of the same posts and says what it leaves out.
COVERAGE = (
    "cov_eng_impressions",
    "cov_eng_views",
    "cov_posts_impressions",
    "cov_posts_views",
    "cov_left_impressions",
    "cov_left_views",
)
_COVERAGE_COLS = ", ".join(f"coalesce(p.{c}, 0)::BIGINT AS {c}" for c in COVERAGE)


def _covered(impressions: str, views: str, *, posts: bool) -> str:
    """A grouping's coverage sums; ``impressions``/``views``: whether a row's post has them."""
    # with ``posts`` the rows are one per post, and the posts are counted too
    sums = ", ".join(
        f"coalesce(sum(engagements) FILTER (WHERE {has}), 0)::BIGINT AS cov_eng_{basis}"
        for basis, has in (("impressions", impressions), ("views", views))
    )
    if not posts:
        return sums
    counts = ", ".join(
        f"count(*) FILTER (WHERE {has}) AS cov_posts_{basis},"
        f" count(*) FILTER (WHERE NOT ({has}) AND engagements > 0) AS cov_left_{basis}"
        for basis, has in (("impressions", impressions), ("views", views))
    )
    return f"{sums}, {counts}"


def unified_by_platform(cur: Cursor, f: UnifiedFilter) -> list[Row]:
    """Per platform over the whole range: counters, first-seen totals, posts and followers."""
    accounts, account_params = _accounts(f, posts=f.basis == "activity")
    if f.basis == "published":
        lifetimes, params = _lifetimes(f)
        facts = f"""{lifetimes},
        p AS (
            SELECT platform, {_SUMS}, count(*) FILTER (WHERE grew) AS active_posts,
                   count(*) AS posts, {_covered("impressions > 0", "views > 0", posts=True)}
            FROM lp GROUP BY platform
        ),
        f AS (
            SELECT platform, {", ".join(f"sum(fs_{c})::BIGINT AS fs_{c}" for c in COUNTERS)},
                   count(*) FILTER (WHERE seen_first) AS fs_posts
            FROM lp GROUP BY platform
        )"""  # noqa: S608
        posts = "coalesce(p.posts, 0)"
    else:
        growth, growth_params = _growth(f)
        first_seen, fs_params = _first_seen(f)
        # per post first: a post's coverage is whether it has impressions (views) in the range
        facts = f"""g AS ({growth}),
        gp AS (SELECT platform, external_id, {_SUMS} FROM g GROUP BY platform, external_id),
        p AS (
            SELECT platform, {_SUMS}, count(*) AS active_posts,
                   {_covered("impressions > 0", "views > 0", posts=True)}
            FROM gp GROUP BY platform
        ),
        f AS (
            SELECT platform, {_FS_SUMS}, count(DISTINCT external_id) AS fs_posts
            FROM ({first_seen}) GROUP BY platform
        )"""  # noqa: S608
        params = [*growth_params, *fs_params]
        posts = "coalesce(a.posts, 0)"
    return fetch_all(
        cur,
        f"""
        WITH {facts},
        acct AS ({accounts}),
        per_account AS (SELECT platform, account_external_id, {_per_account("acct")}),
        a AS (SELECT platform, {_ACCOUNT_SUMS} FROM per_account GROUP BY platform)
        SELECT platform, {_COALESCED}, coalesce(p.active_posts, 0) AS active_posts,
               {posts} AS posts, a.followers, a.follower_growth, {_FS_COLS}, f.fs_posts,
               {_COVERAGE_COLS}
        FROM p FULL OUTER JOIN a USING (platform) FULL OUTER JOIN f USING (platform)
        ORDER BY platform
        """,  # noqa: S608 - only this module's constants are interpolated
        [*params, *account_params],
    )


_GROUPS: dict[str, list[str]] = {
    "total": [],
    "platform": ["platform"],
    "account": ["platform", "account_external_id"],
}


def unified_series(cur: Cursor, f: UnifiedFilter) -> list[Row]:
    """Per bucket and group (``f.group_by``) that has any row; the caller fills the gaps."""
    keys = ["bucket", *_GROUPS[f.group_by]]
    by = ", ".join(keys)
    accounts, account_params = _accounts(f, posts=f.basis == "activity")
    edges = (
        "edges AS (SELECT unnest(?::TIMESTAMP[]) AS bucket),"
        " placed AS (SELECT e.bucket, x.* FROM acct x ASOF JOIN edges e ON x.t >= e.bucket)"
    )
    if f.basis == "published":
        lifetimes, params = _lifetimes(f)
        facts = f"""{lifetimes},
        p AS (
            SELECT {by}, {_SUMS}, count(*) FILTER (WHERE grew) AS active_posts,
                   count(*) AS posts, {_covered("impressions > 0", "views > 0", posts=False)}
            FROM lp ASOF JOIN edges e ON lp.t >= e.bucket GROUP BY {by}
        )"""  # noqa: S608
        posts = "coalesce(p.posts, 0)"
    else:
        growth, params = _growth(f)
        times, starts = f.reading_times()
        # a post's coverage is over the whole range (as in the totals), not bucket by bucket
        facts = f"""g AS ({growth}),
        gc AS (
            SELECT *, sum(impressions) OVER post > 0 AS has_impressions,
                   sum(views) OVER post > 0 AS has_views
            FROM g WINDOW post AS (PARTITION BY platform, external_id)
        ),
        dated AS (SELECT unnest(?::TIMESTAMP[]) AS t, unnest(?::TIMESTAMP[]) AS bucket),
        p AS (
            SELECT {by}, {_SUMS}, count(DISTINCT external_id) AS active_posts,
                   {_covered("has_impressions", "has_views", posts=False)}
            FROM gc JOIN dated USING (t) GROUP BY {by}
        )"""  # noqa: S608
        params = [*params, times, starts]
        posts = "coalesce(a.posts, 0)"
    return fetch_all(
        cur,
        f"""
        WITH acct AS ({accounts}), {edges}, {facts},
        per_account AS (SELECT bucket, platform, account_external_id, {_per_account("placed")}),
        a AS (SELECT {by}, {_ACCOUNT_SUMS} FROM per_account GROUP BY {by})
        SELECT {by}, {_COALESCED}, coalesce(p.active_posts, 0) AS active_posts,
               {posts} AS posts, a.followers, a.follower_growth,
               coalesce(p.cov_eng_impressions, 0)::BIGINT AS cov_eng_impressions,
               coalesce(p.cov_eng_views, 0)::BIGINT AS cov_eng_views
        FROM p FULL OUTER JOIN a USING ({by})
        ORDER BY {by}
        """,  # noqa: S608 - only this module's constants are interpolated
        [*account_params, list(f.edges[:-1]), *params],
    )


def unified_spans(cur: Cursor, f: UnifiedFilter) -> list[Row]:
    """Each own account's first and newest reading, and its first publication (any range).

    Readings: growth rows (dated at their hour), first-seen readings and follower figures
    (dated as in ``_accounts``). A series fills with 0 only between them (docs/api/analytics.md).
    """
    first_published = (
        "SELECT platform, account_external_id, min(published_at) AS first_published"
        " FROM dim_posts WHERE workspace_id = ? AND kind = 'own' AND (? IS NULL OR platform = ?)"
        " GROUP BY ALL"
        if f.basis == "published"
        else "SELECT NULL::VARCHAR AS platform, NULL::VARCHAR AS account_external_id,"
        " NULL::TIMESTAMP AS first_published WHERE false"
    )
    published_params = [f.workspace_id, f.platform, f.platform] if f.basis == "published" else []
    return fetch_all(
        cur,
        f"""
        WITH g AS (
            SELECT platform, account_external_id, max(account_id) AS account_id,
                   min(day) AS d0, max(day) AS d1
            FROM mart_post_daily WHERE {_NARROW} GROUP BY platform, account_external_id
        ),
        -- the hour of the first and of the newest growth reading, on those days only
        h AS (
            SELECT h.platform, h.account_external_id,
                   min(h.hour) FILTER (WHERE h.day = g.d0) AS first_at,
                   max(h.hour) FILTER (WHERE h.day = g.d1) AS last_at
            FROM mart_post_hourly h JOIN g ON h.platform = g.platform
                 AND h.account_external_id = g.account_external_id
                 AND (h.day = g.d0 OR h.day = g.d1)
            WHERE h.workspace_id = ? AND h.kind = 'own'
              AND h.day IN (SELECT d0 FROM g UNION SELECT d1 FROM g)
            GROUP BY h.platform, h.account_external_id
        ),
        readings AS (
            SELECT platform, account_external_id, account_id,
                   coalesce(h.first_at, g.d0::TIMESTAMP) AS first_at,
                   coalesce(h.last_at, g.d1 + INTERVAL 23 HOUR) AS last_at
            FROM g LEFT JOIN h USING (platform, account_external_id)
            UNION ALL
            SELECT platform, account_external_id, max(account_id), min(captured_at),
                   max(captured_at)
            FROM mart_post_first_seen WHERE {_NARROW} GROUP BY platform, account_external_id
            UNION ALL
            SELECT platform, account_external_id, max(account_id), min({_DATED}),
                   max({_DATED})
            FROM {_ACCOUNT_DAYS} WHERE {_NARROW} AND followers IS NOT NULL
            GROUP BY platform, account_external_id
        ),
        spans AS (
            SELECT platform, account_external_id, max(account_id) AS account_id,
                   min(first_at) AS first_at, max(last_at) AS last_at
            FROM readings GROUP BY platform, account_external_id
        )
        SELECT s.*, fp.first_published
        FROM spans s LEFT JOIN ({first_published}) fp USING (platform, account_external_id)
        ORDER BY platform, account_external_id
        """,  # noqa: S608 - only this module's constants are interpolated
        [*_params(f), f.workspace_id, *_params(f), *_EVER, *_params(f), *published_params],
    )


# How far before a range the series looks for each account's previous reading: the interval
# a range's first read bucket covers (``covers_from``) starts there, or is unknown.
READING_LOOKBACK_DAYS = 35


@dataclass(frozen=True)
class Readings:
    """When a series' groups were read, besides their growth rows (docs: *0 and null*)."""

    # (bucket, platform, account_external_id) of the buckets holding a first-seen reading,
    # None above the grouping's level
    first_seen: frozenset[tuple[datetime, str | None, str | None]]
    # each own account's newest reading before the range (in the look-back), naive UTC
    previous: dict[tuple[str, str], datetime]


def unified_readings(cur: Cursor, f: UnifiedFilter, *, followers: bool) -> Readings:
    """The first-seen readings of the range per bucket and group, and each account's newest
    reading before the range (growth, first-seen and, with ``followers``, follower figures)."""
    group = _GROUPS[f.group_by]
    cols = ", ".join(
        [f"fs.{c}" if c in group else f"NULL::VARCHAR AS {c}" for c in _GROUPS["account"]]
    )
    first_seen, fs_params = _first_seen(f)
    placed = fetch_all(
        cur,
        f"WITH edges AS (SELECT unnest(?::TIMESTAMP[]) AS bucket), fs AS ({first_seen})"  # noqa: S608 - constants
        f" SELECT DISTINCT e.bucket, {cols} FROM fs ASOF JOIN edges e ON fs.t >= e.bucket",
        [list(f.edges[:-1]), *fs_params],
    )
    start, first_day = f.edges[0], f.first_day
    since = first_day - timedelta(days=READING_LOOKBACK_DAYS)
    # the day of each account's newest growth before the range's first day (the daily rollup),
    # then its hour from the hourly mart on those days only
    days = fetch_all(
        cur,
        "SELECT platform, account_external_id, max(day) AS day FROM mart_post_daily"  # noqa: S608 - constants
        f" WHERE {_NARROW} AND day >= ? AND day < ? GROUP BY ALL",
        [*_params(f), since, first_day],
    )
    earliest = min((r["day"] for r in days), default=first_day)
    found = fetch_all(
        cur,
        f"""
        SELECT platform, account_external_id, max(hour) AS at FROM mart_post_hourly
        WHERE {_NARROW} AND day BETWEEN ? AND ? AND hour < ? GROUP BY ALL
        UNION ALL
        SELECT platform, account_external_id, max(captured_at) FROM mart_post_first_seen
        WHERE {_NARROW} AND day BETWEEN ? AND ? AND captured_at < ? GROUP BY ALL
        UNION ALL
        SELECT platform, account_external_id, max({_DATED}) FROM {_ACCOUNT_DAYS}
        WHERE ? AND {_NARROW} AND followers IS NOT NULL AND day BETWEEN ? AND ?
          AND {_DATED} < ?
        GROUP BY ALL
        """,  # noqa: S608 - only this module's constants are interpolated
        [
            *_params(f),
            earliest,
            first_day,
            start,
            *_params(f),
            since,
            first_day,
            start,
            since.isoformat(),
            first_day.isoformat(),
            followers,
            *_params(f),
            since,
            first_day,
            start,
        ],
    )
    previous: dict[tuple[str, str], datetime] = {}
    for r in found:
        key = (r["platform"], r["account_external_id"])
        if r["at"] is not None and (key not in previous or previous[key] < r["at"]):
            previous[key] = r["at"]
    return Readings(
        frozenset((r["bucket"], r["platform"], r["account_external_id"]) for r in placed),
        previous,
    )


# -- snapshots ---------------------------------------------------------------------------------


def snapshot(
    cur: Cursor, marts: list[str], first_day: date | None = None, last_day: date | None = None
) -> Row:
    """The newest computation and data of ``marts`` (their day partitions in the range, if any)."""
    found = fetch_one(
        cur,
        """
        SELECT max(computed_at) AS computed_at, max(data_through) AS data_through,
               count(*) AS partitions
        FROM mart_snapshots
        WHERE list_contains(?, mart)
          AND (?::DATE IS NULL OR partition_key = 'all'
               OR try_cast(left(partition_key, 10) AS DATE) BETWEEN ? AND ?)
        """,
        [marts, first_day, first_day, last_day],
    )
    assert found is not None
    return found


# -- viral trends ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrendFilter:
    entity_type: str | None
    status: str | None
    platform: str | None
    min_score: float | None
    day: date | None = None  # the judged window ending that UTC day; None: the newest


# What names a post or an account on a page of a list (domain/analytics/service.py makes the
# label): the dimensions joined to the page's rows only. A label needs the text's first line:
# the first LABEL_TEXT characters are read, not a whole caption or description.
LABEL_TEXT = 1000
_POST_NAMES = (
    f"left(p.text, {LABEL_TEXT}) AS post_text, p.url AS post_url,"
    " p.thumbnail_url AS post_thumbnail_url"
)
_ACCOUNT_NAMES = (
    "a.handle AS account_handle, a.display_name AS account_display_name,"
    " a.url AS account_url, a.thumbnail_url AS account_thumbnail_url"
)


def list_viral_trends(
    cur: Cursor, workspace_id: str, f: TrendFilter, after: list[Any] | None, limit: int
) -> list[Row]:
    """The trends of one judged window, after ``after``: rising or peaking before declining
    (``falling`` 0, then 1), then by score (desc), entity and id.

    The window is the newest judged, or with ``f.day`` the newest ending in that UTC day (its
    last instant in it). A post's row carries its description (``post_text``, ``post_url``,
    ``post_thumbnail_url``).
    """
    position = list(after) if after and len(after) == 4 else [None] * 4
    return fetch_all(
        cur,
        f"""
        WITH judged AS (
            SELECT max(window_end) AS window_end FROM mart_viral_trends
            WHERE workspace_id = ?
              AND (?::DATE IS NULL OR (window_end > ?::DATE
                                       AND window_end <= ?::DATE + INTERVAL 1 DAY))
        ),
        listed AS (
            SELECT t.*, 'trd_' || left(md5(concat_ws('|', entity_type, entity,
                                                      coalesce(platform, ''))), 24) AS id,
                   CASE WHEN status = 'declining' THEN 1 ELSE 0 END AS falling
            FROM mart_viral_trends t JOIN judged USING (window_end)
            WHERE t.workspace_id = ?
              AND (? IS NULL OR entity_type = ?) AND (? IS NULL OR platform = ?)
              AND (? IS NULL OR status = ?) AND (?::DOUBLE IS NULL OR score >= ?)
        ),
        page AS (
            SELECT * FROM listed
            WHERE ?::INTEGER IS NULL OR falling > ?
               OR (falling = ? AND (score < ? OR (score = ? AND (entity, id) > (?, ?))))
            ORDER BY falling, score DESC, entity, id
            LIMIT ?
        )
        SELECT page.*, {_POST_NAMES}
        FROM page
        LEFT JOIN dim_posts p
          ON page.entity_type = 'post' AND p.workspace_id = page.workspace_id
         AND p.platform = page.platform AND p.external_id = page.entity
        ORDER BY page.falling, page.score DESC, page.entity, page.id
        """,  # noqa: S608 - only this module's constants are interpolated
        [
            workspace_id,
            f.day,
            f.day,
            f.day,
            workspace_id,
            f.entity_type,
            f.entity_type,
            f.platform,
            f.platform,
            f.status,
            f.status,
            f.min_score,
            f.min_score,
            position[0],
            position[0],
            position[0],
            position[1],
            position[1],
            position[2],
            position[3],
            limit,
        ],
    )


# -- insights ----------------------------------------------------------------------------------


def account_external_ids(cur: Cursor, account: AccountRow) -> list[str]:
    """Every platform-side id the marts may know a connected account by, its own first."""
    cur.execute(
        "SELECT DISTINCT account_external_id FROM mart_account_daily"
        " WHERE workspace_id = ? AND account_id = ? AND account_external_id <> ?"
        " ORDER BY account_external_id",
        [account.workspace_id, account.id, account.external_id],
    )
    return [account.external_id, *(found for (found,) in cur.fetchall())]


def list_insights(
    cur: Cursor,
    workspace_id: str,
    *,
    kind: str | None,
    platform: str | None,
    external_ids: list[str] | None,
    after: list[Any] | None,
    limit: int,
) -> list[Row]:
    """Insights by score (desc) then a content-derived id, after ``after``.

    Each row carries the description of the post a top-content insight names (its evidence's
    ``external_id``) and of the account the insight is about, where the dimensions know them.
    """
    position = after or [None, None]
    return fetch_all(
        cur,
        f"""
        WITH ins AS (
            SELECT *, 'ins_' || left(md5(concat_ws('|', kind, coalesce(platform, ''),
                   coalesce(account_external_id, ''), title, body)), 24) AS id
            FROM mart_insights
            WHERE workspace_id = ? AND (? IS NULL OR kind = ?) AND (? IS NULL OR platform = ?)
              AND (?::VARCHAR[] IS NULL OR list_contains(?, account_external_id))
        ),
        page AS (
            SELECT * FROM ins
            WHERE (?::DOUBLE IS NULL OR score < ? OR (score = ? AND id > ?))
            ORDER BY score DESC, id
            LIMIT ?
        )
        SELECT page.*, json_extract_string(page.evidence, '$.external_id') AS post_external_id,
               {_POST_NAMES}, {_ACCOUNT_NAMES}
        FROM page
        LEFT JOIN dim_posts p
          ON page.kind = 'top_content' AND p.workspace_id = page.workspace_id
         AND p.platform = page.platform
         AND p.external_id = json_extract_string(page.evidence, '$.external_id')
        LEFT JOIN dim_accounts a
          ON a.workspace_id = page.workspace_id AND a.platform = page.platform
         AND a.external_id = page.account_external_id
        ORDER BY page.score DESC, page.id
        """,  # noqa: S608 - only this module's constants are interpolated
        [
            workspace_id,
            kind,
            kind,
            platform,
            platform,
            external_ids,
            external_ids,
            position[0],
            position[0],
            position[0],
            position[1],
            limit,
        ],
    )


# -- creator rankings and competitors ----------------------------------------------------------


def list_creators(
    cur: Cursor,
    workspace_id: str,
    *,
    platform: str | None,
    category: str | None,
    after: list[Any] | None,
    limit: int,
) -> list[Row]:
    """The latest ranking of each creator, by rank, after ``after``, with its account's names."""
    position = after or [None, None, None]
    return fetch_all(
        cur,
        f"""
        WITH latest AS (
            SELECT * FROM mart_creator_rankings
            WHERE workspace_id = ? AND kind = 'creator'
              AND (? IS NULL OR platform = ?)
            QUALIFY row_number() OVER (PARTITION BY platform, account_external_id
                                       ORDER BY computed_at DESC) = 1
        ),
        page AS (
            SELECT * FROM latest
            WHERE (? IS NULL OR lower(category) = lower(?))
              AND (?::INTEGER IS NULL
                   OR (rank, platform, account_external_id) > (?::INTEGER, ?, ?))
            ORDER BY rank, platform, account_external_id
            LIMIT ?
        )
        SELECT page.*, {_ACCOUNT_NAMES}
        FROM page
        LEFT JOIN dim_accounts a
          ON a.workspace_id = page.workspace_id AND a.platform = page.platform
         AND a.external_id = page.account_external_id
        ORDER BY page.rank, page.platform, page.account_external_id
        """,  # noqa: S608 - only this module's constants are interpolated
        [
            workspace_id,
            platform,
            platform,
            category,
            category,
            position[0],
            position[0],
            position[1],
            position[2],
            limit,
        ],
    )


def normalize_handle(handle: str) -> str:
    """How handles compare: without a leading @, case-insensitively."""
    return handle.strip().lstrip("@").lower()


@dataclass(frozen=True, slots=True)
class CompetitorRow(TableRow):
    """An account of another brand the workspace tracks."""

    TABLE = "tracked_competitors"

    id: str
    workspace_id: str
    platform: str
    handle: str
    created_at: datetime
    deleted_at: datetime | None


def list_competitors(
    cur: Cursor, workspace_id: str, after: str | None, limit: int
) -> list[CompetitorRow]:
    """Live tracked competitors, newest first, after the keyset cursor ``after``."""
    terms = [("workspace_id = ?", workspace_id)]
    return newest_first(
        cur, CompetitorRow, terms, after=after, limit=limit, always="deleted_at IS NULL"
    )


def live_competitors(cur: Cursor, workspace_id: str) -> list[CompetitorRow]:
    """Every live tracked competitor of the workspace (a list in rank order is sorted whole)."""
    return select_rows(
        cur,
        CompetitorRow,
        "WHERE workspace_id = ? AND deleted_at IS NULL ORDER BY id DESC",
        [workspace_id],
    )


def competitor_rankings(
    cur: Cursor, workspace_id: str, competitors: list[CompetitorRow]
) -> dict[str, Row]:
    """Each tracked competitor's latest ranking row (by platform and handle) and account names."""
    if not competitors:
        return {}
    found = fetch_all(
        cur,
        f"""
        WITH t AS (SELECT unnest(?::VARCHAR[]) AS id, unnest(?::VARCHAR[]) AS platform,
                          unnest(?::VARCHAR[]) AS handle)
        SELECT t.id AS tracked_id, r.*, {_ACCOUNT_NAMES}
        FROM t
        JOIN mart_creator_rankings r
          ON r.workspace_id = ? AND r.platform = t.platform
         AND lower(ltrim(r.handle, '@')) = lower(ltrim(t.handle, '@'))
        LEFT JOIN dim_accounts a
          ON a.workspace_id = r.workspace_id AND a.platform = r.platform
         AND a.external_id = r.account_external_id
        QUALIFY row_number() OVER (PARTITION BY t.id
                ORDER BY (r.kind = 'competitor') DESC, r.computed_at DESC) = 1
        """,  # noqa: S608 - only this module's constants are interpolated
        [
            [c.id for c in competitors],
            [c.platform for c in competitors],
            [c.handle for c in competitors],
            workspace_id,
        ],
    )
    return {row["tracked_id"]: row for row in found}


def newest_own_day(cur: Cursor, workspace_id: str) -> date | None:
    """The newest UTC day of our own posts' growth: where the benchmark's window ends."""
    found = fetch_one(
        cur,
        "SELECT max(day) AS day FROM mart_post_daily WHERE workspace_id = ? AND kind = 'own'",
        [workspace_id],
    )
    return None if found is None else found["day"]


def own_followers(cur: Cursor, workspace_id: str) -> list[Row]:
    """The latest follower count of each own account, summed per platform."""
    return fetch_all(
        cur,
        """
        SELECT platform, sum(followers)::BIGINT AS followers FROM (
            SELECT platform, account_external_id, arg_max(followers, day) AS followers
            FROM mart_account_daily
            WHERE workspace_id = ? AND kind = 'own' AND followers IS NOT NULL
            GROUP BY ALL
        ) GROUP BY platform
        """,
        [workspace_id],
    )


def find_live_competitor(
    cur: Cursor, workspace_id: str, platform: str, handle: str
) -> CompetitorRow | None:
    return select_row(
        cur,
        CompetitorRow,
        "WHERE workspace_id = ? AND platform = ?"
        " AND lower(ltrim(handle, '@')) = ? AND deleted_at IS NULL",
        [workspace_id, platform, normalize_handle(handle)],
    )


def get_live_competitor(cur: Cursor, workspace_id: str, competitor_id: str) -> CompetitorRow | None:
    return resources.get(cur, CompetitorRow, workspace_id, competitor_id)


def insert_competitor(cur: Cursor, workspace_id: str, platform: str, handle: str) -> str:
    competitor_id = new_id("cmp")
    cur.execute(
        "INSERT INTO tracked_competitors (id, workspace_id, platform, handle, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [competitor_id, workspace_id, platform, handle, utcnow()],
    )
    return competitor_id


def untrack_competitor(cur: Cursor, workspace_id: str, competitor_id: str) -> bool:
    cur.execute(
        "UPDATE tracked_competitors SET deleted_at = ? WHERE workspace_id = ? AND id = ?"
        " AND deleted_at IS NULL RETURNING id",
        [utcnow(), workspace_id, competitor_id],
    )
    return cur.fetchone() is not None


# -- a post's own analytics --------------------------------------------------------------------


def post_daily(cur: Cursor, workspace_id: str, post_id: str) -> list[Row]:
    """Every daily mart row of one of our posts, per platform-side post, oldest day first."""
    return fetch_all(
        cur,
        f"""
        SELECT day, platform, account_id, account_external_id, external_id, {_SUMS}
        FROM mart_post_daily
        WHERE workspace_id = ? AND post_id = ?
        GROUP BY day, platform, account_id, account_external_id, external_id
        ORDER BY platform, account_id, external_id, day
        """,  # noqa: S608 - only this module's constants are interpolated
        [workspace_id, post_id],
    )


def post_descriptions(
    cur: Cursor, workspace_id: str, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], Row]:
    """The descriptions of these platform-side posts (platform, external id) the dims know."""
    if not keys:
        return {}
    found = fetch_all(
        cur,
        f"""
        WITH k AS (SELECT unnest(?::VARCHAR[]) AS platform, unnest(?::VARCHAR[]) AS external_id)
        SELECT p.platform, p.external_id, {_POST_NAMES}
        FROM k
        JOIN dim_posts p
          ON p.workspace_id = ? AND p.platform = k.platform AND p.external_id = k.external_id
        """,  # noqa: S608 - only this module's constants are interpolated
        [[k[0] for k in keys], [k[1] for k in keys], workspace_id],
    )
    return {(row["platform"], row["external_id"]): row for row in found}


def post_days(cur: Cursor, workspace_id: str, post_id: str) -> Row:
    """The first and last day a post has mart rows (bounds its snapshot)."""
    found = fetch_one(
        cur,
        "SELECT min(day) AS first_day, max(day) AS last_day FROM mart_post_daily"
        " WHERE workspace_id = ? AND post_id = ?",
        [workspace_id, post_id],
    )
    assert found is not None
    return found
