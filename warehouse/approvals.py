"""Approval batches (one per workspace and UTC day), their items and the events of each item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from warehouse import resources
from warehouse.ids import new_id, utcnow
from warehouse.posts import PostStatus
from warehouse.reads import grouped, newest_first, select_row, select_rows
from warehouse.rows import Cursor, ResultRow, TableRow, columns, fetch_row, fetch_rows, fetch_value
from warehouse.sql import literal, one_of


@dataclass(frozen=True, slots=True)
class BatchRow(TableRow):
    """A workspace's review batch of one UTC day."""

    TABLE = "approval_batches"

    id: str
    workspace_id: str
    name: str
    batch_date: date
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ItemRow(TableRow):
    """One post up for review, and the decision on it."""

    TABLE = "approval_items"

    id: str
    batch_id: str
    workspace_id: str
    post_id: str
    status: str
    comment: str | None
    decided_by: str | None
    decided_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class EventRow(TableRow):
    """Something done to an item: submit, approve, reject, return, cancel, edit, supersede."""

    TABLE = "approval_events"

    id: str
    item_id: str
    workspace_id: str
    action: str
    actor: str
    comment: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ReviewRow(ResultRow):
    """An item with what a reviewer sees of its post."""

    item: ItemRow
    post_text: str
    post_status: str
    post_scheduled_at: datetime | None
    post_media_ids: list[str]
    post_platform_options: dict[str, Any]


_PENDING = literal(PostStatus.PENDING_APPROVAL)
_REVIEW = (
    f"SELECT {columns(ItemRow, 'i')}, p.text, p.status, p.scheduled_at, p.media_ids,"  # noqa: S608 - constants
    " p.platform_options"
    " FROM approval_items i JOIN posts p ON p.id = i.post_id"
)


def batch_for_day(cur: Cursor, workspace_id: str, day: date) -> str:
    """The workspace's batch of ``day``, created on first use."""
    found: str | None = fetch_value(
        cur,
        "SELECT id FROM approval_batches WHERE workspace_id = ? AND batch_date = ?",
        [workspace_id, day],
    )
    if found is not None:
        return found
    values = {"name": f"Review batch {day.isoformat()}", "batch_date": day}
    return resources.insert(cur, BatchRow, "apb", workspace_id, values)


def insert_item(cur: Cursor, batch_id: str, workspace_id: str, post_id: str) -> str:
    item_id = new_id("api")
    now = utcnow()
    cur.execute(
        "INSERT INTO approval_items (id, batch_id, workspace_id, post_id, status, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?)",
        [item_id, batch_id, workspace_id, post_id, now, now],
    )
    cur.execute("UPDATE approval_batches SET updated_at = ? WHERE id = ?", [now, batch_id])
    return item_id


def insert_event(
    cur: Cursor, item_id: str, workspace_id: str, action: str, actor: str, comment: str | None
) -> str:
    event_id = new_id("ape")
    cur.execute(
        "INSERT INTO approval_events (id, item_id, workspace_id, action, actor, comment,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [event_id, item_id, workspace_id, action, actor, comment, utcnow()],
    )
    return event_id


def submit(cur: Cursor, workspace_id: str, post_id: str, actor: str) -> str:
    """Put a post up for review in today's (UTC) batch; returns the item id."""
    batch_id = batch_for_day(cur, workspace_id, utcnow().date())
    item_id = insert_item(cur, batch_id, workspace_id, post_id)
    insert_event(cur, item_id, workspace_id, "submit", actor, None)
    return item_id


def withdraw(cur: Cursor, workspace_id: str, post_id: str, actor: str) -> None:
    """Record that a post waiting for review was canceled; its item is no longer actionable."""
    item = pending_item_of_post(cur, post_id)
    if item is not None:
        insert_event(cur, item.id, workspace_id, "cancel", actor, None)


def decide_item(
    cur: Cursor, item_id: str, status: str, comment: str | None, actor: str, at: datetime
) -> None:
    cur.execute(
        "UPDATE approval_items SET status = ?, comment = ?, decided_by = ?, decided_at = ?,"
        " updated_at = ? WHERE id = ?",
        [status, comment, actor, at, at, item_id],
    )


def get_item(cur: Cursor, workspace_id: str, item_id: str) -> ItemRow | None:
    return select_row(cur, ItemRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, item_id])


def pending_item_of_post(cur: Cursor, post_id: str) -> ItemRow | None:
    return select_row(
        cur, ItemRow, "WHERE post_id = ? AND status = 'pending' ORDER BY id DESC LIMIT 1", [post_id]
    )


def latest_items_of_posts(cur: Cursor, post_ids: list[str]) -> dict[str, ItemRow]:
    """Each post's most recent approval item, if it ever had one."""
    if not post_ids:
        return {}
    rows = select_rows(cur, ItemRow, f"WHERE {one_of(cur, 'post_id')} ORDER BY id", [post_ids])
    return {row.post_id: row for row in rows}  # later ids overwrite earlier ones


def get_batch(cur: Cursor, workspace_id: str, batch_id: str) -> BatchRow | None:
    return select_row(cur, BatchRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, batch_id])


def list_batches(
    cur: Cursor, workspace_id: str, status: str | None, after: str | None, limit: int
) -> list[BatchRow]:
    """Batches newest first; a batch is ``pending`` while it holds an actionable item.

    An item is actionable while it is pending and its post still waits for approval.
    """
    actionable = (
        "EXISTS (SELECT 1 FROM approval_items i"  # noqa: S608 - constants
        "   WHERE i.batch_id = b.id AND i.status = 'pending' AND EXISTS (SELECT 1 FROM posts p"
        f"   WHERE p.id = i.post_id AND p.status = {_PENDING}))"
    )
    return newest_first(
        cur,
        BatchRow,
        [("b.workspace_id = ?", workspace_id), (f"(? = 'pending') = {actionable}", status)],
        after=after,
        limit=limit,
        alias="b",
    )


def items_of_batches(cur: Cursor, batch_ids: list[str]) -> dict[str, list[ReviewRow]]:
    """Each batch's items with their post's text, status and schedule, oldest first."""
    found: dict[str, list[ReviewRow]] = {batch_id: [] for batch_id in batch_ids}
    if not batch_ids:
        return found
    rows = fetch_rows(
        cur,
        f"{_REVIEW} WHERE {one_of(cur, 'i.batch_id')} ORDER BY i.id",
        [batch_ids],
        ReviewRow.make,
    )
    for row in rows:
        found[row.item.batch_id].append(row)
    return found


def item_with_post(cur: Cursor, item_id: str) -> ReviewRow | None:
    return fetch_row(cur, f"{_REVIEW} WHERE i.id = ?", [item_id], ReviewRow.make)


def successors(cur: Cursor, item_ids: list[str]) -> dict[str, str]:
    """The next item of the same post, for each of these items that has one."""
    if not item_ids:
        return {}
    rows = fetch_rows(
        cur,
        "SELECT i.id, min(n.id) FROM approval_items i"  # noqa: S608 - constants
        " JOIN approval_items n ON n.post_id = i.post_id AND n.id > i.id"
        f" WHERE {one_of(cur, 'i.id')} GROUP BY i.id",
        [item_ids],
        tuple,
    )
    return {str(item): str(successor) for item, successor in rows}


def events_of_items(cur: Cursor, item_ids: list[str]) -> dict[str, list[EventRow]]:
    return grouped(cur, EventRow, "item_id", item_ids, order="id")
