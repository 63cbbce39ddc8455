"""The publishing database (ADR 0002, steps 2 and 7), opened by every process.

On both profiles (tests/store/conftest.py: SQLite in WAL mode; PostgreSQL) and with real
processes: the schema Alembic builds equals the metadata and today's DuckDB tables; writers
in several processes open a new database at once and commit without an owner; a peer process
reads each write as soon as it is acknowledged; a writer killed with SIGKILL loses nothing
it acknowledged; an analyst's DuckDB attaches it read-only and joins it, and the engine
itself refuses the analyst's writes.
"""

from __future__ import annotations

import itertools
import multiprocessing
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, UniqueConstraint, select
from sqlalchemy.types import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Double,
    Integer,
    String,
    TypeEngine,
)

from benchmarks.servers import ScaleServers
from tests.store.children import (
    AT,
    new_post,
    open_and_write,
    write_back_to_back,
)
from tests.store.conftest import Profile, grant_analyst
from tests.store.old_schema import migrate
from tests.support import HANG_SECONDS, all_exit_0_at_once, free_port
from warehouse.errors import ConflictError, DuplicateKeyError, StoreUnavailableError
from warehouse.lake import attach_publishing
from warehouse.pubdb.engine import SCRIPT_LOCATION, PubDB, head_revision, sqlite_url
from warehouse.pubdb.schema import every_table, metadata, post_destinations, posts
from warehouse.store import Store

# The DuckDB store's tables that are analytics (they move to the lake, step 3), not publishing.
ANALYTICS_PREFIXES = ("raw_", "stg_", "dim_", "mart_")
NOT_PUBLISHING = {"ingest_batches", "schema_migrations"}
# A DuckDB column type -> the SQLAlchemy type it becomes here.
TYPES: dict[str, type[TypeEngine[Any]]] = {
    "VARCHAR": String,
    "VARCHAR[]": JSON,
    "JSON": JSON,
    "TIMESTAMP": DateTime,
    "DATE": Date,
    "BOOLEAN": Boolean,
    "BIGINT": BigInteger,
    "INTEGER": Integer,
    "DOUBLE": Double,
}


@pytest.fixture
def db(profile: Profile) -> Iterator[PubDB]:
    with PubDB.open(profile.pub_url) as opened:
        yield opened


def _destinations_of(db: PubDB, post_id: str) -> int:
    with db.snapshot() as conn:
        found = conn.execute(
            select(post_destinations.c.id)
            .join(posts, posts.c.id == post_destinations.c.post_id)
            .where(posts.c.id == post_id)
        ).all()
    return len(found)


def test_the_migrations_build_exactly_the_metadata(db: PubDB) -> None:
    assert db.revision() == "0007"
    with db.snapshot() as conn:
        # Every table: the DuckDB store's (``metadata``) and those added since.
        assert compare_metadata(MigrationContext.configure(conn), every_table) == []
    db.upgrade()  # again: nothing to do, nothing fails
    assert db.revision() == "0007"


def test_opening_skips_alembic_only_at_alembics_own_head(db: PubDB, tmp_path: Path) -> None:
    # PubDB.open reads the head from the scripts' file names, without importing Alembic.
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    assert ScriptDirectory.from_config(config).get_heads() == [head_revision()]
    assert db.at_head()
    with PubDB.open(sqlite_url(tmp_path / "new.sqlite"), migrate=False) as new:
        assert not new.at_head()
        new.upgrade("0002")
        assert not new.at_head()


def test_every_publishing_table_of_the_duckdb_store_is_here_column_for_column() -> None:
    con = duckdb.connect()
    migrate(con)
    columns = con.execute(
        "SELECT table_name, column_name, data_type, is_nullable = 'YES'"
        " FROM information_schema.columns WHERE table_schema = 'main'"
        " AND table_name IN (SELECT table_name FROM duckdb_tables())"
        " ORDER BY table_name, ordinal_position"
    ).fetchall()
    keys = con.execute(
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints()"
        " WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
    ).fetchall()
    duck: dict[str, list[tuple[str, type[TypeEngine[Any]], bool]]] = {}
    for table, column, data_type, nullable in columns:
        if table.startswith(ANALYTICS_PREFIXES) or table in NOT_PUBLISHING:
            continue
        duck.setdefault(table, []).append((column, TYPES[data_type], nullable))

    assert sorted(duck) == sorted(metadata.tables)
    assert len(duck) == 32
    for name, table in metadata.tables.items():
        here = [(c.name, type(c.type), c.nullable) for c in table.columns]
        assert here == duck[name], name
        primary = [c.name for c in table.primary_key.columns]
        uniques = [
            [c.name for c in constraint.columns]
            for constraint in table.constraints
            if isinstance(constraint, UniqueConstraint)
        ]
        assert [list(cols) for t, kind, cols in keys if t == name and kind == "PRIMARY KEY"] == [
            primary
        ], name
        assert sorted(
            list(cols) for t, kind, cols in keys if t == name and kind == "UNIQUE"
        ) == sorted(uniques), name


def test_the_file_is_in_wal_mode_and_commits_are_synced(tmp_path: Path) -> None:
    with PubDB.open(sqlite_url(tmp_path / "publishing.sqlite")) as db, db.snapshot() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10_000


def test_values_read_back_as_written(db: PubDB) -> None:
    with db.transaction() as conn:
        new_post(conn, "post_1", tags=["launch", "q4"])
    with db.snapshot() as conn:
        row = conn.execute(select(posts).where(posts.c.id == "post_1")).one()
    assert row.tags == ["launch", "q4"]
    assert row.media_ids == []
    assert row.platform_options is None  # SQL NULL, not the JSON text null
    assert row.approval_required is False  # the server default
    assert row.source == "api"
    assert row.created_at == AT
    assert row.scheduled_at == AT + timedelta(hours=1)


def test_a_duplicate_key_is_a_duplicate_key_error_and_leaves_nothing(db: PubDB) -> None:
    with db.transaction() as conn:
        new_post(conn, "post_1")

    def post_2_then_post_1_again(conn: Connection) -> None:
        new_post(conn, "post_2")
        new_post(conn, "post_1")  # the key is taken: the whole transaction goes, post_2 too

    with pytest.raises(DuplicateKeyError):
        db.run(post_2_then_post_1_again)
    assert _destinations_of(db, "post_1") == 3
    with db.snapshot() as conn:
        assert conn.execute(select(posts.c.id)).scalars().all() == ["post_1"]


def test_a_writer_held_past_busy_timeout_is_a_conflict_and_the_policy_retries(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "publishing.sqlite")
    with PubDB.open(url) as first, PubDB.open(url, busy_timeout_ms=50) as second:
        with first.transaction() as held:
            new_post(held, "post_1")
            with pytest.raises(ConflictError), second.transaction() as conn:
                new_post(conn, "post_2")
        # The lock is free again: the same work under the retry policy goes through.
        second.run(lambda conn: new_post(conn, "post_2"))
        assert _destinations_of(first, "post_2") == 3


def test_a_transaction_begins_on_first_use_and_a_reader_sees_one_snapshot(db: PubDB) -> None:
    with db.transaction() as conn:
        new_post(conn, "post_1")
    unused, reader = db.begin(write=True), db.begin(write=False)
    assert not unused.begun
    unused.commit()  # never begun: nothing to end, no turn taken in the write queue
    assert reader.cur.execute("SELECT count(*) FROM posts").fetchone() == (1,)
    assert reader.begun
    writer = db.begin(write=True)
    new_post(writer.conn, "post_2")
    writer.cur.execute("UPDATE posts SET text = ? WHERE id = ?", ["edited", "post_1"])
    writer.commit()
    # The reader keeps the view it began with; a new one sees the commit.
    assert reader.cur.execute("SELECT count(*) FROM posts").fetchone() == (1,)
    assert reader.cur.execute("SELECT text FROM posts WHERE id = ?", ["post_1"]).fetchone() == (
        "post post_1",
    )
    reader.rollback()
    again = db.begin(write=False)
    assert again.cur.execute("SELECT count(*) FROM posts").fetchone() == (2,)
    again.commit()
    dropped = db.begin(write=True)
    new_post(dropped.conn, "post_3")
    dropped.rollback()
    with db.snapshot() as conn:
        assert conn.execute(select(posts.c.id).order_by(posts.c.id)).scalars().all() == [
            "post_1",
            "post_2",
        ]


def test_a_database_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailableError):
        PubDB.open(sqlite_url(tmp_path / "missing-dir" / "publishing.sqlite"))
    # A PostgreSQL server that is not there (a free port nothing listens on).
    with pytest.raises(StoreUnavailableError):
        PubDB.open(f"postgresql+psycopg://murmur@127.0.0.1:{free_port()}/murmur")


def test_processes_open_a_new_database_at_once_and_write_without_an_owner(
    profile: Profile,
) -> None:
    all_exit_0_at_once(open_and_write, [(profile.pub_url, worker, 100) for worker in range(3)])
    with PubDB.open(profile.pub_url) as db:
        assert db.revision() == "0007"
        with db.snapshot() as conn:
            assert conn.execute(select(posts.c.id)).scalars().all().__len__() == 300
            assert len(conn.execute(select(post_destinations.c.id)).all()) == 900


def test_a_writer_killed_mid_transaction_loses_nothing_it_acknowledged(profile: Profile) -> None:
    PubDB.open(profile.pub_url).close()
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tests.store.children import write_until_killed;"
            " write_until_killed(sys.argv[1])",
            profile.pub_url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    acknowledged: list[str] = []
    assert writer.stdout is not None
    with PubDB.open(profile.pub_url) as peer:
        try:
            for line in writer.stdout:
                acknowledged.append(line.strip())
                if len(acknowledged) % 50 == 0:
                    # Another process sees an acknowledged write at once, whole.
                    assert _destinations_of(peer, acknowledged[-1]) == 3
                if len(acknowledged) >= 300:
                    break
        finally:
            writer.send_signal(signal.SIGKILL)  # never pauses: killed inside a transaction
            writer.wait(HANG_SECONDS)
    with PubDB.open(profile.pub_url) as reopened, reopened.snapshot() as conn:
        if profile.name == "embedded":
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        stored = set(conn.execute(select(posts.c.id)).scalars())
        destinations = conn.execute(select(post_destinations.c.post_id)).scalars().all()
    assert set(acknowledged) <= stored
    # Each post is whole: its three destinations committed with it, or neither.
    assert sorted(destinations) == sorted(p for p in stored for _ in range(3))


def test_an_analyst_attaches_it_read_only_and_joins_it_in_duckdb(
    db: PubDB, profile: Profile, tmp_path: Path
) -> None:
    with db.transaction() as conn:
        new_post(conn, "post_1", tags=["launch"])
        new_post(conn, "post_2")
    grant_analyst(profile, lake=False)
    con = duckdb.connect()
    attach_publishing(con, profile.analyst_url)
    con.execute("CREATE TABLE impressions AS SELECT 'post_1' AS post_id, 40 AS n")
    joined = con.execute(
        "SELECT p.id, p.created_at, p.tags::JSON ->> '$[0]' AS tag, i.n,"
        " count(*) OVER () AS total"
        " FROM pub.posts p LEFT JOIN impressions i ON i.post_id = p.id ORDER BY p.id"
    ).fetchall()
    assert joined == [("post_1", AT, "launch", 40, 2), ("post_2", AT, None, None, 2)]
    assert ("pub", "posts") in {
        (row[0], row[2]) for row in con.execute("SHOW ALL TABLES").fetchall()
    }
    with pytest.raises(duckdb.Error, match="read-only"):
        con.execute("DELETE FROM pub.posts")
    # The engine under it refuses too, whatever the analyst's own attach options say.
    if profile.name == "embedded":
        raw = sqlite3.connect(f"file:{tmp_path / 'publishing.sqlite'}?mode=ro", uri=True)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            raw.execute("DELETE FROM posts")
        raw.close()
    else:
        writable = duckdb.connect()
        attach_publishing(writable, profile.analyst_url, read_only=False)
        with pytest.raises(duckdb.Error, match="permission denied"):
            writable.execute("DELETE FROM pub.posts")
    assert _destinations_of(db, "post_1") == 3


def _gaps_beside_a_busy_writer(url: str, *, queued: bool) -> list[int]:
    ctx = multiprocessing.get_context("spawn")
    started, stop = ctx.Event(), ctx.Event()
    busy = ctx.Process(
        target=write_back_to_back, args=(url, started, stop), kwargs={"queued": queued}
    )
    busy.start()
    try:
        assert started.wait(HANG_SECONDS)
        seen: list[int] = []
        with PubDB.open(url) as db:
            if not queued:
                db.write_queue = None
            for number in range(40):
                with db.transaction() as conn:
                    new_post(conn, f"mine_{number}")
                    seen.append(
                        len(conn.execute(select(posts.c.id).where(posts.c.id.like("busy_%"))).all())
                    )
    finally:
        stop.set()
        busy.join(HANG_SECONDS)
    return [later - earlier for earlier, later in itertools.pairwise(seen)]


def test_writers_take_turns_beside_one_that_writes_back_to_back(tmp_path: Path) -> None:
    # How many of the busy writer's commits come between two of ours: counts, not times.
    # Without the write queue SQLite's busy handler polls (sleeping up to 100 ms), and
    # whichever writer begins again as soon as it commits keeps the lock: measured, the busy
    # writer got 0 commits in during all 40 of ours, twice out of two.
    gaps = _gaps_beside_a_busy_writer(sqlite_url(tmp_path / "publishing.sqlite"), queued=True)
    assert sum(gaps) >= 5, gaps  # the busy writer gets turns between ours
    assert max(gaps) <= 50, gaps  # and we get ours between its


def test_a_process_keeps_as_many_connections_open_as_it_has_request_threads(
    scale_servers: ScaleServers, tmp_path: Path
) -> None:
    """Store calls on every request thread at once reuse the pool: a second burst opens no
    new PostgreSQL session (SQLAlchemy's default pool of 5 closed the rest after each use)."""
    threads = 12
    settings = scale_servers.settings(tmp_path, request_threads=threads)

    def burst(store: Store) -> set[int]:
        together = threading.Barrier(threads)
        backends: set[int] = set()

        def hold() -> None:
            with store.pub.snapshot() as conn:
                backends.add(int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()))
                together.wait(HANG_SECONDS)

        workers = [threading.Thread(target=hold) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(HANG_SECONDS)
        return backends

    with settings.open_store(prepare_lake=False) as store:
        first = burst(store)
        again = burst(store)
    assert len(first) == threads
    assert again == first
