"""Approval batches (one per workspace and UTC day), their items and the events of each item."""

from __future__ import annotations

from datetime import date, datetime

from warehouse.ids import new_id, utcnow
from warehouse.rows import Cursor, Row, fetch_all, fetch_one


def batch_for_day(cur: Cursor, workspace_id: str, day: date) -> str:
    """The workspace's batch of ``day``, created on first use."""
    found = fetch_one(
        cur,
        "SELECT id FROM approval_batches WHERE workspace_id = ? AND batch_date = ?",
        [workspace_id, day],
    )
    if found is not None:
        batch_id: str = found["id"]
        return batch_id
    batch_id = new_id("apb")
    now = utcnow()
    cur.execute(
        "INSERT INTO approval_batches (id, workspace_id, name, batch_date, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [batch_id, workspace_id, f"Review batch {day.isoformat()}", day, now, now],
    )
    return batch_id


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


def decide_item(
    cur: Cursor, item_id: str, status: str, comment: str | None, actor: str, at: datetime
) -> None:
    cur.execute(
        "UPDATE approval_items SET status = ?, comment = ?, decided_by = ?, decided_at = ?,"
        " updated_at = ? WHERE id = ?",
        [status, comment, actor, at, at, item_id],
    )


def get_item(cur: Cursor, workspace_id: str, item_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM approval_items WHERE workspace_id = ? AND id = ?",
        [workspace_id, item_id],
    )


def pending_item_of_post(cur: Cursor, post_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM approval_items WHERE post_id = ? AND status = 'pending'"
        " ORDER BY id DESC LIMIT 1",
        [post_id],
    )


def latest_items_of_posts(cur: Cursor, post_ids: list[str]) -> dict[str, Row]:
    """Each post's most recent approval item, if it ever had one."""
    if not post_ids:
        return {}
    rows = fetch_all(
        cur,
        # IN (unnest) rather than list_contains(?, post_id), which scans the whole table.
        "SELECT * FROM approval_items WHERE post_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY id",
        [post_ids],
    )
    return {row["post_id"]: row for row in rows}  # later ids overwrite earlier ones


def get_batch(cur: Cursor, workspace_id: str, batch_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM approval_batches WHERE workspace_id = ? AND id = ?",
        [workspace_id, batch_id],
    )


def list_batches(
    cur: Cursor, workspace_id: str, status: str | None, after: str | None, limit: int
) -> list[Row]:
    """Batches newest first; a batch is ``pending`` while it holds an actionable item.

    An item is actionable while it is pending and its post still waits for approval.
    """
    return fetch_all(
        cur,
        "SELECT b.* FROM approval_batches b WHERE b.workspace_id = ?"
        " AND (? IS NULL OR (? = 'pending') = EXISTS (SELECT 1 FROM approval_items i"
        "   WHERE i.batch_id = b.id AND i.status = 'pending' AND EXISTS (SELECT 1 FROM posts p"
        "   WHERE p.id = i.post_id AND p.status = 'pending_approval')))"
        " AND (? IS NULL OR b.id < ?) ORDER BY b.id DESC LIMIT ?",
        [workspace_id, status, status, after, after, limit],
    )


def items_of_batches(cur: Cursor, batch_ids: list[str]) -> dict[str, list[Row]]:
    """Each batch's items with their post's text, status and schedule, oldest first."""
    found: dict[str, list[Row]] = {batch_id: [] for batch_id in batch_ids}
    if not batch_ids:
        return found
    rows = fetch_all(
        cur,
        "SELECT i.*, p.text AS post_text, p.status AS post_status,"
        " p.scheduled_at AS post_scheduled_at"
        " FROM approval_items i JOIN posts p ON p.id = i.post_id"
        " WHERE list_contains(?, i.batch_id) ORDER BY i.id",
        [batch_ids],
    )
    for row in rows:
        found[row["batch_id"]].append(row)
    return found


def item_with_post(cur: Cursor, item_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT i.*, p.text AS post_text, p.status AS post_status,"
        " p.scheduled_at AS post_scheduled_at"
        " FROM approval_items i JOIN posts p ON p.id = i.post_id WHERE i.id = ?",
        [item_id],
    )


def events_of_items(cur: Cursor, item_ids: list[str]) -> dict[str, list[Row]]:
    found: dict[str, list[Row]] = {item_id: [] for item_id in item_ids}
    if not item_ids:
        return found
    for row in fetch_all(
        cur,
        "SELECT * FROM approval_events WHERE list_contains(?, item_id) ORDER BY id",
        [item_ids],
    ):
        found[row["item_id"]].append(row)
    return found
