"""What the agents can read: the API's contract and the analytics definitions, and the errors.

Read from the repository's docs/ (the pages people read), so that an agent's answer and the
documentation cannot drift apart; ``explain_error`` reads the Errors table of docs/api.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from domain.errors import ValidationFailed

DOCS = Path(__file__).resolve().parents[2] / "docs"


@dataclass(frozen=True)
class Document:
    uri: str
    name: str
    title: str
    description: str
    path: Path


DOCUMENTS: tuple[Document, ...] = (
    Document(
        "murmur://docs/api",
        "api",
        "The API contract",
        "Envelopes, authentication, scopes and workspaces, idempotency, pagination, every "
        "error code and rate limits: the rules every tool follows (docs/api.md).",
        DOCS / "api.md",
    ),
    Document(
        "murmur://docs/analytics",
        "analytics",
        "Analytics definitions",
        "What each analytics figure means and how the pipeline computes it: counters, rates, "
        "buckets, bases, freshness, trends, insights, best times, rankings "
        "(docs/api/analytics.md).",
        DOCS / "api" / "analytics.md",
    ),
    Document(
        "murmur://docs/posts",
        "posts",
        "Posts and media",
        "Destinations, each platform's text and media rules, the post's states "
        "(docs/api/posts.md).",
        DOCS / "api" / "posts.md",
    ),
    Document(
        "murmur://docs/mcp",
        "mcp",
        "Murmur over MCP",
        "The tools, how they map to the API, and how to connect (docs/mcp.md).",
        DOCS / "mcp.md",
    ),
)
BY_URI = {doc.uri: doc for doc in DOCUMENTS}


def read(uri: str) -> str:
    """A document's Markdown text; NOT_FOUND-like refusal for an unknown URI."""
    doc = BY_URI.get(uri)
    if doc is None:
        known = ", ".join(BY_URI)
        raise ValidationFailed.on("uri", "unknown", f"No resource {uri!r}; there are: {known}.")
    return doc.path.read_text(encoding="utf-8")


class Explanation(BaseModel):
    code: str = Field(description="The error code, as tools and the API answer it.")
    status: int = Field(description="The HTTP status the REST API answers it with.")
    meaning: str = Field(description="When it is answered (docs/api.md, Errors).")
    what_to_do: str
    retry: bool = Field(
        description="Whether the very same call (same idempotency_key) may succeed later."
    )
    docs: str = Field(description="Where the contract says more.")


# What an agent should do about each code: the contract's rules (docs/api.md) turned to advice.
_WHAT_TO_DO: dict[str, tuple[str, bool]] = {
    "VALIDATION_ERROR": (
        "Fix each `details` entry (its `field` is a dotted path into the arguments) and call "
        "again; validate_post lists every problem of a post at once.",
        False,
    ),
    "IDEMPOTENCY_KEY_REQUIRED": (
        "Pass an `idempotency_key` (any unique string, e.g. a UUID) with every write.",
        False,
    ),
    "AUTH_REQUIRED": ("Connect with `Authorization: Bearer <API key>`.", False),
    "API_KEY_INVALID": (
        "The key is unknown or revoked: ask the user for a valid key (`murmur keys create`).",
        False,
    ),
    "API_KEY_EXPIRED": ("The key has expired: ask the user for a new one.", False),
    "SCOPE_FORBIDDEN": (
        "The key lacks the scope named in the message: ask the user for a key with it, or do "
        "without this tool.",
        False,
    ),
    "WORKSPACE_FORBIDDEN": (
        "Use a workspace the key has (list_workspaces), in `workspace_id`.",
        False,
    ),
    "NOT_FOUND": (
        "No such id in this workspace: list the resources again (ids of other workspaces are "
        "not found either) and use one listed.",
        False,
    ),
    "METHOD_NOT_ALLOWED": ("Not answered by tools; a REST client used the wrong method.", False),
    "INVALID_STATE": (
        "The resource's state forbids this (e.g. cancel a published post): read it again "
        "(get_post) and act on what it is now.",
        False,
    ),
    "IDEMPOTENCY_CONFLICT": (
        "This idempotency_key was used with other arguments: use a new key for a new write, "
        "or repeat the first call's arguments exactly.",
        False,
    ),
    "IDEMPOTENCY_IN_PROGRESS": (
        "The first call with this key is still running: wait `retry_after` seconds and call "
        "again with the same key.",
        True,
    ),
    "PAYLOAD_TOO_LARGE": ("Send less (shorter text, fewer items).", False),
    "UNSUPPORTED_MEDIA_TYPE": ("Upload a file of an accepted type.", False),
    "RATE_LIMITED": (
        "Over the key's budget of calls a minute: wait `retry_after` seconds, then retry "
        "(writes with the same idempotency_key).",
        True,
    ),
    "INTERNAL_ERROR": (
        "A fault of the server's: retry once with the same idempotency_key; if it persists, "
        "report the request_id.",
        True,
    ),
    "SERVICE_UNAVAILABLE": (
        "The store is unavailable or a concurrent change won: wait `retry_after` seconds and "
        "retry with the same idempotency_key.",
        True,
    ),
}

_ROW = re.compile(
    r"^\|\s*(?P<codes>`[A-Z_]+`(?:,\s*`[A-Z_]+`)*)\s*\|\s*(?P<status>\d{3})\s*\|"
    r"\s*(?P<when>.*?)\s*\|\s*$"
)


@cache
def error_table() -> dict[str, tuple[int, str]]:
    """docs/api.md's Errors table: code -> (status, when)."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    section = text.split("## Errors", 1)[1].split("\n## ", 1)[0]
    table: dict[str, tuple[int, str]] = {}
    for line in section.splitlines():
        found = _ROW.match(line)
        if found is None:
            continue
        for code in re.findall(r"`([A-Z_]+)`", found["codes"]):
            when = found["when"]
            if when.lower().startswith("see "):
                # The row points to a section: its bullet of this code says when
                # ("- Same key, another body: `409 IDEMPOTENCY_CONFLICT`.").
                bullet = re.search(rf"^- (.+?): `\d{{3}} {code}`", text, re.MULTILINE)
                if bullet is not None:
                    when = bullet[1]
            table[code] = (int(found["status"]), when)
    return table


def explain(code: str) -> Explanation:
    wanted = code.strip().upper()
    table = error_table()
    if wanted not in table:
        raise ValidationFailed.on(
            "code", "unknown", f"No error code {code!r}; the codes are: {', '.join(table)}."
        )
    status, when = table[wanted]
    what, retry = _WHAT_TO_DO.get(wanted, ("See the contract.", False))
    return Explanation(
        code=wanted,
        status=status,
        meaning=when[:1].upper() + when[1:] + ("" if when.endswith(".") else "."),
        what_to_do=what,
        retry=retry,
        docs="murmur://docs/api (Errors)",
    )
