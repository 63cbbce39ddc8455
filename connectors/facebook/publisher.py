"""Facebook Pages: feed, photos and videos; comments and Page conversations."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from connectors.base import (
    AccountRef,
    Conversation,
    Published,
    PublishRequest,
)
from connectors.facebook.reader import FacebookConnector
from connectors.graph.publisher import GraphPublishing
from connectors.publishing import (
    media_url,
    recent_since,
)

# A post of one video or one photo: its edge, and the parameters its URL and its text go in.
SINGLE_MEDIA = {
    "video": ("videos", "file_url", "description"),
    "image": ("photos", "url", "caption"),
}


class FacebookPublisher(GraphPublishing[FacebookConnector]):
    """Facebook Pages: POST /{page-id}/feed, /photos, /videos; comments and conversations."""

    def publish(self, request: PublishRequest) -> Published:
        """Text/link to /feed; one photo to /photos; a video to /videos; several photos are
        uploaded unpublished and attached to one /feed post."""
        page, account = request.account.external_id, request.account
        images = [m for m in request.media if m.kind == "image"]
        videos = [m for m in request.media if m.kind == "video"]
        single = videos[:1] or (images if len(images) == 1 else [])
        if single:
            edge, source, caption = SINGLE_MEDIA[single[0].kind]
            body = self._call(
                "POST",
                f"/{page}/{edge}",
                account,
                {source: media_url(single[0]), caption: request.text},
                idempotent=False,
            )
            post_id = str(body.get("post_id") or body["id"])
        else:
            params: dict[str, Any] = {"message": request.text}
            if request.options.get("link"):
                params["link"] = str(request.options["link"])
            attached = []
            for image in images:
                photo = self._call(
                    "POST",
                    f"/{page}/photos",
                    account,
                    {"url": media_url(image), "published": "false"},
                    idempotent=True,
                )
                attached.append({"media_fbid": str(photo["id"])})
            body = self._call(
                "POST",
                f"/{page}/feed",
                account,
                params,
                idempotent=False,
                json={"attached_media": attached} if attached else None,
            )
            post_id = str(body["id"])
        return self.published(post_id, f"https://www.facebook.com/{post_id}")

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments on the last week's posts (/{post-id}/comments) and Page conversations."""
        posts = self.reader.list_posts(account, recent_since(since, self.now()))
        yield from self._comments(account, (p.external_id for p in posts), "comments", since)
        yield from self._dms(account, since, None)

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """POST /{comment-id}/comments; a conversation (t_…) gets POST /{page-id}/messages."""
        if conversation.startswith("t_"):
            return self._dm_reply(account, conversation, text, {"messaging_type": "RESPONSE"})
        body = self._call(
            "POST", f"/{conversation}/comments", account, {"message": text}, idempotent=False
        )
        return self.published(str(body["id"]), None)
