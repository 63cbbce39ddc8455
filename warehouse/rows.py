"""Small helpers that turn DuckDB results into dicts and build keyset-page queries."""

from __future__ import annotations

from typing import Any

from warehouse.cursor import StoreCursor

Row = dict[str, Any]
Cursor = StoreCursor


def fetch_all(cur: Cursor, sql: str, params: list[Any] | None = None) -> list[Row]:
    cur.execute(sql, params or [])
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, values, strict=True)) for values in cur.fetchall()]


def fetch_one(cur: Cursor, sql: str, params: list[Any] | None = None) -> Row | None:
    found = fetch_all(cur, sql, params)
    return found[0] if found else None


def fetch_value(cur: Cursor, sql: str, params: list[Any] | None = None) -> Any:
    cur.execute(sql, params or [])
    first = cur.fetchone()
    return first[0] if first else None
