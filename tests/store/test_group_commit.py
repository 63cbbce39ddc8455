"""Group commit on a real store: batching, a failure kept to its own item, the change token."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

import pytest

from tests.support import embedded_settings
from warehouse.cursor import Cursor
from warehouse.errors import DuplicateKeyError
from warehouse.group_commit import GroupCommit
from warehouse.store import Store, StoreUnavailableError


class Refused(Exception):
    pass


class Writer:
    """Writes each item (a key) into a table; ``gate`` holds the first batch until set."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Event()
        self.batches: list[list[str]] = []

    def __call__(self, cur: Cursor, items: Sequence[str]) -> list[str | Exception]:
        self.started.set()
        self.gate.wait(10)
        self.batches.append(list(items))
        out: list[str | Exception] = []
        for item in items:
            if item.startswith("refuse"):
                out.append(Refused(item))
                continue
            cur.execute("INSERT INTO gc_items VALUES (?)", [item])
            out.append(f"ok:{item}")
        return out


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with embedded_settings(tmp_path / "data").open_store() as store:
        store.run(lambda cur: cur.execute("CREATE TABLE gc_items (k VARCHAR PRIMARY KEY)"))
        yield store


def stored(store: Store) -> list[str]:
    return store.read(
        lambda cur: [row[0] for row in cur.execute("SELECT k FROM gc_items ORDER BY k").fetchall()]
    )


def hold_first(store: Store, item: str) -> tuple[Writer, GroupCommit[str, str], Future[str]]:
    """Group commit on ``store`` whose first batch, ``item`` alone, is being written and held
    open (until the writer's gate is set): the writer, the group commit and the item's future."""
    writer = Writer()
    writes = GroupCommit(store, writer, name="test")
    first = writes.submit(item)
    assert writer.started.wait(10)
    return writer, writes, first


def queue_behind_first(
    store: Store, items: list[str]
) -> tuple[Writer, GroupCommit[str, str], list[Future[str]]]:
    """Submit ``items`` while the first one's batch is held open, so the rest batch together."""
    writer, writes, first = hold_first(store, items[0])
    rest = [writes.submit(item) for item in items[1:]]
    writer.gate.set()
    return writer, writes, [first, *rest]


def test_items_queued_during_a_batch_share_the_next(store: Store) -> None:
    before = store.changes.token()
    writer, writes, futures = queue_behind_first(store, ["a", "b", "c", "d"])
    assert [f.result(10) for f in futures] == ["ok:a", "ok:b", "ok:c", "ok:d"]
    writes.close()
    assert writer.batches == [["a"], ["b", "c", "d"]]
    assert stored(store) == ["a", "b", "c", "d"]
    assert store.changes.token() != before


def test_a_failing_item_fails_alone_and_leaves_nothing_half_written(store: Store) -> None:
    store.run(lambda cur: cur.execute("INSERT INTO gc_items VALUES ('taken')"))
    writer, writes, futures = queue_behind_first(store, ["a", "b", "taken", "c"])
    assert futures[0].result(10) == "ok:a"
    with pytest.raises(DuplicateKeyError):
        futures[2].result(10)
    assert [futures[1].result(10), futures[3].result(10)] == ["ok:b", "ok:c"]
    writes.close()
    # The shared batch was rolled back whole, then each of its items written alone.
    assert writer.batches == [["a"], ["b", "taken", "c"], ["b"], ["taken"], ["c"]]
    assert stored(store) == ["a", "b", "c", "taken"]


def test_a_refused_item_is_raised_to_its_caller_only(store: Store) -> None:
    _, writes, futures = queue_behind_first(store, ["a", "refuse-1", "b"])
    with pytest.raises(Refused):
        futures[1].result(10)
    assert [futures[0].result(10), futures[2].result(10)] == ["ok:a", "ok:b"]
    # A batch that only refused wrote nothing, and says so to no cache.
    token = store.changes.token()
    with pytest.raises(Refused):
        writes.submit("refuse-2").result(10)
    assert store.changes.token() == token
    writes.close()
    assert stored(store) == ["a", "b"]


def test_close_writes_what_is_queued_then_refuses_more(store: Store) -> None:
    writer, writes, first = hold_first(store, "a")
    queued = writes.submit("b")
    closer = threading.Thread(target=writes.close)
    closer.start()
    writer.gate.set()
    closer.join(10)
    assert (first.result(0), queued.result(0)) == ("ok:a", "ok:b")
    with pytest.raises(StoreUnavailableError):
        writes.submit("c")
    assert stored(store) == ["a", "b"]


def test_a_caller_that_gave_up_before_its_batch_is_not_written(store: Store) -> None:
    writer, writes, first = hold_first(store, "a")
    gone = writes.submit("b")
    assert gone.cancel()
    kept = writes.submit("c")
    writer.gate.set()
    assert (first.result(10), kept.result(10)) == ("ok:a", "ok:c")
    writes.close()
    assert stored(store) == ["a", "c"]
