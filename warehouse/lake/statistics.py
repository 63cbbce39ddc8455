"""Statistics for every table of the lake from its creation, so that planning stays cheap.

DuckLake (the extension DuckDB 1.5.5 installs) caches a table's statistics only once the
table has some: a table never written to has none, and planning any statement that reads
it asks the catalog again for each column it names, every time (duckdb/ducklake#1313, fixed
upstream after this version). Measured on this repository's lake: planning one query over an
empty 12-column table 260-640 ms and 29 catalog queries, the same table after one row 3-13 ms
and none; a day's DAILY_ASSETS run on a new lake 19.8 s, 4.7 s with statistics (a loaded
2-core machine). Every store starts empty, and a deployment that never imports keeps some
tables empty for good: each such table is given one placeholder row, deleted at once. Both
are inlined into the catalog (one row is under DuckLake's inlining limit): no file is written.
"""

from __future__ import annotations

import duckdb

from warehouse.lake import run

# A value of each column type the lake's tables use, for the placeholder row (NOT NULL
# columns need one). A table with a type missing here is left as it is: see below.
_PLACEHOLDERS = {
    "BIGINT": "0",
    "INTEGER": "0",
    "DOUBLE": "0",
    "BOOLEAN": "false",
    "DATE": "DATE '1970-01-01'",
    "TIMESTAMP": "TIMESTAMP '1970-01-01'",
    "JSON": "'{}'::JSON",
    "VARCHAR": "''",
    "VARCHAR[]": "[]::VARCHAR[]",
}


def without_statistics(con: duckdb.DuckDBPyConnection, alias: str = "lake") -> list[str]:
    """The lake's current tables that have no statistics yet (never written to)."""
    meta = f"__ducklake_metadata_{alias}"
    rows = con.execute(
        f"SELECT t.table_name FROM {meta}.ducklake_table t"  # noqa: S608 - the alias is ours
        f" LEFT JOIN {meta}.ducklake_table_stats s ON s.table_id = t.table_id"
        " WHERE t.end_snapshot IS NULL AND s.table_id IS NULL ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in rows]


def give_statistics(con: duckdb.DuckDBPyConnection, alias: str = "lake") -> list[str]:
    """Insert, then delete, one placeholder row in each table without statistics; their names.

    Two commits: a row inserted and deleted in one transaction never reaches the catalog.
    The delete names the placeholder by every column (no real row is all zeros, empty strings
    and 1970), so a writer's rows committed in between are kept.
    """
    tables = without_statistics(con, alias)
    if not tables:
        return []
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns"
        " WHERE table_catalog = ? AND table_schema = 'main'"
        " ORDER BY table_name, ordinal_position",
        [alias],
    ).fetchall():
        if table in tables:
            columns.setdefault(str(table), []).append((str(column), str(kind)))
    rows = {
        table: [(f'"{name}"', _PLACEHOLDERS[kind]) for name, kind in cols]
        for table, cols in columns.items()
        if all(kind in _PLACEHOLDERS for _, kind in cols)
    }
    if not rows:
        return []
    lake = f'"{alias}"'

    def insert(c: duckdb.DuckDBPyConnection) -> None:
        for table, values in rows.items():
            names = ", ".join(name for name, _ in values)
            c.execute(
                f'INSERT INTO {lake}."{table}" ({names})'  # noqa: S608 - names from the catalog
                f" VALUES ({', '.join(value for _, value in values)})"
            )

    def delete(c: duckdb.DuckDBPyConnection) -> None:
        for table, values in rows.items():
            match = " AND ".join(f"{name} IS NOT DISTINCT FROM {value}" for name, value in values)
            c.execute(f'DELETE FROM {lake}."{table}" WHERE {match}')  # noqa: S608

    run(con, insert)
    run(con, delete)
    return sorted(rows)
