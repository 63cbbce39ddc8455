"""Moving the publishing tables of a DuckDB store into the publishing database (ADR 0002 step 4).

One transaction for all 32 tables: a copy that fails or is killed leaves the publishing
database empty, so it can simply run again. Before it commits, every table is read back from
both sides in key order and compared row by row; a difference rolls the whole copy back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import zip_longest
from typing import Any

import duckdb
from sqlalchemy import JSON, ColumnElement, Connection, String, Table, func, select

from warehouse.errors import CopyMismatchError, StoreError
from warehouse.pubdb.engine import PubDB
from warehouse.pubdb.schema import metadata

BATCH_ROWS = 5_000


def _source_rows(source: duckdb.DuckDBPyConnection, table: Table) -> Iterator[dict[str, Any]]:
    names = [column.name for column in table.columns]
    json_columns = {column.name for column in table.columns if isinstance(column.type, JSON)}
    keys = ", ".join(column.name for column in table.primary_key.columns)
    source.execute(f"SELECT {', '.join(names)} FROM {table.name} ORDER BY {keys}")  # noqa: S608 - names from the metadata
    while batch := source.fetchmany(BATCH_ROWS):
        for values in batch:
            row = dict(zip(names, values, strict=True))
            for name in json_columns:
                # DuckDB hands JSON columns out as text, and VARCHAR[] as lists.
                if isinstance(row[name], str):
                    row[name] = json.loads(row[name])
            yield row


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def _copied_rows(conn: Connection, table: Table) -> Iterator[dict[str, Any]]:
    keys: list[ColumnElement[Any]] = list(table.primary_key.columns)
    if conn.dialect.name == "postgresql":
        # Byte order, as DuckDB sorts the source: a database's linguistic collation (ICU
        # en-US, say) orders 'a, b' and '-z' otherwise, and the rows would pair up wrongly.
        keys = [key.collate("C") if isinstance(key.type, String) else key for key in keys]
    ordered = select(table).order_by(*keys)
    for row in conn.execute(ordered).mappings():
        yield dict(row)


def copy_publishing_tables(
    source: duckdb.DuckDBPyConnection,
    db: PubDB,
    *,
    on_table: Callable[[str], None] = lambda _name: None,
) -> dict[str, int]:
    """Copy every publishing table of ``source`` into the empty ``db``; rows copied per table."""
    counts: dict[str, int] = {}
    with db.transaction() as conn:
        held = [
            table.name
            for table in metadata.sorted_tables
            if conn.execute(select(func.count()).select_from(table)).scalar_one()
        ]
        if held:
            raise StoreError(f"the publishing database already holds rows: {', '.join(held)}")
        for table in metadata.sorted_tables:
            on_table(table.name)
            counts[table.name] = 0
            for batch in _batches(_source_rows(source.cursor(), table)):
                conn.execute(table.insert(), batch)
                counts[table.name] += len(batch)
        # Checked before the commit: a table that differs leaves the database as it was.
        for table in metadata.sorted_tables:
            pairs = zip_longest(_source_rows(source.cursor(), table), _copied_rows(conn, table))
            for number, (was, now) in enumerate(pairs):
                if was != now:
                    raise CopyMismatchError(
                        f"{table.name}: row {number} in key order differs: {was!r} != {now!r}"
                    )
    return counts
