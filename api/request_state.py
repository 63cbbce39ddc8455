"""What the parts of one request share: the edge middleware, the dependencies, the route class."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from fastapi import Depends, Request

if TYPE_CHECKING:
    from api.idempotency import Claimed
    from api.ratelimit import Budget
    from warehouse.store import Transaction

_KEY = "murmur.request"


class IdempotencyMode(Enum):
    """Who claims a write's Idempotency-Key, and when."""

    CONTEXT = "context"  # the context dependency, before the endpoint runs (most writes)
    BATCH = "batch"  # the endpoint's group commit, with its writes (a fresh key; POST /posts)
    MANUAL = "manual"  # the endpoint, once it has streamed the body (uploads; never retried)


@dataclass(slots=True)
class RequestState:
    """One request's state, kept in its ASGI scope (one object, typed, instead of loose flags)."""

    client_address: str | None = None  # set by the edge middleware
    rate_budget: Budget | None = None  # the budget this request was counted against
    tx: Transaction | None = None  # the transaction the context dependency opened
    idempotency: Claimed | None = None  # the key this request holds
    malformed_json: str | None = None  # why the route class could not parse the body
    idempotency_mode: IdempotencyMode = IdempotencyMode.CONTEXT
    seal_reply: bool = False  # the reply shows a secret: stored sealed under its key

    @staticmethod
    def of(scope: MutableMapping[str, Any]) -> RequestState:
        """The state of the request with this ASGI scope (``request.scope``), made on first use."""
        found: RequestState | None = scope.get(_KEY)
        if found is None:
            found = scope[_KEY] = RequestState()
        return found


def claims_key(mode: IdempotencyMode) -> Any:
    """A route dependency declaring how the route claims its Idempotency-Key."""

    async def declare(request: Request) -> None:
        RequestState.of(request.scope).idempotency_mode = mode

    return Depends(declare)


async def _seal_reply(request: Request) -> None:
    RequestState.of(request.scope).seal_reply = True


#: A route dependency declaring that the route's reply shows a secret (kept sealed at rest).
SEALED_REPLY = Depends(_seal_reply)
