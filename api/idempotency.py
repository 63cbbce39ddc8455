"""The Idempotency-Key header: REST's side of the unit of work in domain/idempotency.py.

The claim, the replay, the conflict and the stored reply are the domain's (the agents' tools
share them); what is HTTP's is here: the header, its OpenAPI declaration, and a replay
answered as the stored response.
"""

from __future__ import annotations

from starlette.responses import Response

from domain import idempotency as unit
from domain.idempotency import KEY_PATTERN, Claimed, Replayed, fingerprint
from warehouse import idempotency as repo
from warehouse.store import Store, Transaction

__all__ = ["HEADER", "Claimed", "IdempotentReplay", "fingerprint", "take", "take_in"]

HEADER = "Idempotency-Key"
REQUEST_ID_HEADER = "X-Request-Id"
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
        original = unit.request_id_of(self.body)
        if original is not None:
            headers[REQUEST_ID_HEADER] = original
        return Response(
            self.body,
            status_code=self.status,
            media_type="application/json",
            headers=headers,
        )


def validate_key(value: str | None) -> str:
    return unit.validate_key(value, HEADER)


def take_in(
    store: Store,
    txn: Transaction,
    record: repo.RecordKey,
    digest: str,
    *,
    lease_seconds: int,
    ttl_seconds: int,
) -> Claimed:
    """:func:`domain.idempotency.take_in`, a replay raised as :class:`IdempotentReplay`."""
    try:
        return unit.take_in(
            store, txn, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
        )
    except Replayed as replay:
        raise IdempotentReplay(replay.reply.status, replay.reply.body) from None


def take(
    store: Store,
    record: repo.RecordKey,
    digest: str,
    *,
    lease_seconds: int,
    ttl_seconds: int,
) -> Claimed:
    """:func:`domain.idempotency.take`, a replay raised as :class:`IdempotentReplay`."""
    try:
        return unit.take(
            store, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
        )
    except Replayed as replay:
        raise IdempotentReplay(replay.reply.status, replay.reply.body) from None
