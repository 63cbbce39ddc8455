"""Content automations, destination presets, queues, queue items and scheduled events.

Also the few post rows a queue creates (``posts.source = 'queue'``) and moves in time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from warehouse import posts, resources
from warehouse.cursor import insert_once
from warehouse.ids import new_id, utcnow
from warehouse.reads import select_row, select_rows
from warehouse.rows import Cursor, ResultRow, TableRow, columns, fetch_row, fetch_rows, fetch_value
from warehouse.sql import given, json_text, one_of

ACTIVE_ITEM_STATUSES = ["queued", "scheduled"]


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class PresetRow(TableRow):
    """A named set of destinations (account and options) a post can name instead."""

    TABLE = "destination_presets"

    id: str
    workspace_id: str
    name: str
    destinations: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class AutomationRow(TableRow):
    """A content automation: where its posts come from, when it runs, where they go."""

    TABLE = "content_automations"

    id: str
    workspace_id: str
    name: str
    enabled: bool
    source: dict[str, Any]
    schedule: dict[str, Any]
    target: dict[str, Any]
    last_run_at: datetime | None
    next_run_at: datetime | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class QueueRow(TableRow):
    """A queue: weekly slots in a timezone, and the destinations its posts go to."""

    TABLE = "queues"

    id: str
    workspace_id: str
    name: str
    timezone: str
    slots: list[dict[str, Any]]
    destinations: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class QueueItemRow(TableRow):
    """A post's place in a queue, and the slot it holds once scheduled."""

    TABLE = "queue_items"

    id: str
    queue_id: str
    workspace_id: str
    post_id: str
    position: int
    status: str
    slot_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class QueuedPost(ResultRow):
    """A queue item with what its listing shows of the post."""

    item: QueueItemRow
    post_text: str
    post_status: str


@dataclass(frozen=True, slots=True)
class CalendarEntry(ResultRow):
    """An entry of the calendar: a stored event, a scheduled post or a scheduled queue slot."""

    id: str
    kind: str
    title: str
    starts_at: datetime
    status: str
    ref_type: str | None
    ref_id: str | None
    stored: bool


# -- destination presets -----------------------------------------------------------------------


def insert_preset(cur: Cursor, workspace_id: str, name: str, destinations: list[Any]) -> str:
    return resources.insert(
        cur, PresetRow, "dp", workspace_id, {"name": name, "destinations": _json(destinations)}
    )


def get_preset(cur: Cursor, workspace_id: str, preset_id: str) -> PresetRow | None:
    return resources.get(cur, PresetRow, workspace_id, preset_id)


def preset_name_taken(cur: Cursor, workspace_id: str, name: str, exclude_id: str | None) -> bool:
    found = fetch_value(
        cur,
        "SELECT count(*) FROM destination_presets WHERE workspace_id = ? AND name = ?"
        " AND deleted_at IS NULL AND (? IS NULL OR id <> ?)",
        [workspace_id, name, exclude_id, exclude_id],
    )
    return bool(found)


def list_presets(cur: Cursor, workspace_id: str, after: str | None, limit: int) -> list[PresetRow]:
    return resources.page(cur, PresetRow, workspace_id, after=after, limit=limit)


def update_preset(
    cur: Cursor, workspace_id: str, preset_id: str, name: str, destinations: list[Any]
) -> None:
    resources.update(
        cur,
        PresetRow,
        workspace_id,
        preset_id,
        {"name": name, "destinations": _json(destinations)},
    )


def delete_preset(cur: Cursor, workspace_id: str, preset_id: str) -> None:
    resources.delete(cur, PresetRow, workspace_id, preset_id)


# -- content automations -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AutomationFields:
    """What a content automation's create and update write."""

    name: str
    enabled: bool
    source: dict[str, Any]
    schedule: dict[str, Any]
    target: dict[str, Any]
    next_run_at: datetime | None

    def values(self) -> dict[str, Any]:
        """The columns' stored values (JSON as text)."""
        return {
            "name": self.name,
            "enabled": self.enabled,
            "source": _json(self.source),
            "schedule": _json(self.schedule),
            "target": _json(self.target),
            "next_run_at": self.next_run_at,
        }


def insert_automation(cur: Cursor, workspace_id: str, fields: AutomationFields) -> str:
    return resources.insert(cur, AutomationRow, "ca", workspace_id, fields.values())


def get_automation(cur: Cursor, workspace_id: str, automation_id: str) -> AutomationRow | None:
    return resources.get(cur, AutomationRow, workspace_id, automation_id)


def list_automations(
    cur: Cursor, workspace_id: str, enabled: bool | None, after: str | None, limit: int
) -> list[AutomationRow]:
    return resources.page(
        cur, AutomationRow, workspace_id, after=after, limit=limit, equal={"enabled": enabled}
    )


def due_automations(
    cur: Cursor, now: datetime, *, limit: int = 50, workspace_id: str | None = None
) -> list[AutomationRow]:
    """Enabled automations whose next run has come (of one workspace, or of all)."""
    return select_rows(
        cur,
        AutomationRow,
        "WHERE enabled AND deleted_at IS NULL AND next_run_at IS NOT NULL AND next_run_at <= ?"
        " AND (? IS NULL OR workspace_id = ?) ORDER BY next_run_at, id LIMIT ?",
        [now, workspace_id, workspace_id, limit],
    )


def update_automation(
    cur: Cursor, workspace_id: str, automation_id: str, fields: AutomationFields
) -> None:
    resources.update(cur, AutomationRow, workspace_id, automation_id, fields.values())


def delete_automation(cur: Cursor, workspace_id: str, automation_id: str) -> None:
    resources.delete(cur, AutomationRow, workspace_id, automation_id, {"next_run_at": None})


def automations_targeting_queue(cur: Cursor, workspace_id: str, queue_id: str) -> int:
    found = fetch_value(
        cur,
        "SELECT count(*) FROM content_automations WHERE workspace_id = ? AND deleted_at IS NULL"  # noqa: S608 - constants
        f" AND {json_text(cur, 'target', 'queue_id')} = ?",
        [workspace_id, queue_id],
    )
    return int(found or 0)


# -- queues ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueFields:
    """What a queue's create and update write."""

    name: str
    timezone: str
    slots: list[dict[str, Any]]
    destinations: list[dict[str, Any]]

    def values(self) -> dict[str, Any]:
        """The columns' stored values (JSON as text)."""
        return {
            "name": self.name,
            "timezone": self.timezone,
            "slots": _json(self.slots),
            "destinations": _json(self.destinations),
        }


def insert_queue(cur: Cursor, workspace_id: str, fields: QueueFields) -> str:
    return resources.insert(cur, QueueRow, "q", workspace_id, fields.values())


def get_queue(cur: Cursor, workspace_id: str, queue_id: str) -> QueueRow | None:
    return resources.get(cur, QueueRow, workspace_id, queue_id)


def list_queues(cur: Cursor, workspace_id: str, after: str | None, limit: int) -> list[QueueRow]:
    return resources.page(cur, QueueRow, workspace_id, after=after, limit=limit)


def update_queue(cur: Cursor, workspace_id: str, queue_id: str, fields: QueueFields) -> None:
    resources.update(cur, QueueRow, workspace_id, queue_id, fields.values())


def delete_queue(cur: Cursor, workspace_id: str, queue_id: str) -> None:
    resources.delete(cur, QueueRow, workspace_id, queue_id)


# -- queue items -------------------------------------------------------------------------------

_QUEUED_POSTS = (
    f"SELECT {columns(QueueItemRow, 'qi')}, p.text, p.status"  # noqa: S608 - constants
    " FROM queue_items qi JOIN posts p ON p.id = qi.post_id"
)


def insert_item(cur: Cursor, workspace_id: str, queue_id: str, post_id: str, position: int) -> str:
    values = {"queue_id": queue_id, "post_id": post_id, "position": position, "status": "queued"}
    return resources.insert(cur, QueueItemRow, "qi", workspace_id, values)


def next_position(cur: Cursor, queue_id: str) -> int:
    found = fetch_value(cur, "SELECT max(position) FROM queue_items WHERE queue_id = ?", [queue_id])
    return int(found or 0) + 1


def get_item(cur: Cursor, workspace_id: str, queue_id: str, item_id: str) -> QueuedPost | None:
    return fetch_row(
        cur,
        f"{_QUEUED_POSTS} WHERE qi.workspace_id = ? AND qi.queue_id = ? AND qi.id = ?",
        [workspace_id, queue_id, item_id],
        QueuedPost.make,
    )


def list_items(
    cur: Cursor,
    workspace_id: str,
    queue_id: str,
    statuses: list[str],
    after: tuple[int, str] | None,
    limit: int,
) -> list[QueuedPost]:
    """Items of a queue with one of ``statuses``, ascending by (position, id)."""
    where, params = given(
        [
            ("qi.queue_id = ?", queue_id),
            ("qi.workspace_id = ?", workspace_id),
            (one_of(cur, "qi.status"), statuses),
            ("(qi.position, qi.id) > (?, ?)", after),
        ]
    )
    return fetch_rows(
        cur,
        f"{_QUEUED_POSTS} WHERE {' AND '.join(where)} ORDER BY qi.position, qi.id LIMIT ?",
        [*params, limit],
        QueuedPost.make,
    )


def active_items(cur: Cursor, queue_id: str) -> list[QueueItemRow]:
    """Items still waiting to be published (queued or scheduled), by (position, id)."""
    return select_rows(
        cur,
        QueueItemRow,
        f"WHERE queue_id = ? AND {one_of(cur, 'status')} ORDER BY position, id",
        [queue_id, ACTIVE_ITEM_STATUSES],
    )


def active_item_for_post(cur: Cursor, post_id: str) -> QueueItemRow | None:
    return select_row(
        cur,
        QueueItemRow,
        f"WHERE post_id = ? AND {one_of(cur, 'status')} LIMIT 1",
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


def insert_queue_post(
    cur: Cursor,
    workspace_id: str,
    *,
    text: str,
    media_ids: list[str],
    tags: list[str],
    status: posts.PostStatus,
    scheduled_at: datetime | None,
    created_by: str,
    destinations: list[tuple[str, str]],
) -> str:
    """A post created by a queue, with one pending destination per (account id, platform)."""
    new = posts.NewPost(
        workspace_id=workspace_id,
        text=text,
        status=status,
        scheduled_at=scheduled_at,
        approval_required=False,
        tags=tags,
        media_ids=media_ids,
        platform_options={},
        created_by=created_by,
        source="queue",
    )
    post_id = posts.insert_post(cur, new)
    posts.insert_destinations(cur, post_id, workspace_id, destinations)
    return post_id


def known_media(cur: Cursor, workspace_id: str, ids: list[str]) -> set[str]:
    cur.execute(
        f"SELECT id FROM media WHERE workspace_id = ? AND {one_of(cur, 'id')}",  # noqa: S608 - constants
        [workspace_id, ids],
    )
    return {media_id for (media_id,) in cur.fetchall()}


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


def get_event(cur: Cursor, workspace_id: str, event_id: str) -> CalendarEntry | None:
    """A stored event, as the calendar lists it."""
    return fetch_row(
        cur,
        "SELECT id, kind, title, starts_at, status, ref_type, ref_id, true"
        " FROM scheduled_events WHERE workspace_id = ? AND id = ?",
        [workspace_id, event_id],
        CalendarEntry.make,
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


# Posts the calendar shows at their time: scheduled, or waiting for approval to be.
_UPCOMING = posts.sql_in([posts.PostStatus.SCHEDULED, posts.PostStatus.PENDING_APPROVAL])
# Each part of the calendar, ordered by its own (time, id) index; the parts are merged in
# that order (SQLite: MERGE (UNION ALL); PostgreSQL: Merge Append), so a page reads its rows
# from the cursor on and sorts nothing. ``{terms}``: the part's kind and cursor terms, added
# only when given (warehouse.sql.given).
_CALENDAR_PARTS = (
    (
        "SELECT e.id, e.kind, e.title, e.starts_at, e.status, e.ref_type, e.ref_id, true AS stored"
        " FROM scheduled_events e"
        " WHERE e.workspace_id = ? AND e.starts_at >= ? AND e.starts_at < ?"
        " AND (? OR e.status <> 'canceled'){terms}",
        "e.kind",
        "(e.starts_at, e.id)",
    ),
    (
        "SELECT p.id, 'publication', substr(p.text, 1, 80), p.scheduled_at, p.status, 'post',"  # noqa: S608 - constants
        " p.id, false FROM posts p"
        f" WHERE p.workspace_id = ? AND p.status IN {_UPCOMING}"
        " AND p.scheduled_at >= ? AND p.scheduled_at < ?"
        " AND NOT EXISTS (SELECT 1 FROM queue_items qi"
        "  WHERE qi.post_id = p.id AND qi.status IN ('queued', 'scheduled')){terms}",
        "'publication'",
        "(p.scheduled_at, p.id)",
    ),
    (
        "SELECT qi.id, 'queue_slot', q.name || ': ' || substr(p.text, 1, 80), qi.slot_at,"
        " qi.status, 'queue_item', qi.id, false"
        " FROM queue_items qi JOIN queues q ON q.id = qi.queue_id JOIN posts p ON p.id = qi.post_id"
        " WHERE qi.workspace_id = ? AND qi.status = 'scheduled'"
        " AND qi.slot_at >= ? AND qi.slot_at < ?{terms}",
        "'queue_slot'",
        "(qi.slot_at, qi.id)",
    ),
)


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
) -> list[CalendarEntry]:
    """Stored events, scheduled posts and scheduled queue items in [start, end), by (starts_at, id).

    One UNION ALL query, so the keyset cursor applies to the combined set.
    """
    # A page after a cursor starts its parts' ranges there, not at ``start``.
    lower = start
    if after is not None:
        at = after[0] if after[0].tzinfo is None else after[0].astimezone(UTC).replace(tzinfo=None)
        lower = max(start, at)
    parts, params = [], []
    for i, (sql, kind_expr, position) in enumerate(_CALENDAR_PARTS):
        where, extra = given([(f"{kind_expr} = ?", kind), (f"{position} > (?, ?)", after)])
        parts.append(sql.format(terms="".join(f" AND {term}" for term in where)))
        params += [workspace_id, lower, end, *([include_canceled] if i == 0 else []), *extra]
    return fetch_rows(
        cur,
        " UNION ALL ".join(parts) + " ORDER BY starts_at, id LIMIT ?",
        [*params, limit],
        CalendarEntry.make,
    )


def count_active_items(cur: Cursor, queue_id: str) -> int:
    found = fetch_value(
        cur,
        f"SELECT count(*) FROM queue_items WHERE queue_id = ? AND {one_of(cur, 'status')}",  # noqa: S608 - constants
        [queue_id, ACTIVE_ITEM_STATUSES],
    )
    return int(found or 0)


# -- runs: the content automation worker's claims and feed positions -------------------------


def claim_content_run(
    cur: Cursor, automation_id: str, due_at: datetime, next_run_at: datetime | None, now: datetime
) -> bool:
    """Advance the schedule if it is still at ``due_at``: the one runner that does, runs it."""
    cur.execute(
        "UPDATE content_automations SET last_run_at = ?, next_run_at = ?, updated_at = ?"
        " WHERE id = ? AND next_run_at = ? AND enabled AND deleted_at IS NULL RETURNING id",
        [now, next_run_at, now, automation_id, due_at],
    )
    return cur.fetchone() is not None


def finish_run_events(cur: Cursor, workspace_id: str, automation_id: str, now: datetime) -> None:
    """The automation's scheduled runs that have come are done."""
    cur.execute(
        "UPDATE scheduled_events SET status = 'done', updated_at = ?"
        " WHERE workspace_id = ? AND kind = 'automation_run' AND ref_id = ?"
        " AND status = 'scheduled' AND starts_at <= ?",
        [now, workspace_id, automation_id, now],
    )


def automation_position(cur: Cursor, automation_id: str) -> int | None:
    found: int | None = fetch_value(
        cur,
        "SELECT position FROM content_automation_state WHERE automation_id = ?",
        [automation_id],
    )
    return found


def save_automation_position(
    cur: Cursor, automation_id: str, position: int, *, exists: bool
) -> None:
    if exists:
        cur.execute(
            "UPDATE content_automation_state SET position = ?, updated_at = ?"
            " WHERE automation_id = ?",
            [position, utcnow(), automation_id],
        )
    else:
        cur.execute(
            "INSERT INTO content_automation_state (automation_id, position, updated_at)"
            " VALUES (?, ?, ?)",
            [automation_id, position, utcnow()],
        )


def seen_items(cur: Cursor, automation_id: str) -> set[str]:
    cur.execute(
        "SELECT item_key FROM content_automation_seen WHERE automation_id = ?", [automation_id]
    )
    return {key for (key,) in cur.fetchall()}


def mark_seen(cur: Cursor, automation_id: str, item_key: str) -> bool:
    """Claim a feed item for one post; False when it was already taken."""
    # False: another runner took it first.
    return insert_once(
        cur,
        "INSERT INTO content_automation_seen (automation_id, item_key, post_id, created_at)"
        " VALUES (?, ?, NULL, ?)",
        [automation_id, item_key, utcnow()],
    )


def set_seen_post(cur: Cursor, automation_id: str, item_key: str, post_id: str) -> None:
    cur.execute(
        "UPDATE content_automation_seen SET post_id = ? WHERE automation_id = ? AND item_key = ?",
        [post_id, automation_id, item_key],
    )
