"""Rendering values into SQL text, for the one place that cannot bind parameters.

Scripts sent through ``Store.execute_script`` run server-side over Quack, which takes a
single SQL string: no bound parameters. Every value rendered into such a script goes
through :func:`literal`, which accepts only types whose rendering cannot change the
statement's shape.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from pathlib import Path


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
