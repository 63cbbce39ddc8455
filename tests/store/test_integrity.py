"""Indexes that agree with their tables across WAL handoffs, and two stores never on one port.

DuckDB 1.5.5 serializes a stale secondary index when one engine replays a WAL that another
left behind and checkpoints it at shutdown (duckdb/duckdb#23788). Each engine here is its own
OS process, as in production: the first dies with its WAL pending (``os._exit``).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import pytest

from warehouse import integrity
from warehouse.cursor import StoreCursor
from warehouse.migrations import migrate
from warehouse.store import PortClaim, PortInUseError, Secrets, Store

# Leaves 40 posts and 120 destinations in the WAL only, with a secondary index on post_id.
DIE_WITH_WAL = textwrap.dedent("""
    import os, sys, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("SET checkpoint_threshold = '1GB'")
    con.execute("CREATE TABLE posts (id VARCHAR PRIMARY KEY, workspace_id VARCHAR)")
    con.execute(
        "CREATE TABLE dest (id VARCHAR PRIMARY KEY, post_id VARCHAR, account VARCHAR,"
        " UNIQUE (post_id, account))"
    )
    con.execute("CREATE INDEX dest_post ON dest (post_id)")
    con.execute("CHECKPOINT")
    for i in range(40):
        con.execute("INSERT INTO posts VALUES (?, 'ws')", [f"p{i}"])
        for j in range(3):
            con.execute("INSERT INTO dest VALUES (?, ?, ?)", [f"d{i}.{j}", f"p{i}", f"a{j}"])
    os._exit(0)
""")

# Opens the file as any short-lived process did before the fix: replay, touch nothing, close.
PLAIN_OPEN = "import sys, duckdb; duckdb.connect(sys.argv[1]).close()"

# Opens the file the way every Murmur process now does.
STORE_OPEN = textwrap.dedent("""
    import sys
    from pathlib import Path
    from warehouse.store import Store
    path = Path(sys.argv[1])
    with Store.connect(path, host_file=path.with_name("none.json"), quack_token="t" * 8,
                       migrate_schema=False):
        pass
""")


def _run(code: str, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def _lookup_vs_scan(path: Path) -> tuple[int, int]:
    con = duckdb.connect(str(path))
    try:
        by_index = con.execute("SELECT count(*) FROM dest WHERE post_id = 'p5'").fetchone()
        # Not an index predicate: always a scan.
        by_scan = con.execute("SELECT count(*) FROM dest WHERE post_id || '' = 'p5'").fetchone()
    finally:
        con.close()
    assert by_index is not None
    assert by_scan is not None
    return int(by_index[0]), int(by_scan[0])


def test_the_upstream_bug_is_real_and_the_check_finds_and_repairs_it(tmp_path: Path) -> None:
    path = tmp_path / "plain.duckdb"
    _run(DIE_WITH_WAL, str(path))
    assert path.with_name(path.name + ".wal").exists()
    _run(PLAIN_OPEN, str(path))
    # duckdb==1.5.5 is pinned: the index misses every replayed row while a scan finds them.
    assert _lookup_vs_scan(path) == (0, 3)

    con = duckdb.connect(str(path))
    try:
        found = {f.index.name: f for f in integrity.check(StoreCursor(con), sample=1000)}
        assert not found["dest_post"].ok
        assert len(found["dest_post"].mismatches) == 40  # every post's 3 rows, none indexed
        assert found["dest_post"].mismatches[0][1:] == (0, 3)
        for name in ("dest_id_pkey", "dest_post_id_account_key", "posts_id_pkey"):
            assert found[name].ok, found[name]
            assert found[name].checked > 0
        repaired = integrity.check_and_repair(con, sample=1000)
        assert [f.index.name for f in repaired if f.repaired] == ["dest_post"]
        assert all(f.ok for f in integrity.check(StoreCursor(con), sample=1000))
    finally:
        con.close()
    assert _lookup_vs_scan(path) == (3, 3)


def test_a_murmur_process_opening_after_a_crash_leaves_every_index_sound(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    _run(DIE_WITH_WAL, str(path))
    _run(STORE_OPEN, str(path))  # checkpoints right after replaying, then checks
    assert not path.with_name(path.name + ".wal").exists()
    assert _lookup_vs_scan(path) == (3, 3)
    con = duckdb.connect(str(path))
    try:
        assert all(f.ok for f in integrity.check(StoreCursor(con), sample=1000))
    finally:
        con.close()


def test_the_schema_keeps_no_secondary_index(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "fresh.duckdb"))
    try:
        migrate(con)
        assert con.execute("SELECT index_name FROM duckdb_indexes()").fetchall() == []
        kinds = {i.kind for i in integrity.indexes(StoreCursor(con))}
        assert kinds == {"primary key", "unique"}
    finally:
        con.close()


def test_rebuilding_a_constraint_index_keeps_rows_columns_and_constraints(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "rebuild.duckdb"))
    try:
        migrate(con)
        columns = con.execute("DESCRIBE post_destinations").fetchall()
        for i in range(5):
            con.execute(
                "INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform,"
                " status, created_at, updated_at) VALUES (?, ?, 'ws', 'acc', 'x', 'pending',"
                " TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01')",
                [f"dst_{i}", f"post_{i}"],
            )
        pkey = next(
            i for i in integrity.indexes(StoreCursor(con)) if i.table == "post_destinations"
        )
        integrity.repair(StoreCursor(con), integrity.Finding(pkey, checked=1))
        assert con.execute("DESCRIBE post_destinations").fetchall() == columns
        assert con.execute("SELECT count(*) FROM post_destinations").fetchone() == (5,)
        with pytest.raises(duckdb.ConstraintException):
            con.execute(
                "INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform,"
                " status, created_at, updated_at) VALUES ('dst_1', 'p', 'ws', 'acc', 'x',"
                " 'pending', TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01')"
            )
        assert all(f.ok for f in integrity.check(StoreCursor(con), sample=100))
    finally:
        con.close()


def _host(data_dir: Path, port: int) -> Store:
    data_dir.mkdir(parents=True)
    return Store.open_host(
        data_dir / "murmur.duckdb",
        host_file=data_dir / "store.host.json",
        quack_token=Secrets.load(data_dir).quack_token,
        quack_port=port,
        lock_timeout=5,
    )


def test_two_stores_asked_for_one_quack_port_never_share_it(tmp_path: Path) -> None:
    first = _host(tmp_path / "a", 0)
    try:
        assert first.quack_uri is not None
        port = int(first.quack_uri.rsplit(":", 1)[1])
        with pytest.raises(PortInUseError, match=rf"127\.0\.0\.1:{port} is already in use"):
            _host(tmp_path / "b", port)
        assert not (tmp_path / "b" / "store.host.json").exists()
    finally:
        first.close()
    # Released on close: the port can be served again.
    again = _host(tmp_path / "c", port)
    again.close()


def test_a_port_held_by_another_program_is_refused(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(PortInUseError, match=str(port)):
            PortClaim.take("127.0.0.1", port)
    claim = PortClaim.take("127.0.0.1", 0)
    assert claim.port > 0
    claim.release()


def test_threads_of_one_process_open_the_file_while_another_writes(tmp_path: Path) -> None:
    """As ``murmur worker`` does with no host: each loop connects on its own thread."""
    path = tmp_path / "murmur.duckdb"

    def connect() -> Store:
        return Store.connect(path, host_file=tmp_path / "none.json", quack_token="t" * 8)

    errors: list[BaseException] = []
    stop = threading.Event()
    with connect() as first:
        first.execute_script("CREATE TABLE marks (i INTEGER PRIMARY KEY);")

        def write() -> None:
            i = 0
            while not stop.is_set():
                i += 1
                with first.transaction() as cur:
                    cur.execute("INSERT INTO marks VALUES (?)", [i])

        def open_close() -> None:
            try:
                for _ in range(5):
                    with connect() as other, other.cursor() as cur:
                        cur.execute("SELECT count(*) FROM marks").fetchall()
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        openers = [threading.Thread(target=open_close) for _ in range(4)]
        for thread in openers:
            thread.start()
        for thread in openers:
            thread.join(120)
        stop.set()
        writer.join(60)
    assert errors == []
    # The last close checkpointed: nothing is left for the next engine to replay.
    assert not path.with_name(path.name + ".wal").exists()
