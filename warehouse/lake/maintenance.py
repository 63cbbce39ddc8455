"""The lake's upkeep: small files merged, old snapshots expired, unreferenced files deleted.

DuckLake writes a Parquet file per commit and never deletes one by itself (old snapshots keep
them readable), so a lake written every hour by day rewrites grows files without bound. This
is DuckLake's recommended maintenance, run step by step with a retention of our choosing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from warehouse.lake import Lake, run
from warehouse.sql import literal

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class Upkeep:
    """The lake before and after one maintenance pass."""

    live_files: tuple[int, int]  # data and delete files the latest snapshot reads
    snapshots: tuple[int, int]
    stored_files: tuple[int, int]  # Parquet files in the data path, referenced or not


def maintain(
    con: duckdb.DuckDBPyConnection, lake: Lake, *, keep: timedelta, alias: str = "lake"
) -> Upkeep:
    """Flush the rows inlined in the catalog to Parquet, merge adjacent small files and
    rewrite mostly deleted ones, then expire the snapshots older than ``keep`` and delete the
    files no kept snapshot references.

    ``keep`` bounds time travel and must outlast the longest read or write transaction: a
    reader's snapshot older than it may lose its files, and a writer's files not yet
    committed count as orphans once they are older than it.
    """
    before = _counts(con, lake.data, alias)
    name = literal(alias)
    for statement, aged in (
        # Rows inlined in the catalog written to Parquet first, as DuckLake's own CHECKPOINT
        # does: a rewrite with inlined rows of a table under two schema versions (a column
        # added by a migration) fails at commit, 'Referenced column "url" not found' (DuckDB
        # 1.5.5), and every run that rewrites a day leaves such rows.
        (f"CALL ducklake_flush_inlined_data({name})", False),
        (f"CALL ducklake_merge_adjacent_files({name})", False),
        (f"CALL ducklake_rewrite_data_files({name})", False),
        (f"CALL ducklake_expire_snapshots({name}, older_than => ?)", True),
        (f"CALL ducklake_cleanup_old_files({name}, older_than => ?)", True),
        (f"CALL ducklake_delete_orphaned_files({name}, older_than => ?)", True),
    ):
        # The clock read at each step: files the steps before scheduled for deletion are
        # as old as ``keep`` says only from then on.
        params = [datetime.now(UTC) - keep] if aged else []
        # Each step commits on its own and runs again if a pipeline's commit refused it.
        run(con, partial(_call, statement, params), files=lake.local_data)
    after = _counts(con, lake.data, alias)
    return Upkeep(
        live_files=(before[0], after[0]),
        snapshots=(before[1], after[1]),
        stored_files=(before[2], after[2]),
    )


def _call(statement: str, params: list[Any], con: duckdb.DuckDBPyConnection) -> None:
    con.execute(statement, params).fetchall()


def _counts(con: duckdb.DuckDBPyConnection, data_path: str, alias: str) -> tuple[int, int, int]:
    catalog = f"__ducklake_metadata_{alias}"  # where DuckLake attaches the lake's catalog
    found = con.execute(
        f"SELECT (SELECT count(*) FROM {catalog}.ducklake_data_file WHERE end_snapshot IS NULL)"  # noqa: S608 - the alias is ours
        f" + (SELECT count(*) FROM {catalog}.ducklake_delete_file WHERE end_snapshot IS NULL),"
        f" (SELECT count(*) FROM {catalog}.ducklake_snapshot),"
        " (SELECT count(*) FROM glob(?))",
        [data_path + "**/*.parquet"],
    ).fetchone()
    assert found is not None
    return int(found[0]), int(found[1]), int(found[2])
