"""How much a post's ``platform_options`` may hold: a bound on their size as JSON.

Options are passed through to the connectors, which read a few short keys each (X's
``reply_settings``, YouTube's ``title``, ``tags``, ``category_id`` and ``privacy``, Pinterest's
``board_id``, ``title`` and ``link``…: docs/api/posts.md); the contract keeps them as given,
so no key is refused. Without a bound a post took ~900 KB of them and a page of 100 posts
~90 MB. The size is counted as the API writes them back (compact JSON, UTF-8, by pydantic's
serializer), so the bound is also what they add to every answer that shows the post.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError, to_json

from domain.workspaces.schemas import Platform

MAX_OPTIONS_BYTES = 16 * 1024


def _bounded(value: dict[str, Any]) -> dict[str, Any]:
    size = len(to_json(value))
    if size > MAX_OPTIONS_BYTES:
        raise PydanticCustomError(
            "too_large",
            "Options may take at most {limit} bytes as JSON; these take {size}.",
            {"limit": MAX_OPTIONS_BYTES, "size": size},
        )
    return value


# A post's options, keyed by platform: at most MAX_OPTIONS_BYTES for all of them together.
PlatformOptions = Annotated[dict[Platform, dict[str, Any]], AfterValidator(_bounded)]
# One destination's options (a preset's): the same bound.
DestinationOptions = Annotated[dict[str, Any], AfterValidator(_bounded)]
