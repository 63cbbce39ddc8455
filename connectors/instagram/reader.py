"""Instagram Graph API: the IG user node, its media edge, per-media insights, hashtag search."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    AuthExpiredError,
    EngagementSnapshot,
    NotFoundError,
    PermanentError,
    PostRecord,
)
from connectors.graph.reader import GraphConnector
from connectors.http import (
    ProfileFields,
    parse_time,
)

METRICS = ("impressions", "reach", "likes", "comments", "shares", "saved", "total_interactions")
# Reels report views, not impressions (Graph refuses impressions for them with #100).
REEL_METRICS = tuple("views" if m == "impressions" else m for m in METRICS)
MEDIA_TYPES = {"IMAGE": "image", "VIDEO": "video", "CAROUSEL_ALBUM": "carousel"}
PROFILE = ProfileFields(
    "username", "name", "followers_count", "follows_count", "media_count", "profile_picture_url"
)
ACCOUNT_FIELDS = "username,name,followers_count,follows_count,media_count,profile_picture_url"


def picture(media: dict[str, Any]) -> str | None:
    """A media's picture: a video's cover (thumbnail_url), else its image (media_url).

    A video's media_url is the video file itself, never a picture.
    """
    if media.get("thumbnail_url"):
        return str(media["thumbnail_url"])
    if media.get("media_url") and media.get("media_type") != "VIDEO":
        return str(media["media_url"])
    return None


class InstagramConnector(GraphConnector):
    """Reads an Instagram professional account through the Graph API (access_token in the query)."""

    platform = "instagram"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.user_id: str | None = None  # our IG user id, which hashtag search must name
        # Media listed as videos (reels): their insights are asked with REEL_METRICS.
        self.reels: set[str] = set()

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /{ig-user-id}?fields=username,name,…,media_count,profile_picture_url."""
        body = self.read(
            f"/{account.external_id}",
            account,
            {"fields": ACCOUNT_FIELDS},
        )
        if account.kind == "own":
            self.user_id = str(body["id"])
        return self.profile_snapshot(account, str(body["id"]), body, PROFILE)

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """GET /{ig-user-id}/media, following paging.cursors.after while paging.next exists."""
        params = {
            "fields": "id,caption,media_type,media_product_type,permalink,timestamp,"
            "media_url,thumbnail_url",
            "limit": 50,
        }
        for media in self.edge(f"/{account.external_id}/media", account, params):
            published = parse_time(media["timestamp"])
            if since is not None and published < since:
                return  # the edge is newest first
            caption = media.get("caption")
            if media.get("media_type") == "VIDEO" or media.get("media_product_type") == "REELS":
                self.reels.add(str(media["id"]))
            yield self.post_record(
                account,
                str(media["id"]),
                caption,
                published,
                media_type=MEDIA_TYPES.get(media.get("media_type", "")),
                url=media.get("permalink"),
                thumbnail_url=picture(media),
            )

    def _metrics_of(self, account: AccountRef, media_id: str) -> dict[str, int]:
        """All the metrics this media reports: a refused metric is dropped, not the media."""
        wanted = list(REEL_METRICS if media_id in self.reels else METRICS)
        while wanted:
            try:
                return self._insights(account, media_id, wanted)
            except NotFoundError:
                raise
            except PermanentError as exc:
                if isinstance(exc, AuthExpiredError) or exc.code != "100":
                    raise
                named = [m for m in wanted if m in str(exc)]
                if not named:
                    break  # the message does not say which: ask one metric at a time
                self.note(media_id, exc, f"metric_unavailable:{named[0]}")
                wanted.remove(named[0])
        values: dict[str, int] = {}
        for metric in wanted:
            try:
                values.update(self._insights(account, media_id, [metric]))
            except PermanentError as exc:
                if isinstance(exc, AuthExpiredError | NotFoundError) or exc.code != "100":
                    raise
                self.note(media_id, exc, f"metric_unavailable:{metric}")
        return values

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """GET /{media-id}/insights per media (the API has no batch); gone media are recorded."""
        for media_id in external_ids:
            try:
                values = self._metrics_of(account, media_id)
            except NotFoundError as exc:
                self.note(media_id, exc, "not_found")
                continue
            yield self.engagement(
                media_id,
                impressions=values.get("impressions"),
                reach=values.get("reach"),
                likes=values.get("likes"),
                comments=values.get("comments"),
                shares=values.get("shares"),
                saves=values.get("saved"),
                views=values.get("views"),
            )

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """ig_hashtag_search for the query as a hashtag, then the owners of its top media."""
        tag = query.lower().lstrip("#").replace(" ", "")
        params = {"user_id": self.user_id or "", "q": tag}
        found = self.read("/ig_hashtag_search", None, params).get("data") or []
        if not found:
            return
        body = self.read(
            f"/{found[0]['id']}/top_media",
            None,
            {"user_id": self.user_id or "", "fields": "id,username,owner,timestamp", "limit": 50},
        )
        seen: set[str] = set()
        for media in body.get("data") or []:
            owner = str((media.get("owner") or {}).get("id") or "")
            if not owner or owner in seen:
                continue
            seen.add(owner)
            yield AccountRef(self.platform, owner, media.get("username") or owner, kind="creator")
            if len(seen) >= limit:
                return
