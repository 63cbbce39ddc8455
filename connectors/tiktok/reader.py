"""TikTok API v2: Display API for connected accounts, Research API for public accounts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import httpx

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    AuthExpiredError,
    ConnectorError,
    EngagementSnapshot,
    NotFoundError,
    PermanentError,
    PostRecord,
    RateLimitedError,
    TransientError,
)
from connectors.http import (
    HttpConnector,
    ProfileFields,
    as_int,
    chunks,
    error_for_status,
    json_body,
    parse_time,
)

BATCH = 20  # video/query takes at most 20 ids
RESEARCH_BATCH = 100
RESEARCH_DAYS = 30  # the Research API answers at most 30 days per query
USER_FIELDS = (
    "open_id,union_id,display_name,username,avatar_url,follower_count,following_count,video_count"
)
RESEARCH_USER_FIELDS = "display_name,avatar_url,follower_count,following_count,video_count"
# The Research API's videos have no cover: only the Display API's (own accounts) give one.
VIDEO_FIELDS = "id,create_time,title,video_description,share_url,duration,cover_image_url"
METRIC_FIELDS = "id,like_count,comment_count,share_count,view_count"
RESEARCH_VIDEO_FIELDS = (
    "id,create_time,username,video_description,hashtag_names,"
    "view_count,like_count,comment_count,share_count"
)
PROFILE = ProfileFields(
    "username", "display_name", "follower_count", "following_count", "video_count", "avatar_url"
)
TRANSIENT_CODES = ("internal_error", "server_error")


class TikTokConnector(HttpConnector):
    """Own accounts through the Display API (user token); others through the Research API."""

    platform = "tiktok"

    def classify(self, response: httpx.Response) -> ConnectorError | None:
        """TikTok's envelope decides, not the status: error.code "ok" is success even on 200."""
        body = json_body(response)
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return error_for_status(response)
        code = str(error.get("code") or "")
        if code == "ok":
            return None
        message = f"{error.get('message') or code} (log_id {error.get('log_id')})"
        status = response.status_code
        if code == "access_token_invalid":
            return AuthExpiredError(message, status=status, code=code)
        if code == "rate_limit_exceeded" or status == 429:
            retry = self.http.retry_after(response)
            return RateLimitedError(message, retry_after=retry, status=status, code=code)
        if code in TRANSIENT_CODES or status >= 500:
            return TransientError(message, status=status, code=code)
        if status == 404 or "does not exist" in message or "not found" in message:
            return NotFoundError(message, status=status, code=code)
        return PermanentError(message, status=status, code=code)

    def _post(self, path: str, account: AccountRef | None, fields: str, body: Any) -> Any:
        data = self.post(path, self.classify, body, {"fields": fields}, self.headers_for(account))
        return data.get("data") or {}

    def _window(self, since: datetime | None) -> dict[str, str]:
        end = self.server_time  # the platform's clock as of the last response
        start = end - timedelta(days=RESEARCH_DAYS - 1)
        if since is not None and since > start:
            start = since
        return {"start_date": start.strftime("%Y%m%d"), "end_date": end.strftime("%Y%m%d")}

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /v2/user/info/ for a connected account; POST /v2/research/user/info/ otherwise."""
        if account.kind == "own":
            body = self.get(
                "/v2/user/info/", self.classify, {"fields": USER_FIELDS}, self.headers_for(account)
            )
            user = (body.get("data") or {}).get("user") or {}
            external_id = str(user.get("open_id") or account.external_id)
        else:
            user = self._post(
                "/v2/research/user/info/",
                account,
                RESEARCH_USER_FIELDS,
                {"username": account.handle},
            )
            external_id = account.external_id
        return self.profile_snapshot(account, external_id, user, PROFILE)

    def _record(self, account: AccountRef, video: dict[str, Any]) -> PostRecord:
        text = video.get("video_description") or video.get("title")
        tags = tuple(t.lower() for t in video.get("hashtag_names") or [])
        return self.post_record(
            account,
            str(video["id"]),
            text,
            parse_time(int(video["create_time"])),
            hashtags=tags,
            media_type="video",
            url=video.get("share_url"),
            thumbnail_url=video.get("cover_image_url"),
        )

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """POST /v2/video/list/ (cursor, has_more) for own; research video query for others."""
        if account.kind != "own":
            query = {
                "and": [
                    {"operation": "EQ", "field_name": "username", "field_values": [account.handle]}
                ]
            }
            for video in self._research(account, query, since):
                yield self._record(account, video)
            return
        cursor: int | None = None
        while True:
            body: dict[str, Any] = {"max_count": 20}
            if cursor:
                body["cursor"] = cursor
            data = self._post("/v2/video/list/", account, VIDEO_FIELDS, body)
            for video in data.get("videos") or []:
                record = self._record(account, video)
                if since is not None and record.published_at < since:
                    return
                yield record
            cursor = as_int(data.get("cursor"))
            if not data.get("has_more") or not data.get("videos"):
                return

    def _research(
        self, account: AccountRef | None, query: dict[str, Any], since: datetime | None
    ) -> Iterator[dict[str, Any]]:
        cursor, search_id = 0, ""
        while True:
            body = {
                "query": query,
                "max_count": RESEARCH_BATCH,
                "cursor": cursor,
                "search_id": search_id,
                **self._window(since),
            }
            data = self._post("/v2/research/video/query/", account, RESEARCH_VIDEO_FIELDS, body)
            yield from data.get("videos") or []
            cursor = as_int(data.get("cursor")) or 0
            search_id = str(data.get("search_id") or "")
            if not data.get("has_more") or not data.get("videos"):
                return

    def _snapshot(self, video: dict[str, Any]) -> EngagementSnapshot:
        return self.engagement(
            str(video["id"]),
            views=as_int(video.get("view_count")),
            likes=as_int(video.get("like_count")),
            comments=as_int(video.get("comment_count")),
            shares=as_int(video.get("share_count")),
        )

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """POST /v2/video/query/ with filters.video_ids (20 a call); research query for others."""
        seen: set[str] = set()
        if account.kind == "own":
            for batch in chunks(external_ids, BATCH):
                data = self._post(
                    "/v2/video/query/", account, METRIC_FIELDS, {"filters": {"video_ids": batch}}
                )
                for video in data.get("videos") or []:
                    seen.add(str(video["id"]))
                    yield self._snapshot(video)
        else:
            for batch in chunks(external_ids, RESEARCH_BATCH):
                query = {
                    "and": [{"operation": "IN", "field_name": "video_id", "field_values": batch}]
                }
                for video in self._research(account, query, None):
                    seen.add(str(video["id"]))
                    yield self._snapshot(video)
        self.note_missing(external_ids, seen, "video not returned: deleted, private or too old")

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """Research video query by keyword; the authors of matching videos, most recent first."""
        condition = {"and": [{"operation": "IN", "field_name": "keyword", "field_values": [query]}]}
        seen: set[str] = set()
        for video in self._research(None, condition, None):
            username = str(video.get("username") or "")
            if username and username not in seen:
                seen.add(username)
                yield AccountRef(self.platform, username, username, kind="creator")
                if len(seen) >= limit:
                    return
