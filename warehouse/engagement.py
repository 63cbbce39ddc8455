"""The engagement runner's SQL: reply leases, inbox sync cursors, automation marks and state.

On a remote store each statement runs on the host and commits on its own
(warehouse/store.py, docs/adr/0001-store.md), so every unit starts with its claim.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from warehouse.errors import DuplicateKeyError
from warehouse.ids import new_id, utcnow
from warehouse.inbox import AutomationRow, MessageRow
from warehouse.rows import Cursor, TableRow, columns, fetch_row, fetch_rows, fetch_value
from warehouse.store import Store
from warehouse.workspaces import AccountRow


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


def unit(store: Store) -> contextlib.AbstractContextManager[Cursor]:
    """A cursor for one unit of the runner's work: a transaction in-process; remote, statements
    run one by one on the host, so a unit must start with its claim and tolerate being cut short."""
    return store.transaction()


# -- outbound inbox replies --------------------------------------------------------------------


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
    return fetch_row(
        cur,
        f"SELECT {columns(ReplyTarget)} FROM inbox_items WHERE workspace_id = ? AND id = ?",  # noqa: S608 - constants
        [workspace_id, item_id],
        ReplyTarget.make,
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


# -- inbox sync --------------------------------------------------------------------------------


def active_accounts(cur: Cursor) -> list[AccountRow]:
    """Every connected account the inbox reads, across workspaces."""
    return fetch_rows(
        cur,
        f"SELECT {columns(AccountRow)} FROM accounts WHERE status = 'active' ORDER BY id",  # noqa: S608 - constants
        None,
        AccountRow.make,
    )


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


def message_by_external_id(cur: Cursor, item_id: str, external_id: str) -> MessageRow | None:
    return fetch_row(
        cur,
        f"SELECT {columns(MessageRow)} FROM inbox_messages WHERE item_id = ? AND external_id = ?",  # noqa: S608 - constants
        [item_id, external_id],
        MessageRow.make,
    )


def mark_for_automations(cur: Cursor, message_id: str, workspace_id: str) -> bool:
    """Claim the evaluation of a new inbound message's automations; False if already claimed."""
    try:
        cur.execute(
            "INSERT INTO inbox_automation_marks (message_id, workspace_id, created_at)"
            " VALUES (?, ?, ?)",
            [message_id, workspace_id, utcnow()],
        )
    except DuplicateKeyError:
        return False  # another runner took it first
    return True


def enabled_inbox_automations(cur: Cursor, workspace_id: str) -> list[AutomationRow]:
    """A workspace's enabled inbox automations, oldest first (the order they fire in)."""
    return fetch_rows(
        cur,
        f"SELECT {columns(AutomationRow)} FROM inbox_automations"  # noqa: S608 - constants
        " WHERE workspace_id = ? AND enabled AND deleted_at IS NULL ORDER BY id",
        [workspace_id],
        AutomationRow.make,
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
    return fetch_rows(
        cur,
        f"SELECT {columns(AutomationRun)} FROM inbox_automation_runs"  # noqa: S608 - constants
        " WHERE workspace_id = ? AND (? IS NULL OR item_id = ?) ORDER BY id",
        [workspace_id, item_id, item_id],
        AutomationRun.make,
    )


# -- content automations -----------------------------------------------------------------------


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
    try:
        cur.execute(
            "INSERT INTO content_automation_seen (automation_id, item_key, post_id, created_at)"
            " VALUES (?, ?, NULL, ?)",
            [automation_id, item_key, utcnow()],
        )
    except DuplicateKeyError:
        return False  # another runner took it first
    return True


def set_seen_post(cur: Cursor, automation_id: str, item_key: str, post_id: str) -> None:
    cur.execute(
        "UPDATE content_automation_seen SET post_id = ? WHERE automation_id = ? AND item_key = ?",
        [post_id, automation_id, item_key],
    )
