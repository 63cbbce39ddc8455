"""The route class of every endpoint: it ends the request's transaction and idempotency claim."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import structlog
from fastapi import Request, Response, params
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute

from api.deps import WRITE_METHODS
from api.errors import STORABLE_ERRORS, murmur_error_response
from api.idempotency import Claimed, Replayed, replay_response
from api.request_state import IdempotencyMode, RequestState
from domain import idempotency as unit
from domain.errors import DomainError, ServiceUnavailable
from warehouse import retry
from warehouse.errors import StoreError
from warehouse.sealing import REPLY_CONTEXT, Sealer
from warehouse.store import Store, Transaction

log = structlog.get_logger(__name__)

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _reply(response: Response, sealer: Sealer | None = None) -> unit.Reply:
    body = bytes(response.body).decode()
    if sealer is not None:  # a reply that shows a secret is kept sealed (warehouse/sealing.py)
        body = sealer.seal(body, REPLY_CONTEXT, hint=False)
    return unit.Reply(response.status_code, body)


def _settle(
    store: Store,
    tx: Transaction | None,
    claim: Claimed | None,
    outcome: Response | None,
) -> None:
    """Roll a failed attempt back; keep its outcome under the key, or free the key."""
    unit.settle(store, tx, claim, None if outcome is None else _reply(outcome))


def _commit(
    tx: Transaction | None,
    claim: Claimed | None,
    response: Response,
    wrote: bool,
    sealer: Sealer | None = None,
) -> None:
    """Record the response with the write it describes, and commit both (closing the cursor)."""
    if tx is None or not tx.begun:
        return
    unit.commit(tx, claim, _reply(response, sealer), wrote=wrote)


def _abort(tx: Transaction | None) -> None:
    if tx is not None:
        tx.rollback()


_RETRY_ON = unit.RETRY_ON


class MurmurRoute(APIRoute):
    """Runs the endpoint, then commits or rolls back the transaction its dependencies opened.

    A write that loses to a concurrent transaction (a conflict or a key taken meanwhile, as
    warehouse/errors.py names SQLite's and PostgreSQL's failures) runs again under the same
    idempotency claim, as the store's one retry policy allows
    (warehouse/retry.py); after that the client gets 503 and may retry with the same key.
    """

    def get_route_handler(self) -> Handler:
        original = super().get_route_handler()

        takes_json = self.body_field is not None and not isinstance(
            self.body_field.field_info, params.Form
        )

        async def handler(request: Request) -> Response:
            store: Store = request.app.state.store
            state = RequestState.of(request.scope)
            if takes_json:
                await _parse_json_body(request, state)
            for attempt in range(1, retry.ATTEMPTS + 1):
                state.tx = None
                held = state.idempotency
                if held is not None and held.in_tx:
                    state.idempotency = None  # rolled back with the failed attempt
                try:
                    response = await original(request)
                except Replayed as replay:
                    await run_in_threadpool(_settle_released, store, state.tx, None)
                    return replay_response(replay.reply, store.sealer)
                except DomainError as exc:
                    tx = state.tx
                    claim = state.idempotency
                    if isinstance(exc, STORABLE_ERRORS) and claim is not None:
                        stored = murmur_error_response(exc)
                        await run_in_threadpool(_settle, store, tx, claim, stored)
                        return stored
                    if claim is not None or (tx is not None and tx.begun):
                        await run_in_threadpool(_settle_released, store, tx, claim)
                    raise
                except BaseException as exc:
                    claim = state.idempotency
                    if self._may_retry(state, exc, attempt):
                        await run_in_threadpool(_abort, state.tx)
                        await asyncio.sleep(retry.delay(attempt))
                        continue
                    await run_in_threadpool(_settle_released, store, state.tx, claim)
                    if isinstance(exc, _RETRY_ON):
                        raise _busy() from exc
                    raise
                claim = state.idempotency
                tx = state.tx
                wrote = request.method in WRITE_METHODS
                try:
                    if tx is not None and tx.begun:
                        sealer = store.sealer if state.seal_reply else None
                        await run_in_threadpool(_commit, tx, claim, response, wrote, sealer)
                except StoreError as exc:
                    if self._may_retry(state, exc, attempt):
                        await asyncio.sleep(retry.delay(attempt))
                        continue
                    await run_in_threadpool(_settle_released, store, None, claim)
                    if isinstance(exc, _RETRY_ON):
                        raise _busy() from exc
                    raise
                return response
            raise AssertionError("unreachable")

        return handler

    @staticmethod
    def _may_retry(state: RequestState, exc: BaseException, attempt: int) -> bool:
        # An upload's body was streamed once and cannot be read again.
        manual = state.idempotency_mode is IdempotencyMode.MANUAL
        return retry.may_retry(exc, attempt, _RETRY_ON) and not manual


async def _parse_json_body(request: Request, state: RequestState) -> None:
    """Parse a JSON body before FastAPI does; a malformed one is refused in the order of checks.

    FastAPI refuses malformed JSON before any dependency runs, so that a request without a
    key (or an Idempotency-Key) would hear about its body first. Parsed here, the body is
    cached on the request for FastAPI; a malformed one is noted for the context dependency,
    which reports it after authentication, scope, workspace and idempotency, and FastAPI
    sees no body.
    """
    content_type = request.headers.get("content-type")
    if content_type is not None and "json" not in content_type.lower():
        return
    if not await request.body():
        return
    try:
        await request.json()
    except (ValueError, RecursionError) as exc:
        state.malformed_json = (
            f"{exc.msg} at position {exc.pos}."
            if isinstance(exc, json.JSONDecodeError)
            else "it cannot be decoded."
        )
        request._json = None  # FastAPI's body: absent; the dependency refuses it first


def _settle_released(store: Store, tx: Transaction | None, claim: Claimed | None) -> None:
    _settle(store, tx, claim, None)


def _busy() -> ServiceUnavailable:
    return unit.busy()
