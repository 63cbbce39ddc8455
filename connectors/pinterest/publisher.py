"""Pinterest: pins with an image or a video."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from connectors.base import (
    PermanentError,
    Published,
    PublishRequest,
)
from connectors.http import pages, parse_time
from connectors.pinterest.reader import PinterestConnector, next_bookmark
from connectors.publishing import (
    MARKER_PREFIX,
    SKEW,
    Publishing,
    first_match,
    marker,
    media_url,
)

# ---- Pinterest ------------------------------------------------------------------------------


class PinterestPublisher(Publishing[PinterestConnector]):
    """Pinterest API v5: POST /v5/pins on a board; the client_ref rides in the pin's note."""

    platform = "pinterest"

    def publish(self, request: PublishRequest) -> Published:
        """POST /v5/pins {board_id, media_source, title, description, note}."""
        account = request.account
        images = [m for m in request.media if m.kind == "image"]
        if not images:
            raise PermanentError("Pinterest pins need an image", code="media_required")
        board = str(request.options.get("board_id") or "")
        if not board:
            boards = self.call_json("GET", "/v5/boards", account, idempotent=True)
            items = boards.get("items") or []
            if not items:
                raise PermanentError(
                    "the Pinterest account has no board to pin to", code="no_board"
                )
            board = str(items[0]["id"])
        if len(images) == 1:
            source: dict[str, Any] = {"source_type": "image_url", "url": media_url(images[0])}
        else:
            source = {
                "source_type": "multiple_image_urls",
                "items": [{"url": media_url(m), "description": m.alt_text or ""} for m in images],
            }
        title = str(
            request.options.get("title") or request.text.splitlines()[0] if request.text else ""
        )
        payload: dict[str, Any] = {
            "board_id": board,
            "media_source": source,
            "title": title[:100],
            "description": request.text[:800],
            "note": marker(request),
        }
        if request.options.get("link"):
            payload["link"] = str(request.options["link"])
        if images[0].alt_text:
            payload["alt_text"] = images[0].alt_text
        body = self.call_json("POST", "/v5/pins", account, idempotent=False, json=payload)
        pin = str(body["id"])
        return self.published(pin, f"https://www.pinterest.com/pin/{pin}/")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """GET /v5/pins since then: the note's marker decides, else the normalised description."""
        candidates = []
        listing = pages(
            lambda query: self.call_json(
                "GET", "/v5/pins", request.account, idempotent=True, params=query
            ),
            {"page_size": 100},
            "bookmark",
            next_bookmark,
        )
        for body in listing:
            older = False
            for pin in body.get("items") or []:
                at = parse_time(pin["created_at"])
                if at < since - SKEW:
                    older = True
                    break
                note = str(pin.get("note") or "")
                candidates.append(
                    (
                        self.published(
                            str(pin["id"]), f"https://www.pinterest.com/pin/{pin['id']}/", at
                        ),
                        pin.get("description"),
                        note if note.startswith(MARKER_PREFIX) else None,
                    )
                )
            if older:
                break
        return first_match(request, since, candidates)
