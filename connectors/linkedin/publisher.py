"""LinkedIn: /rest/posts with image and video uploads; comments."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import quote

from connectors.base import (
    AccountRef,
    Conversation,
    MediaFile,
    Published,
    PublishRequest,
    TransientError,
)
from connectors.http import parse_time
from connectors.linkedin.reader import LinkedInConnector, org_urn
from connectors.publishing import (
    Publishing,
    media_bytes,
    recent_since,
)

# ---- LinkedIn -------------------------------------------------------------------------------


def _restli(value: str) -> str:
    return quote(value, safe="")


class LinkedInPublisher(Publishing[LinkedInConnector]):
    """POST /rest/posts (the id comes back in x-restli-id); images via /rest/images uploads."""

    def _upload(self, account: AccountRef, media: MediaFile) -> str:
        kind = "videos" if media.kind == "video" else "images"
        owner = org_urn(account.external_id)
        body = self.call_json(
            "POST",
            f"/rest/{kind}",
            account,
            idempotent=True,
            params={"action": "initializeUpload"},
            json={"initializeUploadRequest": {"owner": owner}},
        )
        value = body.get("value") or {}
        self.send(
            "PUT",
            str(value["uploadUrl"]),
            self.reader.classify,
            idempotent=True,
            content=media_bytes(media),
            headers={"Authorization": self.reader.headers_for(account).get("Authorization", "")},
        )
        return str(value.get("image") or value.get("video"))

    def publish(self, request: PublishRequest) -> Published:
        """Upload media, then POST /rest/posts with lifecycleState PUBLISHED."""
        account = request.account
        author = org_urn(account.external_id)
        payload: dict[str, Any] = {
            "author": author,
            "commentary": request.text,
            "visibility": "PUBLIC",
            "distribution": {
                "feedDistribution": "MAIN_FEED",
                "targetEntities": [],
                "thirdPartyDistributionChannels": [],
            },
            "lifecycleState": "PUBLISHED",
            "isReshareDisabledByAuthor": False,
        }
        urns = [self._upload(account, m) for m in request.media]
        if len(urns) == 1:
            payload["content"] = {"media": {"id": urns[0]}}
        elif urns:
            payload["content"] = {"multiImage": {"images": [{"id": u} for u in urns]}}
        response = self.call("POST", "/rest/posts", account, idempotent=False, json=payload)
        urn = response.headers.get("x-restli-id")
        if not urn:
            raise TransientError("LinkedIn created the post but sent no x-restli-id", code="no_id")
        return self.published(urn, f"https://www.linkedin.com/feed/update/{urn}/")

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """GET /rest/socialActions/{post-urn}/comments for the last week's posts."""
        for post in self.reader.list_posts(account, recent_since(since, self.now())):
            body = self.reader.read(
                f"/rest/socialActions/{_restli(post.external_id)}/comments", account, None
            )
            for item in body.get("elements") or []:
                at = parse_time(int((item.get("created") or {}).get("time") or 0) / 1000)
                if since is not None and at <= since:
                    continue
                comment_id = str(item.get("$URN") or item["id"])
                yield Conversation(
                    platform=self.platform,
                    external_id=comment_id,
                    kind="comment",
                    author_handle=str(item.get("actor") or ""),
                    author_name=item.get("actorName"),
                    text=str((item.get("message") or {}).get("text") or ""),
                    message_external_id=comment_id,
                    received_at=at,
                    post_external_id=post.external_id,
                )

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """POST /rest/socialActions/{activity}/comments with parentComment: a nested reply."""
        inner = re.match(r"urn:li:comment:\((.+),[^,]+\)$", conversation)
        target = inner.group(1) if inner else conversation
        response = self.call(
            "POST",
            f"/rest/socialActions/{_restli(target)}/comments",
            account,
            idempotent=False,
            json={
                "actor": org_urn(account.external_id),
                "object": target,
                "parentComment": conversation,
                "message": {"text": text},
            },
        )
        return self.published(str(response.headers.get("x-restli-id") or ""), None)
