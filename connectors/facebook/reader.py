"""Facebook Pages over the Graph API: the Page node, its posts edge, multi-id post reads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from connectors.base import AccountRef, AccountSnapshot, EngagementSnapshot
from connectors.graph.reader import IDS_PER_CALL, GraphConnector
from connectors.http import as_int, chunks
from connectors.platforms import profile_url

POST_FIELDS = (
    "shares,reactions.summary(total_count).limit(0),comments.summary(total_count).limit(0),"
    "insights.metric(post_impressions,post_impressions_unique,post_clicks)"
)


def _insight(post: dict[str, Any], name: str) -> int | None:
    for entry in (post.get("insights") or {}).get("data") or []:
        if entry.get("name") == name:
            points = entry.get("values") or []
            return as_int(points[-1].get("value")) if points else None
    return None


def _total(post: dict[str, Any], edge: str) -> int | None:
    return as_int(((post.get(edge) or {}).get("summary") or {}).get("total_count"))


class FacebookConnector(GraphConnector):
    """Reads Facebook Pages: followers, posts, reactions, comments, shares and post insights."""

    platform = "facebook"
    MEDIA_TYPES: ClassVar[dict[str, str]] = {
        "PHOTO": "image",
        "IMAGE": "image",
        "VIDEO": "video",
        "LINK": "link",
    }

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """GET /{page-id}?fields=id,name,username,followers_count,fan_count,picture."""
        body = self.read(
            f"/{account.external_id}",
            account,
            {"fields": "id,name,username,followers_count,fan_count,picture"},
        )
        picture = ((body.get("picture") or {}).get("data") or {}).get("url")
        return self.account_snapshot(
            str(body["id"]),
            body.get("username") or account.handle,
            body.get("name"),
            as_int(body.get("followers_count") or body.get("fan_count")),
            # A Page without a username has its page by id.
            url=profile_url(self.platform, body.get("username") or str(body["id"])),
            thumbnail_url=picture,
        )

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """GET /?ids=…&fields=… (50 a call); a post the answer leaves out was deleted."""
        for batch in chunks(external_ids, IDS_PER_CALL):
            body = self.read("/", account, {"ids": ",".join(batch), "fields": POST_FIELDS})
            for post_id in batch:
                post = body.get(post_id)
                if not isinstance(post, dict):
                    self.note(post_id, "post not returned: deleted", "not_found")
                    continue
                yield self.engagement(
                    post_id,
                    impressions=_insight(post, "post_impressions"),
                    reach=_insight(post, "post_impressions_unique"),
                    likes=_total(post, "reactions"),
                    comments=_total(post, "comments"),
                    shares=as_int((post.get("shares") or {}).get("count")),
                    clicks=_insight(post, "post_clicks"),
                )

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """GET /pages/search?q=…: public Pages (Page Public Metadata Access)."""
        body = self.read("/pages/search", None, {"q": query, "limit": limit, "fields": "id,name"})
        for page in (body.get("data") or [])[:limit]:
            yield AccountRef(
                self.platform, str(page["id"]), str(page.get("name") or page["id"]), kind="creator"
            )
