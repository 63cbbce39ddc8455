"""Publishing reliability's SQL: the destinations' own rows counted, stuck claims, expiring tokens.

Every figure is read from the publishing tables as they are now (``post_destinations`` and
their ``posts``: scheduled time, status, ``published_at``, ``attempts``, ``error_code``, the
claim's lease), never from the lake. Counts are one aggregate; percentiles are exact
nearest-rank values picked by window functions (``row_number``, ``count`` over a
partition), which SQLite and PostgreSQL both run: nothing is fetched but the ranks asked for.
Definitions: docs/api/analytics.md, "GET /analytics/publishing".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from warehouse.posts import LIVE, SETTLED, sql_in
from warehouse.rows import Cursor, ResultRow, fetch_rows
from warehouse.sql import given, seconds_between, typed

# The posts whose destinations fall due at their time: live (the worker's to claim) or
# settled. A draft, a post waiting for approval and a canceled one are not due.
DUE = sql_in(LIVE | SETTLED)
# Percentiles as whole percents (nearest rank: the value at rank ceil(p * n / 100)).
P50, P99 = 50, 99


@dataclass(frozen=True)
class Scope:
    """Which destinations: a workspace's posts due in [start, end) by ``now``, maybe narrowed."""

    workspace_id: str
    start: datetime  # naive UTC, inclusive: the post's scheduled_at
    end: datetime  # naive UTC, exclusive
    now: datetime  # naive UTC: a post due later is not due yet
    platform: str | None = None
    account_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupRow(ResultRow):
    """One account's destinations in scope, counted (its platform beside it)."""

    platform: str
    account_id: str
    due: int
    published: int
    on_time: int
    failed: int
    pending: int
    publishing: int
    retried: int
    stuck: int


@dataclass(frozen=True, slots=True)
class ReasonRow(ResultRow):
    """One account's failed destinations with one error class."""

    platform: str
    account_id: str
    reason: str
    failed: int


@dataclass(frozen=True, slots=True)
class RankRow(ResultRow):
    """A published destination's lateness with its ranks: overall, on its platform, account."""

    platform: str
    account_id: str
    late: float
    rank_all: int
    count_all: int
    rank_platform: int
    count_platform: int
    rank_account: int
    count_account: int


@dataclass(frozen=True, slots=True)
class StuckRow(ResultRow):
    """A destination held by a claim past twice its lease."""

    id: str
    post_id: str
    workspace_id: str
    platform: str
    account_id: str
    attempts: int
    claimed_by: str | None
    claimed_at: datetime
    lease_expires_at: datetime


@dataclass(frozen=True, slots=True)
class TokenRow(ResultRow):
    """A connected account whose token expires (or expired) by some time."""

    account_id: str
    workspace_id: str
    platform: str
    handle: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class CountedStuck(StuckRow):
    """The oldest stuck destination, and how many there are."""

    total: int


@dataclass(frozen=True, slots=True)
class CountedToken(TokenRow):
    """The soonest expiring token, how many expire by the horizon, how many already did."""

    total: int
    expired: int


# -- the predicates ----------------------------------------------------------------------------


def _late(cur: Cursor) -> str:
    """Seconds from the post's time to the destination's publication (its own row)."""
    return seconds_between(cur, "d.published_at", "p.scheduled_at")


def _stuck(cur: Cursor) -> str:
    """A destination publishing past twice its lease (two ``?``: now, now).

    Its lease is the one its worker claimed it with: ``lease_expires_at`` - the claim's time
    (the claim sets ``updated_at``, and nothing else writes the row while it is claimed), so
    a worker's own ``MURMUR_PUBLISHING_LEASE_SECONDS`` counts, whatever this process's is. It
    is stuck once its lease ran out more than one lease ago: no worker took it over.
    """
    waited = seconds_between(cur, typed(cur, "TIMESTAMP"), "d.lease_expires_at")
    lease = seconds_between(cur, "d.lease_expires_at", "d.updated_at")
    return f"(d.status = 'publishing' AND d.lease_expires_at < ? AND {waited} > {lease})"


def _scope(scope: Scope) -> tuple[str, list[Any]]:
    """FROM … WHERE of the scope's destinations, and its parameters."""
    optional, params = given(
        [("d.platform = ?", scope.platform), ("d.account_id = ?", scope.account_id)]
    )
    where = " AND ".join(
        [
            "p.workspace_id = ?",
            f"p.status IN {DUE}",
            "p.scheduled_at >= ?",
            "p.scheduled_at < ?",
            "p.scheduled_at <= ?",
            *optional,
        ]
    )
    sql = f" FROM post_destinations AS d JOIN posts AS p ON p.id = d.post_id WHERE {where}"
    return sql, [scope.workspace_id, scope.start, scope.end, scope.now, *params]


# -- the figures of a scope --------------------------------------------------------------------


def groups(cur: Cursor, scope: Scope, on_time_seconds: float) -> list[GroupRow]:
    """Each account's destinations in scope: due, published, on time, failed, retried, stuck."""
    source, params = _scope(scope)
    return fetch_rows(
        cur,
        "SELECT d.platform, d.account_id, count(*) AS due,"
        " count(*) FILTER (WHERE d.status = 'published') AS published,"
        f" count(*) FILTER (WHERE d.status = 'published' AND {_late(cur)} <= ?) AS on_time,"
        " count(*) FILTER (WHERE d.status = 'failed') AS failed,"
        " count(*) FILTER (WHERE d.status = 'pending') AS pending,"
        " count(*) FILTER (WHERE d.status = 'publishing') AS publishing,"
        " count(*) FILTER (WHERE d.attempts > 1) AS retried,"
        f" count(*) FILTER (WHERE {_stuck(cur)}) AS stuck"
        f"{source} GROUP BY d.platform, d.account_id ORDER BY d.platform, d.account_id",
        [on_time_seconds, scope.now, scope.now, *params],
        GroupRow.make,
    )


def reasons(cur: Cursor, scope: Scope) -> list[ReasonRow]:
    """Each account's failed destinations in scope by error class (``unknown`` if none)."""
    source, params = _scope(scope)
    reason = "coalesce(d.error_code, 'unknown')"
    return fetch_rows(
        cur,
        f"SELECT d.platform, d.account_id, {reason} AS reason, count(*) AS failed"
        f"{source} AND d.status = 'failed'"
        f" GROUP BY d.platform, d.account_id, {reason} ORDER BY d.platform, d.account_id, reason",
        params,
        ReasonRow.make,
    )


def _rank(count: str, percent: int) -> str:
    """The nearest rank of a percentile: ceil(percent * n / 100), in integers on both engines."""
    return f"({count} * {percent} + 99) / 100"


def nearest_rank(count: int, percent: int) -> int:
    """``_rank`` in Python: which of the rows :func:`ranked` picks is which percentile."""
    return (count * percent + 99) // 100


def ranked(cur: Cursor, scope: Scope) -> list[RankRow]:
    """The published destinations whose lateness is a p50 or p99 of the scope, of its
    platform's or of its account's destinations (each row says its ranks): at most
    2 * (1 + platforms + accounts) rows, whatever the number published."""
    source, params = _scope(scope)
    late = _late(cur)
    picked = " OR ".join(
        f"{rank} IN ({_rank(count, P50)}, {_rank(count, P99)})"
        for rank, count in (
            ("rank_all", "count_all"),
            ("rank_platform", "count_platform"),
            ("rank_account", "count_account"),
        )
    )
    return fetch_rows(
        cur,
        "SELECT platform, account_id, late, rank_all, count_all, rank_platform,"  # noqa: S608 - constants
        " count_platform, rank_account, count_account FROM ("
        f" SELECT d.platform, d.account_id, {late} AS late,"
        f"  row_number() OVER (ORDER BY {late}, d.id) AS rank_all,"
        "  count(*) OVER () AS count_all,"
        f"  row_number() OVER (PARTITION BY d.platform ORDER BY {late}, d.id) AS rank_platform,"
        "  count(*) OVER (PARTITION BY d.platform) AS count_platform,"
        f"  row_number() OVER (PARTITION BY d.account_id ORDER BY {late}, d.id) AS rank_account,"
        "  count(*) OVER (PARTITION BY d.account_id) AS count_account"
        f" {source} AND d.status = 'published' AND d.published_at IS NOT NULL) AS ranked"
        f" WHERE {picked}",
        params,
        RankRow.make,
    )


_STUCK_COLUMNS = (
    "d.id, d.post_id, d.workspace_id, d.platform, d.account_id, d.attempts, d.claimed_by,"
    " d.updated_at AS claimed_at, d.lease_expires_at"
)


def stuck_in(cur: Cursor, scope: Scope, limit: int) -> list[StuckRow]:
    """The scope's stuck destinations, the longest held first."""
    source, params = _scope(scope)
    return fetch_rows(
        cur,
        f"SELECT {_STUCK_COLUMNS}{source} AND {_stuck(cur)} ORDER BY d.updated_at, d.id LIMIT ?",
        [*params, scope.now, scope.now, limit],
        StuckRow.make,
    )


# -- across workspaces: what /readyz, /metrics, the doctor and the alerts read -----------------


def stuck_everywhere(cur: Cursor, now: datetime, limit: int) -> list[StuckRow]:
    """Every workspace's stuck destinations, the longest held first (at most ``limit``)."""
    return fetch_rows(
        cur,
        f"SELECT {_STUCK_COLUMNS} FROM post_destinations AS d WHERE {_stuck(cur)}"  # noqa: S608 - constants
        " ORDER BY d.updated_at, d.id LIMIT ?",
        [now, now, limit],
        StuckRow.make,
    )


def oldest_stuck(cur: Cursor, now: datetime) -> CountedStuck | None:
    """The longest-held stuck destination of any workspace, with how many are stuck."""
    found = fetch_rows(
        cur,
        f"SELECT {_STUCK_COLUMNS}, count(*) OVER () AS total"  # noqa: S608 - constants
        f" FROM post_destinations AS d WHERE {_stuck(cur)} ORDER BY d.updated_at, d.id LIMIT 1",
        [now, now],
        CountedStuck.make,
    )
    return found[0] if found else None


_TOKEN_COLUMNS = "t.account_id, t.workspace_id, a.platform, a.handle, t.expires_at"
# A disconnected account's token no longer matters.
_TOKEN_SOURCE = (
    " FROM token_expiries AS t JOIN accounts AS a ON a.id = t.account_id"
    " WHERE a.status <> 'disconnected' AND t.expires_at <= ?"
)


def tokens_expiring(
    cur: Cursor,
    until: datetime,
    *,
    workspace_id: str | None = None,
    platform: str | None = None,
    account_id: str | None = None,
    limit: int = 1000,
) -> list[TokenRow]:
    """Accounts whose token expires by ``until`` (expired ones too), the soonest first."""
    optional, params = given(
        [
            ("t.workspace_id = ?", workspace_id),
            ("a.platform = ?", platform),
            ("t.account_id = ?", account_id),
        ]
    )
    extra = "".join(f" AND {term}" for term in optional)
    return fetch_rows(
        cur,
        f"SELECT {_TOKEN_COLUMNS}{_TOKEN_SOURCE}{extra}"
        " ORDER BY t.expires_at, t.account_id LIMIT ?",
        [until, *params, limit],
        TokenRow.make,
    )


def soonest_token(cur: Cursor, until: datetime, now: datetime) -> CountedToken | None:
    """The soonest expiring token of any workspace by ``until``, with how many expire by then
    and how many already have (by ``now``)."""
    found = fetch_rows(
        cur,
        f"SELECT {_TOKEN_COLUMNS}, count(*) OVER () AS total,"
        " sum(CASE WHEN t.expires_at <= ? THEN 1 ELSE 0 END) OVER () AS expired"
        f"{_TOKEN_SOURCE} ORDER BY t.expires_at, t.account_id LIMIT 1",
        [now, until],
        CountedToken.make,
    )
    return found[0] if found else None


def record_token_expiry(
    cur: Cursor, workspace_id: str, account_id: str, expires_at: datetime, now: datetime
) -> None:
    """Record when an account's token expires (what connecting it learned), replacing any."""
    cur.execute(
        "INSERT INTO token_expiries (account_id, workspace_id, expires_at, recorded_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET"
        " workspace_id = excluded.workspace_id, expires_at = excluded.expires_at,"
        " recorded_at = excluded.recorded_at",
        [account_id, workspace_id, expires_at, now],
    )
