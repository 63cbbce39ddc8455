"""Copying a DuckDB store's publishing tables into the publishing database, every row checked.

The store is built with the old DuckDB schema (tests/store/old_schema) in a temporary file
and filled with rows made from each column's type (tests/store/old_store.py), non-ASCII keys
included.
The test compares what it wrote with what it reads back from SQLite itself, not through the
copy's own check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import func, select

from tests.store import old_store
from tests.store.conftest import Profile
from tests.store.old_store import ROWS_PER_TABLE
from tests.support import killed_after
from warehouse.errors import CopyMismatchError, StoreError
from warehouse.pubdb.copy import copy_publishing_tables
from warehouse.pubdb.engine import PubDB, sqlite_url
from warehouse.pubdb.schema import metadata

KEYS = {
    table.name: [column.name for column in table.primary_key.columns]
    for table in metadata.sorted_tables
}


def build_old_store(path: Path) -> dict[str, list[dict[str, Any]]]:
    return old_store.build_old_store(path, KEYS)


def _read_back(db: PubDB) -> dict[str, list[dict[str, Any]]]:
    with db.snapshot() as conn:
        return {
            table.name: [dict(row) for row in conn.execute(select(table)).mappings()]
            for table in metadata.sorted_tables
        }


def _key(table_name: str) -> Any:
    columns = [c.name for c in metadata.tables[table_name].primary_key.columns]
    return lambda row: tuple(row[name] for name in columns)


def test_every_row_of_every_publishing_table_arrives_as_written(
    profile: Profile, tmp_path: Path
) -> None:
    written = build_old_store(tmp_path / "murmur.duckdb")
    source = duckdb.connect(str(tmp_path / "murmur.duckdb"), read_only=True)
    with PubDB.open(profile.pub_url) as db:
        counts = copy_publishing_tables(source, db)
        copied = _read_back(db)
    assert counts == dict.fromkeys(written, ROWS_PER_TABLE)
    assert len(counts) == 32
    for name, rows in written.items():
        assert sorted(copied[name], key=_key(name)) == sorted(rows, key=_key(name)), name


def test_a_second_copy_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    build_old_store(tmp_path / "murmur.duckdb")
    source = duckdb.connect(str(tmp_path / "murmur.duckdb"), read_only=True)
    with PubDB.open(sqlite_url(tmp_path / "publishing.sqlite")) as db:
        copy_publishing_tables(source, db)
        before = _read_back(db)
        with pytest.raises(StoreError, match="already holds rows"):
            copy_publishing_tables(source, db)
        assert _read_back(db) == before


def copy_until_killed(store: str, target: str) -> None:
    """A process of its own: copy, announcing each table before it is copied."""
    source = duckdb.connect(store, read_only=True)
    with PubDB.open(sqlite_url(Path(target))) as db:
        copy_publishing_tables(source, db, on_table=lambda name: print(name, flush=True))


def test_a_copy_killed_half_way_leaves_nothing_and_runs_again(tmp_path: Path) -> None:
    written = build_old_store(tmp_path / "murmur.duckdb")
    target = tmp_path / "publishing.sqlite"
    # Killed with half of the tables copied inside the transaction.
    started = killed_after(
        "tests.store.test_pubdb_copy",
        "copy_until_killed",
        [str(tmp_path / "murmur.duckdb"), str(target)],
        16,
    )
    assert len(set(started)) == 16
    with PubDB.open(sqlite_url(target)) as db:
        with db.snapshot() as conn:
            held = {
                table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in metadata.sorted_tables
            }
        assert set(held.values()) == {0}
        source = duckdb.connect(str(tmp_path / "murmur.duckdb"), read_only=True)
        assert copy_publishing_tables(source, db) == dict.fromkeys(written, ROWS_PER_TABLE)


def test_a_value_sqlite_cannot_hold_stops_the_copy_and_leaves_nothing(tmp_path: Path) -> None:
    build_old_store(tmp_path / "murmur.duckdb")
    con = duckdb.connect(str(tmp_path / "murmur.duckdb"))
    # SQLite stores a NaN REAL as NULL: the row would arrive changed.
    con.execute("UPDATE webhook_deliveries SET response_ms = 'nan'::DOUBLE WHERE rowid = 7")
    con.close()
    source = duckdb.connect(str(tmp_path / "murmur.duckdb"), read_only=True)
    with PubDB.open(sqlite_url(tmp_path / "publishing.sqlite")) as db:
        with pytest.raises(CopyMismatchError, match="webhook_deliveries"):
            copy_publishing_tables(source, db)
        assert all(rows == [] for rows in _read_back(db).values())
