"""X: tweets with media, mentions and DMs, replies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from connectors.base import (
    AccountRef,
    Conversation,
    Published,
    PublishRequest,
)
from connectors.http import parse_time
from connectors.publishing import (
    Publishing,
    media_bytes,
)
from connectors.x.reader import XConnector, next_token


class XPublisher(Publishing[XConnector]):
    """POST /2/tweets (media through /2/media/upload), mentions, DM events, replies."""

    def publish(self, request: PublishRequest) -> Published:
        """Upload each media, then create the tweet (not retried once it may have landed)."""
        media_ids = []
        for media in request.media:
            category = {"image": "tweet_image", "video": "tweet_video"}.get(
                media.kind, "tweet_image"
            )
            if media.content_type == "image/gif":
                category = "tweet_gif"
            body = self.call_json(
                "POST",
                "/2/media/upload",
                request.account,
                idempotent=True,  # an unused upload expires; it never shows
                data={"media_category": category},
                files={
                    "media": (media.path.rsplit("/", 1)[-1], media_bytes(media), media.content_type)
                },
            )
            media_ids.append(str((body.get("data") or {})["id"]))
        payload: dict[str, Any] = {"text": request.text}
        if media_ids:
            payload["media"] = {"media_ids": media_ids}
        body = self.call_json("POST", "/2/tweets", request.account, idempotent=False, json=payload)
        tweet_id = str(body["data"]["id"])
        return self.published(tweet_id, f"https://x.com/i/web/status/{tweet_id}")

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """GET /2/users/:id/mentions (replies to us are comments) and GET /2/dm_events."""
        params: dict[str, Any] = {
            "max_results": 100,
            "tweet.fields": "created_at,author_id,conversation_id,referenced_tweets",
            "expansions": "author_id",
        }
        if since is not None:
            params["start_time"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        mentions = self.reader.read_pages(
            f"/2/users/{account.external_id}/mentions",
            account,
            params,
            "pagination_token",
            next_token,
        )
        for body in mentions:
            users = {u["id"]: u for u in (body.get("includes") or {}).get("users") or []}
            for tweet in body.get("data") or []:
                replied = [
                    r["id"]
                    for r in tweet.get("referenced_tweets") or []
                    if r.get("type") == "replied_to"
                ]
                user = users.get(tweet.get("author_id"), {})
                at = parse_time(tweet["created_at"])
                if since is not None and at <= since:
                    continue  # start_time has whole seconds
                yield Conversation(
                    platform=self.platform,
                    external_id=tweet["id"],
                    kind="comment" if replied else "mention",
                    author_handle=user.get("username") or str(tweet.get("author_id")),
                    author_name=user.get("name"),
                    text=tweet.get("text") or "",
                    message_external_id=tweet["id"],
                    received_at=at,
                    post_external_id=replied[0] if replied else None,
                )
        params = {
            "max_results": 100,
            "event_types": "MessageCreate",
            "dm_event.fields": "id,text,sender_id,dm_conversation_id,created_at",
            "expansions": "sender_id",
        }
        dms = self.reader.read_pages(
            "/2/dm_events", account, params, "pagination_token", next_token
        )
        for body in dms:
            users = {u["id"]: u for u in (body.get("includes") or {}).get("users") or []}
            for event in body.get("data") or []:
                if event.get("sender_id") == account.external_id:
                    continue  # our own messages
                at = parse_time(event["created_at"])
                if since is not None and at <= since:
                    return  # newest first
                user = users.get(event.get("sender_id"), {})
                yield Conversation(
                    platform=self.platform,
                    external_id=event["dm_conversation_id"],
                    kind="dm",
                    author_handle=user.get("username") or str(event.get("sender_id")),
                    author_name=user.get("name"),
                    text=event.get("text") or "",
                    message_external_id=event["id"],
                    received_at=at,
                )

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """A DM conversation ("a-b") gets a DM; a tweet gets a reply tweet."""
        if "-" in conversation:
            body = self.call_json(
                "POST",
                f"/2/dm_conversations/{conversation}/messages",
                account,
                idempotent=False,
                json={"text": text},
            )
            return self.published(str(body["data"]["dm_event_id"]), None)
        body = self.call_json(
            "POST",
            "/2/tweets",
            account,
            idempotent=False,
            json={"text": text, "reply": {"in_reply_to_tweet_id": conversation}},
        )
        tweet_id = str(body["data"]["id"])
        return self.published(tweet_id, f"https://x.com/i/web/status/{tweet_id}")
