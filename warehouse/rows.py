"""Reading results: typed rows at the repository boundary, dicts where a query is ad hoc."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Self, TypeVar

from warehouse.cursor import StoreCursor

Row = dict[str, Any]
Cursor = StoreCursor
T = TypeVar("T")


class TableRow:
    """A row of ``TABLE`` as the repository hands it out: one dataclass field per column.

    Timestamps are naive UTC (as ``utcnow()``), lists are lists and JSON is parsed, so no
    caller depends on how the engine stores them; ``make`` is where a subclass converts.
    tests/store/test_rows.py checks every subclass's fields against its table.
    """

    __slots__ = ()
    TABLE: ClassVar[str]

    @classmethod
    def make(cls, values: tuple[Any, ...]) -> Self:
        """The row from its values in field order."""
        return cls(*values)


def columns(row_type: type[Any], alias: str = "") -> str:
    """The select list of a row dataclass: its fields in order, each qualified by ``alias``."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + field.name for field in dataclasses.fields(row_type))


def fetch_rows(
    cur: Cursor,
    sql: str,
    params: list[Any] | None,
    make: Callable[[tuple[Any, ...]], T],
) -> list[T]:
    """Each result row made into a typed row by ``make`` (given the values in select order)."""
    cur.execute(sql, params or [])
    return [make(values) for values in cur.fetchall()]


def fetch_row(
    cur: Cursor,
    sql: str,
    params: list[Any] | None,
    make: Callable[[tuple[Any, ...]], T],
) -> T | None:
    """The first result row made into a typed row, or None when there is none."""
    cur.execute(sql, params or [])
    first = cur.fetchone()
    return None if first is None else make(first)


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
