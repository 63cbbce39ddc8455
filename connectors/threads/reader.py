"""Threads over its Graph API: the profile, its threads, per-thread insights, keyword search."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    EngagementSnapshot,
    NotFoundError,
)
from connectors.graph.reader import GraphConnector
from connectors.http import ProfileFields

METRICS = ("views", "likes", "replies", "reposts", "quotes", "shares")
ACCOUNT_FIELDS = "id,username,name,followers_count,threads_profile_picture_url"
PROFILE = ProfileFields(
    "username", "name", "followers_count", thumbnail_url="threads_profile_picture_url"
)


class ThreadsConnector(GraphConnector):
    """Reads Threads profiles: followers, threads, and each thread's insights."""

    platform = "threads"
    POSTS = ("threads", "text", "timestamp", "permalink")
    PICTURES = ("thumbnail_url", "media_url")
    MEDIA_TYPES: ClassVar[dict[str, str]] = {
        "TEXT_POST": "text",
        "IMAGE": "image",
        "VIDEO": "video",
        "CAROUSEL_ALBUM": "carousel",
    }

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /{threads-user-id}?fields=id,username,name,followers_count,…picture_url."""
        body = self.read(f"/{account.external_id}", account, {"fields": ACCOUNT_FIELDS})
        return self.profile_snapshot(account, str(body["id"]), body, PROFILE)

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """GET /{threads-media-id}/insights per thread (the API has no batch)."""
        for media_id in external_ids:
            try:
                values = self._insights(account, media_id, METRICS)
            except NotFoundError as exc:
                self.note(media_id, exc, "not_found")
                continue
            shared = [values[m] for m in ("reposts", "quotes", "shares") if m in values]
            yield self.engagement(
                media_id,
                views=values.get("views"),
                likes=values.get("likes"),
                comments=values.get("replies"),
                shares=sum(shared) if shared else None,
            )

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """GET /keyword_search?q=…&search_type=TOP, then the owners of the threads found."""
        body = self.read(
            "/keyword_search",
            None,
            {"q": query, "search_type": "TOP", "fields": "id,username,owner", "limit": 25},
        )
        seen: set[str] = set()
        for item in body.get("data") or []:
            owner = str((item.get("owner") or {}).get("id") or "")
            if owner and owner not in seen:
                seen.add(owner)
                yield AccountRef(
                    self.platform, owner, str(item.get("username") or owner), kind="creator"
                )
                if len(seen) == limit:
                    return
