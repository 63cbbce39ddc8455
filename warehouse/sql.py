"""SQL text: values rendered where nothing binds, and the fragments engines spell differently.

A lake script (``Lakehouse.execute_script``) is many statements in one text, which binds no
parameters. Every value rendered into such a script goes through :func:`literal`, which
accepts only types whose rendering cannot change the statement's shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
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


def render(value: Any) -> str:
    """A bound value as SQL text: scalars through literal(), plus NULL, booleans and lists."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, dict):
        return literal(json.dumps(value))
    if isinstance(value, date | datetime | int | float | Path | str):
        return literal(value)
    raise TypeError(f"cannot render {type(value).__name__} into SQL")


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


def bind(sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``?`` outside quotes replaced by its rendered parameter."""
    values = iter(params)
    used = 0

    def fill() -> str:
        nonlocal used
        used += 1
        try:
            return render(next(values))
        except StopIteration:
            raise ValueError("fewer parameters than placeholders") from None

    text = placeholders(sql, fill)
    if used != len(params):
        raise ValueError(f"{len(params)} parameters for {used} placeholders")
    return text


# -- what the engines spell differently --------------------------------------------------------
# The repositories run on the publishing database (SQLite embedded, PostgreSQL at scale),
# and ran on DuckDB before (ADR 0001), which the lake's cursors still speak. Lists are JSON
# arrays there (DuckDB lists here); each function below is one such fragment, chosen by the
# cursor's dialect, and takes the same bound parameters on every engine.


def one_of(cur: Dialected, expr: str) -> str:
    """``expr`` is one of the values of a bound list of strings (one ``?``)."""
    if cur.dialect == "sqlite":
        return f"{expr} IN (SELECT value FROM json_each(?))"  # noqa: S608 - constants
    if cur.dialect == "postgresql":
        return f"{expr} IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))"
    # IN (unnest) is a hash join on the list; list_contains(?, expr) scans every row.
    return f"{expr} IN (SELECT unnest(?::VARCHAR[]))"


def holds(cur: Dialected, column: str) -> str:
    """The stored list ``column`` holds a bound string (one ``?``)."""
    if cur.dialect == "sqlite":
        return f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)"  # noqa: S608 - constants
    if cur.dialect == "postgresql":
        return f"{column} @> jsonb_build_array(CAST(? AS text))"
    return f"list_contains({column}, ?)"


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
    if cur.dialect == "postgresql":
        return f"({column} ->> '{key}')"
    return f"json_extract_string({column}, '$.{key}')"


def seconds_between(cur: Dialected, later: str, earlier: str) -> str:
    """Seconds from timestamp ``earlier`` to ``later`` (a double; to the millisecond on SQLite)."""
    if cur.dialect == "sqlite":
        return f"((julianday({later}) - julianday({earlier})) * 86400.0)"
    if cur.dialect == "postgresql":
        return f"EXTRACT(EPOCH FROM ({later}) - ({earlier}))"
    return f"(epoch({later}) - epoch({earlier}))"


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
