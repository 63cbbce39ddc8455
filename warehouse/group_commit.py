"""Group commit: the writes of concurrent callers in one transaction, one statement per table.

A lone ``POST /posts`` pays a transaction of its own: its statements and a ``COMMIT``,
which on SQLite waits for the disk (``synchronous=FULL``) and takes the one write lock.
:class:`GroupCommit` gathers what callers submit while the previous batch is being
written and hands the whole batch to one ``write`` call in one transaction, so a burst
shares its statements and its commit, and a lone caller waits for nobody.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Generic, TypeVar

import structlog

from warehouse.cursor import Cursor
from warehouse.errors import StoreUnavailableError
from warehouse.store import Store

log = structlog.get_logger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class GroupCommit(Generic[T, R]):
    """Writes submitted items in shared transactions, one batch at a time, on its own thread.

    ``write(cur, items)`` runs inside a transaction and returns one outcome per item. If it
    raises, or the ``COMMIT`` fails (a key written twice, a conflict), the batch is rolled
    back and every item is written again alone, so that a failure belongs to its own item.
    A committed batch that wrote anything moves the store's change token.
    """

    def __init__(
        self,
        store: Store,
        write: Callable[[Cursor, Sequence[T]], Sequence[R | BaseException]],
        *,
        name: str,
        max_batch: int = 64,
    ) -> None:
        self._store = store
        self._write = write
        self._name = name
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[tuple[T, Future[R]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, item: T) -> Future[R]:
        """Queue ``item`` for the next batch; the future holds its outcome once committed."""
        future: Future[R] = Future()
        with self._lock:
            if self._closed:
                raise StoreUnavailableError(f"{self._name} writer is closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"group-commit-{self._name}", daemon=True
                )
                self._thread.start()
            self._queue.put((item, future))
        return future

    def queued(self) -> int:
        """Items submitted and not yet taken into a batch (approximate, for metrics)."""
        return self._queue.qsize()

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while True:
            entry = self._queue.get()
            if entry is None:
                return
            batch = [entry]
            stop = False
            while len(batch) < self._max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                batch.append(more)
            # A caller that gave up before its batch began is not written at all.
            live = [(item, fut) for item, fut in batch if fut.set_running_or_notify_cancel()]
            if live:
                self._write_batch(live)
            if stop:
                return

    def _write_batch(self, batch: list[tuple[T, Future[R]]]) -> None:
        try:
            outcomes = self._transaction([item for item, _ in batch])
        except Exception as exc:
            if len(batch) == 1:
                batch[0][1].set_exception(exc)
                return
            log.info("group_commit.split", writer=self._name, size=len(batch), error=str(exc))
            for entry in batch:
                self._write_batch([entry])
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    def _transaction(self, items: list[T]) -> Sequence[R | BaseException]:
        txn = self._store.begin(write=True)
        try:
            outcomes = self._write(txn.cur, items)
            if len(outcomes) != len(items):
                raise RuntimeError(f"{self._name}: {len(outcomes)} outcomes for {len(items)}")
        except BaseException:
            txn.rollback()
            raise
        txn.commit(wrote=any(not isinstance(outcome, BaseException) for outcome in outcomes))
        return outcomes
