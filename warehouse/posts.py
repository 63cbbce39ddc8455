"""Posts: their lifecycle (statuses and allowed moves), their destinations and uploaded media."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from warehouse.ids import id_floor, new_id, utcnow
from warehouse.reads import grouped, newest_first, select_row, select_rows
from warehouse.rows import Cursor, TableRow, columns, fetch_rows, fetch_value
from warehouse.sql import holds, literal, one_of, rows_of
from warehouse.workspaces import AccountRow

# -- the lifecycle -----------------------------------------------------------------------------


class PostStatus(StrEnum):
    """Where a post is in its life: from draft to published, partially_published or failed."""

    DRAFT = "draft"
    PENDING_APPROVAL = "pending_approval"
    SCHEDULED = "scheduled"
    PUBLISHING = "publishing"
    PUBLISHED = "published"
    PARTIALLY_PUBLISHED = "partially_published"
    FAILED = "failed"
    CANCELED = "canceled"


_S = PostStatus
# Every move a post may make (staying put aside), and what makes it; docs/publishing.md
# draws the same graph. :func:`move` refuses any other in the statement that makes it, so
# a writer that read a stale status changes nothing.
MOVES: dict[PostStatus, frozenset[PostStatus]] = {
    # submitted (for approval, or scheduled), given a queue slot, canceled
    _S.DRAFT: frozenset({_S.PENDING_APPROVAL, _S.SCHEDULED, _S.CANCELED}),
    # approved, returned, rejected or canceled
    _S.PENDING_APPROVAL: frozenset({_S.SCHEDULED, _S.DRAFT, _S.CANCELED}),
    # claimed by the worker (or settled at once), its queue slot lost, canceled, or what a
    # reviewer approved edited (back for review)
    _S.SCHEDULED: frozenset(
        {
            _S.PUBLISHING,
            _S.PUBLISHED,
            _S.PARTIALLY_PUBLISHED,
            _S.FAILED,
            _S.DRAFT,
            _S.CANCELED,
            _S.PENDING_APPROVAL,
        }
    ),
    # every destination settled
    _S.PUBLISHING: frozenset({_S.PUBLISHED, _S.PARTIALLY_PUBLISHED, _S.FAILED}),
    _S.PUBLISHED: frozenset(),
    _S.PARTIALLY_PUBLISHED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELED: frozenset(),
}
EDITABLE = frozenset({_S.DRAFT, _S.PENDING_APPROVAL, _S.SCHEDULED})  # also what may be canceled
LIVE = frozenset({_S.SCHEDULED, _S.PUBLISHING})  # what the publishing worker may send
SETTLED = frozenset({_S.PUBLISHED, _S.PARTIALLY_PUBLISHED, _S.FAILED})


def sources(to: PostStatus) -> list[PostStatus]:
    """The statuses a post may move to ``to`` from, ``to`` itself included (staying put)."""
    return [status for status, targets in MOVES.items() if to in targets or status == to]


def sql_in(statuses: frozenset[PostStatus] | list[PostStatus]) -> str:
    """A set of statuses as SQL text for ``status IN …`` (constants, sorted for stable text)."""
    return "(" + ", ".join(literal(str(status)) for status in sorted(statuses)) + ")"


@dataclass(frozen=True, slots=True)
class PostRow(TableRow):
    """A post as stored."""

    TABLE = "posts"

    id: str
    workspace_id: str
    text: str
    status: PostStatus
    scheduled_at: datetime | None
    published_at: datetime | None
    approval_required: bool
    tags: list[str]
    media_ids: list[str]
    platform_options: dict[str, Any]
    source: str
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    canceled_at: datetime | None


@dataclass(frozen=True, slots=True)
class DestinationRow(TableRow):
    """One account a post goes to, and how its publishing went."""

    TABLE = "post_destinations"

    id: str
    post_id: str
    workspace_id: str
    account_id: str
    platform: str
    status: str
    platform_post_id: str | None
    platform_url: str | None
    error_code: str | None
    error_message: str | None
    attempts: int
    next_attempt_at: datetime | None
    first_attempt_at: datetime | None
    claimed_by: str | None
    lease_expires_at: datetime | None
    published_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class NewMedia:
    """An uploaded file to record: its ``media`` row but for when it is recorded."""

    id: str
    workspace_id: str
    kind: str
    content_type: str
    size_bytes: int
    sha256: str
    filename: str | None
    storage_key: str
    alt_text: str | None


@dataclass(frozen=True, slots=True)
class MediaRow(NewMedia, TableRow):
    """An uploaded file's record (its bytes live under the media directory)."""

    TABLE = "media"

    created_at: datetime


_POST = columns(PostRow)
_POST_P = columns(PostRow, "p")
_DESTINATION = columns(DestinationRow)
_MEDIA = columns(MediaRow)

# -- posts -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewPost:
    workspace_id: str
    text: str
    status: PostStatus
    scheduled_at: datetime | None
    approval_required: bool
    tags: list[str]
    media_ids: list[str]
    platform_options: dict[str, Any]
    created_by: str
    source: str = "api"  # api | queue | automation


def insert_post(cur: Cursor, post: NewPost) -> str:
    """Insert a post; returns its id."""
    return insert_posts(cur, [post])[0].id


_INSERTED_COLUMNS = (
    "id, workspace_id, text, status, scheduled_at, approval_required, tags, media_ids,"
    " platform_options, source, created_by, created_at, updated_at"
)


def insert_posts(cur: Cursor, posts: list[NewPost]) -> list[PostRow]:
    """Insert posts in one statement; their rows as stored, in the order given."""
    if not posts:
        return []
    now = utcnow()
    ids = [new_id("post") for _ in posts]
    params: list[Any] = []
    for post_id, post in zip(ids, posts, strict=True):
        params += [
            post_id,
            post.workspace_id,
            post.text,
            post.status,
            post.scheduled_at,
            post.approval_required,
            post.tags,
            post.media_ids,
            json.dumps(post.platform_options),
            post.source,
            post.created_by,
            now,
            now,
        ]
    # One multi-row INSERT costs ~0.15 ms a row at 16 rows against ~0.8 ms for one alone.
    values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(posts))
    rows = fetch_rows(
        cur,
        f"INSERT INTO posts ({_INSERTED_COLUMNS}) VALUES {values} RETURNING {_POST}",  # noqa: S608
        params,
        PostRow.make,
    )
    by_id = {row.id: row for row in rows}
    return [by_id[post_id] for post_id in ids]


def update_post(
    cur: Cursor,
    post_id: str,
    *,
    text: str,
    status: PostStatus,
    scheduled_at: datetime | None,
    tags: list[str],
    media_ids: list[str],
    platform_options: dict[str, Any],
    was: PostStatus,
) -> bool:
    """Edit a post still ``was`` (editable, and may move as :data:`MOVES` allows); else False.

    ``was``: the status the edit was decided on; a post moved meanwhile (an approval
    committed between the read and this write) is not edited.
    """
    cur.execute(
        "UPDATE posts SET text = ?, status = ?, scheduled_at = ?, tags = ?, media_ids = ?,"  # noqa: S608 - constants
        " platform_options = ?, updated_at = ?"
        f" WHERE id = ? AND status = ? AND status IN {sql_in(EDITABLE)}"
        f" AND status IN {sql_in(sources(status))} RETURNING id",
        [
            text,
            status,
            scheduled_at,
            tags,
            media_ids,
            json.dumps(platform_options),
            utcnow(),
            post_id,
            was,
        ],
    )
    return cur.fetchone() is not None


def move(
    cur: Cursor,
    post_id: str,
    to: PostStatus,
    *,
    scheduled_at: datetime | None = None,
    canceled_at: datetime | None = None,
    reschedule: bool = False,
    unchanged_since: datetime | None = None,
) -> bool:
    """Move a post to ``to`` if :data:`MOVES` allows it from where it is; False otherwise.

    ``scheduled_at`` is set only when given, unless ``reschedule``, which sets it to the value
    given, None included (a queue slot lost); ``canceled_at`` keeps the first cancellation.
    ``unchanged_since``: only if the post was not edited after this ``updated_at`` (a decision
    on what was read, when an edit may commit between the read and this write).
    """
    params = [to, reschedule, scheduled_at, scheduled_at, canceled_at, utcnow(), post_id]
    unchanged = ""
    if unchanged_since is not None:
        unchanged = " AND updated_at = ?"
        params.append(unchanged_since)
    cur.execute(
        "UPDATE posts SET status = ?,"  # noqa: S608 - constants
        " scheduled_at = CASE WHEN ? THEN ? ELSE coalesce(?, scheduled_at) END,"
        " canceled_at = coalesce(canceled_at, ?), updated_at = ?"
        f" WHERE id = ? AND status IN {sql_in(sources(to))}{unchanged} RETURNING id",
        params,
    )
    return cur.fetchone() is not None


def get_post(cur: Cursor, workspace_id: str, post_id: str) -> PostRow | None:
    return select_row(cur, PostRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, post_id])


@dataclass(frozen=True)
class PostFilter:
    status: str | None = None
    platform: str | None = None
    account_id: str | None = None
    tag: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    scheduled_from: datetime | None = None
    scheduled_to: datetime | None = None


def list_posts(
    cur: Cursor, workspace_id: str, where: PostFilter, after: str | None, limit: int
) -> list[PostRow]:
    """Posts of a workspace, newest first, after the keyset cursor ``after``."""
    # Only the filters given become predicates: DuckDB does not fold "? IS NULL OR …" on
    # bound parameters, and those ORs cost 20 of a page's 32 ms on 100k posts (measured by
    # murmur bench). Every value is still bound; only this function's constants are joined.
    clauses = ["p.workspace_id = ?"]
    params: list[Any] = [workspace_id]
    for sql, value in (
        ("p.status = ?", where.status),
        (holds(cur, "p.tags"), where.tag),
        ("p.created_at >= ?", where.created_from),
        ("p.created_at < ?", where.created_to),
        ("p.scheduled_at >= ?", where.scheduled_from),
        ("p.scheduled_at < ?", where.scheduled_to),
        ("p.id < ?", after),
    ):
        if value is not None:
            clauses.append(sql)
            params.append(value)
    if where.platform is not None or where.account_id is not None:
        inner = ["d.post_id = p.id"]
        for sql, value in (
            ("d.platform = ?", where.platform),
            ("d.account_id = ?", where.account_id),
        ):
            if value is not None:
                inner.append(sql)
                params.append(value)
        exists = " AND ".join(inner)
        clauses.append(f"EXISTS (SELECT 1 FROM post_destinations d WHERE {exists})")  # noqa: S608 - constants
    # The page's ids first (one narrow column through the top-N), then its rows by id.
    page = (
        f"SELECT {_POST_P} FROM posts p WHERE p.id IN (SELECT p.id FROM posts p WHERE "  # noqa: S608 - constants
        + " AND ".join(clauses)
        + " AND p.id >= ? ORDER BY p.id DESC LIMIT ?) ORDER BY p.id DESC"
    )
    if after is None and where == PostFilter():
        # The unfiltered first page probes recent ids before the whole history: its top-N
        # over 100k posts took 13 ms, over the last day's 5 ms. Exact for any floor: if at
        # least ``limit`` rows have id >= floor, the newest ``limit`` rows are all among them.
        # Filtered pages skip it: a rare status or tag would pay every probe for nothing.
        now = utcnow()
        for days in _PROBE_DAYS:
            floor = id_floor("post", now - timedelta(days))
            rows = fetch_rows(cur, page, [*params, floor, limit], PostRow.make)
            if len(rows) >= limit:
                return rows
    return fetch_rows(cur, page, [*params, "", limit], PostRow.make)


# Windows (days back from now) the first page tries, each 8 times the last, before all posts;
# a probe of 512 days cost nearly a full scan (11 vs 13 ms at 100k posts), so none goes wider.
_PROBE_DAYS = (1, 8, 64)


# -- destinations ------------------------------------------------------------------------------


def replace_destinations(
    cur: Cursor, post_id: str, workspace_id: str, accounts: list[tuple[str, str]]
) -> list[DestinationRow]:
    """Set a post's destinations to ``accounts`` (account id, platform), each ``pending``."""
    cur.execute("DELETE FROM post_destinations WHERE post_id = ?", [post_id])
    return insert_destinations(cur, post_id, workspace_id, accounts)


def insert_destinations(
    cur: Cursor, post_id: str, workspace_id: str, accounts: list[tuple[str, str]]
) -> list[DestinationRow]:
    """Add a new post's destinations in one statement; their rows, in the order given."""
    return insert_destinations_of(cur, [(post_id, workspace_id, accounts)])[post_id]


def insert_destinations_of(
    cur: Cursor, posts: list[tuple[str, str, list[tuple[str, str]]]]
) -> dict[str, list[DestinationRow]]:
    """Add new posts' destinations ((post, workspace, [(account, platform)])) in one statement."""
    found: dict[str, list[DestinationRow]] = {post_id: [] for post_id, _, _ in posts}
    now = utcnow()
    params: list[Any] = []
    for post_id, workspace_id, accounts in posts:
        for account, platform in accounts:
            # ids grow within this process, so ORDER BY id (as destinations_of reads) is
            # the order given.
            params += [new_id("dst"), post_id, workspace_id, account, platform, "pending", now, now]
    if not params:
        return found
    rows = fetch_rows(
        cur,
        "INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform,"  # noqa: S608 - constants
        f" status, created_at, updated_at) VALUES {rows_of(8, len(params) // 8)}"
        f" RETURNING {_DESTINATION}",
        params,
        DestinationRow.make,
    )
    for row in sorted(rows, key=lambda row: row.id):
        found[row.post_id].append(row)
    return found


def destination_choices(cur: Cursor, workspace_id: str) -> tuple[bool, list[AccountRow]]:
    """A workspace's approval_required and all its accounts (newest first), in one query."""
    cur.execute(
        f"SELECT w.approval_required, {columns(AccountRow, 'a')}"  # noqa: S608 - constants
        " FROM workspaces w LEFT JOIN accounts a ON a.workspace_id = w.id"
        " WHERE w.id = ? ORDER BY a.id DESC",
        [workspace_id],
    )
    rows = cur.fetchall()
    approval = bool(rows and rows[0][0])
    return approval, [AccountRow.make(row[1:]) for row in rows if row[1] is not None]


def destinations_of(cur: Cursor, post_ids: list[str]) -> dict[str, list[DestinationRow]]:
    """Each post's destinations, in the order they were given."""
    # The page's ids, through the post_id index.
    return grouped(cur, DestinationRow, "post_id", post_ids, order="id")


# -- media -------------------------------------------------------------------------------------


def insert_media(cur: Cursor, media: NewMedia) -> None:
    # NewMedia's fields are MediaRow's columns in order, all but the last: created_at.
    values = [*dataclasses.astuple(media), utcnow()]
    cur.execute(f"INSERT INTO media ({_MEDIA}) VALUES {rows_of(len(values), 1)}", values)  # noqa: S608 - constants


def media_bytes(cur: Cursor, workspace_id: str) -> int:
    """The bytes the workspace's media files take."""
    return int(
        fetch_value(
            cur,
            "SELECT coalesce(sum(size_bytes), 0) FROM media WHERE workspace_id = ?",
            [workspace_id],
        )
    )


def get_media(cur: Cursor, workspace_id: str, media_id: str) -> MediaRow | None:
    return select_row(cur, MediaRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, media_id])


def media_by_ids(cur: Cursor, workspace_id: str, ids: list[str]) -> dict[str, MediaRow]:
    if not ids:
        return {}
    found = select_rows(
        cur, MediaRow, f"WHERE workspace_id = ? AND {one_of(cur, 'id')}", [workspace_id, ids]
    )
    return {row.id: row for row in found}


def list_media(
    cur: Cursor, workspace_id: str, kind: str | None, after: str | None, limit: int
) -> list[MediaRow]:
    terms = [("workspace_id = ?", workspace_id), ("kind = ?", kind)]
    return newest_first(cur, MediaRow, terms, after=after, limit=limit)


def post_for_platform_post(
    cur: Cursor, workspace_id: str, platform: str, platform_post_id: str
) -> str | None:
    """Our post that a platform post id was published from, if any."""
    found: str | None = fetch_value(
        cur,
        "SELECT post_id FROM post_destinations WHERE workspace_id = ? AND platform = ?"
        " AND platform_post_id = ? LIMIT 1",
        [workspace_id, platform, platform_post_id],
    )
    return found
