"""Pinterest API v5: the user account, its pins, and each pin's lifetime metrics."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import httpx

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    AuthExpiredError,
    ConnectorError,
    EngagementSnapshot,
    NotFoundError,
    PostRecord,
)
from connectors.http import (
    HttpConnector,
    ProfileFields,
    as_int,
    error_for_status,
    parse_time,
)

PROFILE = ProfileFields(
    "username", "business_name", "follower_count", "following_count", "pin_count", "profile_image"
)
MEDIA_TYPES = {"image": "image", "video": "video", "multiple_images": "carousel"}
# A pin's image sizes, the smallest first: the first present is its picture.
IMAGE_SIZES = ("150x150", "400x300", "600x", "1200x")


def next_bookmark(body: Any) -> Any:
    """The bookmark of the page of pins after ``body``."""
    return body.get("bookmark")


def picture(media: dict[str, Any]) -> str | None:
    """A pin's picture: its smallest image, else a video pin's cover."""
    images = media.get("images") or {}
    for size in IMAGE_SIZES:
        url = (images.get(size) or {}).get("url") if isinstance(images, dict) else None
        if url:
            return str(url)
    cover = media.get("cover_image_url")
    return str(cover) if cover else None


class PinterestConnector(HttpConnector):
    """Reads a Pinterest business account with its own token (pins and their metrics)."""

    platform = "pinterest"

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """Map v5's {code, message}: 401 token, 429 rate (Retry-After), 404 gone, 5xx transient,
        other 4xx permanent."""
        status = response.status_code
        message = str(body.get("message") or f"HTTP {status}")
        code = str(body["code"]) if body.get("code") is not None else None
        if status == 401:
            return AuthExpiredError(message, status=status, code=code)
        if status == 429:
            return self.rate_limited(response, message, code)
        if status == 404:
            return NotFoundError(message, status=status, code=code)
        return error_for_status(response, message, code)

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /v5/user_account: the account the token belongs to."""
        body = self.read("/v5/user_account", account, None)
        external_id = str(body.get("id") or account.external_id)
        return self.profile_snapshot(account, external_id, body, PROFILE)

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """GET /v5/pins (page_size 100), newest first, following the bookmark."""
        listing = self.read_pages(
            "/v5/pins", account, {"page_size": 100}, "bookmark", next_bookmark, "items"
        )
        for body in listing:
            for pin in body.get("items") or []:
                published = parse_time(pin["created_at"])
                if since is not None and published < since:
                    return
                text = pin.get("description")
                media = pin.get("media") or {}
                kind = str(media.get("media_type") or "")
                yield self.post_record(
                    account,
                    str(pin["id"]),
                    text,
                    published,
                    media_type=MEDIA_TYPES.get(kind, "image"),
                    url=f"https://www.pinterest.com/pin/{pin['id']}/",
                    thumbnail_url=picture(media),
                )

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """GET /v5/pins/{pin_id}?pin_metrics=true per pin: its lifetime metrics."""
        for pin_id in external_ids:
            try:
                body = self.read(f"/v5/pins/{pin_id}", account, {"pin_metrics": "true"})
            except NotFoundError as exc:
                self.note(pin_id, exc, "not_found")
                continue
            life = (body.get("pin_metrics") or {}).get("lifetime_metrics") or {}
            clicks = [as_int(life.get(k)) for k in ("pin_click", "outbound_click")]
            yield self.engagement(
                pin_id,
                impressions=as_int(life.get("impression")),
                likes=as_int(life.get("reaction")),
                comments=as_int(life.get("comment")),
                saves=as_int(life.get("save")),
                clicks=None if all(c is None for c in clicks) else sum(c or 0 for c in clicks),
            )

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """Pinterest's API reads only the token's own account: no creators to discover."""
        return iter(())
