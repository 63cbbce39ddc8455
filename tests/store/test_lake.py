"""The analytics lake (ADR 0002, step 3): DuckLake with a SQLite catalog, attached by each process.

Real files in a temporary directory and real processes: the lake's tables are the DuckDB
store's analytics tables column for column; processes attach a new lake at once and migrate
it once; parallel runs rewrite their own days of one mart, each day whole afterwards; a run
killed with SIGKILL leaves every day whole; an analyst's DuckDB session joins the
publishing database's ``posts`` with the lake's ``mart_post_daily``, read-only on both sides.
"""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
from datetime import date, datetime, timedelta
from multiprocessing.synchronize import Barrier
from pathlib import Path

import duckdb
import pytest

from tests.support import HANG_SECONDS
from warehouse.errors import StoreError
from warehouse.lake import Lake, attach_publishing, run
from warehouse.migrations import migrate
from warehouse.pubdb.engine import PubDB, sqlite_url
from warehouse.pubdb.schema import posts

ANALYTICS_PREFIXES = ("raw_", "stg_", "dim_", "mart_", "unified_")
DAY_ROWS = 2_000
FIRST_DAY = date(2026, 11, 1)


def _attached(data_dir: Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    Lake.under(data_dir).attach(con, read_only=read_only)
    return con


def _columns(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, list[tuple[str, ...]]]:
    found: dict[str, list[tuple[str, ...]]] = {}
    for table, column, data_type, nullable in con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_catalog = ? ORDER BY table_name, ordinal_position",
        [database],
    ).fetchall():
        found.setdefault(table, []).append((column, data_type, nullable))
    return found


def rewrite_days(data_dir: str, days: list[date], *, announce: bool = False) -> None:
    """A run of its own: replace each day of ``mart_post_daily`` with DAY_ROWS rows of that day."""
    con = _attached(Path(data_dir))
    for number, day in enumerate(days):

        def replace(c: duckdb.DuckDBPyConnection, day: date = day, n: int = number) -> None:
            c.execute("DELETE FROM lake.mart_post_daily WHERE day = ?", [day])
            c.execute(
                "INSERT INTO lake.mart_post_daily SELECT 'ws_1', ?::DATE, 'x', 'acc_1', NULL,"
                " 'ext_' || i, 'post_' || i, 'own', i + ?, i, i, i, i, i, i, i, i, 0.5"
                " FROM range(?) t(i)",
                [day, n, DAY_ROWS],
            )

        run(con, replace)
        if announce:
            print(day.isoformat(), flush=True)


def _days(con: duckdb.DuckDBPyConnection) -> dict[date, int]:
    return dict(
        con.execute("SELECT day, count(*) FROM lake.mart_post_daily GROUP BY day").fetchall()
    )


def test_the_lake_holds_the_duckdb_stores_analytics_tables_column_for_column(
    tmp_path: Path,
) -> None:
    con = _attached(tmp_path)
    store = duckdb.connect()
    migrate(store)
    in_store = {
        name: columns
        for name, columns in _columns(store, "memory").items()
        if name.startswith(ANALYTICS_PREFIXES) or name == "ingest_batches"
    }
    in_lake = _columns(con, "lake")
    assert len(in_store) == 17 + 2  # and the two analyst views
    assert {name: in_lake.get(name) for name in in_store} == in_store


def attach_new_lake(data_dir: str, barrier: Barrier) -> None:
    """A process of its own: attach (and so create and migrate) a lake at the same moment."""
    barrier.wait(HANG_SECONDS)
    _attached(Path(data_dir)).close()


def test_processes_attaching_a_new_lake_at_once_migrate_it_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3)
    runs = [ctx.Process(target=attach_new_lake, args=(str(tmp_path), barrier)) for _ in range(3)]
    for process in runs:
        process.start()
    for process in runs:
        process.join(HANG_SECONDS)
    assert [process.exitcode for process in runs] == [0, 0, 0]
    con = _attached(tmp_path)
    assert con.execute("SELECT version, name FROM lake.schema_migrations").fetchall() == [
        (1, "analytics")
    ]


def test_parallel_runs_rewriting_their_own_days_leave_every_day_whole(tmp_path: Path) -> None:
    _attached(tmp_path).close()
    days = [FIRST_DAY + timedelta(days=n) for n in range(6)]
    ctx = multiprocessing.get_context("spawn")
    # Each run rewrites its two days twice: the second pass deletes rows a commit made.
    runs = [
        ctx.Process(target=rewrite_days, args=(str(tmp_path), days[k::3] * 2)) for k in range(3)
    ]
    for process in runs:
        process.start()
    for process in runs:
        process.join(HANG_SECONDS)
    assert [process.exitcode for process in runs] == [0, 0, 0]
    con = _attached(tmp_path, read_only=True)
    assert _days(con) == dict.fromkeys(days, DAY_ROWS)
    # The rows are the last pass's (n = 2 or 3 for the second pass), none twice.
    assert con.execute(
        "SELECT count(DISTINCT (day, external_id)), min(impressions - reach)"
        " FROM lake.mart_post_daily"
    ).fetchone() == (6 * DAY_ROWS, 2)


def test_a_run_killed_mid_rewrite_leaves_every_day_whole(tmp_path: Path) -> None:
    _attached(tmp_path).close()
    days = [FIRST_DAY + timedelta(days=n % 4) for n in range(400)]
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, json; from datetime import date;"
            " from tests.store.test_lake import rewrite_days;"
            " rewrite_days(sys.argv[1], [date.fromisoformat(d) for d in json.loads(sys.argv[2])],"
            " announce=True)",
            str(tmp_path),
            "[" + ", ".join(f'"{day.isoformat()}"' for day in days) + "]",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    committed = [writer.stdout.readline().strip() for _ in range(6)]
    writer.send_signal(signal.SIGKILL)  # it never pauses: killed inside a rewrite
    writer.wait(HANG_SECONDS)
    assert len(committed) == 6
    con = _attached(tmp_path)
    assert _days(con) == dict.fromkeys(days[:4], DAY_ROWS)
    # And the lake takes writes again at once.
    rewrite_days(str(tmp_path), [FIRST_DAY])
    assert _days(con)[FIRST_DAY] == DAY_ROWS


def test_an_analyst_joins_posts_with_the_mart_read_only_on_both_sides(tmp_path: Path) -> None:
    with PubDB.open(sqlite_url(tmp_path / "publishing.sqlite")) as db, db.transaction() as conn:
        conn.execute(
            posts.insert(),
            [
                {
                    "id": f"post_{i}",
                    "workspace_id": "ws_1",
                    "text": f"post {i}",
                    "status": "published",
                    "tags": [],
                    "media_ids": [],
                    "created_at": datetime(2026, 11, 1),
                    "updated_at": datetime(2026, 11, 1),
                }
                for i in range(3)
            ],
        )
    _attached(tmp_path).close()
    rewrite_days(str(tmp_path), [FIRST_DAY, FIRST_DAY + timedelta(days=1)])

    analyst = duckdb.connect()
    attach_publishing(analyst, tmp_path / "publishing.sqlite")
    Lake.under(tmp_path).attach(analyst, read_only=True)
    joined = analyst.execute(
        "SELECT p.id, m.day, m.impressions,"
        " sum(m.impressions) OVER (PARTITION BY p.id ORDER BY m.day) AS running_impressions"
        " FROM pub.posts p JOIN lake.mart_post_daily m ON m.post_id = p.id"
        " ORDER BY p.id, m.day"
    ).fetchall()
    assert joined == [
        ("post_0", FIRST_DAY, 0, 0),
        ("post_0", FIRST_DAY + timedelta(days=1), 1, 1),
        ("post_1", FIRST_DAY, 1, 1),
        ("post_1", FIRST_DAY + timedelta(days=1), 2, 3),
        ("post_2", FIRST_DAY, 2, 2),
        ("post_2", FIRST_DAY + timedelta(days=1), 3, 5),
    ]
    tables = {(row[0], row[2]) for row in analyst.execute("SHOW ALL TABLES").fetchall()}
    assert {("pub", "posts"), ("lake", "mart_post_daily")} <= tables
    with pytest.raises(duckdb.Error, match="read-only"):
        analyst.execute("DELETE FROM lake.mart_post_daily")
    with pytest.raises(duckdb.Error, match="read-only"):
        analyst.execute("DELETE FROM pub.posts")
    assert _days(_attached(tmp_path, read_only=True))[FIRST_DAY] == DAY_ROWS


def test_a_lake_that_cannot_be_attached_is_a_store_error(tmp_path: Path) -> None:
    lake = Lake(catalog=tmp_path / "missing" / "lake.sqlite", data=tmp_path / "lake")
    with pytest.raises(StoreError):
        lake.attach(duckdb.connect(), read_only=True)
