"""Inbox conversations, their messages, AI reply drafts and inbox automations.

An item's stored ``status`` is what the last write set; a snooze that has run out reads as
``open`` (see :func:`list_items`), so no worker is needed to wake snoozed items.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from warehouse import resources
from warehouse.cursor import insert_once
from warehouse.ids import naive_utc, new_id, utcnow
from warehouse.reads import newest_first, select_row, select_rows
from warehouse.rows import Cursor, ResultRow, TableRow, columns, fetch_one, fetch_rows
from warehouse.sql import given, holds, later_of

# Characters of the latest message an item row carries: one more than a preview shows
# (domain/inbox/bounds.py), so that the domain sees whether it was cut.
PREVIEW_READ = 281


@dataclass(frozen=True, slots=True)
class ItemRow(ResultRow):
    """A conversation as a reader sees it: ``status`` with run-out snoozes open, a preview."""

    id: str
    workspace_id: str
    account_id: str
    platform: str
    kind: str
    external_id: str
    post_id: str | None
    author_handle: str
    author_name: str | None
    snoozed_until: datetime | None
    tags: list[str]
    assignee: str | None
    last_message_at: datetime
    created_at: datetime
    updated_at: datetime
    stored_status: str
    status: str
    preview: str | None  # the latest message's first PREVIEW_READ characters


@dataclass(frozen=True, slots=True)
class MessageRow(TableRow):
    """One message of a conversation, inbound or a reply (with its delivery)."""

    TABLE = "inbox_messages"

    id: str
    item_id: str
    workspace_id: str
    direction: str
    author_handle: str
    text: str
    external_id: str | None
    delivery: str
    sent_by: str | None
    created_at: datetime
    claimed_by: str | None
    lease_expires_at: datetime | None
    delivery_attempts: int | None
    next_attempt_at: datetime | None
    delivery_error: str | None


@dataclass(frozen=True, slots=True)
class DraftRow(TableRow):
    """A suggested reply."""

    TABLE = "inbox_drafts"

    id: str
    item_id: str
    workspace_id: str
    text: str
    source: str
    confidence: float
    created_at: datetime


@dataclass(frozen=True, slots=True)
class AutomationRow(TableRow):
    """An inbox rule: a trigger (phrases or an intent) and the action it takes."""

    TABLE = "inbox_automations"

    id: str
    workspace_id: str
    name: str
    enabled: bool
    trigger_type: str
    phrases: list[str]
    intent: str | None
    action: str
    action_params: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class Exchange(ResultRow):
    """A human reply and the inbound message it answered."""

    item_id: str
    reply: str
    inbound_id: str
    inbound: str
    reply_id: str


@dataclass(frozen=True, slots=True)
class ReplyTarget(TableRow):
    """The conversation a reply goes to: its platform thread and account."""

    TABLE = "inbox_items"

    id: str
    account_id: str
    platform: str
    external_id: str


@dataclass(frozen=True, slots=True)
class SyncState(TableRow):
    """How far an account's inbox has been read."""

    TABLE = "inbox_sync_state"

    account_id: str
    workspace_id: str
    synced_until: datetime | None
    last_error: str | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class AutomationRun(TableRow):
    """One firing of an inbox automation on a conversation."""

    TABLE = "inbox_automation_runs"

    id: str
    automation_id: str
    item_id: str
    workspace_id: str
    action: str
    outcome: str
    created_at: datetime


# -- conversations -----------------------------------------------------------------------------


def upsert_conversation(
    cur: Cursor,
    workspace_id: str,
    account_id: str,
    platform: str,
    kind: str,
    external_id: str,
    author_handle: str,
    author_name: str | None,
    text: str,
    received_at: datetime,
    post_id: str | None = None,
    *,
    message_external_id: str | None = None,
) -> str:
    """Record one inbound message, creating its conversation on first sight; returns the item id.

    A new message on a replied, closed or snoozed conversation opens it again. With
    ``message_external_id`` a message the platform delivers twice is recorded once.
    """
    at = naive_utc(received_at)
    now = utcnow()
    item = fetch_one(
        cur,
        "SELECT id, last_message_at FROM inbox_items"
        " WHERE workspace_id = ? AND platform = ? AND external_id = ?",
        [workspace_id, platform, external_id],
    )
    if item is None:
        item_id = new_id("inb")
        cur.execute(
            "INSERT INTO inbox_items (id, workspace_id, account_id, platform, kind, external_id,"
            " post_id, author_handle, author_name, status, snoozed_until, tags, assignee,"
            " last_message_at, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', NULL, ?, NULL, ?, ?, ?)",
            [
                item_id,
                workspace_id,
                account_id,
                platform,
                kind,
                external_id,
                post_id,
                author_handle,
                author_name,
                [],
                at,
                now,
                now,
            ],
        )
    else:
        item_id = item["id"]
        if message_external_id is not None and fetch_one(
            cur,
            "SELECT id FROM inbox_messages WHERE item_id = ? AND external_id = ?",
            [item_id, message_external_id],
        ):
            return str(item_id)
        cur.execute(
            "UPDATE inbox_items SET status = 'open', snoozed_until = NULL,"  # noqa: S608 - constants
            f" last_message_at = {later_of(cur, 'last_message_at', '?')}, updated_at = ?"
            " WHERE id = ?",
            [at, now, item_id],
        )
    cur.execute(
        "INSERT INTO inbox_messages (id, item_id, workspace_id, direction, author_handle, text,"
        " external_id, delivery, sent_by, created_at)"
        " VALUES (?, ?, ?, 'inbound', ?, ?, ?, 'received', NULL, ?)",
        [new_id("inm"), item_id, workspace_id, author_handle, text, message_external_id, at],
    )
    return str(item_id)


@dataclass(frozen=True, kw_only=True)
class ItemFilter:
    """What an inbox list keeps (every filter given must hold); None keeps all."""

    status: str | None = None
    platform: str | None = None
    kind: str | None = None
    account_id: str | None = None
    assignee: str | None = None
    tag: str | None = None


def get_item(cur: Cursor, workspace_id: str, item_id: str) -> ItemRow | None:
    found = list_items(cur, workspace_id, item_id=item_id, limit=1)
    return found[0] if found else None


def list_items(
    cur: Cursor,
    workspace_id: str,
    filters: ItemFilter | None = None,
    *,
    item_id: str | None = None,
    after: tuple[datetime, str] | None = None,
    limit: int = 100,
) -> list[ItemRow]:
    """Items by newest activity first: ``(last_message_at DESC, id DESC)``, keyset ``after``."""
    f = filters or ItemFilter()
    # ``status`` is what a reader sees: a snooze that has run out reads as open.
    status = "CASE WHEN i.status = 'snoozed' AND i.snoozed_until <= ? THEN 'open' ELSE i.status END"
    now = utcnow()
    where, params = given(
        [
            ("i.workspace_id = ?", workspace_id),
            ("i.id = ?", item_id),
            (f"{status} = ?", None if f.status is None else (now, f.status)),
            ("i.platform = ?", f.platform),
            ("i.kind = ?", f.kind),
            ("i.account_id = ?", f.account_id),
            ("i.assignee = ?", f.assignee),
            (holds(cur, "i.tags"), f.tag),
            ("(i.last_message_at, i.id) < (?, ?)", after),
        ]
    )
    return fetch_rows(
        cur,
        f"SELECT {columns(ItemRow)} FROM"  # noqa: S608 - constants
        " (SELECT i.id, i.workspace_id, i.account_id, i.platform, i.kind,"
        " i.external_id, i.post_id, i.author_handle, i.author_name, i.snoozed_until, i.tags,"
        " i.assignee, i.last_message_at, i.created_at, i.updated_at,"
        f" i.status AS stored_status, {status} AS status,"
        # The preview's first PREVIEW_READ characters only: a list never reads whole texts.
        f" (SELECT SUBSTR(m.text, 1, {PREVIEW_READ}) FROM inbox_messages m WHERE m.item_id = i.id"
        "  ORDER BY m.created_at DESC, m.id DESC LIMIT 1) AS preview"
        f" FROM inbox_items i WHERE {' AND '.join(where)}) AS v"
        " ORDER BY last_message_at DESC, id DESC LIMIT ?",
        [now, *params, limit],
        ItemRow.make,
    )


def update_item(
    cur: Cursor,
    workspace_id: str,
    item_id: str,
    *,
    status: str,
    snoozed_until: datetime | None,
    tags: list[str],
    assignee: str | None,
) -> None:
    cur.execute(
        "UPDATE inbox_items SET status = ?, snoozed_until = ?, tags = ?, assignee = ?,"
        " updated_at = ? WHERE workspace_id = ? AND id = ?",
        [status, snoozed_until, tags, assignee, utcnow(), workspace_id, item_id],
    )


# -- messages ----------------------------------------------------------------------------------


def list_messages(cur: Cursor, workspace_id: str, item_id: str) -> list[MessageRow]:
    """A conversation's messages, oldest first."""
    return select_rows(
        cur,
        MessageRow,
        "WHERE workspace_id = ? AND item_id = ? ORDER BY created_at, id",
        [workspace_id, item_id],
    )


def latest_inbound(cur: Cursor, workspace_id: str, item_id: str) -> MessageRow | None:
    return select_row(
        cur,
        MessageRow,
        "WHERE workspace_id = ? AND item_id = ?"
        " AND direction = 'inbound' ORDER BY created_at DESC, id DESC LIMIT 1",
        [workspace_id, item_id],
    )


def add_outbound(
    cur: Cursor, workspace_id: str, item_id: str, author_handle: str, text: str, sent_by: str
) -> str:
    """Record a reply for the delivery worker (delivery ``pending``); the item is replied."""
    message_id = new_id("inm")
    now = utcnow()
    cur.execute(
        "INSERT INTO inbox_messages (id, item_id, workspace_id, direction, author_handle, text,"
        " external_id, delivery, sent_by, created_at)"
        " VALUES (?, ?, ?, 'outbound', ?, ?, NULL, 'pending', ?, ?)",
        [message_id, item_id, workspace_id, author_handle, text, sent_by, now],
    )
    cur.execute(
        "UPDATE inbox_items SET status = 'replied', snoozed_until = NULL,"  # noqa: S608 - constants
        f" last_message_at = {later_of(cur, 'last_message_at', '?')}, updated_at = ?"
        " WHERE workspace_id = ? AND id = ?",
        [now, now, workspace_id, item_id],
    )
    return message_id


def get_message(cur: Cursor, workspace_id: str, message_id: str) -> MessageRow | None:
    return select_row(
        cur, MessageRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, message_id]
    )


def past_exchanges(
    cur: Cursor, workspace_id: str, *, exclude_message_id: str | None = None, limit: int = 500
) -> list[Exchange]:
    """The workspace's most recent human replies, each with the inbound message it answered.

    A human reply is an outbound message sent with an API key (``sent_by`` ``key_…``), not by an
    automation, whose delivery has not failed.
    """
    return fetch_rows(
        cur,
        f"SELECT {columns(Exchange)} FROM (SELECT o.item_id, o.text AS reply,"  # noqa: S608 - constants
        " (SELECT i.id FROM inbox_messages i WHERE i.item_id = o.item_id"
        "  AND i.direction = 'inbound' AND i.created_at <= o.created_at"
        "  ORDER BY i.created_at DESC, i.id DESC LIMIT 1) AS inbound_id,"
        " (SELECT i.text FROM inbox_messages i WHERE i.item_id = o.item_id"
        "  AND i.direction = 'inbound' AND i.created_at <= o.created_at"
        "  ORDER BY i.created_at DESC, i.id DESC LIMIT 1) AS inbound, o.id AS reply_id"
        " FROM inbox_messages o WHERE o.workspace_id = ? AND o.direction = 'outbound'"
        " AND o.delivery <> 'failed' AND substr(coalesce(o.sent_by, ''), 1, 4) = 'key_'"
        " ORDER BY o.created_at DESC, o.id DESC LIMIT ?) AS replies"
        " WHERE inbound IS NOT NULL AND (? IS NULL OR inbound_id <> ?)",
        [workspace_id, limit, exclude_message_id, exclude_message_id],
        Exchange.make,
    )


# -- drafts ------------------------------------------------------------------------------------


def insert_draft(
    cur: Cursor, workspace_id: str, item_id: str, text: str, source: str, confidence: float
) -> str:
    draft_id = new_id("ind")
    cur.execute(
        "INSERT INTO inbox_drafts (id, item_id, workspace_id, text, source, confidence,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [draft_id, item_id, workspace_id, text, source, confidence, utcnow()],
    )
    return draft_id


def get_draft(cur: Cursor, workspace_id: str, draft_id: str) -> DraftRow | None:
    return select_row(cur, DraftRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, draft_id])


def list_drafts(
    cur: Cursor, workspace_id: str, item_id: str, *, after: str | None = None, limit: int = 100
) -> list[DraftRow]:
    """An item's drafts, newest first."""
    terms = [("item_id = ?", item_id), ("workspace_id = ?", workspace_id)]
    return newest_first(cur, DraftRow, terms, after=after, limit=limit)


# -- automations -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AutomationFields:
    """What an inbox automation's create and update write."""

    name: str
    enabled: bool
    trigger_type: str
    phrases: list[str]
    intent: str | None
    action: str
    action_params: dict[str, Any]

    def values(self) -> dict[str, Any]:
        """The columns' stored values (the action's parameters as JSON text)."""
        return {
            "name": self.name,
            "enabled": self.enabled,
            "trigger_type": self.trigger_type,
            "phrases": self.phrases,
            "intent": self.intent,
            "action": self.action,
            "action_params": json.dumps(self.action_params),
        }


def insert_automation(cur: Cursor, workspace_id: str, fields: AutomationFields) -> str:
    return resources.insert(cur, AutomationRow, "iau", workspace_id, fields.values())


def get_automation(cur: Cursor, workspace_id: str, automation_id: str) -> AutomationRow | None:
    return resources.get(cur, AutomationRow, workspace_id, automation_id)


def list_automations(
    cur: Cursor,
    workspace_id: str,
    *,
    enabled: bool | None = None,
    after: str | None = None,
    limit: int = 100,
) -> list[AutomationRow]:
    return resources.page(
        cur, AutomationRow, workspace_id, after=after, limit=limit, equal={"enabled": enabled}
    )


def update_automation(
    cur: Cursor, workspace_id: str, automation_id: str, fields: AutomationFields
) -> None:
    resources.update(cur, AutomationRow, workspace_id, automation_id, fields.values())


def delete_automation(cur: Cursor, workspace_id: str, automation_id: str) -> bool:
    return resources.delete(cur, AutomationRow, workspace_id, automation_id)


# -- inbox automations: firing --------------------------------------------------------------


def mark_for_automations(cur: Cursor, message_id: str, workspace_id: str) -> bool:
    """Claim the evaluation of a new inbound message's automations; False if already claimed."""
    # False: another runner took it first.
    return insert_once(
        cur,
        "INSERT INTO inbox_automation_marks (message_id, workspace_id, created_at)"
        " VALUES (?, ?, ?)",
        [message_id, workspace_id, utcnow()],
    )


def enabled_automations(cur: Cursor, workspace_id: str) -> list[AutomationRow]:
    """A workspace's enabled inbox automations, oldest first (the order they fire in)."""
    return select_rows(
        cur,
        AutomationRow,
        "WHERE workspace_id = ? AND enabled AND deleted_at IS NULL ORDER BY id",
        [workspace_id],
    )


def log_automation_run(
    cur: Cursor, automation_id: str, item_id: str, workspace_id: str, action: str, outcome: str
) -> str:
    run_id = new_id("iar")
    cur.execute(
        "INSERT INTO inbox_automation_runs (id, automation_id, item_id, workspace_id, action,"
        " outcome, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [run_id, automation_id, item_id, workspace_id, action, outcome[:500], utcnow()],
    )
    return run_id


def automation_runs(
    cur: Cursor, workspace_id: str, item_id: str | None = None
) -> list[AutomationRun]:
    """Logged inbox automation firings, oldest first."""
    return select_rows(
        cur,
        AutomationRun,
        "WHERE workspace_id = ? AND (? IS NULL OR item_id = ?) ORDER BY id",
        [workspace_id, item_id, item_id],
    )


# -- outbound replies: the delivery worker's leases ---------------------------------------------


def claim_replies(
    cur: Cursor, worker: str, *, lease_seconds: float, limit: int, now: datetime | None = None
) -> list[MessageRow]:
    """Lease pending outbound messages to ``worker``: one statement, so one runner wins each."""
    now = now or utcnow()
    return fetch_rows(
        cur,
        "UPDATE inbox_messages SET claimed_by = ?, lease_expires_at = ?,"  # noqa: S608 - constants
        " delivery_attempts = coalesce(delivery_attempts, 0) + 1"
        " WHERE id IN (SELECT id FROM inbox_messages WHERE direction = 'outbound'"
        "  AND delivery = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at < ?)"
        "  AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
        "  ORDER BY created_at, id LIMIT ?)"
        " AND delivery = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at < ?)"
        f" RETURNING {columns(MessageRow)}",
        [worker, now + timedelta(seconds=lease_seconds), now, now, limit, now],
        MessageRow.make,
    )


def reply_target(cur: Cursor, workspace_id: str, item_id: str) -> ReplyTarget | None:
    """The conversation a reply goes to: its platform thread id and account."""
    return select_row(
        cur, ReplyTarget, "WHERE workspace_id = ? AND id = ?", [workspace_id, item_id]
    )


def finish_reply(
    cur: Cursor,
    message_id: str,
    worker: str,
    *,
    delivery: str,
    external_id: str | None = None,
    error: str | None = None,
    retry_at: datetime | None = None,
) -> bool:
    """Record a send's outcome if ``worker`` still holds the lease; ``retry_at`` releases it."""
    cur.execute(
        "UPDATE inbox_messages SET delivery = ?, external_id = coalesce(?, external_id),"
        " delivery_error = ?, next_attempt_at = ?, claimed_by = NULL, lease_expires_at = NULL"
        " WHERE id = ? AND claimed_by = ? RETURNING id",
        [delivery, external_id, error, retry_at, message_id, worker],
    )
    return cur.fetchone() is not None


# -- sync: how far each account's inbox has been read -----------------------------------------


def sync_state(cur: Cursor) -> dict[str, SyncState]:
    rows = fetch_rows(
        cur,
        f"SELECT {columns(SyncState)} FROM inbox_sync_state",  # noqa: S608 - constants
        None,
        SyncState.make,
    )
    return {row.account_id: row for row in rows}


def save_sync_state(
    cur: Cursor,
    account_id: str,
    workspace_id: str,
    synced_until: datetime | None,
    error: str | None,
    *,
    exists: bool,
) -> None:
    now = utcnow()
    if exists:
        cur.execute(
            "UPDATE inbox_sync_state SET synced_until = coalesce(?, synced_until),"
            " last_error = ?, updated_at = ? WHERE account_id = ?",
            [synced_until, error, now, account_id],
        )
    else:
        cur.execute(
            "INSERT INTO inbox_sync_state (account_id, workspace_id, synced_until, last_error,"
            " updated_at) VALUES (?, ?, ?, ?, ?)",
            [account_id, workspace_id, synced_until, error, now],
        )


def message_by_external_id(cur: Cursor, item_id: str, external_id: str) -> MessageRow | None:
    return select_row(
        cur, MessageRow, "WHERE item_id = ? AND external_id = ?", [item_id, external_id]
    )
