"""X API v2: users by username, user timelines, tweet lookup with public metrics, user search."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from connectors.base import (
    AccountRef,
    AccountSnapshot,
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

BATCH = 100  # GET /2/tweets takes at most 100 ids
TWEET_FIELDS = "created_at,public_metrics,entities,attachments"
USER_FIELDS = "public_metrics,description,profile_image_url"
# A user's counters are in its public_metrics.
PROFILE = ProfileFields(
    "username", "name", "followers_count", "following_count", "tweet_count", "profile_image_url"
)
# A tweet's media come as includes.media, expanded from attachments.media_keys.
MEDIA_FIELDS = "type,url,preview_image_url"
MEDIA_TYPES = {"photo": "image", "video": "video", "animated_gif": "video"}
NOT_FOUND = "https://api.twitter.com/2/problems/resource-not-found"


def next_token(body: Any) -> Any:
    """The pagination token of the page after ``body`` (its meta.next_token)."""
    return (body.get("meta") or {}).get("next_token")


def _message(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    if body.get("detail") or body.get("title"):
        return str(body.get("detail") or body.get("title"))
    problems = body.get("errors") or []
    if problems and isinstance(problems[0], dict):
        first = problems[0]
        return str(first.get("detail") or first.get("message") or first)
    return None


class XConnector(HttpConnector):
    """Reads users and tweets through X API v2 with a Bearer token."""

    platform = "x"

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """Map X's problem bodies; 429 waits for Retry-After or x-rate-limit-reset."""
        message = _message(body)
        code = body.get("type")
        if response.status_code == 429:
            return self.rate_limited(
                response, message or "Too Many Requests", code, reset_header="x-rate-limit-reset"
            )
        return error_for_status(response, message, code)

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /2/users/by/username/:username (by id when there is no handle)."""
        if account.handle:
            path = f"/2/users/by/username/{account.handle.lstrip('@')}"
        else:
            path = f"/2/users/{account.external_id}"
        body = self.read(path, account, {"user.fields": USER_FIELDS})
        user = body.get("data")
        if not user:
            # X answers a missing user with HTTP 200 and only an errors list.
            raise NotFoundError(_message(body) or "user not found", status=200, code=NOT_FOUND)
        metrics = user.get("public_metrics") or {}
        return self.profile_snapshot(account, user["id"], user, PROFILE, metrics)

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """GET /2/users/:id/tweets, start_time=since, following meta.next_token."""
        params: dict[str, Any] = {
            "max_results": 100,
            "tweet.fields": TWEET_FIELDS,
            "expansions": "attachments.media_keys",
            "media.fields": MEDIA_FIELDS,
        }
        if since is not None:
            params["start_time"] = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        path = f"/2/users/{account.external_id}/tweets"
        for body in self.read_pages(path, account, params, "pagination_token", next_token):
            if "data" not in body and body.get("errors"):
                raise NotFoundError(_message(body) or "user not found", status=200)
            media = {
                str(m.get("media_key")): m
                for m in (body.get("includes") or {}).get("media") or []
                if isinstance(m, dict)
            }
            for tweet in body.get("data") or []:
                tags = tuple(
                    dict.fromkeys(
                        h["tag"].lower()
                        for h in (tweet.get("entities") or {}).get("hashtags") or []
                    )
                )
                keys = (tweet.get("attachments") or {}).get("media_keys") or []
                first = media.get(str(keys[0]), {}) if keys else {}
                yield self.post_record(
                    account,
                    tweet["id"],
                    tweet.get("text"),
                    parse_time(tweet["created_at"]),
                    hashtags=tags,
                    media_type=MEDIA_TYPES.get(str(first.get("type")), "image") if keys else "text",
                    url=f"https://x.com/i/web/status/{tweet['id']}",
                    # a photo's own url, a video's preview image
                    thumbnail_url=first.get("url") or first.get("preview_image_url"),
                )

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """GET /2/tweets?ids=… (100 a call); ids X reports as not found are recorded."""
        for batch in chunks(external_ids, BATCH):
            body = self.read(
                "/2/tweets", account, {"ids": ",".join(batch), "tweet.fields": "public_metrics"}
            )
            for tweet in body.get("data") or []:
                m = tweet.get("public_metrics") or {}
                retweets, quotes = as_int(m.get("retweet_count")), as_int(m.get("quote_count"))
                shares = (
                    None
                    if retweets is None and quotes is None
                    else ((retweets or 0) + (quotes or 0))
                )
                yield self.engagement(
                    tweet["id"],
                    impressions=as_int(m.get("impression_count")),
                    likes=as_int(m.get("like_count")),
                    comments=as_int(m.get("reply_count")),
                    shares=shares,
                    saves=as_int(m.get("bookmark_count")),
                )
            for problem in body.get("errors") or []:
                value = str(problem.get("value") or problem.get("resource_id") or "")
                code = "not_found" if problem.get("type") == NOT_FOUND else "error"
                self.note(value, str(problem.get("detail") or problem.get("title")), code)

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """GET /2/users/search?query=…, following next_token up to ``limit``."""
        token: str | None = None
        found = 0
        while found < limit:
            params: dict[str, Any] = {
                "query": query,
                "max_results": min(1000, max(1, limit - found)),
                "user.fields": USER_FIELDS,
            }
            if token:
                params["next_token"] = token
            body = self.read("/2/users/search", None, params)
            for user in body.get("data") or []:
                yield AccountRef(self.platform, user["id"], user["username"], kind="creator")
                found += 1
            token = next_token(body)
            if not token or not body.get("data"):
                return
