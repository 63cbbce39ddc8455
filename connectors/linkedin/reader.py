"""LinkedIn Community Management (REST) API: organizations, follower counts, posts, share stats."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

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
    as_int,
    chunks,
    error_for_status,
    parse_time,
)

VERSION = "202411"
ORG = "urn:li:organization:"
BATCH = 20  # share URNs per statistics call: keeps the Rest.li URL well under limits
PAGE = 50
TOKEN_CODES = (65600, 65601, 65602)  # invalid, revoked, expired


def org_urn(external_id: str) -> str:
    return external_id if external_id.startswith("urn:li:") else ORG + external_id


def _restli(value: str) -> str:
    """A URN encoded for a Rest.li 2.0 query: reserved characters escaped, even ':'."""
    return quote(value, safe="")


class LinkedInConnector(HttpConnector):
    """Reads organization pages through the versioned REST API (Rest.li 2.0)."""

    platform = "linkedin"

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """Map {status, serviceErrorCode, message}: token codes, throttles, not found."""
        status = response.status_code
        message = body.get("message")
        service = as_int(body.get("serviceErrorCode"))
        code = str(body.get("code") or service or "") or None
        if status == 401 or service in TOKEN_CODES:
            return AuthExpiredError(message or "Unauthorized", status=status, code=code)
        if status == 429:
            return self.rate_limited(response, message or "Throttled", code)
        if status == 404:
            return NotFoundError(message or "Not Found", status=status, code=code)
        return error_for_status(response, message, code)

    def headers_for(self, account: AccountRef | None) -> dict[str, str]:
        headers = {"LinkedIn-Version": VERSION, "X-Restli-Protocol-Version": "2.0.0"}
        token = self.token_for(account)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    @staticmethod
    def _org_id(account: AccountRef) -> str:
        return account.external_id.removeprefix(ORG)

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /rest/organizations/{id} and /rest/networkSizes/{urn} (followers)."""
        org_id = self._org_id(account)
        org = self.read(f"/rest/organizations/{org_id}", account, None)
        size = self.read(
            f"/rest/networkSizes/{_restli(org_urn(org_id))}",
            account,
            {"edgeType": "COMPANY_FOLLOWED_BY_MEMBER"},
        )
        handle = org.get("vanityName") or account.handle
        # The logo (logoV2) is a digital media asset URN, not a URL: no picture.
        return self.account_snapshot(
            str(org.get("id", org_id)),
            handle,
            org.get("localizedName"),
            as_int(size.get("firstDegreeSize")),
        )

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """GET /rest/posts?q=author&author={urn}, start/count paging, newest first."""
        org_id = self._org_id(account)
        start = 0
        while True:
            body = self.read(
                "/rest/posts",
                account,
                {
                    "q": "author",
                    "author": org_urn(org_id),
                    "count": PAGE,
                    "start": start,
                    "sortBy": "CREATED",
                },
            )
            elements = body.get("elements") or []
            for post in elements:
                stamp = post.get("publishedAt") or post.get("createdAt")
                published = parse_time(int(stamp) / 1000)
                if since is not None and published < since:
                    return
                content = post.get("content") or {}
                media = "text"
                if "article" in content:
                    media = "link"
                elif "multiImage" in content:
                    media = "carousel"
                elif "media" in content:
                    media = "video" if "video" in str(content["media"].get("id")) else "image"
                text = post.get("commentary")
                yield self.post_record(
                    account,
                    post["id"],
                    text,
                    published,
                    media_type=media,
                    url=f"https://www.linkedin.com/feed/update/{post['id']}/",
                    deleted=post.get("lifecycleState") == "DELETED",
                )
            paging = body.get("paging") or {}
            total = as_int(paging.get("total"))
            start += len(elements)
            if len(elements) < PAGE or (total is not None and start >= total):
                return

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """organizationalEntityShareStatistics for shares=List(…) / ugcPosts=List(…), 20 a call."""
        org = org_urn(self._org_id(account))
        for batch in chunks(external_ids, BATCH):
            shares = [u for u in batch if u.startswith("urn:li:share:")]
            ugc = [u for u in batch if not u.startswith("urn:li:share:")]
            # Rest.li 2.0: List(...) syntax stays literal, the URNs inside are escaped; httpx
            # would escape the parentheses, so the query string is built here.
            query = f"q=organizationalEntity&organizationalEntity={_restli(org)}"
            if shares:
                query += f"&shares=List({','.join(_restli(u) for u in shares)})"
            if ugc:
                query += f"&ugcPosts=List({','.join(_restli(u) for u in ugc)})"
            body = self.read(f"/rest/organizationalEntityShareStatistics?{query}", account, None)
            seen = set()
            for element in body.get("elements") or []:
                urn = element.get("share") or element.get("ugcPost")
                stats = element.get("totalShareStatistics") or {}
                seen.add(urn)
                yield self.engagement(
                    str(urn),
                    impressions=as_int(stats.get("impressionCount")),
                    reach=as_int(stats.get("uniqueImpressionsCount")),
                    likes=as_int(stats.get("likeCount")),
                    comments=as_int(stats.get("commentCount")),
                    shares=as_int(stats.get("shareCount")),
                    clicks=as_int(stats.get("clickCount")),
                )
            self.note_missing(batch, seen, "no statistics returned: deleted post")

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """GET /rest/organizations?q=vanityName (organizations are LinkedIn's public pages)."""
        start = 0
        found = 0
        while found < limit:
            count = min(PAGE, limit - found)
            body = self.read(
                "/rest/organizations",
                None,
                {"q": "vanityName", "vanityName": query, "start": start, "count": count},
            )
            elements = body.get("elements") or []
            for org in elements:
                yield AccountRef(
                    self.platform, str(org["id"]), org.get("vanityName") or "", kind="creator"
                )
                found += 1
            start += len(elements)
            total = as_int((body.get("paging") or {}).get("total"))
            if len(elements) < count or (total is not None and start >= total):
                return
