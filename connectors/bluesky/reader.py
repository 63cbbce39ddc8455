"""Bluesky over AT Protocol XRPC: profiles, author feeds, post views, actor search."""

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
    chunks,
    error_for_status,
    parse_time,
)

BATCH = 25  # getPosts takes at most 25 uris
AUTH_ERRORS = ("ExpiredToken", "InvalidToken", "AuthenticationRequired", "AuthMissing")
NOT_FOUND_ERRORS = ("NotFound", "ActorNotFound", "RecordNotFound")
PROFILE = ProfileFields(
    "handle", "displayName", "followersCount", "followsCount", "postsCount", "avatar"
)
EMBEDS = {
    "app.bsky.embed.images": "image",
    "app.bsky.embed.video": "video",
    "app.bsky.embed.external": "link",
}


def next_cursor(body: Any) -> Any:
    """The cursor of the page after ``body``, as XRPC lists give it."""
    return body.get("cursor")


def picture(embed: dict[str, Any]) -> str | None:
    """A post view's picture: its first image's thumb, a video's thumbnail, a link card's thumb."""
    images = embed.get("images") or []
    if images and isinstance(images[0], dict) and images[0].get("thumb"):
        return str(images[0]["thumb"])
    found = embed.get("thumbnail") or (embed.get("external") or {}).get("thumb")
    return str(found) if found else None


class BlueskyConnector(HttpConnector):
    """Reads public Bluesky accounts from an AppView (a session token is optional)."""

    platform = "bluesky"

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """Map XRPC's {error, message}: ExpiredToken and friends, rate limits, not found."""
        status = response.status_code
        name = str(body.get("error") or "") or None
        message = str(body.get("message") or name or f"HTTP {status}")
        if name in AUTH_ERRORS or status == 401:
            return AuthExpiredError(message, status=status, code=name)
        if status == 429:
            return self.rate_limited(response, message, name, reset_header="ratelimit-reset")
        if name in NOT_FOUND_ERRORS or "not found" in message.lower():
            return NotFoundError(message, status=status, code=name)
        return error_for_status(response, message, name)

    def read(self, path: str, account: AccountRef | None, params: Any) -> Any:
        """``path`` is an XRPC method's name, such as app.bsky.actor.getProfile."""
        return super().read(f"/xrpc/{path}", account, params)

    @staticmethod
    def actor(account: AccountRef) -> str:
        return account.external_id if account.external_id.startswith("did:") else account.handle

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """app.bsky.actor.getProfile?actor=…"""
        body = self.read("app.bsky.actor.getProfile", account, {"actor": self.actor(account)})
        return self.profile_snapshot(account, body["did"], body, PROFILE)

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """app.bsky.feed.getAuthorFeed (limit 100, cursor), skipping reposts of others' posts."""
        actor = self.actor(account)
        for body in self.author_feed(account):
            for item in body.get("feed") or []:
                post = item.get("post") or {}
                author = post.get("author") or {}
                if item.get("reason") or actor not in (author.get("did"), author.get("handle")):
                    continue  # a repost, or someone else's post in a thread
                record = post.get("record") or {}
                published = parse_time(record.get("createdAt") or post["indexedAt"])
                if since is not None and published < since:
                    return
                tags = tuple(
                    dict.fromkeys(
                        str(f["tag"]).lower()
                        for facet in record.get("facets") or []
                        for f in facet.get("features") or []
                        if f.get("$type") == "app.bsky.richtext.facet#tag"
                    )
                )
                view = post.get("embed") or {}
                embed = str(view.get("$type") or "").removesuffix("#view")
                rkey = post["uri"].rsplit("/", 1)[-1]
                handle = post.get("author", {}).get("handle") or account.handle
                yield self.post_record(
                    account,
                    post["uri"],
                    record.get("text"),
                    published,
                    hashtags=tags,
                    media_type=EMBEDS.get(embed, "text"),
                    url=f"https://bsky.app/profile/{handle}/post/{rkey}",
                    thumbnail_url=picture(view),
                )

    def author_feed(self, account: AccountRef) -> Iterator[Any]:
        """app.bsky.feed.getAuthorFeed's pages (100 posts each, newest first, no replies)."""
        params = {"actor": self.actor(account), "limit": 100, "filter": "posts_no_replies"}
        return self.read_pages(
            "app.bsky.feed.getAuthorFeed", account, params, "cursor", next_cursor, "feed"
        )

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """app.bsky.feed.getPosts?uris=…&uris=… (25 a call); absent posts were deleted."""
        for batch in chunks(external_ids, BATCH):
            body = self.read("app.bsky.feed.getPosts", account, [("uris", u) for u in batch])
            seen = set()
            for post in body.get("posts") or []:
                seen.add(post["uri"])
                reposts, quotes = as_int(post.get("repostCount")), as_int(post.get("quoteCount"))
                shares = (
                    None if reposts is None and quotes is None else ((reposts or 0) + (quotes or 0))
                )
                yield self.engagement(
                    post["uri"],
                    likes=as_int(post.get("likeCount")),
                    comments=as_int(post.get("replyCount")),
                    shares=shares,
                )
            self.note_missing(batch, seen, "post not returned: deleted")

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """app.bsky.actor.searchActors?q=…, following the cursor up to ``limit``."""
        cursor: str | None = None
        found = 0
        while found < limit:
            params: dict[str, Any] = {"q": query, "limit": min(100, limit - found)}
            if cursor:
                params["cursor"] = cursor
            body = self.read("app.bsky.actor.searchActors", None, params)
            for actor in body.get("actors") or []:
                yield AccountRef(self.platform, actor["did"], actor["handle"], kind="creator")
                found += 1
            cursor = body.get("cursor")
            if not cursor or not body.get("actors"):
                return
