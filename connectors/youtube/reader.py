"""YouTube Data API v3: channels, the uploads playlist, video statistics, channel search."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    AuthExpiredError,
    ConnectorError,
    EngagementSnapshot,
    NotFoundError,
    PostRecord,
    RateLimitedError,
    TransientError,
)
from connectors.http import (
    HttpConnector,
    as_int,
    chunks,
    error_for_status,
    parse_time,
)

BATCH = 50  # videos.list takes at most 50 ids
QUOTA_REASONS = ("quotaExceeded", "dailyLimitExceeded")
RATE_REASONS = ("rateLimitExceeded", "userRateLimitExceeded")
PACIFIC = ZoneInfo("America/Los_Angeles")


def next_page_token(body: Any) -> Any:
    """The token of the page after ``body``, as Google's list methods give it."""
    return body.get("nextPageToken")


def thumbnail(snippet: dict[str, Any]) -> str | None:
    """The smallest picture of snippet.thumbnails (default, else medium, else high)."""
    found = snippet.get("thumbnails") or {}
    for size in ("default", "medium", "high"):
        url = (found.get(size) or {}).get("url") if isinstance(found, dict) else None
        if url:
            return str(url)
    return None


class YouTubeConnector(HttpConnector):
    """Reads channels and videos through the YouTube Data API v3."""

    platform = "youtube"

    def credentials(self, account: AccountRef | None) -> tuple[dict[str, str], dict[str, str]]:
        token = self.token_for(account)
        if not token:
            return {}, {}
        if token.startswith("AIza"):  # a Google API key goes in the query, OAuth in the header
            return {"key": token}, {}
        return {}, {"Authorization": f"Bearer {token}"}

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """Map Google's error body: quota and rate reasons, auth, not found, backend errors."""
        error = body.get("error")
        message, reason = None, None
        if isinstance(error, dict):
            message = error.get("message")
            reasons = [e.get("reason") for e in error.get("errors") or [] if isinstance(e, dict)]
            reason = reasons[0] if reasons else None
        status = response.status_code
        text = message or f"HTTP {status}"
        if reason in QUOTA_REASONS:
            # The daily quota resets at midnight Pacific time: waiting in-process is pointless.
            now = self.http.clock().astimezone(PACIFIC)
            midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
            wait = (midnight - now).total_seconds()
            return RateLimitedError(text, retry_after=wait, status=status, code=reason)
        if status == 429 or reason in RATE_REASONS:
            return self.rate_limited(response, text, reason)
        if status == 401 or reason == "authError":
            return AuthExpiredError(text, status=status, code=reason)
        if status == 404 or (reason or "").endswith("NotFound"):
            return NotFoundError(text, status=status, code=reason)
        if reason in ("backendError", "internalError"):
            return TransientError(text, status=status, code=reason)
        return error_for_status(response, text, reason)

    def read(self, path: str, account: AccountRef | None, params: dict[str, Any]) -> Any:
        query, headers = self.credentials(account)
        return self.get(path, self.classify, {**params, **query}, headers)

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """channels.list(part=snippet,statistics,topicDetails) for the channel id."""
        body = self.read(
            "/youtube/v3/channels",
            account,
            {"part": "snippet,statistics,topicDetails", "id": account.external_id},
        )
        items = body.get("items") or []
        if not items:
            raise NotFoundError(f"channel {account.external_id} not found", status=200)
        item = items[0]
        snippet, stats = item.get("snippet") or {}, item.get("statistics") or {}
        topics = (item.get("topicDetails") or {}).get("topicCategories") or []
        category = topics[0].rsplit("/", 1)[-1].replace("_", " ").lower() if topics else None
        custom = snippet.get("customUrl")
        hidden = stats.get("hiddenSubscriberCount")
        return self.account_snapshot(
            item["id"],
            custom or account.handle,
            snippet.get("title"),
            None if hidden else as_int(stats.get("subscriberCount")),
            None,  # channels do not follow in the API's sense
            as_int(stats.get("videoCount")),
            category=category,
            # A channel without a custom URL (@handle) still has its page by id.
            url=None if custom else f"https://www.youtube.com/channel/{item['id']}",
            thumbnail_url=thumbnail(snippet),
        )

    def _uploads(self, account: AccountRef) -> str:
        body = self.read(
            "/youtube/v3/channels", account, {"part": "contentDetails", "id": account.external_id}
        )
        items = body.get("items") or []
        if not items:
            raise NotFoundError(f"channel {account.external_id} not found", status=200)
        uploads: str = items[0]["contentDetails"]["relatedPlaylists"]["uploads"]
        return uploads

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """The uploads playlist (1 quota unit a page, unlike search's 100), newest first."""
        playlist = self._uploads(account)
        params = {"part": "snippet,contentDetails", "playlistId": playlist, "maxResults": 50}
        listing = self.read_pages(
            "/youtube/v3/playlistItems", account, params, "pageToken", next_page_token
        )
        for body in listing:
            for item in body.get("items") or []:
                details, snippet = item.get("contentDetails") or {}, item.get("snippet") or {}
                video_id = details.get("videoId") or snippet["resourceId"]["videoId"]
                published = parse_time(details.get("videoPublishedAt") or snippet["publishedAt"])
                if since is not None and published < since:
                    return  # the playlist is newest first: everything after is older
                text = "\n".join(filter(None, [snippet.get("title"), snippet.get("description")]))
                yield self.post_record(
                    account,
                    video_id,
                    text or None,
                    published,
                    media_type="video",
                    url=f"https://www.youtube.com/watch?v={video_id}",
                    thumbnail_url=thumbnail(snippet),
                )

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """videos.list(part=statistics) in batches of 50; absent videos are recorded as gone."""
        for batch in chunks(external_ids, BATCH):
            body = self.read(
                "/youtube/v3/videos", account, {"part": "statistics", "id": ",".join(batch)}
            )
            seen = set()
            for item in body.get("items") or []:
                stats = item.get("statistics") or {}
                seen.add(item["id"])
                yield self.engagement(
                    item["id"],
                    views=as_int(stats.get("viewCount")),
                    likes=as_int(stats.get("likeCount")),
                    comments=as_int(stats.get("commentCount")),
                )
            self.note_missing(batch, seen, "video not returned: deleted or private")

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """search.list(type=channel, q=query), following pages up to ``limit``."""
        token: str | None = None
        found = 0
        while found < limit:
            params: dict[str, Any] = {
                "part": "snippet",
                "type": "channel",
                "q": query,
                "maxResults": min(50, limit - found),
            }
            if token:
                params["pageToken"] = token
            body = self.read("/youtube/v3/search", None, params)
            for item in body.get("items") or []:
                snippet = item.get("snippet") or {}
                yield AccountRef(
                    platform=self.platform,
                    external_id=item["id"]["channelId"],
                    handle=snippet.get("channelTitle") or item["id"]["channelId"],
                    kind="creator",
                )
                found += 1
            token = next_page_token(body)
            if not token or not body.get("items"):
                return
