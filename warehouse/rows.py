"""Reading results: typed rows at the repository boundary, dicts where a query is ad hoc."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Sequence
from datetime import date, datetime
from enum import Enum
from typing import Any, ClassVar, Self, TypeVar

from warehouse.cursor import Cursor

Row = dict[str, Any]
T = TypeVar("T")
Convert = Callable[[Any], Any]

__all__ = [
    "Cursor",
    "ResultRow",
    "Row",
    "TableRow",
    "columns",
    "fetch_all",
    "fetch_one",
    "fetch_row",
    "fetch_rows",
    "fetch_value",
]


def _same(value: Any) -> Any:
    return value


def _json(value: Any) -> Any:
    # SQLite and DuckDB hand JSON out as text, PostgreSQL's driver parses it already.
    return json.loads(value) if isinstance(value, str) else value


def _sequence(value: Any) -> Any:
    return [] if value is None else list(_json(value))


def _mapping(value: Any) -> Any:
    return {} if value is None else dict(_json(value))


def _converter(hint: Any) -> Convert:
    """How a column's value becomes the field's type, whichever engine handed it out."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        convert = _converter(inner[0]) if len(inner) == 1 else _same
        return lambda value: None if value is None else convert(value)
    origin = typing.get_origin(hint) or hint
    if origin is list:
        return _sequence
    if origin is dict:
        return _mapping
    if hint is Any:
        return _json
    if hint is bool:
        return bool  # SQLite's 0 and 1
    if hint is datetime:
        return lambda value: datetime.fromisoformat(value) if isinstance(value, str) else value
    if hint is date:
        return lambda value: date.fromisoformat(value) if isinstance(value, str) else value
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    return _same


class ResultRow:
    """A typed result row: one dataclass field per selected column (or per nested row).

    Timestamps are naive UTC (as ``utcnow()``), booleans are booleans, lists are lists and
    JSON is parsed, whichever engine stored them: :meth:`make` converts each value by its
    field's annotation. A field typed as another ``ResultRow`` takes that row's columns.
    """

    __slots__ = ()
    _converters: ClassVar[list[tuple[Convert | type[ResultRow], int]]]

    @classmethod
    def make(cls, values: Sequence[Any]) -> Self:
        """The row from its values in select order (its fields', a nested row's flattened)."""
        plan = cls.__dict__.get("_converters")
        if plan is None:
            plan = cls._plan()
        args: list[Any] = []
        at = 0
        for convert, width in plan:
            if width:
                nested = typing.cast(type[ResultRow], convert)
                args.append(nested.make(values[at : at + width]))
                at += width
            else:
                args.append(typing.cast(Convert, convert)(values[at]))
                at += 1
        return cls(*args)

    @classmethod
    def width(cls) -> int:
        """How many selected values one row takes."""
        return sum(width or 1 for _, width in cls.__dict__.get("_converters") or cls._plan())

    @classmethod
    def _plan(cls) -> list[tuple[Convert | type[ResultRow], int]]:
        hints = typing.get_type_hints(cls)
        plan: list[tuple[Convert | type[ResultRow], int]] = []
        for field in dataclasses.fields(typing.cast(Any, cls)):
            hint = hints[field.name]
            if isinstance(hint, type) and issubclass(hint, ResultRow):
                plan.append((hint, hint.width()))
            else:
                plan.append((_converter(hint), 0))
        # Cached on the class itself (slots dataclasses have no instance dict to worry about).
        type.__setattr__(cls, "_converters", plan)
        return plan


class TableRow(ResultRow):
    """A row of ``TABLE`` as the repository hands it out: one dataclass field per column.

    tests/store/test_rows.py checks every subclass's fields against its table.
    """

    __slots__ = ()
    TABLE: ClassVar[str]


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


def fetch_all(cur: Cursor, sql: str, params: list[Any] | dict[str, Any] | None = None) -> list[Row]:
    cur.execute(sql, params if params is not None else [])
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, values, strict=True)) for values in cur.fetchall()]


def fetch_one(cur: Cursor, sql: str, params: list[Any] | None = None) -> Row | None:
    found = fetch_all(cur, sql, params)
    return found[0] if found else None


def fetch_value(cur: Cursor, sql: str, params: list[Any] | None = None) -> Any:
    cur.execute(sql, params or [])
    first = cur.fetchone()
    return first[0] if first else None
