"""Text the store and the workers can carry: no NUL characters, no lone UTF-16 surrogates.

A JSON body may spell both (``\\u0000``, an unpaired ``\\ud800``) and Python decodes them
into ``str`` without complaint, but the workers' SQL rendering refuses NUL
(``warehouse.sql.literal``), DuckDB cannot bind a surrogate, and no UTF-8 encoder can write
one. The API refuses them once, at the edge (:func:`first_violation`, called by the request
dependency every endpoint shares, and by the agents' interface); text from platforms is
cleaned with :func:`scrub`.
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


#: How deep a request body may nest (objects and arrays, the body itself level 1).
MAX_DEPTH = 64


def first_violation(value: Any) -> tuple[str, str, str] | None:
    """The first place in a JSON value that Murmur will not store: ``(path, issue, message)``.

    A string or key that is not clean (``invalid_character``); a non-finite number
    (``not_finite``: Python's decoder accepts ``NaN`` and ``Infinity``, but they are not JSON
    and PostgreSQL's ``jsonb`` refuses them); nesting deeper than :data:`MAX_DEPTH`
    (``too_deep``: the encoders and validators downstream stop at 255 levels or so).
    """
    # One walk, iterative, so that a deeply nested body cannot exhaust the stack. The path
    # is echoed back to the client, so a key that is not clean is scrubbed in it.
    stack: list[tuple[str, int, Any]] = [("", 1, value)]
    while stack:
        path, depth, item = stack.pop()
        if isinstance(item, str):
            if not is_clean(item):
                return path or "body", ISSUE, MESSAGE
        elif isinstance(item, float):
            if not math.isfinite(item):
                return path or "body", "not_finite", "NaN and Infinity are not JSON numbers."
        elif isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return path or "body", "too_deep", f"JSON may nest at most {MAX_DEPTH} levels deep."
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            children = [(f"{path}.{k}" if path else str(k), depth + 1, c) for k, c in pairs]
            if isinstance(item, dict) and not all(is_clean(key) for key in item):
                where = next(w for w, _, _ in children if not is_clean(w))
                return scrub(where), ISSUE, MESSAGE
            stack.extend(reversed(children))
    return None
