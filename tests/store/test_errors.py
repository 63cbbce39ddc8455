"""The store's one seam for failures: engine errors arrive as Murmur's, retried by one policy."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests.support import free_port
from warehouse import retry
from warehouse.errors import (
    ConflictError,
    DuplicateKeyError,
    StoreError,
    StoreUnavailableError,
    translate,
)
from warehouse.store import Secrets, Store, StoreCursor


@pytest.fixture
def store(fresh_store: Store) -> Store:
    with fresh_store.cursor() as cur:
        cur.execute("CREATE TABLE seam (id INTEGER PRIMARY KEY, v INTEGER)")
        cur.execute("INSERT INTO seam VALUES (1, 0)")
    return fresh_store


def test_two_transactions_updating_one_row_give_a_conflict(store: Store) -> None:
    first, second = store.new_cursor(), store.new_cursor()
    try:
        first.execute("BEGIN TRANSACTION")
        second.execute("BEGIN TRANSACTION")
        first.execute("UPDATE seam SET v = 1 WHERE id = 1")
        with pytest.raises(ConflictError) as raised:
            second.execute("UPDATE seam SET v = 2 WHERE id = 1")
        assert isinstance(raised.value.__cause__, duckdb.TransactionException)
        assert raised.value.retryable
    finally:
        first.execute("ROLLBACK")
        second.execute("ROLLBACK")
        first.close()
        second.close()


def test_a_key_taken_is_a_duplicate_in_a_statement_and_at_commit(store: Store) -> None:
    with store.cursor() as cur, pytest.raises(DuplicateKeyError) as in_statement:
        cur.execute("INSERT INTO seam VALUES (1, 5)")
    assert not in_statement.value.retryable
    first, second = store.new_cursor(), store.new_cursor()
    try:
        first.execute("BEGIN TRANSACTION")
        second.execute("BEGIN TRANSACTION")
        first.execute("INSERT INTO seam VALUES (2, 0)")
        second.execute("INSERT INTO seam VALUES (2, 0)")  # not seen until one commits
        first.execute("COMMIT")
        with pytest.raises(DuplicateKeyError) as at_commit:
            second.execute("COMMIT")
        assert isinstance(at_commit.value.__cause__, duckdb.TransactionException)
    finally:
        first.close()
        second.close()
    assert store.run(lambda cur: cur.execute("SELECT count(*) FROM seam").fetchone()) == (2,)


def test_a_file_held_by_another_process_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "held" / "murmur.duckdb"
    path.parent.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
            " sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreUnavailableError):
            Store.connect(
                path,
                host_file=path.with_name("store.host.json"),
                quack_token="unused",
                lock_timeout=0.0,
            )
    finally:
        holder.kill()
        holder.wait()


def test_other_engine_errors_are_store_errors_and_the_rest_pass_through(store: Store) -> None:
    with store.cursor() as cur, pytest.raises(StoreError) as raised:
        cur.execute("SELECT * FROM no_such_table")
    assert type(raised.value) is StoreError
    assert isinstance(raised.value.__cause__, duckdb.CatalogException)
    plain = ValueError("not the store's")
    assert translate(plain) is plain


def test_a_conflict_over_quack_reads_as_a_conflict() -> None:
    # Over Quack (DuckDB 1.5.5) the host's conflict reaches the client as a plain error
    # with the host's message; the translation is by message there, by class in-process.
    assert isinstance(translate(duckdb.Error("Conflict on tuple deletion!")), ConflictError)


def test_a_key_taken_over_quack_is_a_duplicate(tmp_path: Path) -> None:
    data = tmp_path / "data"
    token = Secrets.load(data).quack_token
    host_file = data / "store.host.json"
    with Store.open_host(
        data / "murmur.duckdb", host_file=host_file, quack_token=token, quack_port=free_port()
    ) as host:
        with host.cursor() as cur:
            cur.execute("CREATE TABLE seam (id INTEGER PRIMARY KEY)")
            cur.execute("INSERT INTO seam VALUES (1)")
        with Store.connect(
            data / "murmur.duckdb", host_file=host_file, quack_token=token
        ) as remote:
            assert remote.mode == "remote"
            with remote.cursor() as cur, pytest.raises(DuplicateKeyError) as raised:
                cur.execute("INSERT INTO seam VALUES (1)")
    assert not raised.value.retryable


def test_the_cursor_reaches_what_else_duckdb_offers(store: Store) -> None:
    with store.cursor() as cur:
        assert isinstance(cur, StoreCursor)
        first = cur.execute("SELECT id, v FROM seam ORDER BY id").fetchmany(1)
    assert first == [(1, 0)]


# -- the policy ----------------------------------------------------------------------------------


def _failing(times: int, error: StoreError) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def work() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "done"

    return calls, work


def test_a_conflict_is_retried_until_the_work_succeeds() -> None:
    calls, work = _failing(2, ConflictError("lost"))
    waits: list[float] = []
    assert retry.retrying(work, sleep=waits.append) == "done"
    assert len(calls) == 3
    assert len(waits) == 2
    assert all(w > 0 for w in waits)


def test_a_duplicate_key_is_not_retried_unless_asked() -> None:
    calls, work = _failing(1, DuplicateKeyError("taken"))
    with pytest.raises(DuplicateKeyError):
        retry.retrying(work, sleep=lambda _: None)
    assert len(calls) == 1
    calls, work = _failing(1, DuplicateKeyError("taken"))
    retry.retrying(work, retry_on=(DuplicateKeyError,), sleep=lambda _: None)
    assert len(calls) == 2


def test_attempts_are_bounded() -> None:
    calls, work = _failing(10**6, ConflictError("always"))
    with pytest.raises(ConflictError):
        retry.retrying(work, sleep=lambda _: None)
    assert len(calls) == retry.ATTEMPTS
    calls, work = _failing(10**6, ConflictError("always"))
    waits: list[float] = []
    with pytest.raises(ConflictError):
        retry.retrying(work, attempts=14, sleep=waits.append)
    assert len(calls) == 14
    # Doubling with jitter 0.5-1.5: the 13 waits sum to 8-25 s (the lake's commit budget).
    assert 8.0 < sum(waits) < 25.0


def test_store_run_retries_a_real_conflict_and_commits_once(store: Store) -> None:
    # The first attempt loses to a transaction holding the row; by its retry that one is done.
    holder = store.new_cursor()
    holder.execute("BEGIN TRANSACTION")
    holder.execute("UPDATE seam SET v = v + 100 WHERE id = 1")
    attempts: list[int] = []

    def work(cur: StoreCursor) -> None:
        attempts.append(1)
        if len(attempts) == 1:
            try:
                cur.execute("UPDATE seam SET v = v + 1 WHERE id = 1")
            finally:
                holder.execute("COMMIT")
                holder.close()
        else:
            cur.execute("UPDATE seam SET v = v + 1 WHERE id = 1")

    store.run(work)
    assert len(attempts) == 2
    assert store.run(lambda cur: cur.execute("SELECT v FROM seam").fetchone()) == (101,)
