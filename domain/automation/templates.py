"""Content-automation templates: plain ``{name}`` placeholders, rendered within a bound.

``str.format`` is not used anywhere on a template: its format specs (``{a:>1000000000}``,
``{a:{a}}``), conversions (``{a!r}``) and attribute or index access (``{a.b}``, ``{a[0]}``)
let a tenant make the shared worker build gigabytes or read objects' attributes. A template
here is literal text, ``{{`` and ``}}`` for braces, and ``{name}`` placeholders; anything
else between braces is refused when the automation is created, and the renderer counts
characters as it goes, so a row can never make it build more than the limit it is given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from core.errors import MurmurError

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_BRACE = re.compile(r"[{}]")


class TemplateError(MurmurError, ValueError):
    """A template that is not plain text with ``{name}`` placeholders."""


class TooLong(MurmurError, ValueError):
    """A rendering that would pass its character limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the rendered text is over {limit} characters")
        self.limit = limit


@dataclass(frozen=True)
class Placeholder:
    name: str


Part = str | Placeholder


def _refusal(inner: str, position: int) -> str:
    """Why ``{inner}`` at ``position`` is not a placeholder, in the client's terms."""
    where = f"at character {position}"
    if "{" in inner:
        return f"Nested fields are not allowed ({where}); write {{name}} only."
    if "!" in inner:
        return f"Conversions such as !r are not allowed ({where}); write {{name}} only."
    if ":" in inner:
        return f"Format specs are not allowed ({where}); write {{name}} only."
    if "." in inner or "[" in inner:
        return f"Attribute and index access are not allowed ({where}); write {{name}} only."
    return (
        f"Placeholders must be plain names like {{title}} ({where}): a letter or _, then "
        "letters, digits or _, up to 64 characters."
    )


def parse(template: str) -> tuple[Part, ...]:
    """Literal runs and placeholders, in order; :class:`TemplateError` if anything else."""
    parts: list[Part] = []
    literal: list[str] = []
    index = 0
    while True:
        found = _BRACE.search(template, index)
        if found is None:
            literal.append(template[index:])
            break
        at = found.start()
        literal.append(template[index:at])
        if template.startswith("{{", at) or template.startswith("}}", at):
            literal.append(template[at])
            index = at + 2
            continue
        if template[at] == "}":
            raise TemplateError(
                f"A single }} must be doubled as }}}} (at character {at}); write {{name}} only."
            )
        end = template.find("}", at + 1)
        if end == -1:
            raise TemplateError(f"The {{ at character {at} is never closed.")
        inner = template[at + 1 : end]
        if not NAME.fullmatch(inner):
            raise TemplateError(_refusal(inner, at))
        text = "".join(literal)
        if text:
            parts.append(text)
        literal = []
        parts.append(Placeholder(inner))
        index = end + 1
    text = "".join(literal)
    if text:
        parts.append(text)
    return tuple(parts)


def placeholders(parts: tuple[Part, ...]) -> list[str]:
    """The placeholder names, in order of first use."""
    return list(dict.fromkeys(p.name for p in parts if isinstance(p, Placeholder)))


def value_text(value: Any) -> str:
    """A row's value as it appears in the text: strings as given, other JSON values as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _texts(parts: tuple[Part, ...], row: dict[str, Any]) -> dict[str, str]:
    """Each placeholder's text, converted once however often the template uses it."""
    return {name: value_text(row[name]) for name in placeholders(parts) if name in row}


def _length(parts: tuple[Part, ...], texts: dict[str, str]) -> int:
    total = 0
    for part in parts:
        if isinstance(part, str):
            total += len(part)
        elif part.name in texts:
            total += len(texts[part.name])
        else:
            total += len(part.name) + 2  # a missing name is kept as written
    return total


def rendered_length(parts: tuple[Part, ...], row: dict[str, Any]) -> int:
    """The length :func:`render` would give, computed without building the text."""
    return _length(parts, _texts(parts, row))


def render(parts: tuple[Part, ...], row: dict[str, Any], *, limit: int) -> str:
    """The text of one row; :class:`TooLong` rather than build more than ``limit`` characters."""
    texts = _texts(parts, row)
    if _length(parts, texts) > limit:
        raise TooLong(limit)
    return "".join(
        part if isinstance(part, str) else texts.get(part.name, "{" + part.name + "}")
        for part in parts
    )
