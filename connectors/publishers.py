"""Publishers for the nine platforms: each against the platform's real public write API shape."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from connectors.base import (
    AccountRef,
    AuthExpiredError,
    ConnectorError,
    Conversation,
    MediaFile,
    PermanentError,
    Published,
    PublishRequest,
    TransientError,
)
from connectors.bluesky import BlueskyConnector
from connectors.http import chunks, json_body, parse_time
from connectors.instagram import InstagramConnector
from connectors.linkedin import LinkedInConnector, org_urn
from connectors.pinterest import PinterestConnector
from connectors.publishing import (
    MARKER_PREFIX,
    SKEW,
    Publishing,
    first_match,
    marker,
    media_bytes,
    media_url,
)
from connectors.tiktok import TikTokConnector
from connectors.x import XConnector
from connectors.youtube import YouTubeConnector

POLLS = 30  # status polls of a processing video before giving up (as TransientError)
POLL_SECONDS = 2.0
RECENT = timedelta(days=7)  # how far back comment listings look at our own posts


def _since(since: datetime | None, now: datetime) -> datetime:
    return max(since, now - RECENT) if since is not None else now - RECENT


# ---- X --------------------------------------------------------------------------------------


class XPublisher(Publishing, XConnector):
    """POST /2/tweets (media through /2/media/upload), mentions, DM events, replies."""

    def _auth(self, account: AccountRef) -> dict[str, str]:
        return self._headers(account)

    def publish(self, request: PublishRequest) -> Published:
        """Upload each media, then create the tweet (not retried once it may have landed)."""
        media_ids = []
        for media in request.media:
            category = {"image": "tweet_image", "video": "tweet_video"}.get(
                media.kind, "tweet_image"
            )
            if media.content_type == "image/gif":
                category = "tweet_gif"
            body = self.send_json(
                "POST",
                "/2/media/upload",
                self.classify,
                idempotent=True,  # an unused upload expires; it never shows
                headers=self._auth(request.account),
                data={"media_category": category},
                files={
                    "media": (media.path.rsplit("/", 1)[-1], media_bytes(media), media.content_type)
                },
            )
            media_ids.append(str((body.get("data") or {})["id"]))
        payload: dict[str, Any] = {"text": request.text}
        if media_ids:
            payload["media"] = {"media_ids": media_ids}
        body = self.send_json(
            "POST",
            "/2/tweets",
            self.classify,
            idempotent=False,
            json=payload,
            headers=self._auth(request.account),
        )
        tweet_id = str(body["data"]["id"])
        return self.published(tweet_id, f"https://x.com/i/web/status/{tweet_id}")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """The account's tweets since then with the same normalised text (X has no marker)."""
        posts = self.list_posts(request.account, since - SKEW)
        return first_match(
            request,
            since,
            ((self.published(p.external_id, p.url, p.published_at), p.text, None) for p in posts),
        )

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """GET /2/users/:id/mentions (replies to us are comments) and GET /2/dm_events."""
        token: str | None = None
        while True:
            params: dict[str, Any] = {
                "max_results": 100,
                "tweet.fields": "created_at,author_id,conversation_id,referenced_tweets",
                "expansions": "author_id",
            }
            if since is not None:
                params["start_time"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if token:
                params["pagination_token"] = token
            body = self._get(f"/2/users/{account.external_id}/mentions", account, params)
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
            token = (body.get("meta") or {}).get("next_token")
            if not token:
                break
        token = None
        while True:
            params = {
                "max_results": 100,
                "event_types": "MessageCreate",
                "dm_event.fields": "id,text,sender_id,dm_conversation_id,created_at",
                "expansions": "sender_id",
            }
            if token:
                params["pagination_token"] = token
            body = self._get("/2/dm_events", account, params)
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
            token = (body.get("meta") or {}).get("next_token")
            if not token:
                return

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """A DM conversation ("a-b") gets a DM; a tweet gets a reply tweet."""
        if "-" in conversation:
            body = self.send_json(
                "POST",
                f"/2/dm_conversations/{conversation}/messages",
                self.classify,
                idempotent=False,
                json={"text": text},
                headers=self._auth(account),
            )
            return self.published(str(body["data"]["dm_event_id"]), None)
        body = self.send_json(
            "POST",
            "/2/tweets",
            self.classify,
            idempotent=False,
            json={"text": text, "reply": {"in_reply_to_tweet_id": conversation}},
            headers=self._auth(account),
        )
        tweet_id = str(body["data"]["id"])
        return self.published(tweet_id, f"https://x.com/i/web/status/{tweet_id}")


# ---- Graph API: Instagram, Facebook, Threads ------------------------------------------------


class GraphPublishing(Publishing, InstagramConnector):
    """Containers, status polling and comment/DM reads shared by the Graph-shaped platforms."""

    def _call(
        self,
        method: str,
        path: str,
        account: AccountRef,
        params: dict[str, Any],
        *,
        idempotent: bool,
        json: Any = None,
    ) -> Any:
        token = self.token_for(account)
        query = {**params, "access_token": token} if token else params
        return self.send_json(
            method, path, self.classify, idempotent=idempotent, params=query, json=json
        )

    def _wait_ready(self, account: AccountRef, container: str, field: str = "status_code") -> None:
        """Poll a container until the platform has processed its media."""
        for _ in range(POLLS):
            body = self._call("GET", f"/{container}", account, {"fields": field}, idempotent=True)
            status = str(body.get(field) or body.get("status") or "")
            if status in ("FINISHED", "PUBLISHED"):
                return
            if status in ("ERROR", "EXPIRED"):
                raise PermanentError(f"media processing failed: {status}", code=status)
            self.http.sleep(POLL_SECONDS)
        raise TransientError("media still processing", code="processing")

    def _own_posts(
        self, account: AccountRef, edge: str, since: datetime, *, time: str, link: str, text: str
    ) -> Iterator[tuple[Published, str | None]]:
        """The account's posts on a Graph edge, newest first, until one older than ``since``."""
        params = {"fields": f"id,{text},{time},{link}", "limit": 50}
        for post in self._edge(f"/{account.external_id}/{edge}", account, params):
            at = parse_time(post[time])
            if at < since:
                return
            yield self.published(str(post["id"]), post.get(link), at), post.get(text)

    def _comments(self, account: AccountRef, media_id: str, edge: str) -> Iterator[dict[str, Any]]:
        body = self._call(
            "GET",
            f"/{media_id}/{edge}",
            account,
            {"fields": "id,text,message,timestamp,created_time,username,from"},
            idempotent=True,
        )
        yield from body.get("data") or []

    def _comment_conversation(self, item: dict[str, Any], post_id: str) -> Conversation:
        sender = item.get("from") or {}
        return Conversation(
            platform=self.platform,
            external_id=str(item["id"]),
            kind="comment",
            author_handle=str(
                item.get("username") or sender.get("username") or sender.get("id") or ""
            ),
            author_name=sender.get("name"),
            text=str(item.get("text") or item.get("message") or ""),
            message_external_id=str(item["id"]),
            received_at=parse_time(item.get("timestamp") or item["created_time"]),
            post_external_id=post_id,
        )

    def _dms(
        self, account: AccountRef, since: datetime | None, platform: str | None
    ) -> Iterator[Conversation]:
        params = {"fields": "participants,updated_time,messages{id,message,from,created_time}"}
        if platform:
            params["platform"] = platform
        body = self._call(
            "GET", f"/{account.external_id}/conversations", account, params, idempotent=True
        )
        for conversation in body.get("data") or []:
            for message in (conversation.get("messages") or {}).get("data") or []:
                sender = message.get("from") or {}
                if str(sender.get("id")) == account.external_id:
                    continue
                at = parse_time(message["created_time"])
                if since is not None and at <= since:
                    continue
                yield Conversation(
                    platform=self.platform,
                    external_id=str(conversation["id"]),
                    kind="dm",
                    author_handle=str(
                        sender.get("username") or sender.get("name") or sender.get("id")
                    ),
                    author_name=sender.get("name"),
                    text=str(message.get("message") or ""),
                    message_external_id=str(message["id"]),
                    received_at=at,
                )

    def _dm_reply(
        self, account: AccountRef, conversation: str, text: str, extra: dict[str, Any]
    ) -> Published:
        """GET the conversation's participants, then POST /{id}/messages to the other one."""
        body = self._call(
            "GET", f"/{conversation}", account, {"fields": "participants"}, idempotent=True
        )
        others = [
            p
            for p in (body.get("participants") or {}).get("data") or []
            if str(p.get("id")) != account.external_id
        ]
        if not others:
            raise PermanentError(f"conversation {conversation} has no other participant")
        sent = self._call(
            "POST",
            f"/{account.external_id}/messages",
            account,
            {},
            idempotent=False,
            json={"recipient": {"id": others[0]["id"]}, "message": {"text": text}, **extra},
        )
        return self.published(str(sent.get("message_id")), None)


class InstagramPublisher(GraphPublishing):
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
        body = self._call(
            "POST",
            f"/{account.external_id}/media_publish",
            account,
            {"creation_id": container},
            idempotent=False,
        )
        return self.published(str(body["id"]), None)

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """The account's media since then with the same normalised caption."""
        posts = self.list_posts(request.account, since - SKEW)
        return first_match(
            request,
            since,
            ((self.published(p.external_id, p.url, p.published_at), p.text, None) for p in posts),
        )

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments on the last week's media (/{media-id}/comments) and DMs (/conversations)."""
        for post in self.list_posts(account, _since(since, self.now())):
            for item in self._comments(account, post.external_id, "comments"):
                found = self._comment_conversation(item, post.external_id)
                if since is None or found.received_at > since:
                    yield found
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


class FacebookPublisher(GraphPublishing):
    """Facebook Pages: POST /{page-id}/feed, /photos, /videos; comments and conversations."""

    platform = "facebook"

    def publish(self, request: PublishRequest) -> Published:
        """Text/link to /feed; one photo to /photos; a video to /videos; several photos are
        uploaded unpublished and attached to one /feed post."""
        page, account = request.account.external_id, request.account
        images = [m for m in request.media if m.kind == "image"]
        videos = [m for m in request.media if m.kind == "video"]
        if videos:
            body = self._call(
                "POST",
                f"/{page}/videos",
                account,
                {"file_url": media_url(videos[0]), "description": request.text},
                idempotent=False,
            )
            post_id = str(body.get("post_id") or body["id"])
        elif len(images) == 1:
            body = self._call(
                "POST",
                f"/{page}/photos",
                account,
                {"url": media_url(images[0]), "caption": request.text},
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

    def _page_posts(
        self, account: AccountRef, since: datetime
    ) -> Iterator[tuple[Published, str | None]]:
        return self._own_posts(
            account, "posts", since, time="created_time", link="permalink_url", text="message"
        )

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """GET /{page-id}/posts since then, matching the normalised message."""
        posts = self._page_posts(request.account, since - SKEW)
        return first_match(request, since, ((p, text, None) for p, text in posts))

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments on the last week's posts (/{post-id}/comments) and Page conversations."""
        for post, _text in self._page_posts(account, _since(since, self.now())):
            for item in self._comments(account, post.external_id, "comments"):
                found = self._comment_conversation(item, post.external_id)
                if since is None or found.received_at > since:
                    yield found
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


class ThreadsPublisher(GraphPublishing):
    """Threads: POST /{threads-user-id}/threads (a container) then /threads_publish."""

    platform = "threads"

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

    def _publish_container(self, account: AccountRef, container: str) -> Published:
        body = self._call(
            "POST",
            f"/{account.external_id}/threads_publish",
            account,
            {"creation_id": container},
            idempotent=False,
        )
        return self.published(str(body["id"]), None)

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
        done = self._publish_container(account, container)
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

    def _threads(
        self, account: AccountRef, since: datetime
    ) -> Iterator[tuple[Published, str | None]]:
        return self._own_posts(
            account, "threads", since, time="timestamp", link="permalink", text="text"
        )

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """GET /{threads-user-id}/threads since then, matching the normalised text."""
        posts = self._threads(request.account, since - SKEW)
        return first_match(request, since, ((p, text, None) for p, text in posts))

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Replies to the last week's threads (GET /{media-id}/replies); Threads has no DMs."""
        for post, _text in self._threads(account, _since(since, self.now())):
            for item in self._comments(account, post.external_id, "replies"):
                found = self._comment_conversation(item, post.external_id)
                if since is None or found.received_at > since:
                    yield found

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """A TEXT container with reply_to_id, then threads_publish."""
        container = self._create(
            account, {"media_type": "TEXT", "text": text, "reply_to_id": conversation}
        )
        return self._publish_container(account, container)


# ---- LinkedIn -------------------------------------------------------------------------------


def _restli(value: str) -> str:
    return quote(value, safe="")


class LinkedInPublisher(Publishing, LinkedInConnector):
    """POST /rest/posts (the id comes back in x-restli-id); images via /rest/images uploads."""

    def _upload(self, account: AccountRef, media: MediaFile) -> str:
        kind = "videos" if media.kind == "video" else "images"
        owner = org_urn(account.external_id)
        body = self.send_json(
            "POST",
            f"/rest/{kind}",
            self.classify,
            idempotent=True,
            params={"action": "initializeUpload"},
            json={"initializeUploadRequest": {"owner": owner}},
            headers=self._headers(account),
        )
        value = body.get("value") or {}
        self.send(
            "PUT",
            str(value["uploadUrl"]),
            self.classify,
            idempotent=True,
            content=media_bytes(media),
            headers={"Authorization": self._headers(account).get("Authorization", "")},
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
        response = self.send(
            "POST",
            "/rest/posts",
            self.classify,
            idempotent=False,
            json=payload,
            headers=self._headers(account),
        )
        urn = response.headers.get("x-restli-id")
        if not urn:
            raise TransientError("LinkedIn created the post but sent no x-restli-id", code="no_id")
        return self.published(urn, f"https://www.linkedin.com/feed/update/{urn}/")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """GET /rest/posts?q=author since then, matching the normalised commentary."""
        posts = self.list_posts(request.account, since - SKEW)
        return first_match(
            request,
            since,
            ((self.published(p.external_id, p.url, p.published_at), p.text, None) for p in posts),
        )

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """GET /rest/socialActions/{post-urn}/comments for the last week's posts."""
        for post in self.list_posts(account, _since(since, self.now())):
            body = self._get(
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
        response = self.send(
            "POST",
            f"/rest/socialActions/{_restli(target)}/comments",
            self.classify,
            idempotent=False,
            headers=self._headers(account),
            json={
                "actor": org_urn(account.external_id),
                "object": target,
                "parentComment": conversation,
                "message": {"text": text},
            },
        )
        return self.published(str(response.headers.get("x-restli-id") or ""), None)


# ---- TikTok ---------------------------------------------------------------------------------


class TikTokPublisher(Publishing, TikTokConnector):
    """Content Posting API: POST /v2/post/publish/video/init/ then status/fetch until done."""

    def publish(self, request: PublishRequest) -> Published:
        """Direct post of a video (or photos); FILE_UPLOAD for local files, PULL_FROM_URL for
        URLs; the init call is the commit, so it is not retried after it may have landed."""
        account = request.account
        videos = [m for m in request.media if m.kind == "video"]
        images = [m for m in request.media if m.kind == "image"]
        if not videos and not images:
            raise PermanentError("TikTok posts need a video or photos", code="media_required")
        info: dict[str, Any] = {
            "title": request.text,
            "privacy_level": str(request.options.get("privacy_level") or "PUBLIC_TO_EVERYONE"),
            "disable_comment": False,
        }
        headers = {**self._headers(account), "Content-Type": "application/json; charset=UTF-8"}
        upload: bytes | None = None
        if videos:
            video = videos[0]
            if video.path.startswith(("http://", "https://")):
                source: dict[str, Any] = {"source": "PULL_FROM_URL", "video_url": video.path}
            else:
                upload = media_bytes(video)
                source = {
                    "source": "FILE_UPLOAD",
                    "video_size": len(upload),
                    "chunk_size": len(upload),
                    "total_chunk_count": 1,
                }
            path = "/v2/post/publish/video/init/"
            payload: dict[str, Any] = {"post_info": info, "source_info": source}
        else:
            path = "/v2/post/publish/content/init/"
            payload = {
                "post_info": {**info, "description": request.text},
                "source_info": {
                    "source": "PULL_FROM_URL",
                    "photo_images": [media_url(m) for m in images],
                    "photo_cover_index": 0,
                },
                "post_mode": "DIRECT_POST",
                "media_type": "PHOTO",
            }
        data = (
            self.send_json(
                "POST", path, self.classify, idempotent=False, json=payload, headers=headers
            )
        ).get("data") or {}
        publish_id = str(data["publish_id"])
        if upload is not None and data.get("upload_url"):
            self.send(
                "PUT",
                str(data["upload_url"]),
                self.classify,
                idempotent=True,
                content=upload,
                headers={
                    "Content-Type": videos[0].content_type,
                    "Content-Range": f"bytes 0-{len(upload) - 1}/{len(upload)}",
                },
            )
        for _ in range(POLLS):
            status = (
                self.send_json(
                    "POST",
                    "/v2/post/publish/status/fetch/",
                    self.classify,
                    idempotent=True,
                    json={"publish_id": publish_id},
                    headers=headers,
                ).get("data")
                or {}
            )
            state = status.get("status")
            if state == "PUBLISH_COMPLETE":
                ids = status.get("publicaly_available_post_id") or []  # sic: TikTok's spelling
                video_id = str(ids[0]) if ids else publish_id
                return self.published(
                    video_id, f"https://www.tiktok.com/@{account.handle}/video/{video_id}"
                )
            if state == "FAILED":
                raise PermanentError(
                    str(status.get("fail_reason") or "publish failed"), code="FAILED"
                )
            self.http.sleep(POLL_SECONDS)
        raise TransientError(f"TikTok is still processing {publish_id}", code="processing")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """POST /v2/video/list/ since then, matching the normalised title/description."""
        posts = self.list_posts(request.account, since - SKEW)
        return first_match(
            request,
            since,
            ((self.published(p.external_id, p.url, p.published_at), p.text, None) for p in posts),
        )


# ---- YouTube --------------------------------------------------------------------------------


class YouTubePublisher(Publishing, YouTubeConnector):
    """videos.insert as a resumable upload: POST the metadata, then PUT the bytes."""

    def _headers_for(self, account: AccountRef) -> dict[str, str]:
        return self._auth(account)[1]

    def publish(self, request: PublishRequest) -> Published:
        """The session POST is harmless to repeat; the PUT that completes it is the commit.
        The client_ref rides in the video's tags (visible to the owner only)."""
        videos = [m for m in request.media if m.kind == "video"]
        if not videos:
            raise PermanentError("YouTube needs a video", code="media_required")
        data = media_bytes(videos[0])
        title = str(
            request.options.get("title") or request.text.splitlines()[0]
            if request.text
            else "Video"
        )
        title = title.replace("<", "").replace(">", "")[:100] or "Video"
        extra = request.options.get("tags")
        tags = [marker(request), *([str(t) for t in extra] if isinstance(extra, list) else [])]
        headers = self._headers_for(request.account)
        session = self.send(
            "POST",
            "/upload/youtube/v3/videos",
            self.classify,
            idempotent=True,
            params={"uploadType": "resumable", "part": "snippet,status"},
            json={
                "snippet": {
                    "title": title,
                    "description": request.text,
                    "tags": tags,
                    "categoryId": str(request.options.get("category_id") or "22"),
                },
                "status": {
                    "privacyStatus": str(request.options.get("privacy") or "public"),
                    "selfDeclaredMadeForKids": False,
                },
            },
            headers={
                **headers,
                "X-Upload-Content-Type": videos[0].content_type,
                "X-Upload-Content-Length": str(len(data)),
            },
        )
        location = session.headers.get("location")
        if not location:
            raise TransientError("YouTube opened no upload session", code="no_location")
        body = (
            json_body(
                self.send(
                    "PUT",
                    location,
                    self.classify,
                    idempotent=False,
                    content=data,
                    headers={**headers, "Content-Type": videos[0].content_type},
                )
            )
            or {}
        )
        video_id = str(body["id"])
        return self.published(video_id, f"https://www.youtube.com/watch?v={video_id}")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """Uploads since then; videos.list(part=snippet) for their tags: our marker decides
        where a video has one, else the normalised description."""
        posts = list(self.list_posts(request.account, since - SKEW))
        candidates = []
        for batch in chunks([p.external_id for p in posts], 50):
            body = self._get(
                "/youtube/v3/videos", request.account, {"part": "snippet", "id": ",".join(batch)}
            )
            for item in body.get("items") or []:
                snippet = item.get("snippet") or {}
                marks = [t for t in snippet.get("tags") or [] if str(t).startswith(MARKER_PREFIX)]
                at = parse_time(snippet["publishedAt"])
                candidates.append(
                    (
                        self.published(
                            item["id"], f"https://www.youtube.com/watch?v={item['id']}", at
                        ),
                        snippet.get("description"),
                        marks[0] if marks else None,
                    )
                )
        return first_match(request, since, candidates)

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """commentThreads.list(allThreadsRelatedToChannelId), newest first."""
        token: str | None = None
        while True:
            params: dict[str, Any] = {
                "part": "snippet",
                "allThreadsRelatedToChannelId": account.external_id,
                "maxResults": 100,
                "order": "time",
            }
            if token:
                params["pageToken"] = token
            body = self._get("/youtube/v3/commentThreads", account, params)
            for item in body.get("items") or []:
                top = (item.get("snippet") or {}).get("topLevelComment") or {}
                snippet = top.get("snippet") or {}
                at = parse_time(snippet["publishedAt"])
                if since is not None and at <= since:
                    return
                yield Conversation(
                    platform=self.platform,
                    external_id=str(item["id"]),
                    kind="comment",
                    author_handle=str((snippet.get("authorChannelId") or {}).get("value") or ""),
                    author_name=snippet.get("authorDisplayName"),
                    text=str(snippet.get("textOriginal") or snippet.get("textDisplay") or ""),
                    message_external_id=str(top.get("id") or item["id"]),
                    received_at=at,
                    post_external_id=(item.get("snippet") or {}).get("videoId"),
                )
            token = body.get("nextPageToken")
            if not token:
                return

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """comments.insert(part=snippet) with parentId: the thread's top-level comment."""
        query, headers = self._auth(account)
        body = self.send_json(
            "POST",
            "/youtube/v3/comments",
            self.classify,
            idempotent=False,
            params={"part": "snippet", **query},
            headers=headers,
            json={"snippet": {"parentId": conversation, "textOriginal": text}},
        )
        return self.published(str(body["id"]), None)


# ---- Bluesky --------------------------------------------------------------------------------

LINK = re.compile(rb"https?://[^\s]+")
TAG = re.compile(rb"(?<![\w&])#(\w{1,64})")
MARKER_FIELD = "murmurRef"  # an extra record field: AT Protocol keeps unknown fields


def facets(text: str) -> list[dict[str, Any]]:
    """Rich-text facets for links and hashtags, indexed in UTF-8 bytes as the lexicon says."""
    raw = text.encode()
    out: list[dict[str, Any]] = []
    for match in LINK.finditer(raw):
        uri = match.group(0).rstrip(b".,;:!?)").decode()
        end = match.start() + len(uri.encode())
        out.append(
            {
                "index": {"byteStart": match.start(), "byteEnd": end},
                "features": [{"$type": "app.bsky.richtext.facet#link", "uri": uri}],
            }
        )
    for match in TAG.finditer(raw):
        out.append(
            {
                "index": {"byteStart": match.start(), "byteEnd": match.end()},
                "features": [
                    {"$type": "app.bsky.richtext.facet#tag", "tag": match.group(1).decode()}
                ],
            }
        )
    return out


class BlueskyPublisher(Publishing, BlueskyConnector):
    """createSession (the account's app password), uploadBlob, createRecord app.bsky.feed.post."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sessions: dict[str, tuple[str, str]] = {}  # account → (did, accessJwt)

    def session(self, account: AccountRef, *, fresh: bool = False) -> tuple[str, str]:
        """com.atproto.server.createSession, cached per account."""
        if not fresh and account.external_id in self.sessions:
            return self.sessions[account.external_id]
        body = self.send_json(
            "POST",
            "/xrpc/com.atproto.server.createSession",
            self.classify,
            idempotent=True,
            json={
                "identifier": account.handle or account.external_id,
                "password": self.token_for(account) or "",
            },
        )
        self.sessions[account.external_id] = (str(body["did"]), str(body["accessJwt"]))
        return self.sessions[account.external_id]

    def _bearer(self, account: AccountRef) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.session(account)[1]}"}

    def _create(self, account: AccountRef, record: dict[str, Any]) -> dict[str, Any]:
        did, _jwt = self.session(account)
        try:
            return dict(
                self.send_json(
                    "POST",
                    "/xrpc/com.atproto.repo.createRecord",
                    self.classify,
                    idempotent=False,
                    json={"repo": did, "collection": "app.bsky.feed.post", "record": record},
                    headers=self._bearer(account),
                )
            )
        except AuthExpiredError:
            self.sessions.pop(account.external_id, None)  # the next call logs in again
            raise

    def publish(self, request: PublishRequest) -> Published:
        """Blobs first (uploadBlob), then one createRecord carrying the client_ref."""
        account = request.account
        record: dict[str, Any] = {
            "$type": "app.bsky.feed.post",
            "text": request.text,
            "createdAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "langs": [str(request.options.get("lang") or "en")],
            MARKER_FIELD: marker(request),
        }
        found = facets(request.text)
        if found:
            record["facets"] = found
        blobs = []
        for media in request.media:
            body = self.send_json(
                "POST",
                "/xrpc/com.atproto.repo.uploadBlob",
                self.classify,
                idempotent=True,
                content=media_bytes(media),
                headers={**self._bearer(account), "Content-Type": media.content_type},
            )
            blobs.append((media, body["blob"]))
        videos = [b for m, b in blobs if m.kind == "video"]
        if videos:
            record["embed"] = {"$type": "app.bsky.embed.video", "video": videos[0]}
        elif blobs:
            record["embed"] = {
                "$type": "app.bsky.embed.images",
                "images": [{"alt": m.alt_text or "", "image": b} for m, b in blobs[:4]],
            }
        body = self._create(account, record)
        uri = str(body["uri"])
        return self.published(
            uri, f"https://bsky.app/profile/{account.handle}/post/{uri.rsplit('/', 1)[-1]}"
        )

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """getAuthorFeed since then: the record's murmurRef decides, else the normalised text."""
        actor = self._actor(request.account)
        cursor: str | None = None
        candidates = []
        while True:
            params: dict[str, Any] = {"actor": actor, "limit": 100, "filter": "posts_no_replies"}
            if cursor:
                params["cursor"] = cursor
            body = self._get("app.bsky.feed.getAuthorFeed", request.account, params)
            older = False
            for item in body.get("feed") or []:
                post = item.get("post") or {}
                record = post.get("record") or {}
                at = parse_time(record.get("createdAt") or post["indexedAt"])
                if at < since - SKEW:
                    older = True
                    break
                mark = record.get(MARKER_FIELD)
                candidates.append(
                    (
                        self.published(post["uri"], None, at),
                        record.get("text"),
                        str(mark) if mark else None,
                    )
                )
            cursor = body.get("cursor")
            if older or not cursor or not body.get("feed"):
                break
        return first_match(request, since, candidates)

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """app.bsky.notification.listNotifications: replies (comments) and mentions."""
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if cursor:
                params["cursor"] = cursor
            body = self.get(
                "/xrpc/app.bsky.notification.listNotifications",
                self.classify,
                params,
                self._bearer(account),
            )
            for note in body.get("notifications") or []:
                reason = note.get("reason")
                record = note.get("record") or {}
                at = parse_time(record.get("createdAt") or note["indexedAt"])
                if since is not None and at <= since:
                    return
                if reason not in ("reply", "mention", "quote"):
                    continue
                author = note.get("author") or {}
                parent = ((record.get("reply") or {}).get("parent") or {}).get("uri")
                yield Conversation(
                    platform=self.platform,
                    external_id=str(note["uri"]),
                    kind="comment" if reason == "reply" else "mention",
                    author_handle=str(author.get("handle") or author.get("did")),
                    author_name=author.get("displayName"),
                    text=str(record.get("text") or ""),
                    message_external_id=str(note["uri"]),
                    received_at=at,
                    post_external_id=parent or note.get("reasonSubject"),
                )
            cursor = body.get("cursor")
            if not cursor or not body.get("notifications"):
                return

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """getRecord for the parent's cid and root, then createRecord with reply refs."""
        repo, collection, rkey = conversation.removeprefix("at://").split("/", 2)
        body = self.get(
            "/xrpc/com.atproto.repo.getRecord",
            self.classify,
            {"repo": repo, "collection": collection, "rkey": rkey},
        )
        parent = {"uri": body["uri"], "cid": body["cid"]}
        root = ((body.get("value") or {}).get("reply") or {}).get("root") or parent
        record: dict[str, Any] = {
            "$type": "app.bsky.feed.post",
            "text": text,
            "createdAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
            "reply": {"root": root, "parent": parent},
            MARKER_FIELD: f"{MARKER_PREFIX}{client_ref}",
        }
        found = facets(text)
        if found:
            record["facets"] = found
        created = self._create(account, record)
        return self.published(str(created["uri"]), None)


# ---- Pinterest ------------------------------------------------------------------------------


class PinterestPublisher(Publishing, PinterestConnector):
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
            boards = self.send_json(
                "GET", "/v5/boards", self.classify, idempotent=True, headers=self._headers(account)
            )
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
        body = self.send_json(
            "POST",
            "/v5/pins",
            self.classify,
            idempotent=False,
            json=payload,
            headers=self._headers(account),
        )
        pin = str(body["id"])
        return self.published(pin, f"https://www.pinterest.com/pin/{pin}/")

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """GET /v5/pins since then: the note's marker decides, else the normalised description."""
        bookmark: str | None = None
        candidates = []
        while True:
            params: dict[str, Any] = {"page_size": 100}
            if bookmark:
                params["bookmark"] = bookmark
            body = self.send_json(
                "GET",
                "/v5/pins",
                self.classify,
                idempotent=True,
                params=params,
                headers=self._headers(request.account),
            )
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
            bookmark = body.get("bookmark")
            if older or not bookmark:
                break
        return first_match(request, since, candidates)


PUBLISHERS: dict[str, type[Publishing]] = {
    "x": XPublisher,
    "instagram": InstagramPublisher,
    "facebook": FacebookPublisher,
    "linkedin": LinkedInPublisher,
    "tiktok": TikTokPublisher,
    "youtube": YouTubePublisher,
    "threads": ThreadsPublisher,
    "bluesky": BlueskyPublisher,
    "pinterest": PinterestPublisher,
}
