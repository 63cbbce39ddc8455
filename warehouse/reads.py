"""A table's own rows, read by their row type: the select list and the table come from it.

A repository's plain reads name only the row type and what picks the rows (its WHERE, ORDER
BY, LIMIT), so the columns read cannot drift from the type's fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from warehouse.rows import Cursor, TableRow, columns, fetch_row, fetch_rows
from warehouse.sql import given, one_of

R = TypeVar("R", bound=TableRow)


def _select(row_type: type[TableRow], alias: str) -> str:
    table = f"{row_type.TABLE} {alias}" if alias else row_type.TABLE
    return f"SELECT {columns(row_type, alias)} FROM {table}"  # noqa: S608 - constants


def select_rows(
    cur: Cursor, row_type: type[R], clause: str, params: list[Any] | None = None
) -> list[R]:
    """The rows of ``row_type``'s table that ``clause`` (its WHERE, ORDER BY, LIMIT…) picks."""
    return fetch_rows(cur, f"{_select(row_type, '')} {clause}", params, row_type.make)


def select_row(
    cur: Cursor, row_type: type[R], clause: str, params: list[Any] | None = None
) -> R | None:
    """The first row of ``row_type``'s table that ``clause`` picks, or None."""
    return fetch_row(cur, f"{_select(row_type, '')} {clause}", params, row_type.make)


def newest_first(
    cur: Cursor,
    row_type: type[R],
    terms: Sequence[tuple[str, Any]],
    *,
    after: str | None,
    limit: int,
    always: str = "",
    alias: str = "",
) -> list[R]:
    """A keyset page of ``row_type``'s table, newest id first, below the cursor ``after``.

    ``terms`` are the optional filters (:func:`warehouse.sql.given`: a None value is left
    out); ``always`` is a condition that holds on every page (a live row's, say).
    """
    prefix = f"{alias}." if alias else ""
    where, params = given([*terms, (f"{prefix}id < ?", after)])
    if always:
        where.append(always)
    # No filter, no cursor and no ``always``: every row of the table, still newest first.
    filters = f" WHERE {' AND '.join(where)}" if where else ""
    return fetch_rows(
        cur,
        f"{_select(row_type, alias)}{filters} ORDER BY {prefix}id DESC LIMIT ?",
        [*params, limit],
        row_type.make,
    )


def grouped(
    cur: Cursor, row_type: type[R], key: str, keys: Sequence[str], *, order: str
) -> dict[str, list[R]]:
    """The rows of ``row_type``'s table whose column ``key`` is one of ``keys``, by key.

    Each key's rows are in ``order``; a key no row has maps to an empty list.
    """
    found: dict[str, list[R]] = {value: [] for value in keys}
    if not keys:
        return found
    clause = f"WHERE {one_of(cur, key)} ORDER BY {order}"
    for row in select_rows(cur, row_type, clause, [keys]):
        found[getattr(row, key)].append(row)
    return found
