"""What the Graph APIs share (Instagram, Facebook Pages, Threads): errors and the token."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, ClassVar

import httpx

from connectors.base import (
    AccountRef,
    AuthExpiredError,
    ConnectorError,
    NotFoundError,
    PermanentError,
    PostRecord,
    RateLimitedError,
    TransientError,
)
from connectors.http import HttpConnector, as_int, error_for_status, parse_time

RATE_LIMIT_CODES = (4, 17, 32, 613)
TOKEN_EXPIRED = 190
USAGE_HEADERS = ("X-Business-Use-Case-Usage", "X-App-Usage", "X-Ad-Account-Usage")


def _regain_seconds(response: httpx.Response) -> float | None:
    """Graph's usage headers say when access returns, in minutes; None when they do not."""
    for name in USAGE_HEADERS:
        raw = response.headers.get(name)
        if not raw:
            continue
        try:
            usage = json.loads(raw)
        except ValueError:
            continue
        entries = [e for v in usage.values() for e in v] if isinstance(usage, dict) else []
        minutes = [
            int(e.get("estimated_time_to_regain_access") or 0)
            for e in entries
            if isinstance(e, dict)
        ]
        if minutes and max(minutes) > 0:
            return float(max(minutes) * 60)
    return None


#: The most ids one multi-id lookup (``GET /?ids=…``) takes.
IDS_PER_CALL = 50


def insight_values(body: Any) -> dict[str, int]:
    """An insights answer's metrics: each one's latest value (or its total), by name."""
    values: dict[str, int] = {}
    for entry in (body.get("data") if isinstance(body, dict) else None) or []:
        points = entry.get("values") or []
        value = points[-1].get("value") if points else (entry.get("total_value") or {}).get("value")
        number = as_int(value)
        if number is not None:
            values[entry["name"]] = number
    return values


class GraphConnector(HttpConnector):
    """A reader of one of Meta's Graph APIs: access_token in the query, Graph's error object."""

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """Map Graph's error object by code: 190 token, 4/17/32/613 rate, 100/33 missing."""
        status = response.status_code
        error = body.get("error")
        if not isinstance(error, dict):
            return error_for_status(response)
        message = str(error.get("message") or f"HTTP {status}")
        code, subcode = as_int(error.get("code")), as_int(error.get("error_subcode"))
        tag = str(code) if code is not None else None
        if code == TOKEN_EXPIRED:
            return AuthExpiredError(message, status=status, code=tag)
        if code in RATE_LIMIT_CODES:
            retry = _regain_seconds(response)
            return RateLimitedError(message, retry_after=retry, status=status, code=tag)
        if code == 100 and subcode == 33:
            return NotFoundError(message, status=status, code=tag)
        if error.get("is_transient") or code in (1, 2) or status >= 500:
            return TransientError(message, status=status, code=tag)
        if status == 401:
            return AuthExpiredError(message, status=status, code=tag)
        return PermanentError(message, status=status, code=tag)

    def read(self, path: str, account: AccountRef | None, params: dict[str, Any]) -> Any:
        token = self.token_for(account)
        query = {**params, "access_token": token} if token else params
        return self.get(path, self.classify, query)

    def _insights(
        self, account: AccountRef, media_id: str, metrics: Sequence[str]
    ) -> dict[str, int]:
        """GET /{media-id}/insights: each metric's latest value (or its total), by name."""
        body = self.read(f"/{media_id}/insights", account, {"metric": ",".join(metrics)})
        return insight_values(body)

    # The edge the account's posts are listed on and its fields: (edge, text, time, link).
    # Facebook Pages' shape by default; Threads' differs; Instagram's reader has its own.
    POSTS: ClassVar[tuple[str, str, str, str]] = (
        "posts",
        "message",
        "created_time",
        "permalink_url",
    )
    MEDIA_TYPES: ClassVar[dict[str, str]] = {}
    # A post's picture fields, in the order tried (Facebook's full_picture by default).
    PICTURES: ClassVar[tuple[str, ...]] = ("full_picture",)

    def picture(self, item: dict[str, Any]) -> str | None:
        """The first of ``PICTURES`` the post has (a video's media_url is its file, not one)."""
        for name in self.PICTURES:
            value = item.get(name)
            if value and not (name == "media_url" and item.get("media_type") == "VIDEO"):
                return str(value)
        return None

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """GET /{id}/{edge} (``POSTS``), newest first, following paging.cursors.after."""
        edge, text_field, time_field, link_field = self.POSTS
        fields = f"id,{text_field},{time_field},{link_field},media_type,{','.join(self.PICTURES)}"
        for item in self.edge(
            f"/{account.external_id}/{edge}", account, {"fields": fields, "limit": 100}
        ):
            published = parse_time(item[time_field])
            if since is not None and published < since:
                return
            text = item.get(text_field)
            yield self.post_record(
                account,
                str(item["id"]),
                text,
                published,
                media_type=self.MEDIA_TYPES.get(str(item.get("media_type") or "").upper(), "text"),
                url=item.get(link_field),
                thumbnail_url=self.picture(item),
            )

    def edge(
        self, path: str, account: AccountRef | None, params: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        """The items of a Graph edge, newest first, following paging.cursors.after."""
        after: str | None = None
        while True:
            body = self.read(path, account, {**params, "after": after} if after else params)
            yield from body.get("data") or []
            paging = body.get("paging") or {}
            after = (paging.get("cursors") or {}).get("after")
            if not paging.get("next") or not after:
                return
