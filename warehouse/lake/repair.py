"""Damaged lake files taken out of the current snapshot without reading them.

DuckLake reads a file to delete rows from it, even when a predicate covers the whole file,
and so does ``TRUNCATE`` (measured, DuckDB 1.5.5): a cut Parquet file blocks every write to
its table. What DuckLake itself records when a delete removes a whole file is written here
to its catalog instead, in one catalog transaction: a new snapshot (the previous one's
schema version and next ids), its change ``deleted_from_table:<id>`` with a commit message,
and ``end_snapshot`` set on the data file and on its delete files. Readers of older
snapshots are unchanged; the upkeep's expiry and cleanup remove the file later, as after any
delete. A concurrent commit takes the same snapshot id: one of the two is refused (SQLite's
catalog locked, PostgreSQL's unique key) and runs again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from warehouse.errors import DuplicateKeyError
from warehouse.lake import COMMIT_ATTEMPTS, run

# The tables written from the platforms and imports: what no run can compute again. Every
# other table of the lake is derived from them by the pipeline.
RAW_TABLES = frozenset(
    {"ingest_batches", "raw_posts", "raw_engagement_snapshots", "raw_account_snapshots"}
)
# The DuckLake catalog formats whose snapshot bookkeeping ``take_out`` writes.
KNOWN_FORMATS = frozenset({"1.0"})


@dataclass(frozen=True)
class LakeFile:
    """A data file of the current snapshot, as the catalog records it."""

    table: str
    data_file_id: int
    path: str  # as ducklake_list_files names it
    rows: int  # live rows: the file's records less its deletes
    delete_paths: tuple[str, ...]
    ingested: tuple[str, str] | None  # min and max ingested_at, from the column statistics


def current_files(
    con: duckdb.DuckDBPyConnection, table: str, alias: str = "lake"
) -> dict[str, LakeFile]:
    """The data files of ``table`` in the current snapshot, by the file name of each data
    file and of each of its delete files (the names are UUIDs: unique in the lake)."""
    meta = f"__ducklake_metadata_{alias}"
    listed = con.execute(
        "SELECT data_file, delete_file FROM ducklake_list_files(?, ?)", [alias, table]
    ).fetchall()
    deletes: dict[str, list[str]] = {}
    for data_file, delete_file in listed:
        deletes.setdefault(str(data_file), [])
        if delete_file is not None:
            deletes[str(data_file)].append(str(delete_file))
    rows = con.execute(
        "SELECT f.data_file_id, f.path, f.record_count"  # noqa: S608 - the alias is ours
        f" - coalesce((SELECT sum(d.delete_count) FROM {meta}.ducklake_delete_file d"
        "    WHERE d.data_file_id = f.data_file_id AND d.end_snapshot IS NULL), 0),"
        f" (SELECT min(s.min_value) FROM {meta}.ducklake_file_column_stats s"
        f"    JOIN {meta}.ducklake_column c ON c.table_id = s.table_id"
        "     AND c.column_id = s.column_id AND c.end_snapshot IS NULL"
        "    WHERE s.data_file_id = f.data_file_id AND c.column_name = 'ingested_at'),"
        f" (SELECT max(s.max_value) FROM {meta}.ducklake_file_column_stats s"
        f"    JOIN {meta}.ducklake_column c ON c.table_id = s.table_id"
        "     AND c.column_id = s.column_id AND c.end_snapshot IS NULL"
        "    WHERE s.data_file_id = f.data_file_id AND c.column_name = 'ingested_at')"
        f" FROM {meta}.ducklake_data_file f JOIN {meta}.ducklake_table t"
        "  ON t.table_id = f.table_id AND t.end_snapshot IS NULL"
        " WHERE f.end_snapshot IS NULL AND t.table_name = ?",
        [table],
    ).fetchall()
    by_name = {os.path.basename(path): path for path in deletes}
    found: dict[str, LakeFile] = {}
    for file_id, stored, live, low, high in rows:
        path = by_name.get(os.path.basename(str(stored)))
        if path is None:
            continue  # not in this snapshot's listing
        ingested = (str(low), str(high)) if low is not None and high is not None else None
        file = LakeFile(table, int(file_id), path, int(live), tuple(deletes[path]), ingested)
        for name in (path, *file.delete_paths):
            found[os.path.basename(name)] = file
    return found


def catalog_format(con: duckdb.DuckDBPyConnection, alias: str = "lake") -> str:
    """The DuckLake format version the catalog records."""
    row = con.execute(
        f"SELECT value FROM __ducklake_metadata_{alias}.ducklake_metadata"  # noqa: S608
        " WHERE key = 'version' AND scope IS NULL"
    ).fetchone()
    return str(row[0]) if row else ""


def take_out(
    con: duckdb.DuckDBPyConnection,
    files: list[LakeFile],
    *,
    message: str,
    alias: str = "lake",
    local: Path | None = None,
) -> int | None:
    """End ``files`` (and their delete files) in one new snapshot, reading none of them; the
    snapshot's id (None: nothing was left to take out)."""
    meta = f"__ducklake_metadata_{alias}"

    def once(c: duckdb.DuckDBPyConnection) -> int | None:
        ids = [f.data_file_id for f in files]
        marks = ", ".join("?" for _ in ids)
        live = c.execute(
            f"SELECT DISTINCT table_id FROM {meta}.ducklake_data_file"  # noqa: S608
            f" WHERE end_snapshot IS NULL AND data_file_id IN ({marks}) ORDER BY table_id",
            ids,
        ).fetchall()
        if not live:
            return None  # a run before this one took them out already
        last = c.execute(
            f"SELECT snapshot_id, schema_version, next_catalog_id, next_file_id"  # noqa: S608
            f" FROM {meta}.ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1"
        ).fetchone()
        assert last is not None
        snapshot = int(last[0]) + 1
        # DuckLake's own spelling of a commit's time in a SQLite catalog; PostgreSQL's
        # timestamptz column takes it as the same moment (its offset is explicit).
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f+00")
        c.execute(
            f"INSERT INTO {meta}.ducklake_snapshot VALUES (?, ?, ?, ?, ?)",  # noqa: S608
            [snapshot, stamp, last[1], last[2], last[3]],
        )
        changes = ",".join(f"deleted_from_table:{row[0]}" for row in live)
        c.execute(
            f"INSERT INTO {meta}.ducklake_snapshot_changes"  # noqa: S608
            " (snapshot_id, changes_made, author, commit_message, commit_extra_info)"
            " VALUES (?, ?, 'murmur doctor', ?, NULL)",
            [snapshot, changes, message[:4000]],
        )
        for table in ("ducklake_data_file", "ducklake_delete_file"):
            c.execute(
                f"UPDATE {meta}.{table} SET end_snapshot = ?"  # noqa: S608
                f" WHERE end_snapshot IS NULL AND data_file_id IN ({marks})",
                [snapshot, *ids],
            )
        return snapshot

    for attempt in range(COMMIT_ATTEMPTS):
        try:
            return run(con, once, files=local)
        except DuplicateKeyError:
            # Another commit took the snapshot id first (SQLite's catalog says so by its
            # key; DuckLake's own commits by "database is locked", which ``run`` retries).
            if attempt == COMMIT_ATTEMPTS - 1:
                raise
    return None
