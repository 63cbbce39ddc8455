"""Probe and scrape logic: the store is asked once, on its own cursor, within a time bound."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import structlog

from api.errors import ServiceUnavailable
from api.health.metrics import Metrics
from warehouse import health as health_repo
from warehouse.cursor import StoreCursor
from warehouse.group_commit import GroupCommit
from warehouse.ids import utcnow
from warehouse.store import Store

log = structlog.get_logger(__name__)

T = TypeVar("T")

RETRY_AFTER = {"Retry-After": "5"}


async def _bounded(store: Store, work: Callable[[StoreCursor], T], timeout: float) -> T:
    """``work`` on a cursor of its own, off the loop; interrupted, TimeoutError past ``timeout``."""
    # The default executor, not the request threads: a saturated API still answers its probes
    # as long as the store does. The cursor is no request transaction and never moves the
    # store's change token, so a probe invalidates no cache.
    running: list[StoreCursor] = []
    lock = threading.Lock()  # an interrupt never meets a cursor being closed

    def run() -> T:
        cur = store.new_cursor()
        with lock:
            running.append(cur)
        try:
            return work(cur)
        finally:
            with lock:
                running.remove(cur)
                cur.close()

    try:
        return await asyncio.wait_for(asyncio.to_thread(run), timeout)
    except TimeoutError:
        with lock:
            for cur in running:
                with contextlib.suppress(Exception):
                    cur.interrupt()
        raise


class Shared:
    """One in-flight store query per kind: concurrent probes await it instead of adding more."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Future[Any]] = {}

    async def run(self, kind: str, start: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """``start()``'s outcome, shared with every caller that arrives while it runs."""
        task = self._running.get(kind)
        if task is None or task.done():
            task = asyncio.ensure_future(start())
            self._running[kind] = task
        # Shielded: a caller that hangs up does not cancel the others' answer.
        result: T = await asyncio.shield(task)
        return result


async def check_ready(shared: Shared, store: Store | None, timeout: float) -> None:
    """Raise SERVICE_UNAVAILABLE unless the store answers a trivial query within ``timeout``."""
    if store is None:
        raise ServiceUnavailable("The store is not open.", headers=RETRY_AFTER)
    try:
        await shared.run("ping", lambda: _bounded(store, health_repo.ping, timeout))
    except TimeoutError:
        log.warning("readiness.store_timeout", timeout=timeout)
        raise ServiceUnavailable(
            f"The store did not answer within {timeout:g} s.", headers=RETRY_AFTER
        ) from None
    except Exception as exc:
        log.warning("readiness.store_failed", error=f"{type(exc).__name__}: {exc}")
        raise ServiceUnavailable("The store is unavailable.", headers=RETRY_AFTER) from exc


async def scrape(
    shared: Shared,
    metrics: Metrics,
    store: Store | None,
    writes: GroupCommit[Any, Any] | None,
    timeout: float,
) -> bytes:
    """The exposition text; the store's figures are left out when it does not answer in time."""
    figures: health_repo.Figures | None = None
    if store is not None:
        try:
            figures = await shared.run("figures", lambda: _figures(store, timeout))
        except Exception as exc:
            log.warning("metrics.store_failed", error=f"{type(exc).__name__}: {exc}")
    queued = writes.queued() if writes is not None else 0
    return metrics.render(queued=queued, figures=figures, now=utcnow())


async def _figures(store: Store, timeout: float) -> health_repo.Figures:
    now = utcnow()
    return await _bounded(store, lambda cur: health_repo.figures(cur, now), timeout)
