"""What the inbox keeps of a platform's text, and what a page of conversations shows of it.

Platforms cap what their users write (an X DM or a YouTube comment at 10,000 characters,
Facebook comments at 8,000, Instagram's at 2,200), but what a connector hands over is
untrusted: a 200,008-character DM was stored whole and came back whole as the ``preview``
of every list page holding it. A message is kept (a DM is the customer's, never refused),
cut to :data:`MESSAGE_CHARS` with :data:`MESSAGE_CUT` at its end; a preview is an excerpt.
"""

from __future__ import annotations

MESSAGE_CHARS = 10_000
MESSAGE_CUT = " [… cut by Murmur at 10,000 characters]"
PREVIEW_CHARS = 280
PREVIEW_CUT = "…"
# Handles and display names: no platform allows more than 100 characters.
NAME_CHARS = 200
# A platform's ids (thread, message, post): an id cannot be cut, so a longer one is refused.
EXTERNAL_ID_CHARS = 256


def cut(text: str, limit: int, marker: str) -> str:
    """``text`` if it fits ``limit`` characters, else its start and ``marker`` in ``limit``."""
    if len(text) <= limit:
        return text
    return text[: limit - len(marker)] + marker


def message(text: str) -> str:
    """An inbound message's text as stored."""
    return cut(text, MESSAGE_CHARS, MESSAGE_CUT)


def preview(text: str | None) -> str | None:
    """The excerpt of a conversation's latest message that lists show."""
    return None if text is None else cut(text, PREVIEW_CHARS, PREVIEW_CUT)


def name(text: str) -> str:
    """A handle or display name as stored."""
    return cut(text, NAME_CHARS, PREVIEW_CUT)
