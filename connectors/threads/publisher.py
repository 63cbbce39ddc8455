"""Threads: a container, then threads_publish; replies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from connectors.base import (
    AccountRef,
    ConnectorError,
    Conversation,
    MediaFile,
    Published,
    PublishRequest,
)
from connectors.graph.publisher import GraphPublishing
from connectors.publishing import (
    media_url,
    recent_since,
)
from connectors.threads.reader import ThreadsConnector


class ThreadsPublisher(GraphPublishing[ThreadsConnector]):
    """Threads: POST /{threads-user-id}/threads (a container) then /threads_publish."""

    def _create(self, account: AccountRef, params: dict[str, Any]) -> str:
        body = self._call(
            "POST", f"/{account.external_id}/threads", account, params, idempotent=True
        )
        return str(body["id"])

    def _item(self, account: AccountRef, media: MediaFile, params: dict[str, Any]) -> str:
        if media.kind == "video":
            container = self._create(
                account, {**params, "media_type": "VIDEO", "video_url": media_url(media)}
            )
            self._wait_ready(account, container, "status")
            return container
        return self._create(
            account, {**params, "media_type": "IMAGE", "image_url": media_url(media)}
        )

    def publish(self, request: PublishRequest) -> Published:
        """TEXT, IMAGE, VIDEO (polled) or CAROUSEL container, then threads_publish."""
        account = request.account
        if not request.media:
            container = self._create(account, {"media_type": "TEXT", "text": request.text})
        elif len(request.media) == 1:
            container = self._item(account, request.media[0], {"text": request.text})
        else:
            children = [self._item(account, m, {"is_carousel_item": "true"}) for m in request.media]
            container = self._create(
                account,
                {"media_type": "CAROUSEL", "children": ",".join(children), "text": request.text},
            )
        done = self._publish_container(account, "threads_publish", container)
        return Published(
            done.external_id, self._permalink(account, done.external_id), done.published_at
        )

    def _permalink(self, account: AccountRef, media_id: str) -> str | None:
        """GET /{threads-media-id}?fields=permalink: threads_publish answers with the id alone.

        The thread exists by now, so a failed read leaves the URL unknown (None) rather than
        failing the publication: a retry would only find the same thread.
        """
        try:
            body = self._call(
                "GET", f"/{media_id}", account, {"fields": "permalink"}, idempotent=True
            )
        except ConnectorError:
            return None
        link = body.get("permalink") if isinstance(body, dict) else None
        return str(link) if link else None

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Replies to the last week's threads (GET /{media-id}/replies); Threads has no DMs."""
        posts = self.reader.list_posts(account, recent_since(since, self.now()))
        yield from self._comments(account, (p.external_id for p in posts), "replies", since)

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """A TEXT container with reply_to_id, then threads_publish."""
        container = self._create(
            account, {"media_type": "TEXT", "text": text, "reply_to_id": conversation}
        )
        return self._publish_container(account, "threads_publish", container)
