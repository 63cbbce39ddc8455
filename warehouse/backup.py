"""A consistent copy of a live embedded store, and bringing one back (ADR 0002's files).

A file-by-file copy of a store being written tears both halves: a database copied while a
transaction commits, a catalog naming files not yet copied. ``backup`` instead takes each
SQLite database with SQLite's online backup (one read transaction: a snapshot, while writers
go on), then copies the lake files the copied catalog names, then the media. Only Python's
SQLite is used here, never DuckDB's copy of it, so the live processes' locks hold (ADR 0002).
At scale the halves are PostgreSQL's and the bucket's: their own tools back them up
(docs/operations.md).
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from warehouse.errors import StoreUnavailableError
from warehouse.files import private_dir, sync_dir, sync_file

PUBLISHING = "publishing.sqlite"
CATALOG = "lake.sqlite"
LAKE = "lake"
MEDIA = "media"
SECRET = ".secret"


@dataclass(frozen=True)
class Copied:
    """What a backup or a restore copied."""

    lake_files: int
    media_files: int
    bytes: int


def backup(data_dir: Path, dest: Path) -> Copied:
    """Copy the live store in ``data_dir`` into the new folder ``dest``."""
    if not (data_dir / PUBLISHING).exists() or not (data_dir / CATALOG).exists():
        raise StoreUnavailableError(f"{data_dir} holds no embedded store to back up")
    if dest.exists() and any(dest.iterdir()):
        raise StoreUnavailableError(f"{dest} is not empty: a backup goes into a new folder")
    private_dir(dest)
    size = _online_copy(data_dir / PUBLISHING, dest / PUBLISHING)
    size += _online_copy(data_dir / CATALOG, dest / CATALOG)
    # What the copied catalog names, wherever the live lake has moved on since: its files are
    # written before the commit that names them and are removed only once expired (hours).
    lake_files = 0
    for relative, current in catalog_files(dest / CATALOG):
        source = data_dir / LAKE / relative
        if not source.exists():
            if current:
                raise StoreUnavailableError(
                    f"the lake's file {relative} is missing: `murmur doctor` says more"
                )
            continue  # an expired snapshot's, cleaned up meanwhile: no reader can ask for it
        size += _copy(source, dest / LAKE / relative)
        lake_files += 1
    # Media are written (and flushed) before the row naming them commits: every file the
    # copied database names is there already; a later one is copied too, harmlessly.
    media_files = 0
    for file in sorted((data_dir / MEDIA).glob("*")) if (data_dir / MEDIA).is_dir() else []:
        if file.is_file() and not file.name.startswith("."):
            size += _copy(file, dest / MEDIA / file.name)
            media_files += 1
    if (data_dir / SECRET).exists():
        size += _copy(data_dir / SECRET, dest / SECRET)
    sync_dir(dest)
    return Copied(lake_files, media_files, size)


def restore(source: Path, data_dir: Path) -> Copied:
    """Bring the backup in ``source`` back into ``data_dir``, which must hold no store."""
    if not (source / PUBLISHING).exists() or not (source / CATALOG).exists():
        raise StoreUnavailableError(f"{source} is not a backup of a Murmur store")
    if (data_dir / PUBLISHING).exists() or (data_dir / CATALOG).exists():
        raise StoreUnavailableError(
            f"{data_dir} holds a store already: restore into a new data directory"
        )
    private_dir(data_dir)
    size = lake_files = media_files = 0
    for file in sorted(source.rglob("*")):
        if not file.is_file() or file.name.endswith(("-wal", "-shm")):
            continue  # a closed database's: SQLite makes its own
        relative = file.relative_to(source)
        size += _copy(file, data_dir / relative)
        lake_files += relative.parts[0] == LAKE
        media_files += relative.parts[0] == MEDIA
    sync_dir(data_dir)
    return Copied(lake_files, media_files, size)


def catalog_files(catalog: Path) -> list[tuple[Path, bool]]:
    """The data and delete files a DuckLake catalog names, relative to the lake's folder, and
    whether its current snapshot reads each (the others are older snapshots')."""
    with closing(sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)) as con:
        rows = con.execute(
            "SELECT s.path, s.path_is_relative, t.path, t.path_is_relative,"
            " f.path, f.path_is_relative, f.end_snapshot IS NULL"
            " FROM (SELECT table_id, path, path_is_relative, end_snapshot"
            "       FROM ducklake_data_file"
            "       UNION ALL"
            "       SELECT table_id, path, path_is_relative, end_snapshot"
            "       FROM ducklake_delete_file) f"
            " JOIN ducklake_table t ON t.table_id = f.table_id"
            " JOIN ducklake_schema s ON s.schema_id = t.schema_id"
            " WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL"
        ).fetchall()
    found: dict[Path, bool] = {}
    for schema, schema_rel, table, table_rel, file, file_rel, current in rows:
        if not (schema_rel and table_rel and file_rel):
            raise StoreUnavailableError(f"the catalog names a file outside the lake: {file}")
        path = Path(schema) / table / file
        found[path] = found.get(path, False) or bool(current)
    return sorted(found.items())


def _online_copy(source: Path, dest: Path) -> int:
    """SQLite's online backup: one consistent snapshot, taken while writers go on."""
    with (
        closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=60)) as live,
        closing(sqlite3.connect(dest)) as copy,
    ):
        live.backup(copy)
        copy.execute("PRAGMA journal_mode=WAL")  # as Murmur makes both databases
    sync_file(dest)
    return dest.stat().st_size


def _copy(source: Path, dest: Path) -> int:
    dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    sync_file(dest)
    return dest.stat().st_size
