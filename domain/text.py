"""Text the store and the workers can carry: no NUL characters, no lone UTF-16 surrogates.

A JSON body may spell both (``\\u0000``, an unpaired ``\\ud800``) and Python decodes them
into ``str`` without complaint, but the workers' SQL rendering refuses NUL
(``warehouse.sql.literal``), DuckDB cannot bind a surrogate, and no UTF-8 encoder can write
one. The API refuses them once, at the edge (:func:`first_forbidden`, called by the request
dependency every endpoint shares); text from platforms is cleaned with :func:`scrub`.
"""

from __future__ import annotations

import math
import re
from typing import Any

# A str decoded from JSON holds a surrogate code point only when the pair was broken: a
# valid pair is combined into one code point by the decoder.
_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")
REPLACEMENT = "\ufffd"
ISSUE = "invalid_character"
MESSAGE = "NUL characters and unpaired UTF-16 surrogates are not allowed."


def is_clean(text: str) -> bool:
    """Whether ``text`` holds neither NUL nor a lone surrogate."""
    return _FORBIDDEN.search(text) is None


def scrub(text: str) -> str:
    """``text`` with each NUL and lone surrogate replaced by U+FFFD."""
    return _FORBIDDEN.sub(REPLACEMENT, text)


def first_forbidden(value: Any, prefix: str = "") -> str | None:
    """The dotted path of the first string or key in a JSON value that is not clean, or None."""
    # Iterative, so that a deeply nested body cannot exhaust the stack.
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if not is_clean(item):
                return path or "body"
        elif isinstance(item, dict):
            children: list[tuple[str, Any]] = []
            for key, child in item.items():
                where = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and not is_clean(key):
                    return scrub(where)  # the path is echoed back, so it must be clean too
                children.append((where, child))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(
                reversed([(f"{path}.{i}" if path else str(i), c) for i, c in enumerate(item)])
            )
    return None


#: How deep a request body may nest (objects and arrays, the body itself level 1).
MAX_DEPTH = 64


def first_unstorable(value: Any) -> tuple[str, str, str] | None:
    """The first place in a JSON value that no JSON store can hold: ``(path, issue, message)``.

    A non-finite number (``NaN``, ``Infinity``, ``-Infinity``: Python's decoder accepts them,
    but they are not JSON and PostgreSQL's ``jsonb`` refuses them), or nesting deeper than
    :data:`MAX_DEPTH` (the encoders and validators downstream stop at 255 levels or so).
    """
    # Iterative, so that a deeply nested body cannot exhaust the stack.
    stack: list[tuple[str, int, Any]] = [("", 1, value)]
    while stack:
        path, depth, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return scrub(path or "body"), "not_finite", "NaN and Infinity are not JSON numbers."
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                message = f"JSON may nest at most {MAX_DEPTH} levels deep."
                return scrub(path or "body"), "too_deep", message
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend(
                reversed([(f"{path}.{k}" if path else str(k), depth + 1, c) for k, c in pairs])
            )
    return None
