"""The store on its own: both halves opened and migrated, retries, atomic scripts, the signal."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from core.settings import Settings
from tests.store.old_schema import available, migrate
from tests.support import corrupt_lake_catalog
from warehouse.cursor import Cursor, StoreCursor
from warehouse.errors import StoreError, StoreUnavailableError
from warehouse.lake.copy import lake_tables
from warehouse.pubdb.engine import PubDB
from warehouse.store import Lakehouse, Store


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data")


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    with settings.open_store() as opened:
        yield opened


def test_the_old_stores_migrations_are_versioned_and_idempotent(tmp_path: Path) -> None:
    """The old schema (ADR 0001's store, tests/store/old_schema) builds, each version once."""
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    try:
        shipped = available()
        versions = [m.version for m in shipped]
        assert versions == sorted(set(versions))
        assert migrate(con) == versions
        assert migrate(con) == []
    finally:
        con.close()


def test_opening_the_store_creates_and_migrates_both_halves_in_the_data_dir(
    settings: Settings,
) -> None:
    settings.open_store().close()
    with settings.open_store() as store:
        assert store.pub.revision() is not None
        with store.analytics() as cur:
            tables = lake_tables(cur.raw, alias="lake")  # type: ignore[arg-type]
    assert {"mart_post_daily", "raw_engagement_snapshots", "mart_snapshots"} <= set(tables)
    names = {path.name for path in settings.data_dir.iterdir()}
    assert {"publishing.sqlite", "lake.sqlite", "lake"} <= names
    assert "murmur.duckdb" not in names


def test_a_data_directory_copied_elsewhere_opens_and_writes_its_own_files(
    settings: Settings, tmp_path: Path
) -> None:
    """A backup restored at another path: the lake's catalog still names the first one."""
    rows = "INSERT INTO copied SELECT range FROM range(?)"
    with settings.open_lakehouse() as lake:
        lake.execute_script("CREATE TABLE copied (i INTEGER NOT NULL);")
        lake.run(lambda cur: cur.execute(rows, [3000]))
    moved = Settings(data_dir=tmp_path / "restored")
    shutil.copytree(settings.data_dir, moved.data_dir)
    shutil.rmtree(settings.data_dir)  # the first folder is gone: nothing may read from it
    with moved.open_lakehouse() as lake:
        lake.run(lambda cur: cur.execute(rows, [3000]))
        with lake.cursor() as cur:
            assert cur.execute("SELECT count(*) FROM copied").fetchone() == (6000,)
            files = cur.execute("SELECT data_file FROM ducklake_list_files('lake', 'copied')")
            assert all(f.startswith(f"{moved.data_dir.resolve()}/") for (f,) in files.fetchall())


def test_a_store_of_an_earlier_murmur_is_refused_until_migrated(settings: Settings) -> None:
    settings.ensure_dirs()
    duckdb.connect(str(settings.old_store_path)).close()
    with pytest.raises(StoreUnavailableError, match="murmur migrate"):
        settings.open_store()


def test_run_retries_a_writer_held_past_the_busy_timeout(tmp_path: Path) -> None:
    url = Settings(data_dir=tmp_path).pub_url
    with PubDB.open(url) as holder, PubDB.open(url, busy_timeout_ms=200) as waiter:
        waiter.run(lambda conn: conn.exec_driver_sql("CREATE TABLE t (i INTEGER)"))
        held = holder.begin(write=True)
        held.cur.execute("INSERT INTO t VALUES (1)")
        released = threading.Timer(0.5, held.commit)
        released.start()
        # Refused at least once while the lock is held, then it goes through.
        waiter.run(lambda conn: conn.exec_driver_sql("INSERT INTO t VALUES (2)"))
        released.join()
        with waiter.snapshot() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 2


def test_a_lake_script_is_atomic(store: Store) -> None:
    with Lakehouse(store) as lake:
        lake.execute_script("CREATE TABLE t (i INTEGER); INSERT INTO t VALUES (1);")
        with pytest.raises(StoreError):
            lake.execute_script(
                "INSERT INTO t VALUES (2); CREATE TABLE u (i INTEGER); INSERT INTO t VALUES ('x');"
            )

        def count(cur: StoreCursor) -> int:
            found = cur.execute("SELECT count(*) FROM t").fetchone()
            return int(found[0]) if found else -1

        assert lake.run(count) == 1
        assert "u" not in lake.run(lambda cur: lake_tables(cur.raw))  # type: ignore[arg-type]
        lake.execute_script("INSERT INTO t VALUES (3);")  # the session is usable again
        assert lake.run(count) == 2


def test_a_pipeline_session_joins_the_accounts_of_the_publishing_database(store: Store) -> None:
    from warehouse import workspaces as ws_repo

    def account(cur: Cursor) -> str:
        org = ws_repo.create_organization(cur, "Lake")
        ws = ws_repo.create_workspace(cur, org, "Lake")
        return ws_repo.insert_account(cur, ws, "x", "lake", "Lake", "x-lake")

    first = store.run(account)
    with Lakehouse(store) as lake:
        second = store.run(account)
        seen = lake.run(lambda cur: cur.execute("SELECT id FROM pub.accounts").fetchall())
        assert seen == [(first,)]
        lake.refresh_publishing()
        seen = lake.run(
            lambda cur: cur.execute("SELECT id FROM pub.accounts ORDER BY id").fetchall()
        )
        assert seen == sorted([(first,), (second,)])


def test_every_committed_write_replaces_the_change_token(settings: Settings) -> None:
    with settings.open_store() as one, settings.open_store() as other:
        # Every process's handle reads one token file in the data directory.
        assert one.changes.path == other.changes.path
        before = one.changes.token()
        assert other.changes.token() == before
        other.run(lambda cur: cur.execute("CREATE TABLE signal_probe (i INTEGER)"))
        after_run = one.changes.token()
        assert after_run != before
        with Lakehouse(other) as lake:
            lake.execute_script("CREATE TABLE lake_probe (i INTEGER);")
        after_script = one.changes.token()
        assert after_script != after_run
        with one.transaction() as cur:
            cur.execute("INSERT INTO signal_probe VALUES (2)")
        assert other.changes.token() != after_script


def test_a_request_transaction_signals_only_when_it_wrote(store: Store) -> None:
    store.run(lambda cur: cur.execute("CREATE TABLE probe (i INTEGER)"))
    start = store.changes.token()
    reader = store.begin(write=False)
    assert reader.token == start
    assert not reader.begun  # nothing touched the store yet
    assert reader.cur.execute("SELECT count(*) FROM probe").fetchone() == (0,)
    reader.commit(wrote=False)
    assert store.changes.token() == start
    keys = store.changes.keys_token()
    writer = store.begin(write=True)
    writer.cur.execute("INSERT INTO probe VALUES (1)")
    writer.commit(wrote=True)
    assert store.changes.token() != start
    # An API request never writes api_keys: resolved keys stay valid across its commit...
    assert store.changes.keys_token() == keys
    # ...and not across any other write (a revocation through the CLI is one).
    store.run(lambda cur: cur.execute("INSERT INTO probe VALUES (2)"))
    assert store.changes.keys_token() != keys
    assert store.read(lambda cur: cur.execute("SELECT count(*) FROM probe").fetchone()) == (2,)


def test_at_scale_no_cache_is_vouched_for(tmp_path: Path) -> None:
    """Writers on other machines never touch this machine's token file: no token repeats."""
    from warehouse.changes import ChangeSignal

    signal = ChangeSignal(tmp_path / "changes", sees_every_writer=False)
    assert signal.token() != signal.token()
    assert signal.keys_token() != signal.keys_token()


def test_a_pipeline_session_spills_into_the_data_directory_past_its_memory_limit(
    tmp_path: Path,
) -> None:
    """Past ``pipeline_memory_limit`` a build spills into DATA_DIR/tmp, not the machine's RAM."""
    settings = Settings(data_dir=tmp_path / "data", pipeline_memory_limit="64MiB")
    with settings.open_lakehouse() as lake, lake.cursor() as con:
        limit, spill = con.execute(
            "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
        ).fetchone() or ("", "")
        assert (limit, Path(spill)) == ("64.0 MiB", settings.data_dir / "tmp")
        # ~150 MB of rows held by the session: more than its limit, so on disk.
        con.execute(
            "CREATE TEMP TABLE big AS SELECT range AS i, md5(range::VARCHAR) AS h"
            " FROM range(3000000)"
        )
        spilled = con.execute("SELECT path, size FROM duckdb_temporary_files()").fetchall()
        assert spilled, "nothing spilled"
        assert all(Path(path).parent == settings.data_dir / "tmp" for path, _ in spilled)
        assert sum(size for _, size in spilled) > 32 * 1024**2
        assert con.execute("SELECT count(DISTINCT h) FROM big").fetchone() == (3_000_000,)


def test_every_lake_session_takes_the_duckdb_threads_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MURMUR_DUCKDB_THREADS reaches the pipeline's session and the API's lake reads; unset,
    DuckDB keeps its own default (one thread a core)."""

    def threads(settings: Settings) -> tuple[object, object]:
        with settings.open_lakehouse() as lake, lake.cursor() as con:
            pipeline = con.execute("SELECT current_setting('threads')").fetchone()
        with settings.open_store() as store, store.analytics() as cur:
            api = cur.execute("SELECT current_setting('threads')").fetchone()
        return pipeline, api

    monkeypatch.delenv("MURMUR_DUCKDB_THREADS", raising=False)
    bare = duckdb.connect()
    own = bare.execute("SELECT current_setting('threads')").fetchone()
    bare.close()
    assert threads(Settings(data_dir=tmp_path / "default")) == (own, own)
    monkeypatch.setenv("MURMUR_DUCKDB_THREADS", "1")
    one = Settings(data_dir=tmp_path / "one")
    assert one.duckdb_threads == 1
    assert threads(one) == ((1,), (1,))
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings(duckdb_threads=0)


def test_a_lake_read_through_a_damaged_catalog_raises_the_stores_error(tmp_path: Path) -> None:
    """Not a NameError: the read's DuckDB error is translated (it once named an unimported
    module there). One thread: DuckDB's two read past the damaged page on this catalog."""
    settings = Settings(data_dir=tmp_path / "data", duckdb_threads=1)
    with settings.open_store():
        pass
    corrupt_lake_catalog(settings)
    with (
        settings.open_store(prepare_lake=False) as store,
        pytest.raises(StoreError, match="malformed"),
        store.analytics(),
    ):
        pass


def test_the_pipelines_memory_limit_is_a_size() -> None:
    assert Settings(pipeline_memory_limit=" 8GiB ").pipeline_memory_limit == "8GiB"
    with pytest.raises(ValueError, match="a size such as 8GiB"):
        Settings(pipeline_memory_limit="lots")
    # By default half the machine's memory, at most 6 GiB.
    default = Settings().pipeline_memory_limit
    assert default.endswith("MiB")
    assert 256 <= int(default.removesuffix("MiB")) <= 6 * 1024
