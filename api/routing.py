"""The route class of every endpoint: it ends the request's transaction and idempotency claim."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import duckdb
import structlog
from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute

from api.errors import STORABLE_ERRORS, MurmurError, ServiceUnavailable, murmur_error_response
from api.idempotency import Claimed, IdempotentReplay
from warehouse import idempotency as idem_repo
from warehouse.store import Store, is_conflict

log = structlog.get_logger(__name__)

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _finish(
    store: Store,
    tx: duckdb.DuckDBPyConnection | None,
    claim: Claimed | None,
    response: Response | None,
) -> None:
    """Commit a success with its idempotency record, or roll back and settle the claim."""
    ok = response is not None and response.status_code < 400
    try:
        if tx is not None:
            if ok:
                if claim is not None and response is not None:
                    idem_repo.complete(
                        tx, claim.record, response.status_code, bytes(response.body).decode()
                    )
                tx.execute("COMMIT")
                return
            with contextlib.suppress(duckdb.Error):
                tx.execute("ROLLBACK")
        if claim is None:
            return
        if response is not None:
            # A refusal that follows from the resource's state is the request's outcome.
            store.run(
                lambda cur: idem_repo.complete(
                    cur, claim.record, response.status_code, bytes(response.body).decode()
                )
            )
        else:
            store.run(lambda cur: idem_repo.release(cur, claim.record))
    finally:
        if tx is not None:
            tx.close()


def _release(store: Store, tx: duckdb.DuckDBPyConnection | None, claim: Claimed | None) -> None:
    _finish(store, tx, claim, None)


class MurmurRoute(APIRoute):
    """Runs the endpoint, then commits or rolls back the transaction its dependencies opened."""

    def get_route_handler(self) -> Handler:
        original = super().get_route_handler()

        async def handler(request: Request) -> Response:
            store: Store = request.app.state.store
            try:
                response = await original(request)
            except IdempotentReplay as replay:
                await run_in_threadpool(_release, store, getattr(request.state, "tx", None), None)
                return replay.response()
            except MurmurError as exc:
                tx = getattr(request.state, "tx", None)
                claim = getattr(request.state, "idempotency", None)
                if isinstance(exc, STORABLE_ERRORS) and claim is not None:
                    stored = murmur_error_response(exc)
                    await run_in_threadpool(_finish, store, tx, claim, stored)
                    return stored
                await run_in_threadpool(_release, store, tx, claim)
                raise
            except BaseException:
                await run_in_threadpool(
                    _release,
                    store,
                    getattr(request.state, "tx", None),
                    getattr(request.state, "idempotency", None),
                )
                raise
            tx = getattr(request.state, "tx", None)
            claim = getattr(request.state, "idempotency", None)
            try:
                await run_in_threadpool(_finish, store, tx, claim, response)
            except duckdb.TransactionException as exc:
                if not is_conflict(exc):
                    raise
                await run_in_threadpool(_release, store, None, claim)
                raise ServiceUnavailable(
                    "A concurrent change to the same resource won; retry with the same key.",
                    headers={"Retry-After": "1"},
                ) from exc
            return response

        return handler
