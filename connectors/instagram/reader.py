"""Instagram Graph API: the IG user node, its media edge, media insights, hashtag search."""

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
from connectors.graph.reader import IDS_PER_CALL, GraphConnector, insight_values
from connectors.http import (
    ProfileFields,
    chunks,
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

    def _batch_of(
        self, account: AccountRef, media_ids: list[str], metrics: Sequence[str]
    ) -> dict[str, dict[str, int]]:
        """GET /?ids=…&fields=insights.metric(…): the insights of the media the answer gives.

        Graph fails a multi-id call whole when one id is gone (#803) or one media refuses a
        metric (#100): then none is given here, and each is asked alone (``_metrics_of``).
        """
        if len(media_ids) < 2:
            return {}  # one media: its own /insights call costs the same
        params = {"ids": ",".join(media_ids), "fields": f"id,insights.metric({','.join(metrics)})"}
        try:
            body = self.read("/", account, params)
        except PermanentError as exc:
            if isinstance(exc, AuthExpiredError):
                raise
            return {}
        found: dict[str, dict[str, int]] = {}
        for media_id in media_ids:
            media = body.get(media_id) if isinstance(body, dict) else None
            if isinstance(media, dict) and isinstance(media.get("insights"), dict):
                found[media_id] = insight_values(media["insights"])
        return found

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """GET /?ids=…&fields=insights.metric(…), 50 media a call, reels (listed as videos)
        apart from the rest since they report other metrics; a media the batch did not give
        is asked alone (GET /{media-id}/insights), and gone media are recorded."""
        reels = [m for m in external_ids if m in self.reels]
        others = [m for m in external_ids if m not in self.reels]
        for group, metrics in ((others, METRICS), (reels, REEL_METRICS)):
            for batch in chunks(group, IDS_PER_CALL):
                given = self._batch_of(account, batch, metrics)
                for media_id in batch:
                    values = given.get(media_id)
                    if values is None:
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
