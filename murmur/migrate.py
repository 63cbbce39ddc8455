"""``murmur migrate``: the store of an earlier Murmur (one DuckDB file) into today's (ADR 0002).

The publishing tables go into the publishing database and the analytics tables into the
lake, each half in one transaction that compares every row with its source before it
commits (warehouse/pubdb/copy.py, warehouse/lake/copy.py). A half already moved by an
earlier run that stopped half-way is recognised by its row counts and not copied again;
the old file is renamed only once both halves hold it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
from sqlalchemy import func, select

from core.settings import Settings
from warehouse.errors import StoreUnavailableError
from warehouse.lake.copy import copy_analytics_tables, lake_tables
from warehouse.pubdb.copy import copy_publishing_tables
from warehouse.pubdb.schema import metadata
from warehouse.sql import literal
from warehouse.store import Store

MIGRATED_SUFFIX = ".migrated"


@dataclass(frozen=True)
class Moved:
    """Rows moved per table, and where the old file now is."""

    publishing: dict[str, int]
    analytics: dict[str, int]
    kept_as: Path


def move_old_store(
    settings: Settings, *, on_table: Callable[[str], None] = lambda _name: None
) -> Moved | None:
    """Move ``settings``' old store into the new one; None when there is none to move."""
    settings.ensure_dirs()
    old = settings.old_store_path
    if not old.exists():
        settings.open_store().close()  # opening migrates both halves' schemas
        return None
    with Store.open(settings.pub_url, settings.lake, settings.changes_file) as store:
        source = _open_old(old)
        try:
            publishing = _publishing(source, store, on_table)
        finally:
            source.close()
        analytics = _analytics(old, store, on_table)
        store.changes.bump()
    kept_as = old.with_name(old.name + MIGRATED_SUFFIX)
    old.rename(kept_as)
    wal = old.with_name(old.name + ".wal")
    if wal.exists():
        wal.rename(wal.with_name(wal.name + MIGRATED_SUFFIX))
    # What ADR 0001's store left beside itself, and nothing reads any more.
    for leftover in ("store.host.json", "murmur.duckdb.changes"):
        (settings.data_dir / leftover).unlink(missing_ok=True)
    return Moved(publishing, analytics, kept_as)


def _open_old(old: Path) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(str(old), read_only=True)
    except duckdb.Error as exc:
        raise StoreUnavailableError(
            f"cannot open {old} (is an earlier Murmur still running on it?): {exc}"
        ) from exc


def _publishing(
    source: duckdb.DuckDBPyConnection, store: Store, on_table: Callable[[str], None]
) -> dict[str, int]:
    counts = {}
    for table in metadata.sorted_tables:
        found = source.execute(f"SELECT count(*) FROM {table.name}").fetchone()  # noqa: S608 - names from the metadata
        counts[table.name] = int(found[0]) if found else 0
    with store.pub.snapshot() as conn:
        held = {
            table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in metadata.sorted_tables
        }
    if any(held.values()) and held == counts:
        return counts  # moved by an earlier run, its rows compared before it committed
    return copy_publishing_tables(source, store.pub, on_table=on_table)


def _analytics(old: Path, store: Store, on_table: Callable[[str], None]) -> dict[str, int]:
    con = duckdb.connect()
    try:
        store.lake.attach(con)
        con.execute(f"ATTACH {literal(str(old.resolve()))} AS old_counts (READ_ONLY)")
        try:
            # the tables both have: one the lake added since (mart_breakouts) has no rows to move
            old_tables = set(lake_tables(con, "old_counts"))
            tables = [table for table in lake_tables(con) if table in old_tables]
            counts = {table: _count(con, "old_counts", table) for table in tables}
        finally:
            con.execute("DETACH old_counts")
        held = {table: _count(con, "lake", table) for table in tables}
        if any(held.values()) and held == counts:
            return counts
        return copy_analytics_tables(con, old, on_table=on_table, files=store.lake.local_data)
    finally:
        con.close()


def _count(con: duckdb.DuckDBPyConnection, database: str, table: str) -> int:
    found = con.execute(f"SELECT count(*) FROM {database}.{table}").fetchone()  # noqa: S608 - names from the catalog
    return int(found[0]) if found else 0
