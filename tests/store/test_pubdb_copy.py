"""Copying a DuckDB store's publishing tables into the publishing database, every row checked.

The store is built with the DuckDB schema of today's main (its own migrations) in a
temporary file and filled, table by table, with rows made from each column's type: NULLs
where allowed, quotes, commas, brackets and non-ASCII text, empty and long lists, nested
JSON, timestamps to the microsecond. The test compares what it wrote with what it reads back
from SQLite itself, not through the copy's own check.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import func, select

from tests.support import HANG_SECONDS
from warehouse.errors import StoreError
from warehouse.migrations import migrate
from warehouse.pubdb.copy import CopyMismatchError, copy_publishing_tables
from warehouse.pubdb.engine import PubDB, sqlite_url
from warehouse.pubdb.schema import metadata

ROWS_PER_TABLE = 60
TEXTS = ["plain", 'it\'s "quoted"', "a, b; [c]", "ünïcödé ✓ 日本", "line\nbreak", "", "{not json"]


def _value(rng: random.Random, data_type: str, nullable: bool, number: int) -> Any:
    if nullable and rng.random() < 0.2:
        return None
    if data_type == "VARCHAR":
        return f"{rng.choice(TEXTS)}-{number}"
    if data_type == "VARCHAR[]":
        return [rng.choice(TEXTS) for _ in range(rng.choice([0, 1, 3, 12]))]
    if data_type == "JSON":
        return json.dumps(
            rng.choice(
                [
                    {"text": rng.choice(TEXTS), "n": number, "nested": {"list": [1, 2.5, None]}},
                    [{"platform": "x", "account_id": f"acc_{number}"}],
                    [],
                    {},
                ]
            )
        )
    if data_type == "TIMESTAMP":
        return datetime(2020, 1, 1) + timedelta(seconds=rng.randrange(10**8), microseconds=number)
    if data_type == "DATE":
        return date(2020, 1, 1) + timedelta(days=number)
    if data_type == "BOOLEAN":
        return rng.random() < 0.5
    if data_type in ("BIGINT", "INTEGER"):
        return rng.choice([0, -1, number, 2**31 - 1 if data_type == "INTEGER" else 2**62])
    if data_type == "DOUBLE":
        return rng.choice([0.0, -1.5, 1 / 3, 1e-300, number * 0.1])
    raise AssertionError(data_type)


def build_old_store(path: Path) -> dict[str, list[dict[str, Any]]]:
    """A DuckDB store with today's schema and rows in every publishing table; what it holds."""
    rng = random.Random(13)
    con = duckdb.connect(str(path))
    migrate(con)
    written: dict[str, list[dict[str, Any]]] = {}
    for table in metadata.sorted_tables:
        columns = con.execute(
            "SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns"
            " WHERE table_name = ? ORDER BY ordinal_position",
            [table.name],
        ).fetchall()
        rows = []
        for number in range(ROWS_PER_TABLE):
            row = {name: _value(rng, kind, nullable, number) for name, kind, nullable in columns}
            for key in table.primary_key.columns:  # keys unique, and sorting non-ASCII ones
                row[key.name] = f"{rng.choice(TEXTS)}-{key.name}-{number:03d}"
            rows.append(row)
        names = [name for name, _, _ in columns]
        con.executemany(
            f"INSERT INTO {table.name} ({', '.join(names)})"  # noqa: S608 - the test's own names
            f" VALUES ({', '.join('?' for _ in names)})",
            [[row[name] for name in names] for row in rows],
        )
        written[table.name] = [
            {
                name: json.loads(value) if kind == "JSON" and value is not None else value
                for (name, kind, _), value in zip(columns, [row[n] for n in names], strict=True)
            }
            for row in rows
        ]
    con.close()
    return written


def _read_back(db: PubDB) -> dict[str, list[dict[str, Any]]]:
    with db.snapshot() as conn:
        return {
            table.name: [dict(row) for row in conn.execute(select(table)).mappings()]
            for table in metadata.sorted_tables
        }


def _key(table_name: str) -> Any:
    columns = [c.name for c in metadata.tables[table_name].primary_key.columns]
    return lambda row: tuple(row[name] for name in columns)


def test_every_row_of_every_publishing_table_arrives_as_written(tmp_path: Path) -> None:
    written = build_old_store(tmp_path / "murmur.duckdb")
    source = duckdb.connect(str(tmp_path / "murmur.duckdb"), read_only=True)
    with PubDB.open(sqlite_url(tmp_path / "publishing.sqlite")) as db:
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
    copier = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from tests.store.test_pubdb_copy import copy_until_killed;"
            " copy_until_killed(sys.argv[1], sys.argv[2])",
            str(tmp_path / "murmur.duckdb"),
            str(target),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert copier.stdout is not None
    started = [copier.stdout.readline().strip() for _ in range(16)]
    copier.send_signal(signal.SIGKILL)  # half of the tables copied inside the transaction
    copier.wait(HANG_SECONDS)
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
