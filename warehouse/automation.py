"""Content automations, destination presets, queues, queue items and scheduled events.

Also the few post rows a queue creates (``posts.source = 'queue'``) and moves in time.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from warehouse.ids import new_id, utcnow
from warehouse.rows import Cursor, Row, fetch_all, fetch_one, fetch_value

ACTIVE_ITEM_STATUSES = ["queued", "scheduled"]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# -- destination presets -----------------------------------------------------------------------


def insert_preset(cur: Cursor, workspace_id: str, name: str, destinations: list[Any]) -> str:
    preset_id = new_id("dp")
    now = utcnow()
    cur.execute(
        "INSERT INTO destination_presets (id, workspace_id, name, destinations, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?)",
        [preset_id, workspace_id, name, _json(destinations), now, now],
    )
    return preset_id


def get_preset(cur: Cursor, workspace_id: str, preset_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM destination_presets WHERE workspace_id = ? AND id = ?"
        " AND deleted_at IS NULL",
        [workspace_id, preset_id],
    )


def preset_name_taken(cur: Cursor, workspace_id: str, name: str, exclude_id: str | None) -> bool:
    found = fetch_value(
        cur,
        "SELECT count(*) FROM destination_presets WHERE workspace_id = ? AND name = ?"
        " AND deleted_at IS NULL AND (? IS NULL OR id <> ?)",
        [workspace_id, name, exclude_id, exclude_id],
    )
    return bool(found)


def list_presets(cur: Cursor, workspace_id: str, after: str | None, limit: int) -> list[Row]:
    return fetch_all(
        cur,
        "SELECT * FROM destination_presets WHERE workspace_id = ? AND deleted_at IS NULL"
        " AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?",
        [workspace_id, after, after, limit],
    )


def update_preset(cur: Cursor, preset_id: str, name: str, destinations: list[Any]) -> None:
    cur.execute(
        "UPDATE destination_presets SET name = ?, destinations = ?, updated_at = ? WHERE id = ?",
        [name, _json(destinations), utcnow(), preset_id],
    )


def delete_preset(cur: Cursor, preset_id: str) -> None:
    now = utcnow()
    cur.execute(
        "UPDATE destination_presets SET deleted_at = ?, updated_at = ? WHERE id = ?",
        [now, now, preset_id],
    )


# -- content automations -----------------------------------------------------------------------


def insert_automation(
    cur: Cursor,
    workspace_id: str,
    *,
    name: str,
    enabled: bool,
    source: dict[str, Any],
    schedule: dict[str, Any],
    target: dict[str, Any],
    next_run_at: datetime | None,
) -> str:
    automation_id = new_id("ca")
    now = utcnow()
    cur.execute(
        "INSERT INTO content_automations (id, workspace_id, name, enabled, source, schedule,"
        " target, next_run_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            automation_id,
            workspace_id,
            name,
            enabled,
            _json(source),
            _json(schedule),
            _json(target),
            next_run_at,
            now,
            now,
        ],
    )
    return automation_id


def get_automation(cur: Cursor, workspace_id: str, automation_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM content_automations WHERE workspace_id = ? AND id = ?"
        " AND deleted_at IS NULL",
        [workspace_id, automation_id],
    )


def list_automations(
    cur: Cursor, workspace_id: str, enabled: bool | None, after: str | None, limit: int
) -> list[Row]:
    return fetch_all(
        cur,
        "SELECT * FROM content_automations WHERE workspace_id = ? AND deleted_at IS NULL"
        " AND (? IS NULL OR enabled = ?) AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?",
        [workspace_id, enabled, enabled, after, after, limit],
    )


def update_automation(
    cur: Cursor,
    automation_id: str,
    *,
    name: str,
    enabled: bool,
    source: dict[str, Any],
    schedule: dict[str, Any],
    target: dict[str, Any],
    next_run_at: datetime | None,
) -> None:
    cur.execute(
        "UPDATE content_automations SET name = ?, enabled = ?, source = ?, schedule = ?,"
        " target = ?, next_run_at = ?, updated_at = ? WHERE id = ?",
        [
            name,
            enabled,
            _json(source),
            _json(schedule),
            _json(target),
            next_run_at,
            utcnow(),
            automation_id,
        ],
    )


def delete_automation(cur: Cursor, automation_id: str) -> None:
    now = utcnow()
    cur.execute(
        "UPDATE content_automations SET deleted_at = ?, updated_at = ?, next_run_at = NULL"
        " WHERE id = ?",
        [now, now, automation_id],
    )


def automations_targeting_queue(cur: Cursor, workspace_id: str, queue_id: str) -> int:
    found = fetch_value(
        cur,
        "SELECT count(*) FROM content_automations WHERE workspace_id = ? AND deleted_at IS NULL"
        " AND json_extract_string(target, '$.queue_id') = ?",
        [workspace_id, queue_id],
    )
    return int(found or 0)


# -- queues ------------------------------------------------------------------------------------


def insert_queue(
    cur: Cursor,
    workspace_id: str,
    *,
    name: str,
    timezone: str,
    slots: list[dict[str, Any]],
    destinations: list[dict[str, Any]],
) -> str:
    queue_id = new_id("q")
    now = utcnow()
    cur.execute(
        "INSERT INTO queues (id, workspace_id, name, timezone, slots, destinations, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [queue_id, workspace_id, name, timezone, _json(slots), _json(destinations), now, now],
    )
    return queue_id


def get_queue(cur: Cursor, workspace_id: str, queue_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM queues WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL",
        [workspace_id, queue_id],
    )


def list_queues(cur: Cursor, workspace_id: str, after: str | None, limit: int) -> list[Row]:
    return fetch_all(
        cur,
        "SELECT * FROM queues WHERE workspace_id = ? AND deleted_at IS NULL"
        " AND (? IS NULL OR id < ?) ORDER BY id DESC LIMIT ?",
        [workspace_id, after, after, limit],
    )


def update_queue(
    cur: Cursor,
    queue_id: str,
    *,
    name: str,
    timezone: str,
    slots: list[dict[str, Any]],
    destinations: list[dict[str, Any]],
) -> None:
    cur.execute(
        "UPDATE queues SET name = ?, timezone = ?, slots = ?, destinations = ?, updated_at = ?"
        " WHERE id = ?",
        [name, timezone, _json(slots), _json(destinations), utcnow(), queue_id],
    )


def delete_queue(cur: Cursor, queue_id: str) -> None:
    now = utcnow()
    cur.execute(
        "UPDATE queues SET deleted_at = ?, updated_at = ? WHERE id = ?", [now, now, queue_id]
    )


# -- queue items -------------------------------------------------------------------------------

_ITEM_COLUMNS = (
    "qi.*, p.text AS post_text, p.status AS post_status, p.media_ids AS post_media_ids,"
    " p.tags AS post_tags"
)


def insert_item(cur: Cursor, workspace_id: str, queue_id: str, post_id: str, position: int) -> str:
    item_id = new_id("qi")
    now = utcnow()
    cur.execute(
        "INSERT INTO queue_items (id, queue_id, workspace_id, post_id, position, status, slot_at,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'queued', NULL, ?, ?)",
        [item_id, queue_id, workspace_id, post_id, position, now, now],
    )
    return item_id


def next_position(cur: Cursor, queue_id: str) -> int:
    found = fetch_value(cur, "SELECT max(position) FROM queue_items WHERE queue_id = ?", [queue_id])
    return int(found or 0) + 1


def get_item(cur: Cursor, workspace_id: str, queue_id: str, item_id: str) -> Row | None:
    return fetch_one(
        cur,
        f"SELECT {_ITEM_COLUMNS} FROM queue_items qi JOIN posts p ON p.id = qi.post_id"  # noqa: S608
        " WHERE qi.workspace_id = ? AND qi.queue_id = ? AND qi.id = ?",
        [workspace_id, queue_id, item_id],
    )


def list_items(
    cur: Cursor,
    workspace_id: str,
    queue_id: str,
    statuses: list[str],
    after: tuple[int, str] | None,
    limit: int,
) -> list[Row]:
    """Items of a queue with one of ``statuses``, ascending by (position, id)."""
    after_pos, after_id = after if after is not None else (None, None)
    return fetch_all(
        cur,
        f"SELECT {_ITEM_COLUMNS} FROM queue_items qi JOIN posts p ON p.id = qi.post_id"  # noqa: S608
        " WHERE qi.workspace_id = ? AND qi.queue_id = ? AND list_contains(?, qi.status)"
        " AND (? IS NULL OR qi.position > ? OR (qi.position = ? AND qi.id > ?))"
        " ORDER BY qi.position, qi.id LIMIT ?",
        [workspace_id, queue_id, statuses, after_pos, after_pos, after_pos, after_id, limit],
    )


def active_items(cur: Cursor, queue_id: str) -> list[Row]:
    """Items still waiting to be published (queued or scheduled), by (position, id)."""
    return fetch_all(
        cur,
        "SELECT * FROM queue_items WHERE queue_id = ? AND list_contains(?, status)"
        " ORDER BY position, id",
        [queue_id, ACTIVE_ITEM_STATUSES],
    )


def active_item_for_post(cur: Cursor, post_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM queue_items WHERE post_id = ? AND list_contains(?, status) LIMIT 1",
        [post_id, ACTIVE_ITEM_STATUSES],
    )


def set_item(
    cur: Cursor, item_id: str, *, position: int, status: str, slot_at: datetime | None
) -> None:
    cur.execute(
        "UPDATE queue_items SET position = ?, status = ?, slot_at = ?, updated_at = ? WHERE id = ?",
        [position, status, slot_at, utcnow(), item_id],
    )


# -- posts a queue owns ------------------------------------------------------------------------


def get_post(cur: Cursor, workspace_id: str, post_id: str) -> Row | None:
    return fetch_one(
        cur, "SELECT * FROM posts WHERE workspace_id = ? AND id = ?", [workspace_id, post_id]
    )


def insert_queue_post(
    cur: Cursor,
    workspace_id: str,
    *,
    text: str,
    media_ids: list[str],
    tags: list[str],
    status: str,
    scheduled_at: datetime | None,
    created_by: str,
    destinations: list[tuple[str, str]],
) -> str:
    """A post created by a queue, with one pending destination per (account id, platform)."""
    post_id = new_id("post")
    now = utcnow()
    cur.execute(
        "INSERT INTO posts (id, workspace_id, text, status, scheduled_at, approval_required, tags,"
        " media_ids, platform_options, source, created_by, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, false, ?, ?, NULL, 'queue', ?, ?, ?)",
        [post_id, workspace_id, text, status, scheduled_at, tags, media_ids, created_by, now, now],
    )
    for account_id, platform in destinations:
        cur.execute(
            "INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform,"
            " status, attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)",
            [new_id("pd"), post_id, workspace_id, account_id, platform, now, now],
        )
    return post_id


def post_destination_platforms(cur: Cursor, post_id: str) -> list[str]:
    rows = fetch_all(cur, "SELECT platform FROM post_destinations WHERE post_id = ?", [post_id])
    return [r["platform"] for r in rows]


def set_post_schedule(
    cur: Cursor, post_id: str, status: str, scheduled_at: datetime | None
) -> None:
    cur.execute(
        "UPDATE posts SET status = ?, scheduled_at = ?, updated_at = ? WHERE id = ?",
        [status, scheduled_at, utcnow(), post_id],
    )


def cancel_post(cur: Cursor, post_id: str) -> None:
    now = utcnow()
    cur.execute(
        "UPDATE posts SET status = 'canceled', canceled_at = ?, updated_at = ? WHERE id = ?"
        " AND status IN ('draft', 'pending_approval', 'scheduled')",
        [now, now, post_id],
    )


def known_media(cur: Cursor, workspace_id: str, ids: list[str]) -> set[str]:
    rows = fetch_all(
        cur,
        "SELECT id FROM media WHERE workspace_id = ? AND list_contains(?, id)",
        [workspace_id, ids],
    )
    return {r["id"] for r in rows}


# -- scheduled events --------------------------------------------------------------------------


def insert_event(
    cur: Cursor,
    workspace_id: str,
    *,
    kind: str,
    title: str,
    starts_at: datetime,
    ref_type: str | None,
    ref_id: str | None,
) -> str:
    event_id = new_id("evt")
    now = utcnow()
    cur.execute(
        "INSERT INTO scheduled_events (id, workspace_id, kind, title, starts_at, status, ref_type,"
        " ref_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'scheduled', ?, ?, ?, ?)",
        [event_id, workspace_id, kind, title, starts_at, ref_type, ref_id, now, now],
    )
    return event_id


def get_event(cur: Cursor, workspace_id: str, event_id: str) -> Row | None:
    return fetch_one(
        cur,
        "SELECT * FROM scheduled_events WHERE workspace_id = ? AND id = ?",
        [workspace_id, event_id],
    )


def cancel_event(cur: Cursor, event_id: str) -> None:
    now = utcnow()
    cur.execute(
        "UPDATE scheduled_events SET status = 'canceled', canceled_at = ?, updated_at = ?"
        " WHERE id = ?",
        [now, now, event_id],
    )


def cancel_ref_events(cur: Cursor, workspace_id: str, kind: str, ref_id: str) -> None:
    """Cancel the still-scheduled events of ``kind`` about ``ref_id``."""
    now = utcnow()
    cur.execute(
        "UPDATE scheduled_events SET status = 'canceled', canceled_at = ?, updated_at = ?"
        " WHERE workspace_id = ? AND kind = ? AND ref_id = ? AND status = 'scheduled'",
        [now, now, workspace_id, kind, ref_id],
    )


def queue_item_exists(cur: Cursor, workspace_id: str, item_id: str) -> bool:
    found = fetch_value(
        cur,
        "SELECT count(*) FROM queue_items WHERE workspace_id = ? AND id = ?",
        [workspace_id, item_id],
    )
    return bool(found)


_CALENDAR = """
SELECT * FROM (
    SELECT e.id, e.kind, e.title, e.starts_at, e.status, e.ref_type, e.ref_id,
           true AS stored
    FROM scheduled_events e
    WHERE e.workspace_id = ? AND e.starts_at >= ? AND e.starts_at < ?
      AND (? OR e.status <> 'canceled')
    UNION ALL
    SELECT p.id, 'publication', left(p.text, 80), p.scheduled_at, p.status, 'post', p.id,
           false
    FROM posts p
    WHERE p.workspace_id = ? AND p.status IN ('scheduled', 'pending_approval')
      AND p.scheduled_at >= ? AND p.scheduled_at < ?
      AND NOT EXISTS (
          SELECT 1 FROM queue_items qi
          WHERE qi.post_id = p.id AND qi.status IN ('queued', 'scheduled'))
    UNION ALL
    SELECT qi.id, 'queue_slot', q.name || ': ' || left(p.text, 80), qi.slot_at, qi.status,
           'queue_item', qi.id, false
    FROM queue_items qi
    JOIN queues q ON q.id = qi.queue_id
    JOIN posts p ON p.id = qi.post_id
    WHERE qi.workspace_id = ? AND qi.status = 'scheduled'
      AND qi.slot_at >= ? AND qi.slot_at < ?
) calendar
WHERE (? IS NULL OR kind = ?)
  AND (? IS NULL OR starts_at > ? OR (starts_at = ? AND id > ?))
ORDER BY starts_at, id
LIMIT ?
"""


def list_calendar(
    cur: Cursor,
    workspace_id: str,
    *,
    start: datetime,
    end: datetime,
    kind: str | None,
    include_canceled: bool,
    after: tuple[datetime, str] | None,
    limit: int,
) -> list[Row]:
    """Stored events, scheduled posts and scheduled queue items in [start, end), by (starts_at, id).

    One UNION ALL query, so the keyset cursor applies to the combined set.
    """
    after_at, after_id = after if after is not None else (None, None)
    return fetch_all(
        cur,
        _CALENDAR,
        [
            workspace_id, start, end, include_canceled,
            workspace_id, start, end,
            workspace_id, start, end,
            kind, kind,
            after_at, after_at, after_at, after_id,
            limit,
        ],
    )  # fmt: skip


def count_active_items(cur: Cursor, queue_id: str) -> int:
    found = fetch_value(
        cur,
        "SELECT count(*) FROM queue_items WHERE queue_id = ? AND list_contains(?, status)",
        [queue_id, ACTIVE_ITEM_STATUSES],
    )
    return int(found or 0)
