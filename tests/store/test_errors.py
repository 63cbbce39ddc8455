"""The store's one seam for failures: engine errors arrive as Murmur's, retried by one policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import duckdb
import pytest

from warehouse import retry
from warehouse.cursor import StoreCursor
from warehouse.errors import (
    ConflictError,
    DuplicateKeyError,
    StoreError,
    translate,
)


@pytest.fixture
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB database (the lake's engine, the old store's) with one keyed table."""
    con = duckdb.connect()
    con.execute("CREATE TABLE seam (id INTEGER PRIMARY KEY, v INTEGER)")
    con.execute("INSERT INTO seam VALUES (1, 0)")
    yield con
    con.close()


def test_two_transactions_updating_one_row_give_a_conflict(duck: duckdb.DuckDBPyConnection) -> None:
    first, second = StoreCursor(duck.cursor()), StoreCursor(duck.cursor())
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


def test_a_key_taken_is_a_duplicate_in_a_statement_and_at_commit(
    duck: duckdb.DuckDBPyConnection,
) -> None:
    cur = StoreCursor(duck.cursor())
    with pytest.raises(DuplicateKeyError) as in_statement:
        cur.execute("INSERT INTO seam VALUES (1, 5)")
    assert not in_statement.value.retryable
    first, second = StoreCursor(duck.cursor()), StoreCursor(duck.cursor())
    first.execute("BEGIN TRANSACTION")
    second.execute("BEGIN TRANSACTION")
    first.execute("INSERT INTO seam VALUES (2, 0)")
    second.execute("INSERT INTO seam VALUES (2, 0)")  # not seen until one commits
    first.execute("COMMIT")
    with pytest.raises(DuplicateKeyError) as at_commit:
        second.execute("COMMIT")
    assert isinstance(at_commit.value.__cause__, duckdb.TransactionException)
    assert cur.execute("SELECT count(*) FROM seam").fetchone() == (2,)


def test_other_engine_errors_are_store_errors_and_the_rest_pass_through(
    duck: duckdb.DuckDBPyConnection,
) -> None:
    with pytest.raises(StoreError) as raised:
        StoreCursor(duck.cursor()).execute("SELECT * FROM no_such_table")
    assert type(raised.value) is StoreError
    assert isinstance(raised.value.__cause__, duckdb.CatalogException)
    plain = ValueError("not the store's")
    assert translate(plain) is plain


def test_a_lake_commit_another_commit_refused_reads_as_a_conflict() -> None:
    # DuckLake reports a refused commit by message: its catalog held by another commit
    # (SQLite), or a conflicting snapshot (PostgreSQL); both may run again.
    for message in (
        "Failed to flush changes into DuckLake: database is locked",
        "TransactionContext Error: Failed to commit: Transaction conflict - attempting to"
        " delete from table that was changed by another transaction",
    ):
        assert isinstance(translate(duckdb.Error(message)), ConflictError), message


def test_the_cursor_reaches_what_else_duckdb_offers(duck: duckdb.DuckDBPyConnection) -> None:
    cur = StoreCursor(duck.cursor())
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
