"""The publishing worker's statements: claim with a lease, record outcomes, roll posts up.

Every state change here is ONE statement, so a worker killed between two leaves nothing half
done, fenced by the claim it acts under (``claimed_by`` and the
``attempts`` number it claimed with): a worker whose lease was taken over changes nothing.
See docs/publishing.md for the protocol and why a destination is published exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from warehouse.ids import new_id
from warehouse.posts import LIVE, SETTLED, DestinationRow, PostStatus, sql_in
from warehouse.reads import select_row, select_rows
from warehouse.rows import (
    Cursor,
    ResultRow,
    TableRow,
    fetch_all,
    fetch_one,
    fetch_rows,
    fetch_value,
)
from warehouse.sql import (
    literal,
    one_of,
    returning,
    rows_of,
    seconds_between,
    to_second,
    typed,
)

# The post statuses these statements read and write, from the posts' one lifecycle.
_LIVE = sql_in(LIVE)
_SETTLED = sql_in(SETTLED)
_PUBLISHING = literal(PostStatus.PUBLISHING)
_PUBLISHED = literal(PostStatus.PUBLISHED)
_PARTIALLY = literal(PostStatus.PARTIALLY_PUBLISHED)
_FAILED = literal(PostStatus.FAILED)


@dataclass(frozen=True, slots=True)
class Claim(TableRow):
    """A destination this worker now holds, under the attempt number it claimed with."""

    TABLE = "post_destinations"

    id: str
    post_id: str
    attempts: int
    first_attempt_at: datetime | None


@dataclass(frozen=True, slots=True)
class JobRow(ResultRow):
    """What publishing one claimed destination needs: its post, its account, its attempt."""

    id: str
    post_id: str
    workspace_id: str
    account_id: str
    platform: str
    attempts: int
    first_attempt_at: datetime  # set by the claim
    text: str
    media_ids: list[str]
    platform_options: dict[str, Any]
    scheduled_at: datetime  # a claimed post's time has come
    external_id: str | None
    handle: str | None
    account_status: str | None


@dataclass(frozen=True, slots=True)
class MediaFileRow(TableRow):
    """Where a stored media file is and what it is."""

    TABLE = "media"

    id: str
    kind: str
    content_type: str
    storage_key: str
    alt_text: str | None


@dataclass(frozen=True, slots=True)
class AttemptRow(TableRow):
    """One logged attempt to publish a destination."""

    TABLE = "publish_attempts"

    id: str
    destination_id: str
    post_id: str
    workspace_id: str
    worker_id: str
    attempt: int
    outcome: str
    platform_post_id: str | None
    error_code: str | None
    error_message: str | None
    started_at: datetime
    finished_at: datetime


@dataclass(frozen=True, slots=True)
class PostState(TableRow):
    """Where a post is in its lifecycle."""

    TABLE = "posts"

    id: str
    status: str
    published_at: datetime | None
    scheduled_at: datetime | None


# A destination is due when its post is live (scheduled, or already publishing), its time has
# come, and it is either waiting (pending, past its retry time) or held by a lease that expired.
# The claim states this twice (the batch it picks, and the rows it updates); both copies below.
def claim_due(
    cur: Cursor, worker_id: str, now: datetime, lease_until: datetime, limit: int
) -> list[Claim]:
    """Claim up to ``limit`` due destinations for ``worker_id`` in one statement.

    Two workers never claim the same row: on SQLite writers take turns (the write queue),
    so each claim sees the last one's leases; on PostgreSQL each skips the rows another
    has locked (``FOR UPDATE … SKIP LOCKED``).
    """
    params: list[Any] = [worker_id, lease_until, now, now, now, now, now, now, now, now]
    if cur.dialect == "postgresql":
        # Workers skip each other's rows instead of queueing on them.
        order = "d2.id LIMIT ? FOR UPDATE OF d2 SKIP LOCKED)"
        params += [limit]
    else:
        order = "d2.id LIMIT ?)"  # SQLite's writers take turns: no two claims overlap
        params += [limit]
    due_second = to_second(cur, "coalesce(d2.next_attempt_at, p2.scheduled_at)")
    return fetch_rows(
        cur,
        "UPDATE post_destinations AS d SET status = 'publishing', claimed_by = ?,"  # noqa: S608 - constants
        " lease_expires_at = ?, attempts = d.attempts + 1,"
        " first_attempt_at = coalesce(d.first_attempt_at, ?), updated_at = ?"
        " FROM posts AS p WHERE p.id = d.post_id"
        f" AND p.status IN {_LIVE} AND p.scheduled_at <= ?"
        " AND ((d.status = 'pending' AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= ?))"
        "   OR (d.status = 'publishing' AND d.lease_expires_at < ?))"
        " AND d.id IN (SELECT d2.id FROM post_destinations AS d2 JOIN posts AS p2"
        f"  ON p2.id = d2.post_id WHERE p2.status IN {_LIVE}"
        "  AND p2.scheduled_at <= ?"
        "  AND ((d2.status = 'pending' AND (d2.next_attempt_at IS NULL OR d2.next_attempt_at <= ?))"
        "   OR (d2.status = 'publishing' AND d2.lease_expires_at < ?))"
        f"  ORDER BY {due_second}, {order}"
        f" RETURNING {returning(cur, 'd', 'id, post_id, attempts, first_attempt_at')}",
        params,
        Claim.make,
    )


def confirm_posts(cur: Cursor, post_ids: list[str], now: datetime) -> set[str]:
    """Move claimed posts to ``publishing``; returns those still live (not canceled meanwhile).

    This write on the post row is the gate against a concurrent cancel: the claim only read
    the post, so a cancel committed in between is seen here (status no longer live), and a
    cancel racing this statement conflicts with it and retries into "publishing cannot be
    canceled". Only destinations of the posts returned are sent to the platform.
    """
    rows = fetch_all(
        cur,
        f"UPDATE posts SET status = {_PUBLISHING}, updated_at = ?"  # noqa: S608 - constants
        f" WHERE {one_of(cur, 'id')} AND status IN {_LIVE} RETURNING id",
        [now, post_ids],
    )
    return {row["id"] for row in rows}


def release(cur: Cursor, destination_ids: list[str], worker_id: str, now: datetime) -> int:
    """Give back claims of posts that stopped being live before anything was sent."""
    if not destination_ids:
        return 0
    rows = fetch_all(
        cur,
        "UPDATE post_destinations SET status = 'pending', claimed_by = NULL,"  # noqa: S608 - constants
        " lease_expires_at = NULL, attempts = attempts - 1, updated_at = ?"
        f" WHERE {one_of(cur, 'id')} AND claimed_by = ? AND status = 'publishing' RETURNING id",
        [now, destination_ids, worker_id],
    )
    return len(rows)


def load_jobs(cur: Cursor, destination_ids: list[str]) -> list[JobRow]:
    """What publishing each claimed destination needs: its post, account and attempt."""
    if not destination_ids:
        return []
    return fetch_rows(
        cur,
        "SELECT d.id, d.post_id, d.workspace_id, d.account_id, d.platform, d.attempts,"  # noqa: S608 - constants
        " d.first_attempt_at, p.text, p.media_ids, p.platform_options, p.scheduled_at,"
        " a.external_id, a.handle, a.status AS account_status"
        " FROM post_destinations d JOIN posts p ON p.id = d.post_id"
        " LEFT JOIN accounts a ON a.id = d.account_id"
        f" WHERE {one_of(cur, 'd.id')}",
        [destination_ids],
        JobRow.make,
    )


def media_files(cur: Cursor, workspace_id: str, media_ids: list[str]) -> dict[str, MediaFileRow]:
    """The workspace's stored media by id (storage key, kind, content type, alt text).

    A post names its media by id alone: an id of another workspace's media is not found.
    """
    if not media_ids:
        return {}
    rows = select_rows(
        cur,
        MediaFileRow,
        f"WHERE workspace_id = ? AND {one_of(cur, 'id')}",
        [workspace_id, media_ids],
    )
    return {row.id: row for row in rows}


@dataclass(frozen=True)
class Settlement:
    """One attempt's outcome for a destination, recorded under the claim it was made with."""

    destination_id: str
    post_id: str
    workspace_id: str
    attempt: int  # the claim's attempts number: the fencing token
    status: str  # published | failed | pending (retry later)
    outcome: str  # published | recovered | failed | retry (for the log)
    started_at: datetime
    finished_at: datetime
    platform_post_id: str | None = None
    platform_url: str | None = None
    published_at: datetime | None = None
    error_code: str | None = None
    error_message: str | None = None
    next_attempt_at: datetime | None = None
    platform: str = ""  # the destination's platform (for the log)


def settle(cur: Cursor, worker_id: str, done: Sequence[Settlement], now: datetime) -> set[str]:
    """Record many outcomes; returns the destinations still under our claim.

    Each row changes only while ``claimed_by`` is us and ``attempts`` is the number we claimed
    with, so a worker whose lease was taken over changes nothing. A published row clears any
    earlier error; a failed or retried row keeps no platform id.
    """
    if not done:
        return set()
    # One short statement per outcome: the same text on every engine, and a batch is a
    # worker's few concurrent platform calls.
    still_ours: set[str] = set()
    for one in done:
        cur.execute(
            "UPDATE post_destinations SET status = ?, platform_post_id = ?, platform_url = ?,"
            " published_at = ?, error_code = ?, error_message = ?, next_attempt_at = ?,"
            " claimed_by = NULL, lease_expires_at = NULL, updated_at = ?"
            " WHERE id = ? AND claimed_by = ? AND attempts = ? AND status = 'publishing'"
            " RETURNING id",
            [
                one.status,
                one.platform_post_id,
                one.platform_url,
                one.published_at,
                one.error_code,
                one.error_message,
                one.next_attempt_at,
                now,
                one.destination_id,
                worker_id,
                one.attempt,
            ],
        )
        if cur.fetchone() is not None:
            still_ours.add(one.destination_id)
    return still_ours


def log_attempts(
    cur: Cursor, worker_id: str, done: Sequence[Settlement], outcomes: Sequence[str]
) -> None:
    """Append attempts to the publish log (``outcomes`` may say lost_lease instead)."""
    if not done:
        return
    params: list[Any] = []
    for one, outcome in zip(done, outcomes, strict=True):
        params += [
            new_id("pat"),
            one.destination_id,
            one.post_id,
            one.workspace_id,
            worker_id,
            one.attempt,
            outcome,
            one.platform_post_id,
            one.error_code,
            one.error_message,
            one.started_at,
            one.finished_at,
        ]
    cur.execute(
        "INSERT INTO publish_attempts (id, destination_id, post_id, workspace_id, worker_id,"  # noqa: S608 - constants
        " attempt, outcome, platform_post_id, error_code, error_message, started_at, finished_at)"
        f" VALUES {rows_of(12, len(done))}",
        params,
    )


def roll_up(cur: Cursor, post_ids: list[str] | None, now: datetime) -> list[PostState]:
    """Settle live posts whose destinations are all done (all posts when ``post_ids`` is None).

    published when every destination published (published_at = the last one), failed when
    all failed, partially_published otherwise. Only a live post moves, so a post canceled
    meanwhile is never resurrected. Run after each destination's outcome commits: the last
    one to commit sees every outcome, so no post is left behind (the sweep covers crashes).
    """
    settled = fetch_rows(
        cur,
        "UPDATE posts AS p SET"  # noqa: S608 - constants
        f" status = CASE WHEN s.failed = 0 THEN {_PUBLISHED}"
        f"   WHEN s.published = 0 THEN {_FAILED} ELSE {_PARTIALLY} END,"
        " published_at = CASE WHEN s.published > 0 THEN s.last_published ELSE p.published_at END,"
        " updated_at = k.now"
        " FROM (SELECT post_id, count(*) AS total,"
        "   count(*) FILTER (WHERE status = 'published') AS published,"
        "   count(*) FILTER (WHERE status = 'failed') AS failed,"
        "   max(published_at) AS last_published"
        "  FROM post_destinations WHERE (? AND post_id IN"
        f"   (SELECT id FROM posts WHERE status = {_PUBLISHING}))"
        f"   OR {one_of(cur, 'post_id')} GROUP BY post_id) AS s,"
        f"  (SELECT {typed(cur, 'TIMESTAMP')} AS now) AS k"
        f" WHERE p.id = s.post_id AND p.status IN {_LIVE}"
        " AND s.published + s.failed = s.total"
        f" RETURNING {returning(cur, 'p', 'id, status, published_at, scheduled_at')}",
        # Placeholders only in FROM, in text order (see claim_due).
        [post_ids is None, post_ids or [], now],
        PostState.make,
    )
    settle_queue_items(cur, post_ids, now)
    return settled


def settle_queue_items(cur: Cursor, post_ids: list[str] | None, now: datetime) -> None:
    """Move the waiting queue items of settled posts to ``published`` or ``failed``.

    An item follows its post: ``published`` when the post went out on at least one
    destination (``published`` or ``partially_published``; the item's ``post_status`` tells
    which), ``failed`` when every destination failed. Derived from the posts' state alone, so
    repeating it changes nothing, and the sweep (``post_ids`` None: every such item) settles
    the items a crash left between the post's roll-up and this statement.
    """
    cur.execute(
        "UPDATE queue_items AS qi SET"  # noqa: S608 - constants
        f" status = CASE WHEN p.status = {_FAILED} THEN 'failed' ELSE 'published' END,"
        " updated_at = ? FROM posts AS p WHERE p.id = qi.post_id"
        f" AND p.status IN {_SETTLED}"
        " AND qi.status IN ('queued', 'scheduled')"
        f" AND (? OR {one_of(cur, 'qi.post_id')})",
        # Placeholders only in SET and WHERE (see claim_due).
        [now, post_ids is None, post_ids or []],
    )


def attempts_of(cur: Cursor, destination_id: str) -> list[AttemptRow]:
    """A destination's logged attempts, oldest first."""
    return select_rows(
        cur, AttemptRow, "WHERE destination_id = ? ORDER BY attempt, started_at", [destination_id]
    )


def destination(cur: Cursor, destination_id: str) -> DestinationRow | None:
    """One destination row."""
    return select_row(cur, DestinationRow, "WHERE id = ?", [destination_id])


def post_status(cur: Cursor, post_id: str) -> PostState | None:
    """A post's status and published_at."""
    return select_row(cur, PostState, "WHERE id = ?", [post_id])


def open_destinations(cur: Cursor, post_ids: list[str]) -> int:
    """How many of these posts' destinations are not yet published or failed."""
    value: Any = fetch_value(
        cur,
        f"SELECT count(*) FROM post_destinations WHERE {one_of(cur, 'post_id')}"  # noqa: S608 - constants
        " AND status NOT IN ('published', 'failed')",
        [post_ids],
    )
    return int(value)


def register_worker(
    cur: Cursor, worker_id: str, hostname: str, pid: int, concurrency: int, now: datetime
) -> None:
    """Record a worker starting (or restarting under the same id)."""
    # Two statements, idempotent, and the same on every engine.
    restarted = fetch_one(
        cur,
        "UPDATE publishing_workers SET hostname = ?, pid = ?, concurrency = ?, started_at = ?,"
        " heartbeat_at = ?, stopped_at = NULL WHERE id = ? RETURNING id",
        [hostname, pid, concurrency, now, now, worker_id],
    )
    if restarted is None:
        cur.execute(
            "INSERT INTO publishing_workers"
            " (id, hostname, pid, concurrency, started_at, heartbeat_at, stopped_at)"
            " VALUES (?, ?, ?, ?, ?, ?, NULL)",
            [worker_id, hostname, pid, concurrency, now, now],
        )


def heartbeat(cur: Cursor, worker_id: str, now: datetime, *, stopped: bool = False) -> None:
    """Mark a worker alive now (or stopped)."""
    cur.execute(
        "UPDATE publishing_workers SET heartbeat_at = ?,"
        " stopped_at = CASE WHEN ? THEN ? ELSE stopped_at END WHERE id = ?",
        [now, stopped, now, worker_id],
    )


def lateness(cur: Cursor, post_ids: list[str]) -> list[float]:
    """Seconds from scheduled_at to the end of the successful platform call, per destination."""
    rows = fetch_all(
        cur,
        f"SELECT {seconds_between(cur, 'a.finished_at', 'p.scheduled_at')} AS late"  # noqa: S608 - constants
        " FROM publish_attempts a JOIN posts p ON p.id = a.post_id"
        f" WHERE {one_of(cur, 'a.post_id')} AND a.outcome IN ('published', 'recovered')",
        [post_ids],
    )
    return [float(row["late"]) for row in rows]
