"""SQL text: values rendered where nothing binds, and the fragments engines spell differently.

A lake script (``Lakehouse.execute_script``) is many statements in one text, which binds no
parameters. Every value rendered into such a script goes through :func:`literal`, which
accepts only types whose rendering cannot change the statement's shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

Dialect = Literal["duckdb", "sqlite", "postgresql"]


class Dialected(Protocol):
    """Anything that knows which engine's SQL it runs (both store cursors)."""

    @property
    def dialect(self) -> Dialect: ...


def literal(value: date | datetime | int | float | Path | str) -> str:
    """Render a date, timestamp, number, path or string as a DuckDB SQL literal."""
    # bool is an int subclass; refuse it so a flag is never silently rendered as 1/0.
    if isinstance(value, bool):
        raise TypeError("literal() does not render booleans")
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            raise ValueError("literal() renders naive UTC timestamps only")
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("literal() renders finite floats only")
        return repr(value)
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("literal() refuses NUL characters")
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"literal() cannot render {type(value).__name__}")


def placeholders(sql: str, fill: Callable[[], str]) -> str:
    """``sql`` with each ``?`` outside quotes replaced by what ``fill()`` returns for it."""
    out: list[str] = []
    quote: str | None = None
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None
            out.append(char)
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        else:
            out.append(fill() if char == "?" else char)
    return "".join(out)


def given(terms: Sequence[tuple[str, Any]]) -> tuple[list[str], list[Any]]:
    """The terms whose value is not None, and their parameters (a tuple binds its items).

    A list's optional filters and keyset cursor are added only when given: SQLite plans a
    statement before it sees its parameters, so ``? IS NULL OR id < ?`` can never bound an
    index's range, and a page deep in a list read every row of the list before its cursor.
    """
    clauses: list[str] = []
    params: list[Any] = []
    for sql, value in terms:
        if value is None:
            continue
        clauses.append(sql)
        params.extend(value if isinstance(value, tuple) else [value])
    return clauses, params


# -- what the engines spell differently --------------------------------------------------------
# The repositories run on the publishing database: SQLite embedded, PostgreSQL at scale.
# Each function below is one fragment the two spell differently, chosen by the cursor's
# dialect, taking the same bound parameters on both; lists are stored as JSON arrays.


def one_of(cur: Dialected, expr: str) -> str:
    """``expr`` is one of the values of a bound list of strings (one ``?``)."""
    if cur.dialect == "sqlite":
        return f"{expr} IN (SELECT value FROM json_each(?))"  # noqa: S608 - constants
    return f"{expr} IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))"


def holds(cur: Dialected, column: str) -> str:
    """The stored list ``column`` holds a bound string (one ``?``)."""
    if cur.dialect == "sqlite":
        return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)"  # noqa: S608 - constants
    return f"{column} @> jsonb_build_array(CAST(? AS text))"


def typed(cur: Dialected, sql_type: str) -> str:
    """A placeholder whose type the engine cannot infer (in a select list): ``?`` cast."""
    # SQLite types values, not columns: a CAST to TIMESTAMP would make a time a number.
    return "?" if cur.dialect == "sqlite" else f"CAST(? AS {sql_type})"


def json_text(cur: Dialected, column: str, key: str) -> str:
    """The text at top-level ``key`` of the JSON object in ``column`` (a constant key)."""
    if not key.isidentifier():
        raise ValueError(f"not a JSON key of ours: {key!r}")
    if cur.dialect == "sqlite":
        return f"json_extract({column}, '$.{key}')"
    return f"({column} ->> '{key}')"


def seconds_between(cur: Dialected, later: str, earlier: str) -> str:
    """Seconds from timestamp ``earlier`` to ``later`` (a double; to the millisecond on SQLite)."""
    if cur.dialect == "sqlite":
        return f"((julianday({later}) - julianday({earlier})) * 86400.0)"
    return f"EXTRACT(EPOCH FROM ({later}) - ({earlier}))"


def to_second(cur: Dialected, expr: str) -> str:
    """Timestamp ``expr`` truncated to its second (ordering and comparison only)."""
    if cur.dialect == "sqlite":
        return f"substr({expr}, 1, 19)"  # the stored text's 'YYYY-MM-DD HH:MM:SS'
    return f"date_trunc('second', {expr})"


def rows_of(width: int, count: int) -> str:
    """``VALUES`` tuples for ``count`` rows of ``width`` placeholders each."""
    row = "(" + ", ".join(["?"] * width) + ")"
    return ", ".join([row] * count)


def returning(cur: Dialected, alias: str, names: str) -> str:
    """The RETURNING list of an ``UPDATE … AS alias … FROM``: ``names`` of the updated table."""
    # SQLite's RETURNING sees only the updated table, and not by its alias; PostgreSQL
    # needs the alias where a FROM table has a column of the same name.
    if cur.dialect == "sqlite":
        return names
    return ", ".join(f"{alias}.{name.strip()}" for name in names.split(","))


def later_of(cur: Dialected, first: str, second: str) -> str:
    """The later of two timestamps (neither NULL)."""
    # SQLite's two-argument max() is its greatest().
    return f"max({first}, {second})" if cur.dialect == "sqlite" else f"greatest({first}, {second})"
