"""Rendering values into SQL text, for the one place that cannot bind parameters.

Scripts sent through ``Store.execute_script`` run server-side over Quack, which takes a
single SQL string: no bound parameters. Every value rendered into such a script goes
through :func:`literal`, which accepts only types whose rendering cannot change the
statement's shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any


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


def bind(sql: str, params: Sequence[Any]) -> str:
    """``sql`` with each ``?`` outside quotes replaced by its rendered parameter."""
    out: list[str] = []
    values = iter(params)
    quote: str | None = None
    used = 0
    for char in sql:
        if quote is not None:
            if char == quote:
                quote = None
            out.append(char)
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        elif char == "?":
            try:
                out.append(render(next(values)))
            except StopIteration:
                raise ValueError("fewer parameters than placeholders") from None
            used += 1
        else:
            out.append(char)
    if used != len(params):
        raise ValueError(f"{len(params)} parameters for {used} placeholders")
    return "".join(out)
