"""The Idempotency-Key contract: claim before the work, replay or refuse repeats."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from starlette.responses import Response

from domain.errors import (
    IdempotencyConflict,
    IdempotencyInProgress,
    IdempotencyKeyRequired,
    ValidationFailed,
)
from warehouse import idempotency as repo
from warehouse.errors import DuplicateKeyError
from warehouse.store import Store, Transaction

HEADER = "Idempotency-Key"
REQUEST_ID_HEADER = "X-Request-Id"
# 1 to 255 printable ASCII characters, the first not a space (a header value's edges are
# trimmed in transit, so a leading space could never arrive as sent).
KEY_PATTERN = r"^[\x21-\x7e][\x20-\x7e]{0,254}$"
_VALID_KEY = re.compile(KEY_PATTERN)
# How every write declares the header in the OpenAPI document (api/app.py).
OPENAPI_PARAMETER = {
    "name": HEADER,
    "in": "header",
    "required": True,
    "description": (
        "1 to 255 printable ASCII characters, scoped to the API key, the workspace, the method "
        "and the path; a repeat within 24 h replays the first response."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": KEY_PATTERN},
}


class IdempotentReplay(Exception):
    """Raised to answer a repeated request with the stored response."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__("replay")
        self.status = status
        self.body = body

    def response(self) -> Response:
        """The stored status and body, as they were, under the stored request's id.

        The body is returned exactly as stored (the contract), so its `request_id` is the
        first request's: `X-Request-Id` says the same, and the edge middleware keeps it (and
        logs this request's own id beside it).
        """
        headers = {"Idempotent-Replayed": "true"}
        original = _request_id_of(self.body)
        if original is not None:
            headers[REQUEST_ID_HEADER] = original
        return Response(
            self.body,
            status_code=self.status,
            media_type="application/json",
            headers=headers,
        )


def _request_id_of(body: str) -> str | None:
    try:
        envelope = json.loads(body)
    except ValueError:
        return None
    found = envelope.get("request_id") if isinstance(envelope, dict) else None
    return found if isinstance(found, str) else None


def fingerprint(body: bytes) -> str:
    """A digest of what the request asks for: JSON canonicalised, so formatting does not count."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()
    except (ValueError, UnicodeDecodeError):
        return hashlib.sha256(body).hexdigest()


def validate_key(value: str | None) -> str:
    if value is None or value == "":
        raise IdempotencyKeyRequired(
            "Writes need an Idempotency-Key header (1 to 255 printable ASCII characters)."
        )
    if not _VALID_KEY.match(value):
        raise ValidationFailed.on(
            HEADER, "invalid", "Idempotency-Key must be 1 to 255 printable ASCII characters."
        )
    return value


@dataclass(frozen=True)
class Claimed:
    """A key this request holds until its work commits or fails.

    ``in_tx``: the claim was inserted in the request's own transaction and commits (or
    vanishes) with its work, so a failed attempt leaves nothing to release.
    """

    record: repo.RecordKey
    fingerprint: str = ""
    ttl_seconds: int = 0
    in_tx: bool = False


def take_in(
    store: Store,
    txn: Transaction,
    record: repo.RecordKey,
    digest: str,
    *,
    lease_seconds: int,
    ttl_seconds: int,
) -> Claimed:
    """Claim a fresh key inside the request's transaction: one commit per write, not two.

    Two requests racing with one fresh key both insert it; the second fails at commit on
    the primary key, and its retry finds the first's completed record and replays it. A
    key seen before goes through :func:`take` (replay, conflict or in progress).
    """
    if repo.claim_new(
        txn.cur, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
    ):
        return Claimed(record, digest, ttl_seconds, in_tx=True)
    txn.rollback()
    return take(store, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds)


def take(
    store: Store,
    record: repo.RecordKey,
    digest: str,
    *,
    lease_seconds: int,
    ttl_seconds: int,
) -> Claimed:
    """Claim ``record`` for this request; raise the replay or the contract's 409s otherwise."""
    for _ in range(3):
        try:
            with store.transaction() as cur:
                taken = repo.claim_new(
                    cur, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
                )
            if taken:
                return Claimed(record)
            outcome = store.run(
                lambda cur: repo.claim(
                    cur, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
                )
            )
            break
        except DuplicateKeyError:
            # Two first requests with one key at the same moment: the loser's insert fails at
            # commit on the primary key; look again and it sees the winner's claim.
            pass
    else:
        outcome = repo.Claim("in_progress")
    if outcome.outcome == "claimed":
        return Claimed(record)
    if outcome.outcome == "replay":
        raise IdempotentReplay(outcome.response_status or 200, outcome.response_body or "")
    if outcome.outcome == "conflict":
        raise IdempotencyConflict(
            "This Idempotency-Key was used with another request body.",
        )
    raise IdempotencyInProgress(
        "A request with this Idempotency-Key is still running; retry shortly.",
        retry_after=1,
    )
