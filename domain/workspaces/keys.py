"""API keys: minting, hashing, revoking and resolving a key to its scopes and workspaces."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from domain.errors import (
    ApiKeyExpired,
    ApiKeyInvalid,
    ScopeForbidden,
    ValidationFailed,
    WorkspaceForbidden,
)
from warehouse import workspaces as repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor
from warehouse.store import Store

ALL_SCOPES = (
    "posts:read",
    "posts:write",
    "media:write",
    "workspaces:read",
    "workspaces:write",
    "accounts:read",
    "approvals:read",
    "approvals:write",
    "inbox:read",
    "inbox:write",
    "automations:read",
    "automations:write",
    "analytics:read",
)


def hash_key(key: str) -> str:
    """Keys carry 192 random bits, so a plain SHA-256 is a safe, constant-time-lookup hash."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class MintedKey:
    id: str
    key: str
    hint: str


def mint_key(
    cur: Cursor,
    *,
    organization_id: str,
    workspace_ids: list[str],
    name: str = "default",
    mode: str = "test",
    scopes: list[str] | None = None,
    expires_at: datetime | None = None,
    read_rate_limit: int | None = None,
    write_rate_limit: int | None = None,
) -> MintedKey:
    """Create a key; the clear text is returned once and never stored."""
    if mode not in {"test", "live"}:
        raise ValueError("mode must be test or live")
    unknown = set(scopes or ()) - set(ALL_SCOPES)
    if unknown:
        raise ValueError(f"unknown scopes: {sorted(unknown)}")
    key = f"sk_{mode}_{secrets.token_urlsafe(24)}"
    hint = f"{key[:12]}…{key[-4:]}"
    key_id = repo.insert_api_key(
        cur,
        organization_id=organization_id,
        name=name,
        mode=mode,
        key_hash=hash_key(key),
        key_hint=hint,
        scopes=list(scopes or ALL_SCOPES),
        workspace_ids=workspace_ids,
        expires_at=expires_at,
        read_rate_limit=read_rate_limit,
        write_rate_limit=write_rate_limit,
    )
    return MintedKey(id=key_id, key=key, hint=hint)


class _Withheld(Exception):
    """A conditional key's condition failed: its transaction rolls back, the key with it."""


# Keys written while the API serves a request: never in the request's own transaction, whose
# commit leaves the keys token alone (warehouse/changes.py), so that key caches would keep
# what they hold; in one of their own, through Store.run, whose commit replaces it.


def issue_key(
    store: Store,
    *,
    organization_id: str,
    workspace_ids: list[str],
    name: str,
    mode: str,
    scopes: list[str],
    expires_at: datetime,
    kept_if: Callable[[Cursor, str], bool],
) -> MintedKey | None:
    """Mint a key in a transaction of its own, kept only if ``kept_if(cur, key_id)`` holds there.

    ``kept_if`` runs in the same transaction, given the new key's id (what uses a sign-in link
    and names the key it made); when it fails, nothing of either is committed: None.
    """

    def work(cur: Cursor) -> MintedKey:
        minted = mint_key(
            cur,
            organization_id=organization_id,
            workspace_ids=workspace_ids,
            name=name,
            mode=mode,
            scopes=scopes,
            expires_at=expires_at,
        )
        if not kept_if(cur, minted.id):
            raise _Withheld
        return minted

    try:
        return store.run(work)
    except _Withheld:
        return None


def revoke_key(store: Store, key_id: str) -> bool:
    """Revoke a key in a transaction of its own; False if it was revoked already."""
    return store.run(lambda cur: repo.revoke_api_key(cur, key_id))


@dataclass(frozen=True)
class ApiKey:
    """The authenticated key of a request."""

    id: str
    organization_id: str
    mode: str
    scopes: frozenset[str]
    workspace_ids: tuple[str, ...]
    read_rate_limit: int | None
    write_rate_limit: int | None
    expires_at: datetime | None = None

    def check_live(self) -> None:
        """Refuse a key that expired since it was looked up."""
        if self.expires_at is not None and self.expires_at <= utcnow():
            raise ApiKeyExpired("The API key has expired.")

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise ScopeForbidden(f"This key lacks the scope {scope!r}.")

    def workspace(self, requested: str | None) -> str:
        """The workspace a request acts in: the header's, or the key's only one."""
        if requested is None:
            if len(self.workspace_ids) == 1:
                return self.workspace_ids[0]
            raise ValidationFailed.on(
                "X-Workspace-Id",
                "required",
                "This key has several workspaces; name one in the X-Workspace-Id header.",
            )
        if requested not in self.workspace_ids:
            raise WorkspaceForbidden(f"This key has no access to workspace {requested!r}.")
        return requested


def authenticate(cur: Cursor, key_hash: str) -> ApiKey:
    """Resolve a key's hash to a live key."""
    found = repo.find_api_key(cur, key_hash)
    if found is None or found.revoked_at is not None:
        raise ApiKeyInvalid("The API key is unknown or revoked.")
    key = ApiKey(
        id=found.id,
        organization_id=found.organization_id,
        mode=found.mode,
        scopes=frozenset(found.scopes),
        workspace_ids=tuple(found.workspace_ids),
        read_rate_limit=found.read_rate_limit,
        write_rate_limit=found.write_rate_limit,
        expires_at=found.expires_at,
    )
    key.check_live()
    return key
