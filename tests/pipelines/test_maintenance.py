"""The lake's upkeep job: small files merged, old snapshots and their files gone, rows the same."""

from __future__ import annotations

from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from pipelines.analytics.maintenance import lake_maintenance
from pipelines.definitions import resources
from tests.servers import StoreSettings
from tests.support import analyst_rows
from warehouse.cursor import StoreCursor
from warehouse.store import Lakehouse

COMMITS = 24
ROWS = 200
INSERT = (
    "INSERT INTO raw_engagement_snapshots"
    " SELECT 'ws', 'x', 'p' || range, ?, range, NULL, NULL, ?, 0, 0, NULL, NULL, 'test', ?, ?"
    " FROM range(?)"
)
TABLE = "raw_engagement_snapshots"


def _insert(n: int, cur: StoreCursor) -> None:
    at = datetime(2026, 1, 1, n)
    cur.execute(INSERT, [at, n, f"b{n}", at, ROWS])


def _rows(lake: Lakehouse) -> list[tuple[Any, ...]]:
    with lake.cursor() as cur:
        return cur.execute(f"SELECT * FROM {TABLE} ORDER BY ALL").fetchall()  # noqa: S608


def _files(lake: Lakehouse) -> list[str]:
    """The Parquet files the latest snapshot reads for the table."""
    with lake.cursor() as cur:
        found = cur.execute(
            "SELECT data_file FROM ducklake_list_files('lake', ?)", [TABLE]
        ).fetchall()
    return [row[0] for row in found]


def _upkeep(settings: Settings) -> dict[str, list[int]]:
    result = lake_maintenance.execute_in_process(
        resources=resources(settings),
        run_config={"ops": {"maintain_lake": {"config": {"keep_hours": 0}}}},
    )
    assert result.success
    counts: dict[str, list[int]] = result.output_for_node("maintain_lake")
    return counts


def test_upkeep_merges_small_files_and_removes_old_ones_keeping_every_row(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    settings = store_settings(tmp_path / "data")
    with settings.open_lakehouse() as lake:
        for n in range(COMMITS):  # an hourly writer's trail: one small file per commit
            lake.run(partial(_insert, n))
        # A later run replaces half a batch: a delete file, and a snapshot its rows were in.
        lake.run(
            lambda cur: cur.execute(
                f"DELETE FROM {TABLE} WHERE ingest_batch = 'b0' AND impressions % 2 = 0"  # noqa: S608
            )
        )
        before = _rows(lake)
        assert len(_files(lake)) == COMMITS

    counts = _upkeep(settings)

    with settings.open_lakehouse() as lake:
        assert _rows(lake) == before
        files = _files(lake)
        assert len(files) < COMMITS
        # Only the latest snapshot is left (history kept: none), and no file it does not read.
        assert counts["snapshots"][1] == 1
        assert counts["stored_files"][0] > counts["stored_files"][1] == counts["live_files"][1]
        with lake.cursor() as cur:
            codecs = cur.execute(
                "SELECT DISTINCT compression FROM parquet_metadata(?)", [files]
            ).fetchall()
        assert codecs == [("ZSTD",)]  # the lake's codec (lake migration 0002)
    # Nothing left to do: a second pass changes nothing.
    again = _upkeep(settings)
    assert again == {name: [after, after] for name, (_, after) in counts.items()}


def test_an_analysts_read_only_merge_leaves_an_orphan_the_upkeep_removes(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    """A READ_ONLY attach refuses DuckLake's commit, not the Parquet file written before it
    (DuckDB 1.5.5): the orphan is the upkeep's to remove, and no reader ever sees it."""
    settings = store_settings(tmp_path / "data")
    with settings.open_lakehouse() as lake:
        for n in range(3):
            lake.run(partial(_insert, n))
        rows = _rows(lake)
    stored = _stored(settings)
    with pytest.raises(RuntimeError, match=r"Failed to commit|read-only transaction"):
        analyst_rows(settings, "CALL ducklake_merge_adjacent_files('lake')")
    orphans = _stored(settings) - stored
    if settings.lake.local_data is not None:  # on S3 the file is the bucket's to list
        assert orphans, "the refused merge wrote no file"
    with settings.open_lakehouse() as lake:
        assert _rows(lake) == rows
        assert not {Path(f).name for f in _files(lake)} & {Path(o).name for o in orphans}
    _upkeep(settings)
    assert not _stored(settings) & orphans
    with settings.open_lakehouse() as lake:
        assert _rows(lake) == rows


def _stored(settings: Settings) -> set[str]:
    """The Parquet files in the lake's folder, whatever names them."""
    folder = settings.lake.local_data
    return {str(p) for p in folder.rglob("*.parquet")} if folder is not None else set()
