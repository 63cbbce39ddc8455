"""One-time sign-in links and the dashboard sessions they open (schemas and service).

``murmur dashboard`` stores a link's token as its SHA-256 and prints the link; the dashboard
sends the token to ``POST /sessions``, which uses the link (once, within its 10 minutes) and
mints a read-only key of the link's workspace for 12 hours. Signing out revokes that key.
docs/api.md ("Sessions") and docs/security.md ("Sign-in links") say why each piece is so.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from domain.errors import ApiKeyInvalid, NotFound
from domain.schemas import Deleted, Model, UtcDatetime
from domain.workspaces.keys import ALL_SCOPES, ApiKey, hash_key, issue_key, revoke_key
from domain.workspaces.service import bootstrap_test_workspace
from warehouse import workspaces as repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor
from warehouse.store import Store

LINK_LIFETIME = timedelta(minutes=10)
SESSION_LIFETIME = timedelta(hours=12)
SESSION_KEY_NAME = "dashboard"
SESSION_SCOPES = tuple(scope for scope in ALL_SCOPES if scope.endswith(":read"))
# Links that expired this long ago go when a new one is made: their keys have expired too.
_PURGE_AFTER = SESSION_LIFETIME + timedelta(hours=12)


class SessionCreate(Model):
    token: str = Field(
        min_length=1,
        max_length=256,
        description="The token of a sign-in link: what follows `#token=` in the link that"
        " `murmur dashboard` prints.",
    )


class Session(BaseModel):
    key: str = Field(
        description="A new API key, shown only in this answer (never stored by the server, nor"
        " in an idempotency record): keep it in the page (sessionStorage), never in a URL.",
        examples=["sk_test_…"],
    )
    key_id: str = Field(examples=["key_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str = Field(description="The link's workspace, the key's only one.")
    expires_at: UtcDatetime = Field(description="12 hours after the link was used.")
    scopes: list[str] = Field(description="Every `*:read` scope, and no other.")


@dataclass(frozen=True)
class SignInLink:
    """A link just made; its token exists nowhere else (the store has its hash)."""

    token: str
    workspace_id: str
    expires_at: datetime

    def url(self, host: str, port: int) -> str:
        """The link to open: the token in the fragment, which a browser never sends."""
        return f"http://{host}:{port}/dashboard/#token={self.token}"


def create_link(
    cur: Cursor, workspace_id: str | None, *, now: datetime | None = None
) -> SignInLink:
    """A one-time link into ``workspace_id`` (default: the test workspace), valid 10 minutes.

    ``now`` is the clock the link's lifetime starts from (tests pass one in the past).
    """
    now = now or utcnow()
    ws_id = workspace_id or bootstrap_test_workspace(cur)
    if repo.get_workspace(cur, ws_id) is None:
        raise LookupError(f"No workspace {ws_id!r}.")
    repo.purge_sign_in_links(cur, now - _PURGE_AFTER)
    token = secrets.token_urlsafe(32)  # 256 bits: guessing one is hopeless at any rate
    expires = now + LINK_LIFETIME
    repo.insert_sign_in_link(cur, hash_key(token), ws_id, now, expires)
    return SignInLink(token, ws_id, expires)


def _refused() -> ApiKeyInvalid:
    # One answer for unknown, used and expired tokens: it tells a guesser nothing.
    return ApiKeyInvalid(
        "This sign-in link is unknown, used or expired: ask for a new one"
        " (`murmur dashboard` prints one)."
    )


def redeem(store: Store, token: str) -> Session:
    """Use a link's token once: a new read-only key of its workspace for 12 hours."""
    token_hash = hash_key(token)
    now = utcnow()
    # A read first: a wrong token costs one indexed lookup and never takes the write lock.
    workspace = store.read(lambda cur: repo.live_sign_in_link(cur, token_hash, now))
    if workspace is None:
        raise _refused()
    expires = now + SESSION_LIFETIME
    # The key and the link's use commit together or not at all; of two uses at once, the
    # conditional UPDATE lets one through.
    minted = issue_key(
        store,
        organization_id=workspace.organization_id,
        workspace_ids=[workspace.id],
        name=SESSION_KEY_NAME,
        mode="test" if workspace.is_test else "live",
        scopes=list(SESSION_SCOPES),
        expires_at=expires,
        kept_if=lambda cur, key_id: repo.use_sign_in_link(cur, token_hash, now, key_id),
    )
    if minted is None:
        raise _refused()
    return Session(
        key=minted.key,
        key_id=minted.id,
        workspace_id=workspace.id,
        expires_at=expires.replace(tzinfo=UTC),
        scopes=list(SESSION_SCOPES),
    )


def sign_out(store: Store, key: ApiKey) -> Deleted:
    """Revoke ``key`` if a sign-in link made it; any other key is left alone (NOT_FOUND)."""
    if not store.read(lambda cur: repo.is_session_key(cur, key.id)):
        raise NotFound(
            "This key was not made by a sign-in link, so there is no session to end: it stays"
            " valid (forget it in the page; `murmur keys revoke` revokes a key)."
        )
    revoke_key(store, key.id)  # a transaction of its own: every key cache drops the key
    return Deleted(id=key.id)
