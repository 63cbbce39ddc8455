"""Probe and scrape logic: each half of the store asked once, off the loop, within a time bound."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import structlog

from api.health.metrics import Metrics
from domain.analytics import publishing as reliability
from domain.errors import ServiceUnavailable
from warehouse import health as health_repo
from warehouse.group_commit import GroupCommit
from warehouse.ids import utcnow
from warehouse.lake import integrity
from warehouse.rows import Cursor
from warehouse.store import Store

log = structlog.get_logger(__name__)

T = TypeVar("T")

# Seconds a client waits before asking again when the store does not answer.
RETRY_AFTER = 5
# How often the readiness probe has SQLite check the lake's catalog (in a child process).
CATALOG_CHECK_SECONDS = 60.0


async def _bounded(work: Callable[[], T], timeout: float) -> T:
    """``work`` off the loop; TimeoutError past ``timeout`` (the work finishes on its own)."""
    # The default executor, not the request threads: a saturated API still answers its probes
    # as long as the store does. Probes never move the store's change token, so a probe
    # invalidates no cache; Shared keeps one of each kind in flight.
    return await asyncio.wait_for(asyncio.to_thread(work), timeout)


def _ping(store: Store) -> None:
    """Both halves answer: a publishing table, and the lake's catalog."""
    store.read(health_repo.ping)
    with store.analytics() as cur:
        health_repo.ping_lake(cur)


class Shared:
    """One in-flight store query per kind: concurrent probes await it instead of adding more."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Future[Any]] = {}
        self.catalog_checked: tuple[float, list[str]] | None = None  # (monotonic, problems)
        # The lake's files as of a snapshot: listed again only when a commit made another
        # (a listing is a catalog query per table; the files are stat'ed at every probe).
        self.lake_files: tuple[int, list[tuple[str, str, int | None]]] | None = None
        # The store's figures as last read: (change token before the read, monotonic time
        # the read began, figures). Only a success is kept.
        self.figures: tuple[bytes, float, health_repo.Figures] | None = None

    async def run(self, kind: str, start: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """``start()``'s outcome, shared with every caller that arrives while it runs."""
        task = self._running.get(kind)
        if task is None or task.done():
            task = asyncio.ensure_future(start())
            self._running[kind] = task
        # Shielded: a caller that hangs up does not cancel the others' answer.
        result: T = await asyncio.shield(task)
        return result


def _lake_problems(store: Store, shared: Shared) -> list[str]:
    """What is damaged in the lake: its catalog (checked once a minute), else its files."""
    now = time.monotonic()
    checked = shared.catalog_checked
    if checked is None or now - checked[0] >= CATALOG_CHECK_SECONDS:
        checked = shared.catalog_checked = (now, integrity.catalog_problems(store.lake, quick=True))
    if checked[1]:
        return list(checked[1])
    if store.lake.local_data is None:
        return []  # files on S3: the object store answers for them, the doctor reads them
    with store.analytics() as cur:
        con = cur.raw
        snapshot = integrity.current_snapshot(con)  # type: ignore[arg-type]
        if shared.lake_files is None or shared.lake_files[0] != snapshot:
            shared.lake_files = (snapshot, integrity.snapshot_files(con))  # type: ignore[arg-type]
    damaged = integrity.first_damaged_file(shared.lake_files[1])
    return [damaged] if damaged is not None else []


async def check_ready(
    shared: Shared, store: Store | None, timeout: float, data_dir: Path | None = None
) -> list[str]:
    """Raise SERVICE_UNAVAILABLE unless the store answers a trivial query within ``timeout``;
    return what is damaged in the lake (the service stays ready: publishing never reads it).

    When the probe fails and the disk under ``data_dir`` is full, the answer says so.
    """
    if store is None:
        raise ServiceUnavailable("The store is not open.", retry_after=RETRY_AFTER)
    try:
        await shared.run("ping", lambda: _bounded(lambda: _ping(store), timeout))
    except TimeoutError:
        log.warning("readiness.store_timeout", timeout=timeout)
        raise ServiceUnavailable(
            f"The store did not answer within {timeout:g} s.", retry_after=RETRY_AFTER
        ) from None
    except Exception as exc:
        full = await asyncio.to_thread(health_repo.disk_full, data_dir)
        log.warning("readiness.store_failed", error=f"{type(exc).__name__}: {exc}", disk_full=full)
        message = (
            "The store is unavailable: the disk under the data directory is full."
            if full
            else "The store is unavailable."
        )
        raise ServiceUnavailable(message, retry_after=RETRY_AFTER) from exc
    try:
        problems = await shared.run(
            "lake", lambda: _bounded(lambda: _lake_problems(store, shared), timeout)
        )
    except Exception as exc:  # the check failing is reported, never a reason to be unready
        log.warning("readiness.lake_check_failed", error=f"{type(exc).__name__}: {exc}")
        problems = [f"the lake could not be checked: {type(exc).__name__}"]
    return problems + await _publishing_problems(shared, store, timeout)


def _reliability(store: Store) -> reliability.Health:
    """Every workspace's stuck destinations and expiring tokens (docs/operations.md)."""
    return store.read(lambda cur: reliability.health(cur, utcnow()))


async def _publishing_problems(shared: Shared, store: Store, timeout: float) -> list[str]:
    """A line for stuck destinations and one for expiring tokens: the replica stays ready
    (another replica would see the same), an operator has something to do."""
    try:
        found = await shared.run(
            "reliability", lambda: _bounded(lambda: _reliability(store), timeout)
        )
    except Exception as exc:  # as the lake's: reported, never a reason to be unready
        log.warning("readiness.reliability_check_failed", error=f"{type(exc).__name__}: {exc}")
        return [f"publishing reliability could not be checked: {type(exc).__name__}"]
    return found.problems()


async def scrape(
    shared: Shared,
    metrics: Metrics,
    store: Store | None,
    writes: GroupCommit[Any, Any] | None,
    timeout: float,
    max_age: float,
) -> bytes:
    """The exposition text; the store's figures are left out when it does not answer in time.

    The figures read for an earlier scrape are answered again while they are younger than
    ``max_age`` and no write moved the store's change token: a scrape loop then costs the
    store one read per ``max_age`` instead of one per scrape (a read is a lake transaction).
    """
    figures: health_repo.Figures | None = None
    if store is not None and not store.closed:
        figures = _kept(shared, store, max_age)
        if figures is None:
            try:
                figures = await shared.run(
                    "figures", lambda: _fresh_figures(shared, metrics, store, timeout)
                )
            except Exception as exc:
                log.warning("metrics.store_failed", error=f"{type(exc).__name__}: {exc}")
    queued = writes.queued() if writes is not None else 0
    return metrics.render(queued=queued, figures=figures, now=utcnow())


def _kept(shared: Shared, store: Store, max_age: float) -> health_repo.Figures | None:
    """The figures of an earlier read, if still current: young enough, and no write since."""
    # The clock bounds them even with no write (a scheduled post falls due by itself) and
    # covers the writers the change file does not see (at scale, other machines').
    kept = shared.figures
    if kept is None or time.monotonic() - kept[1] >= max_age:
        return None
    return kept[2] if kept[0] == store.changes.local_token() else None


async def _fresh_figures(
    shared: Shared, metrics: Metrics, store: Store, timeout: float
) -> health_repo.Figures:
    # The token and the time before the read: what it returns is at least that new.
    token, began = store.changes.local_token(), time.monotonic()
    metrics.count_store_read()
    figures = await _bounded(lambda: _read_figures(store), timeout)
    shared.figures = (token, began, figures)
    return figures


def _read_figures(store: Store) -> health_repo.Figures:
    now = utcnow()

    def publishing(cur: Cursor) -> tuple[datetime | None, reliability.Health]:
        return health_repo.oldest_due_at(cur, now), reliability.health(cur, now)

    oldest_due, found = store.read(publishing)
    with store.analytics() as cur:
        last_ingest, last_mart = health_repo.freshness(cur)
    return health_repo.Figures(
        oldest_due,
        last_ingest,
        last_mart,
        stuck_destinations=found.stuck,
        tokens_expiring=found.tokens,
    )
