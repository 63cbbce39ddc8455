"""The analytics lake (ADR 0002, steps 3 and 7): DuckLake, attached by each process.

On both profiles (tests/store/conftest.py: a SQLite catalog with local Parquet; a PostgreSQL
catalog with Parquet on S3) and with real processes: processes attach a new lake at once and
migrate it once; parallel runs rewrite their own days of one mart, each day whole afterwards;
a run killed with SIGKILL leaves every day whole; an analyst's DuckDB session joins the
publishing database's ``posts`` with the lake's ``mart_post_daily``, read-only on both sides.
The lake's tables are the DuckDB store's analytics tables column for column, then the columns
it has added since.
"""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.servers import s3_keys
from tests.store.children import (
    DAY_ROWS,
    attach_new_lake,
    attached,
    lake_as_json,
    rewrite_days,
)
from tests.store.conftest import Profile, grant_analyst
from tests.store.old_schema import migrate
from tests.store.test_lake_copy import ADDED, DROPPED, RELAXED
from tests.support import HANG_SECONDS, all_exit_0_at_once
from warehouse.errors import StoreError
from warehouse.lake import Lake, attach_publishing
from warehouse.pubdb.engine import PubDB
from warehouse.pubdb.schema import posts

ANALYTICS_PREFIXES = ("raw_", "stg_", "dim_", "mart_", "unified_")
FIRST_DAY = date(2026, 11, 1)


def _columns(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, list[tuple[str, ...]]]:
    found: dict[str, list[tuple[str, ...]]] = {}
    for table, column, data_type, nullable in con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_catalog = ? ORDER BY table_name, ordinal_position",
        [database],
    ).fetchall():
        found.setdefault(table, []).append((column, data_type, nullable))
    return found


def _days(con: duckdb.DuckDBPyConnection) -> dict[date, int]:
    return dict(
        con.execute("SELECT day, count(*) FROM lake.mart_post_daily GROUP BY day").fetchall()
    )


def test_the_lake_holds_the_duckdb_stores_analytics_tables_column_for_column(
    tmp_path: Path,
) -> None:
    con = attached(Lake.under(tmp_path))
    store = duckdb.connect()
    migrate(store)
    # less the columns the lake dropped since (figures now computed when read)
    in_store = {
        name: [
            (c[0], c[1], "YES") if c[0] in RELAXED.get(name, ()) else c
            for c in columns
            if c[0] not in DROPPED.get(name, ())
        ]
        for name, columns in _columns(store, "memory").items()
        if name.startswith(ANALYTICS_PREFIXES) or name == "ingest_batches"
    }
    in_lake = _columns(con, "lake")
    assert len(in_store) == 17 + 2  # and the two analyst views
    # The lake's later columns follow the store's, so that a copy by name leaves them NULL.
    added = {
        name: [c for c in in_lake.get(name, []) if c[0] in ADDED.get(name, ())] for name in in_store
    }
    assert {name: in_lake.get(name) for name in in_store} == {
        name: columns + added[name] for name, columns in in_store.items()
    }
    assert {name: [c[0] for c in found] for name, found in added.items() if found} == {
        name: list(columns) for name, columns in ADDED.items()
    }
    # each nullable: a copy of an older store leaves it NULL
    assert {c[2] for found in added.values() for c in found} == {"YES"}


def test_processes_attaching_a_new_lake_at_once_migrate_it_once(profile: Profile) -> None:
    all_exit_0_at_once(attach_new_lake, [(profile.lake,)] * 3)
    con = attached(profile.lake)
    assert con.execute(
        "SELECT version, name FROM lake.schema_migrations ORDER BY version"
    ).fetchall() == [
        (1, "analytics"),
        (2, "zstd"),
        (3, "labels"),
        (4, "posts_counted_at_read"),
        (5, "best_time_posts"),
        (6, "batch_origin"),
        (7, "unmeasured_estimate_null"),
        (8, "breakouts"),
        (9, "post_days"),
    ]


def test_parallel_runs_rewriting_their_own_days_leave_every_day_whole(profile: Profile) -> None:
    attached(profile.lake).close()
    days = [FIRST_DAY + timedelta(days=n) for n in range(6)]
    ctx = multiprocessing.get_context("spawn")
    # Each run rewrites its two days twice: the second pass deletes rows a commit made.
    runs = [ctx.Process(target=rewrite_days, args=(profile.lake, days[k::3] * 2)) for k in range(3)]
    for process in runs:
        process.start()
    for process in runs:
        process.join(HANG_SECONDS)
    assert [process.exitcode for process in runs] == [0, 0, 0]
    con = attached(profile.lake, read_only=True)
    assert _days(con) == dict.fromkeys(days, DAY_ROWS)
    if profile.lake.s3 is not None:  # the rows went to object storage, not the catalog
        bucket = profile.lake.data.removeprefix("s3://").split("/", 1)[0]
        keys = s3_keys(profile.lake.s3.endpoint, bucket)
        assert sum(key.endswith(".parquet") for key in keys) >= 6
    # The rows are the last pass's (n = 2 or 3 for the second pass), none twice.
    assert con.execute(
        "SELECT count(DISTINCT (day, external_id)), min(impressions - reach)"
        " FROM lake.mart_post_daily"
    ).fetchone() == (6 * DAY_ROWS, 2)


def test_a_run_killed_mid_rewrite_leaves_every_day_whole(profile: Profile) -> None:
    attached(profile.lake).close()
    days = [FIRST_DAY + timedelta(days=n % 4) for n in range(400)]
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, json; from datetime import date;"
            " from tests.store.children import lake_from_json, rewrite_days;"
            " rewrite_days(lake_from_json(sys.argv[1]),"
            " [date.fromisoformat(d) for d in json.loads(sys.argv[2])], announce=True)",
            lake_as_json(profile.lake),
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
    con = attached(profile.lake)
    assert _days(con) == dict.fromkeys(days[:4], DAY_ROWS)
    # And the lake takes writes again at once.
    rewrite_days(profile.lake, [FIRST_DAY])
    assert _days(con)[FIRST_DAY] == DAY_ROWS


def test_an_analyst_joins_posts_with_the_mart_read_only_on_both_sides(profile: Profile) -> None:
    with PubDB.open(profile.pub_url) as db, db.transaction() as conn:
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
    rewrite_days(profile.lake, [FIRST_DAY, FIRST_DAY + timedelta(days=1)])
    grant_analyst(profile)

    analyst = duckdb.connect()
    attach_publishing(analyst, profile.analyst_url)
    profile.analyst_lake.attach(analyst, read_only=True)
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
    assert _days(attached(profile.lake, read_only=True))[FIRST_DAY] == DAY_ROWS


def test_a_lake_that_cannot_be_attached_is_a_store_error(tmp_path: Path) -> None:
    lake = Lake(f"sqlite:{tmp_path / 'missing' / 'lake.sqlite'}", f"{tmp_path / 'lake'}/")
    with pytest.raises(StoreError):
        lake.attach(duckdb.connect(), read_only=True)
