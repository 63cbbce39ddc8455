"""Copying a DuckDB store's analytics tables into the lake, every row checked.

The store is built with today's schema and rows made from each column's type
(tests/store/old_store.py); the test reads the lake back itself and compares with what it
wrote, not through the copy's own check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.store import old_store
from tests.store.conftest import Profile
from tests.store.old_store import ROWS_PER_TABLE
from tests.support import killed_after
from warehouse.errors import StoreError
from warehouse.extensions import connect
from warehouse.lake import Lake
from warehouse.lake.copy import copy_analytics_tables, lake_tables

# The analytics tables of the DuckDB store, with the keys it enforced.
KEYS = {
    "ingest_batches": ["id"],
    "raw_posts": [],
    "raw_engagement_snapshots": [],
    "raw_account_snapshots": [],
    "stg_engagement_deltas": [],
    "dim_posts": ["workspace_id", "platform", "external_id"],
    "dim_accounts": ["workspace_id", "platform", "external_id"],
    "mart_account_daily": [],
    "mart_anomalies": [],
    "mart_best_times": [],
    "mart_creator_rankings": [],
    "mart_insights": [],
    "mart_post_daily": [],
    "mart_post_first_seen": [],
    "mart_post_hourly": [],
    "mart_snapshots": ["mart", "partition_key"],
    "mart_viral_trends": [],
}
# Tables the lake has added since the DuckDB store: nothing to copy (0008: breakouts), or
# made from the rows copied (0009: staging's summary of each post's days).
ADDED_TABLES = ("mart_breakouts", "stg_post_days")
# Columns the lake has added since the DuckDB store (0003_labels.sql; 0005: best times are
# rows of posts): a copy leaves them NULL.
ADDED = {
    "ingest_batches": ("origin",),
    "raw_posts": ("thumbnail_url",),
    "dim_posts": ("thumbnail_url",),
    "raw_account_snapshots": ("url", "thumbnail_url"),
    "dim_accounts": ("url", "thumbnail_url"),
    "mart_best_times": (
        "kind",
        "external_id",
        "published_at",
        "engagement_rate",
        "rate_index",
        "dates_only",
    ),
}
# Columns made nullable since (0007: an unmeasured rate has no estimate).
RELAXED = {"mart_creator_rankings": ("engagement_rate_shrunk",)}
# Columns the lake dropped since (0004: posts are counted from dim_posts when read; 0005: the
# best-times cells are computed when read, in the zone asked).
DROPPED = {
    "mart_account_daily": ("posts_published",),
    "mart_best_times": (
        "weekday",
        "hour",
        "posts",
        "raw_index",
        "shrunk_index",
        "ci_low",
        "ci_high",
        "confidence",
    ),
}


def as_copied(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An old store's rows as the lake holds them once copied: dropped columns left out."""
    dropped = DROPPED.get(table, ())
    return sorted(({k: v for k, v in row.items() if k not in dropped} for row in rows), key=repr)


def _lake(data_dir: Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    con = connect()
    Lake.under(data_dir).attach(con, read_only=read_only)
    return con


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    """The table's rows in the DuckDB store's columns (the lake's later ones NULL), sorted."""
    json_columns = {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_catalog = 'lake' AND table_name = ? AND data_type = 'JSON'",
            [table],
        ).fetchall()
    }
    cur = con.execute(f"SELECT * FROM lake.{table}")  # noqa: S608 - the test's own names
    names = [d[0] for d in cur.description or []]
    found = [dict(zip(names, values, strict=True)) for values in cur.fetchall()]
    for row in found:
        for name in json_columns:
            if row[name] is not None:
                row[name] = json.loads(row[name])
        for name in ADDED.get(table, ()):
            assert row.pop(name) is None, (table, name)
    return sorted(found, key=repr)


def test_every_row_of_every_analytics_table_arrives_as_written(
    profile: Profile, tmp_path: Path
) -> None:
    written = old_store.build_old_store(tmp_path / "murmur.duckdb", KEYS)
    con = connect()
    profile.lake.attach(con)
    # the DuckDB store's tables, and those the lake added since (empty after a copy)
    assert sorted(lake_tables(con)) == sorted([*KEYS, *ADDED_TABLES])
    counts = copy_analytics_tables(con, tmp_path / "murmur.duckdb")
    assert counts == dict.fromkeys(KEYS, ROWS_PER_TABLE)
    reader = connect()
    profile.lake.attach(reader, read_only=True)
    for table, rows in written.items():
        assert _rows(reader, table) == as_copied(table, rows), table
    # one summary row per post and UTC day it was read
    days = reader.execute(
        "SELECT count(*) FROM (SELECT DISTINCT workspace_id, platform, external_id,"
        " CAST(captured_at AS DATE) FROM lake.raw_engagement_snapshots)"
    ).fetchone()
    assert reader.execute("SELECT count(*) FROM lake.stg_post_days").fetchone() == days
    assert days is not None
    assert days[0] > 0


def test_a_second_copy_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    old_store.build_old_store(tmp_path / "murmur.duckdb", KEYS)
    con = _lake(tmp_path / "data")
    copy_analytics_tables(con, tmp_path / "murmur.duckdb")
    before = {table: _rows(con, table) for table in KEYS}
    with pytest.raises(StoreError, match="already holds rows"):
        copy_analytics_tables(con, tmp_path / "murmur.duckdb")
    assert {table: _rows(con, table) for table in KEYS} == before


def copy_until_killed(store: str, data_dir: str) -> None:
    """A process of its own: copy, announcing each table before it is copied."""
    con = _lake(Path(data_dir))
    copy_analytics_tables(con, Path(store), on_table=lambda name: print(name, flush=True))


def test_a_copy_killed_half_way_leaves_the_lake_empty_and_runs_again(tmp_path: Path) -> None:
    old_store.build_old_store(tmp_path / "murmur.duckdb", KEYS)
    _lake(tmp_path / "data").close()
    # Killed with half of the tables inserted inside the transaction.
    started = killed_after(
        "tests.store.test_lake_copy",
        "copy_until_killed",
        [str(tmp_path / "murmur.duckdb"), str(tmp_path / "data")],
        9,
    )
    assert len(set(started)) == 9
    con = _lake(tmp_path / "data")
    assert {table: _rows(con, table) for table in KEYS} == {table: [] for table in KEYS}
    assert copy_analytics_tables(con, tmp_path / "murmur.duckdb") == dict.fromkeys(
        KEYS, ROWS_PER_TABLE
    )
