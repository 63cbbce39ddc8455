"""The Idempotency-Key header: REST's side of the unit of work in domain/idempotency.py.

The claim, the replay, the conflict and the stored reply are the domain's (the agents' tools
share them, and a replay is raised as :class:`domain.idempotency.Replayed`); what is HTTP's
is here: the header, its OpenAPI declaration, and a replay answered as the stored response.
"""

from __future__ import annotations

from starlette.responses import Response

from domain import idempotency as unit
from domain.idempotency import KEY_PATTERN, Claimed, Replayed, Reply, fingerprint, take, take_in
from warehouse.sealing import REPLY_CONTEXT, Sealer, is_sealed

__all__ = [
    "HEADER",
    "Claimed",
    "Replayed",
    "fingerprint",
    "replay_response",
    "take",
    "take_in",
]

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


def replay_response(reply: Reply, sealer: Sealer | None = None) -> Response:
    """A repeated request's answer: the stored status and body, under the first request's id.

    The body is returned exactly as stored (the contract), unsealed if it was kept sealed, so
    its `request_id` is the first request's: `X-Request-Id` says the same, and the edge
    middleware keeps it (and logs this request's own id beside it).
    """
    if is_sealed(reply.body):
        if sealer is None:
            raise RuntimeError("a sealed reply, and no key to unseal it")
        reply = Reply(reply.status, sealer.unseal(reply.body, REPLY_CONTEXT))
    headers = {"Idempotent-Replayed": "true"}
    original = unit.request_id_of(reply.body)
    if original is not None:
        headers[REQUEST_ID_HEADER] = original
    return Response(
        reply.body, status_code=reply.status, media_type="application/json", headers=headers
    )


def validate_key(value: str | None) -> str:
    return unit.validate_key(value, HEADER)
