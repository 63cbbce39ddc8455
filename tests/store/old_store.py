"""A DuckDB store as Murmur made it before ADR 0002, filled with rows made from each column's
type (its schema: tests/store/old_schema).

For the tests of copying into the new store (ADR 0002 step 4): NULLs where allowed, quotes,
commas, brackets and non-ASCII text, empty and long lists, nested JSON, timestamps to the
microsecond, extreme integers.
"""

from __future__ import annotations

import json
import random
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from tests.store.old_schema import migrate

ROWS_PER_TABLE = 60
TEXTS = ["plain", 'it\'s "quoted"', "a, b; [c]", "ünïcödé ✓ 日本", "line\nbreak", "", "{not json"]


def value_of(rng: random.Random, data_type: str, nullable: bool, number: int) -> Any:
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


def build_old_store(path: Path, keys: dict[str, list[str]]) -> dict[str, list[dict[str, Any]]]:
    """A store with today's schema, rows in each table of ``keys`` (its key columns' values
    unique and non-ASCII); what each table holds, JSON parsed."""
    rng = random.Random(13)
    con = duckdb.connect(str(path))
    migrate(con)
    written: dict[str, list[dict[str, Any]]] = {}
    for table, key_columns in keys.items():
        columns = con.execute(
            "SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns"
            " WHERE table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
        rows = []
        for number in range(ROWS_PER_TABLE):
            row = {name: value_of(rng, kind, nullable, number) for name, kind, nullable in columns}
            for key in key_columns:  # unique, and sorting non-ASCII ones
                row[key] = f"{rng.choice(TEXTS)}-{key}-{number:03d}"
            rows.append(row)
        names = [name for name, _, _ in columns]
        con.executemany(
            f"INSERT INTO {table} ({', '.join(names)})"  # noqa: S608 - the test's own names
            f" VALUES ({', '.join('?' for _ in names)})",
            [[row[name] for name in names] for row in rows],
        )
        written[table] = [
            {
                name: json.loads(value) if kind == "JSON" and value is not None else value
                for (name, kind, _), value in zip(columns, [row[n] for n in names], strict=True)
            }
            for row in rows
        ]
    con.close()
    return written
