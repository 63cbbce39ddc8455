"""Organizations, workspaces, members, API keys and connected accounts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from warehouse import resources
from warehouse.ids import new_id, utcnow
from warehouse.reads import newest_first, select_row, select_rows
from warehouse.rows import Cursor, TableRow, columns, fetch_row
from warehouse.sql import one_of


@dataclass(frozen=True, slots=True)
class OrganizationRow(TableRow):
    """An organization: it owns workspaces and API keys."""

    TABLE = "organizations"

    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class WorkspaceRow(TableRow):
    """A workspace."""

    TABLE = "workspaces"

    id: str
    organization_id: str
    name: str
    timezone: str
    approval_required: bool
    is_test: bool
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ApiKeyRow(TableRow):
    """An API key as stored: its hash, never the key."""

    TABLE = "api_keys"

    id: str
    organization_id: str
    name: str
    mode: str
    key_hash: str
    key_hint: str
    scopes: list[str]
    workspace_ids: list[str]
    read_rate_limit: int | None
    write_rate_limit: int | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class AccountRow(TableRow):
    """A connected social account."""

    TABLE = "accounts"

    id: str
    workspace_id: str
    platform: str
    handle: str
    display_name: str
    external_id: str
    status: str
    is_test: bool
    follower_count: int | None
    connected_at: datetime
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class MemberRow(TableRow):
    """A workspace member (``removed_at`` set once removed; reads return live ones only)."""

    TABLE = "workspace_members"

    id: str
    workspace_id: str
    email: str
    name: str | None
    role: str
    created_at: datetime
    updated_at: datetime
    removed_at: datetime | None


_WORKSPACE_OF_LINK = columns(WorkspaceRow, "w")


# -- organizations and workspaces -------------------------------------------------------------


def create_organization(cur: Cursor, name: str) -> str:
    org_id = new_id("org")
    cur.execute(
        "INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)",
        [org_id, name, utcnow()],
    )
    return org_id


def first_organization(cur: Cursor) -> OrganizationRow | None:
    return select_row(cur, OrganizationRow, "ORDER BY id LIMIT 1")


def create_workspace(
    cur: Cursor,
    organization_id: str,
    name: str,
    *,
    timezone: str = "UTC",
    approval_required: bool = False,
    is_test: bool = False,
) -> str:
    ws_id = new_id("ws")
    now = utcnow()
    cur.execute(
        "INSERT INTO workspaces (id, organization_id, name, timezone, approval_required, is_test,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [ws_id, organization_id, name, timezone, approval_required, is_test, now, now],
    )
    return ws_id


def serialize_on_workspace(cur: Cursor, workspace_id: str) -> None:
    """Write the workspace row so that concurrent transactions doing the same conflict.

    A check across rows (the last owner, a unique live name) is made safe by having every
    such transaction write this one row first: on PostgreSQL the second waits for the first
    to end; on SQLite writers take turns anyway.
    """
    cur.execute("UPDATE workspaces SET updated_at = ? WHERE id = ?", [utcnow(), workspace_id])


def get_workspace(cur: Cursor, workspace_id: str) -> WorkspaceRow | None:
    return select_row(cur, WorkspaceRow, "WHERE id = ?", [workspace_id])


def find_test_workspace(cur: Cursor) -> WorkspaceRow | None:
    return select_row(cur, WorkspaceRow, "WHERE is_test ORDER BY id LIMIT 1")


def list_workspaces(
    cur: Cursor, ids: list[str], after: str | None, limit: int
) -> list[WorkspaceRow]:
    """Workspaces among ``ids``, newest first, after the keyset cursor ``after``."""
    return newest_first(cur, WorkspaceRow, [(one_of(cur, "id"), ids)], after=after, limit=limit)


# -- API keys ----------------------------------------------------------------------------------


def insert_api_key(
    cur: Cursor,
    *,
    organization_id: str,
    name: str,
    mode: str,
    key_hash: str,
    key_hint: str,
    scopes: list[str],
    workspace_ids: list[str],
    expires_at: datetime | None = None,
    read_rate_limit: int | None = None,
    write_rate_limit: int | None = None,
) -> str:
    key_id = new_id("key")
    cur.execute(
        "INSERT INTO api_keys (id, organization_id, name, mode, key_hash, key_hint, scopes,"
        " workspace_ids, read_rate_limit, write_rate_limit, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            key_id,
            organization_id,
            name,
            mode,
            key_hash,
            key_hint,
            scopes,
            workspace_ids,
            read_rate_limit,
            write_rate_limit,
            utcnow(),
            expires_at,
        ],
    )
    return key_id


def find_api_key(cur: Cursor, key_hash: str) -> ApiKeyRow | None:
    return select_row(cur, ApiKeyRow, "WHERE key_hash = ?", [key_hash])


def list_api_keys(cur: Cursor) -> list[ApiKeyRow]:
    return select_rows(cur, ApiKeyRow, "ORDER BY id DESC")


def revoke_api_key(cur: Cursor, key_id: str) -> bool:
    cur.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING id",
        [utcnow(), key_id],
    )
    return cur.fetchone() is not None


# -- one-time sign-in links -------------------------------------------------------------------
# A link is stored as its token's SHA-256 (the token is in the link alone). Its use is one
# conditional UPDATE: of two concurrent uses, exactly one changes the row.


def insert_sign_in_link(
    cur: Cursor, token_hash: str, workspace_id: str, created_at: datetime, expires_at: datetime
) -> None:
    cur.execute(
        "INSERT INTO sign_in_links (token_hash, workspace_id, created_at, expires_at)"
        " VALUES (?, ?, ?, ?)",
        [token_hash, workspace_id, created_at, expires_at],
    )


def purge_sign_in_links(cur: Cursor, expired_before: datetime) -> int:
    """Delete links that expired before ``expired_before``; how many."""
    cur.execute("DELETE FROM sign_in_links WHERE expires_at < ? RETURNING 1", [expired_before])
    return len(cur.fetchall())


def live_sign_in_link(cur: Cursor, token_hash: str, now: datetime) -> WorkspaceRow | None:
    """The workspace of an unused link that has not expired at ``now``, else None."""
    return fetch_row(
        cur,
        f"SELECT {_WORKSPACE_OF_LINK} FROM sign_in_links l JOIN workspaces w"  # noqa: S608 - constants
        " ON w.id = l.workspace_id"
        " WHERE l.token_hash = ? AND l.used_at IS NULL AND l.expires_at > ?",
        [token_hash, now],
        WorkspaceRow.make,
    )


def use_sign_in_link(cur: Cursor, token_hash: str, now: datetime, key_id: str) -> bool:
    """Mark an unused, unexpired link used at ``now`` by ``key_id``; whether it was."""
    cur.execute(
        "UPDATE sign_in_links SET used_at = ?, key_id = ?"
        " WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING token_hash",
        [now, key_id, token_hash, now],
    )
    return cur.fetchone() is not None


def is_session_key(cur: Cursor, key_id: str) -> bool:
    """Whether ``key_id`` was minted by using a sign-in link."""
    cur.execute("SELECT 1 FROM sign_in_links WHERE key_id = ? LIMIT 1", [key_id])
    return cur.fetchone() is not None


# -- connected accounts ------------------------------------------------------------------------


def insert_account(
    cur: Cursor,
    workspace_id: str,
    platform: str,
    handle: str,
    display_name: str,
    external_id: str,
    *,
    is_test: bool = False,
    follower_count: int | None = None,
) -> str:
    acc_id = new_id("acc")
    now = utcnow()
    cur.execute(
        "INSERT INTO accounts (id, workspace_id, platform, handle, display_name, external_id,"
        " status, is_test, follower_count, connected_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?)",
        [
            acc_id,
            workspace_id,
            platform,
            handle,
            display_name,
            external_id,
            is_test,
            follower_count,
            now,
            now,
            now,
        ],
    )
    return acc_id


def list_accounts(
    cur: Cursor,
    workspace_id: str,
    *,
    platform: str | None = None,
    after: str | None = None,
    limit: int = 1000,
) -> list[AccountRow]:
    terms = [("workspace_id = ?", workspace_id), ("platform = ?", platform)]
    return newest_first(cur, AccountRow, terms, after=after, limit=limit)


def get_account(cur: Cursor, workspace_id: str, account_id: str) -> AccountRow | None:
    return select_row(
        cur, AccountRow, "WHERE workspace_id = ? AND id = ?", [workspace_id, account_id]
    )


def accounts_by_ids(cur: Cursor, workspace_id: str, ids: list[str]) -> dict[str, AccountRow]:
    found = select_rows(
        cur, AccountRow, f"WHERE workspace_id = ? AND {one_of(cur, 'id')}", [workspace_id, ids]
    )
    return {row.id: row for row in found}


def set_account_status(cur: Cursor, account_id: str, status: str) -> None:
    cur.execute(
        "UPDATE accounts SET status = ?, updated_at = ? WHERE id = ?",
        [status, utcnow(), account_id],
    )


# -- workspace members -------------------------------------------------------------------------
# A removed member keeps its row (``removed_at``) for the audit trail; every read below sees
# live members only, and a live email is unique per workspace (checked by the service).


def insert_member(cur: Cursor, workspace_id: str, email: str, name: str | None, role: str) -> str:
    values = {"email": email, "name": name, "role": role}
    return resources.insert(cur, MemberRow, "mem", workspace_id, values)


def get_member(cur: Cursor, workspace_id: str, member_id: str) -> MemberRow | None:
    return _live_member(cur, workspace_id, "id", member_id)


def find_member_by_email(cur: Cursor, workspace_id: str, email: str) -> MemberRow | None:
    return _live_member(cur, workspace_id, "email", email)


def _live_member(cur: Cursor, workspace_id: str, column: str, value: str) -> MemberRow | None:
    """The workspace's live member whose ``column`` (a constant) holds ``value``."""
    clause = f"WHERE workspace_id = ? AND {column} = ? AND removed_at IS NULL"
    return select_row(cur, MemberRow, clause, [workspace_id, value])


def list_members(
    cur: Cursor,
    workspace_id: str,
    *,
    role: str | None = None,
    after: str | None = None,
    limit: int = 1000,
) -> list[MemberRow]:
    """Live members, newest first, after the keyset cursor ``after``."""
    terms = [("workspace_id = ?", workspace_id), ("role = ?", role)]
    return newest_first(
        cur, MemberRow, terms, after=after, limit=limit, always="removed_at IS NULL"
    )


def count_owners(cur: Cursor, workspace_id: str) -> int:
    cur.execute(
        "SELECT count(*) FROM workspace_members WHERE workspace_id = ? AND role = 'owner'"
        " AND removed_at IS NULL",
        [workspace_id],
    )
    found = cur.fetchone()
    return int(found[0]) if found else 0


def update_member(
    cur: Cursor, workspace_id: str, member_id: str, *, role: str, name: str | None
) -> None:
    cur.execute(
        "UPDATE workspace_members SET role = ?, name = ?, updated_at = ?"
        " WHERE workspace_id = ? AND id = ? AND removed_at IS NULL",
        [role, name, utcnow(), workspace_id, member_id],
    )


def remove_member(cur: Cursor, workspace_id: str, member_id: str) -> bool:
    cur.execute(
        "UPDATE workspace_members SET removed_at = ?, updated_at = ?"
        " WHERE workspace_id = ? AND id = ? AND removed_at IS NULL RETURNING id",
        [utcnow(), utcnow(), workspace_id, member_id],
    )
    return cur.fetchone() is not None


def active_accounts(cur: Cursor) -> list[AccountRow]:
    """Every connected account the inbox reads, across workspaces."""
    return select_rows(cur, AccountRow, "WHERE status = 'active' ORDER BY id")
