"""Moving the analytics tables of a DuckDB store into the lake (ADR 0002 step 4).

Pure DuckDB: the old file is attached read-only beside the lake and each table is inserted
by name in one lake transaction, so a copy that fails or is killed leaves the lake empty.
Before it commits, each table must equal its source as a multiset of rows (``EXCEPT ALL``
both ways, over the columns both have: columns the lake added since are left NULL, those
it dropped are not copied), or the whole copy is rolled back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from warehouse.errors import CopyMismatchError, StoreError
from warehouse.lake import run
from warehouse.marts.scripts import post_days_script
from warehouse.sql import literal

SOURCE = "old_store"


def lake_tables(con: duckdb.DuckDBPyConnection, alias: str = "lake") -> list[str]:
    """The lake's data tables (its migrations' bookkeeping aside), in name order."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ?"
        " AND table_name <> 'schema_migrations' ORDER BY table_name",
        [alias],
    ).fetchall()
    return [str(row[0]) for row in rows]


def copy_analytics_tables(
    con: duckdb.DuckDBPyConnection,
    store: Path,
    *,
    on_table: Callable[[str], None] = lambda _name: None,
    files: Path | None = None,
) -> dict[str, int]:
    """Copy every lake table's rows from the DuckDB store file ``store``; rows copied per table."""

    def copy(c: duckdb.DuckDBPyConnection) -> dict[str, int]:
        # A table the lake added since the DuckDB store (mart_breakouts) has nothing to copy.
        old = set(lake_tables(c, SOURCE))
        held = [table for table in lake_tables(c) if _rows_in(c, "lake", table)]
        tables = [table for table in lake_tables(c) if table in old]
        if held:
            raise StoreError(f"the lake already holds rows: {', '.join(held)}")
        counts = {}
        # A column the lake dropped since (a figure now computed when read) is not copied.
        columns = {table: _shared_columns(c, table) for table in tables}
        for table in tables:
            on_table(table)
            inserted = c.execute(
                f"INSERT INTO lake.{table} BY NAME SELECT {columns[table]} FROM {SOURCE}.{table}"  # noqa: S608 - names from the catalog
            ).fetchone()
            counts[table] = int(inserted[0]) if inserted else 0
        for table in tables:
            for left, right in ((SOURCE, "lake"), ("lake", SOURCE)):
                differing = _rows_in(c, left, table, minus=right, columns=columns[table])
                if differing:
                    raise CopyMismatchError(
                        f"{table}: {differing} rows of {left} are not in {right}"
                    )
        if "stg_post_days" not in old:
            # Staging's summary of each post's days (0009) is made from the rows just copied,
            # by staging's own script, which names the lake's tables unqualified.
            row = c.execute("SELECT current_database()").fetchone()
            c.execute("USE lake")
            try:
                c.execute(post_days_script())
            finally:
                c.execute(f'USE "{row[0] if row else "memory"}"')
        return counts

    con.execute(f"ATTACH {literal(str(store.resolve()))} AS {SOURCE} (READ_ONLY)")
    try:
        return run(con, copy, files=files)
    finally:
        con.execute(f"DETACH {SOURCE}")


def _shared_columns(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """The columns ``table`` has in the old store and in the lake, quoted, in the old order."""
    found = con.execute(
        "SELECT s.column_name FROM duckdb_columns() s JOIN duckdb_columns() l"
        " ON l.database_name = 'lake' AND l.table_name = s.table_name"
        " AND l.column_name = s.column_name"
        " WHERE s.database_name = ? AND s.table_name = ? ORDER BY s.column_index",
        [SOURCE, table],
    ).fetchall()
    return ", ".join('"' + str(row[0]).replace('"', '""') + '"' for row in found)


def _rows_in(
    con: duckdb.DuckDBPyConnection,
    database: str,
    table: str,
    *,
    minus: str | None = None,
    columns: str = "*",
) -> int:
    """Rows of ``database.table``; with ``minus``, those not in the same table there."""
    rows = f"SELECT {columns} FROM {database}.{table}"  # noqa: S608 - names from the catalog
    if minus is not None:
        rows += f" EXCEPT ALL SELECT {columns} FROM {minus}.{table}"  # noqa: S608 - as above
    found = con.execute(f"SELECT count(*) FROM ({rows})").fetchone()  # noqa: S608 - as above
    return int(found[0]) if found else 0
