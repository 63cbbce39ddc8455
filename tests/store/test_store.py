"""The store on its own: migrations, conflict retries, atomic scripts (direct and remote)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from warehouse.errors import StoreError
from warehouse.migrations import available, migrate
from warehouse.store import Secrets, Store, StoreCursor, Transaction


def connect(data_dir: Path) -> Store:
    return Store.connect(
        data_dir / "murmur.duckdb",
        host_file=data_dir / "store.host.json",
        quack_token=Secrets.load(data_dir).quack_token,
        lock_timeout=5,
    )


@pytest.fixture
def direct(tmp_path: Path) -> Iterator[Store]:
    store = connect(tmp_path)
    assert store.mode == "direct"
    yield store
    store.close()


@pytest.fixture
def hosted(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """A host serving Quack and a client that reached it through store.host.json."""
    host_file = tmp_path / "store.host.json"
    host = Store.open_host(
        tmp_path / "murmur.duckdb",
        host_file=host_file,
        quack_token=Secrets.load(tmp_path).quack_token,
        quack_port=0,
        lock_timeout=5,
    )
    try:
        client = connect(tmp_path)
        try:
            assert client.mode == "remote"
            yield host, client
        finally:
            client.close()
    finally:
        host.close()
    assert not host_file.exists()


def test_migrations_are_versioned_and_idempotent(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    try:
        shipped = available()
        assert shipped, "no migrations shipped"
        versions = [m.version for m in shipped]
        assert versions == sorted(set(versions))
        assert migrate(con) == versions
        assert migrate(con) == []
        rows = con.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
        assert [(v, n) for v, n, _ in rows] == [(m.version, m.name) for m in shipped]
        assert all(at is not None for _, _, at in rows)
    finally:
        con.close()


def test_opening_the_store_migrates_it_once(tmp_path: Path) -> None:
    connect(tmp_path).close()
    with connect(tmp_path) as store, store.cursor() as cur:
        (count,) = cur.execute("SELECT count(*) FROM schema_migrations").fetchone() or (0,)
        assert count == len(available())


def test_run_retries_a_write_write_conflict(direct: Store) -> None:
    direct.execute_script(
        "CREATE TABLE counter (id INTEGER PRIMARY KEY, v INTEGER, log VARCHAR[]);"
        "INSERT INTO counter VALUES (1, 0, []);"
    )
    both_read = threading.Barrier(2, timeout=10)
    attempts: dict[str, int] = {"a": 0, "b": 0}
    errors: list[BaseException] = []

    def bump(name: str) -> None:
        def work(cur: StoreCursor) -> None:
            attempts[name] += 1
            row = cur.execute("SELECT v FROM counter WHERE id = 1").fetchone()
            assert row is not None
            if attempts[name] == 1:
                both_read.wait()  # both transactions have read the same row
            cur.execute(
                "UPDATE counter SET v = ?, log = list_append(log, ?) WHERE id = 1",
                [row[0] + 1, f"{name}:{row[0] + 1}"],
            )

        try:
            direct.run(work)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=bump, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert sum(attempts.values()) >= 3, attempts  # one of them lost the race and retried
    with direct.cursor() as cur:
        v, log = cur.execute("SELECT v, log FROM counter WHERE id = 1").fetchone() or (None, None)
    assert v == 2
    # Both updates landed, the retried one on top of the other: values 1 then 2.
    assert [entry.split(":")[1] for entry in log] == ["1", "2"]
    assert {entry.split(":")[0] for entry in log} == {"a", "b"}


def count(store: Store, table: str) -> int:
    with store.cursor() as cur:
        row = cur.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608 - test constant
    assert row is not None
    return int(row[0])


def tables(store: Store) -> set[str]:
    with store.cursor() as cur:
        return {r[0] for r in cur.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_execute_script_is_atomic_direct(direct: Store) -> None:
    direct.execute_script("CREATE TABLE t (i INTEGER); INSERT INTO t VALUES (1);")
    with pytest.raises(StoreError):
        direct.execute_script(
            "INSERT INTO t VALUES (2); CREATE TABLE u (i INTEGER); INSERT INTO t VALUES ('x');"
        )
    assert count(direct, "t") == 1
    assert "u" not in tables(direct)
    direct.execute_script("INSERT INTO t VALUES (3);")  # the connection is usable again
    assert count(direct, "t") == 2


def test_execute_script_is_atomic_remote(hosted: tuple[Store, Store]) -> None:
    host, client = hosted
    client.execute_script("CREATE TABLE t (i INTEGER); INSERT INTO t VALUES (1);")
    assert count(client, "t") == 1  # the client sees the new table (its cache was cleared)
    with pytest.raises(StoreError):
        client.execute_script(
            "INSERT INTO t VALUES (2); CREATE TABLE u (i INTEGER); INSERT INTO t VALUES ('x');"
        )
    assert count(host, "t") == 1
    assert "u" not in tables(host)
    client.execute_script("INSERT INTO t VALUES (3);")
    assert count(host, "t") == 2
    assert count(client, "t") == 2


def test_client_side_rollback_does_not_undo_remote_writes(hosted: tuple[Store, Store]) -> None:
    """Pins the Quack caveat (DuckDB 1.5.5) that execute_script exists for.

    Each remote statement runs (on the host) in a transaction of its own: a client-side
    BEGIN does not hold, the INSERT commits, and the ROLLBACK finds nothing to undo. If a
    DuckDB upgrade makes client transactions real, revisit docs/adr/0001-store.md.
    """
    host, client = hosted
    client.execute_script("CREATE TABLE t (i INTEGER);")
    with client.cursor() as cur:
        cur.execute("BEGIN TRANSACTION")
        cur.execute("INSERT INTO t VALUES (?)", [1])
        with pytest.raises(StoreError, match="no transaction is active"):
            cur.execute("ROLLBACK")
    assert count(host, "t") == 1


def test_every_committed_write_replaces_the_change_token(hosted: tuple[Store, Store]) -> None:
    host, remote = hosted
    # Both processes' handles read one token file beside the store.
    assert host.changes.path == remote.changes.path
    before = host.changes.token()
    assert remote.changes.token() == before
    remote.run(lambda cur: cur.execute("CREATE TABLE IF NOT EXISTS signal_probe (i INTEGER)"))
    after_run = host.changes.token()
    assert after_run != before
    remote.execute_script("INSERT INTO signal_probe VALUES (1);")
    after_script = host.changes.token()
    assert after_script != after_run
    with host.transaction() as cur:
        cur.execute("INSERT INTO signal_probe VALUES (2)")
    assert remote.changes.token() != after_script


def test_a_request_transaction_signals_only_when_it_wrote(direct: Store) -> None:
    direct.run(lambda cur: cur.execute("CREATE TABLE probe (i INTEGER)"))
    start = direct.changes.token()
    reader = Transaction(direct)
    assert reader.token == start
    assert not reader.begun  # nothing touched the store yet
    assert reader.cur.execute("SELECT count(*) FROM probe").fetchone() == (0,)
    reader.commit(wrote=False)
    assert direct.changes.token() == start
    keys = direct.changes.keys_token()
    writer = Transaction(direct)
    writer.cur.execute("INSERT INTO probe VALUES (1)")
    writer.commit(wrote=True)
    assert direct.changes.token() != start
    # An API request never writes api_keys: resolved keys stay valid across its commit...
    assert direct.changes.keys_token() == keys
    # ...and not across any other write (a revocation through the CLI is one).
    direct.run(lambda cur: cur.execute("INSERT INTO probe VALUES (2)"))
    assert direct.changes.keys_token() != keys
    assert direct.run(lambda cur: cur.execute("SELECT count(*) FROM probe").fetchone()) == (2,)
