"""Instagram: media containers, then media_publish; comments and DMs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from connectors.base import (
    AccountRef,
    Conversation,
    MediaFile,
    PermanentError,
    Published,
    PublishRequest,
)
from connectors.graph.publisher import GraphPublishing
from connectors.instagram.reader import InstagramConnector
from connectors.publishing import (
    media_url,
    recent_since,
)


class InstagramPublisher(GraphPublishing[InstagramConnector]):
    """POST /{ig-user-id}/media (containers; carousels; video polled) then /media_publish."""

    def _container(self, account: AccountRef, media: MediaFile, params: dict[str, Any]) -> str:
        if media.kind == "video":
            params = {**params, "media_type": "REELS", "video_url": media_url(media)}
        else:
            params = {**params, "image_url": media_url(media)}
        body = self._call("POST", f"/{account.external_id}/media", account, params, idempotent=True)
        container = str(body["id"])
        if media.kind == "video":
            self._wait_ready(account, container)
        return container

    def publish(self, request: PublishRequest) -> Published:
        """One container (or a carousel of children), then media_publish: the only commit."""
        account = request.account
        if not request.media:
            raise PermanentError("Instagram posts need an image or a video", code="media_required")
        if len(request.media) == 1:
            container = self._container(account, request.media[0], {"caption": request.text})
        else:
            children = [
                self._container(account, m, {"is_carousel_item": "true"}) for m in request.media
            ]
            body = self._call(
                "POST",
                f"/{account.external_id}/media",
                account,
                {"media_type": "CAROUSEL", "children": ",".join(children), "caption": request.text},
                idempotent=True,
            )
            container = str(body["id"])
            self._wait_ready(account, container)
        return self._publish_container(account, "media_publish", container)

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments on the last week's media (/{media-id}/comments) and DMs (/conversations)."""
        posts = self.reader.list_posts(account, recent_since(since, self.now()))
        yield from self._comments(account, (p.external_id for p in posts), "comments", since)
        yield from self._dms(account, since, "instagram")

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """POST /{comment-id}/replies; a DM conversation (t_…) gets POST /{ig-user-id}/messages."""
        if conversation.startswith("t_"):
            return self._dm_reply(account, conversation, text, {})
        body = self._call(
            "POST", f"/{conversation}/replies", account, {"message": text}, idempotent=False
        )
        return self.published(str(body["id"]), None)
