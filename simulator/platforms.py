"""The platforms' read API shapes, each under its own prefix, over the simulated world."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from simulator import errors
from simulator.state import Sim, decode_cursor, encode_cursor
from simulator.world import ALL_TOPICS, CATEGORIES, WINDOW_DAYS, Account, Post, day_number

Handler = Callable[[Request, Sim, datetime], Awaitable[Response]]


def _sim(request: Request) -> Sim:
    sim: Sim = request.app.state.sim
    return sim


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    return value[7:].strip() or None if value.lower().startswith("bearer ") else None


def token_owner(
    sim: Sim, request: Request, platform: str, prefix: str, *, own_by_default: bool = False
) -> Account | None:
    """The account the request's bearer token names (``<prefix><external id>``).

    Where the platform's tokens are user-context (X, YouTube), any other token stands for the
    world's own account; elsewhere it names no one.
    """
    token = _bearer(request) or ""
    if token.startswith(prefix):
        key = token[len(prefix) :]
        account = sim.world.account(platform, key)
        return account if account is not None and account.external_id == key else None
    if own_by_default:
        return next((a for a in sim.world.accounts(platform) if a.kind == "own"), None)
    return None


def endpoint(
    platform: str, handler: Handler, *, auth: Callable[[Request], bool]
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler: injected faults first (as a server would fail), then the token check."""

    async def run(request: Request) -> Response:
        sim = _sim(request)
        now = sim.now(request.query_params.get("at"))
        fault = sim.next_fault(platform)
        if fault is not None:
            return errors.fault(platform, fault.kind, now, fault.retry_after)
        if not auth(request):
            return errors.expired(platform)
        return await handler(request, sim, now)

    return run


def _older(posts: list[Post], cursor: str | None) -> list[Post]:
    """Posts (newest first) strictly after a keyset cursor of (published, number)."""
    if not cursor:
        return posts
    parts = decode_cursor(cursor)
    if not parts or len(parts) != 2:
        return []
    key = (int(parts[0]), int(parts[1]))
    return [p for p in posts if (int(p.published_at.timestamp()), p.number) < key]


def _cursor(post: Post) -> str:
    return encode_cursor(int(post.published_at.timestamp()), post.number)


def _clamp(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        number = default
    return max(low, min(high, number))


def _counters(sim: Sim, post: Post, now: datetime) -> Any:
    counters = post.counters(now)
    factor = sim.take_drop(post.platform, post.external_id)
    return counters if factor == 1.0 else counters.scaled(factor)


def _live(sim: Sim, platform: str, post: Post | None, now: datetime) -> Post | None:
    if post is None or not post.visible(now) or sim.is_deleted(platform, post.external_id, now):
        return None
    return post


def _feed(sim: Sim, account: Account, now: datetime) -> list[Post]:
    return [
        p
        for p in sim.world.posts(account, now)
        if not sim.is_deleted(account.platform, p.external_id, now)
    ]


def _in_feed(sim: Sim, post: Post, now: datetime) -> bool:
    """Whether ``post`` is in its account's feed at ``now`` (what ``_feed`` lists)."""
    return (
        post.visible(now)
        and day_number(post.published_at) >= day_number(now) - WINDOW_DAYS
        and not sim.is_deleted(post.account.platform, post.external_id, now)
    )


def _meta(sim: Sim, platform: str, post: Post) -> dict[str, Any]:
    """What a client attached to a post it published (none for the generated ones)."""
    from simulator.world import PUBLISHED_BASE

    return sim.meta(platform, post.external_id) if post.number >= PUBLISHED_BASE else {}


def _iso_ms(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


# ---- YouTube Data API v3 --------------------------------------------------------------------

WIKI = "https://en.wikipedia.org/wiki/"
YT_TOPIC = {
    "tech": "Technology",
    "fitness": "Physical_fitness",
    "food": "Food",
    "travel": "Tourism",
    "finance": "Finance",
    "gaming": "Video_game_culture",
    "beauty": "Beauty",
    "education": "Knowledge",
    "marketing": "Business",
}


def _uploads(account: Account) -> str:
    ext = account.external_id
    return "UU" + ext[2:] if ext.startswith("UC") else "UU-" + ext


def _yt_auth(request: Request) -> bool:
    return bool(request.query_params.get("key") or _bearer(request))


def _yt_video(
    post: Post, counters: Any, parts: set[str], meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": "youtube#video",
        "etag": str(post.number),
        "id": post.external_id,
    }
    if "snippet" in parts:
        item["snippet"] = {
            "publishedAt": post.published_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "channelId": post.account.external_id,
            "title": (meta or {}).get("title") or post.text.split(" #")[0],
            "description": post.text,
            "channelTitle": post.account.display_name,
            "tags": (meta or {}).get("tags") or list(post.hashtags),
            "categoryId": "22",
        }
    if "statistics" in parts:
        item["statistics"] = {
            "viewCount": str(counters.views),
            "likeCount": str(counters.likes),
            "favoriteCount": "0",
            "commentCount": str(counters.comments),
        }
    return item


async def yt_channels(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    parts = set(q.get("part", "").split(","))
    keys = [k for k in q.get("id", "").split(",") if k]
    if q.get("forHandle"):
        keys.append(q["forHandle"])
    items = []
    for key in keys[:50]:
        account = sim.world.account("youtube", key)
        if account is None:
            continue  # the real API omits unknown channels
        item: dict[str, Any] = {"kind": "youtube#channel", "id": account.external_id}
        if "snippet" in parts:
            item["snippet"] = {
                "title": account.display_name,
                "description": f"{account.display_name}: {account.category}",
                "customUrl": account.handle,
                "publishedAt": "2019-03-01T10:00:00Z",
            }
        if "statistics" in parts:
            item["statistics"] = {
                "viewCount": str(account.followers(now) * 40),
                "subscriberCount": str(account.followers(now)),
                "hiddenSubscriberCount": False,
                "videoCount": str(account.posts_count(now)),
            }
        if "contentDetails" in parts:
            item["contentDetails"] = {
                "relatedPlaylists": {"likes": "", "uploads": _uploads(account)}
            }
        if "topicDetails" in parts:
            item["topicDetails"] = {"topicCategories": [WIKI + YT_TOPIC[account.category]]}
        items.append(item)
    return JSONResponse(
        {
            "kind": "youtube#channelListResponse",
            "pageInfo": {"totalResults": len(items), "resultsPerPage": 5},
            "items": items,
        }
    )


async def yt_playlist_items(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    playlist = q.get("playlistId", "")
    account = next((a for a in sim.world.accounts("youtube") if _uploads(a) == playlist), None)
    if account is None:
        return errors.youtube(
            404,
            "playlistNotFound",
            "The playlist identified with the request's playlistId parameter cannot be found.",
        )
    size = _clamp(q.get("maxResults"), 5, 0, 50)
    posts = _older(_feed(sim, account, now), q.get("pageToken"))
    page, rest = posts[:size], posts[size:]
    items = []
    for post in page:
        published = post.published_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        items.append(
            {
                "kind": "youtube#playlistItem",
                "id": f"{playlist}.{post.external_id}",
                "snippet": {
                    "publishedAt": published,
                    "channelId": account.external_id,
                    "title": _meta(sim, "youtube", post).get("title") or post.text.split(" #")[0],
                    "description": post.text,
                    "playlistId": playlist,
                    "resourceId": {"kind": "youtube#video", "videoId": post.external_id},
                },
                "contentDetails": {"videoId": post.external_id, "videoPublishedAt": published},
            }
        )
    body: dict[str, Any] = {
        "kind": "youtube#playlistItemListResponse",
        "items": items,
        "pageInfo": {"totalResults": len(posts), "resultsPerPage": size},
    }
    if rest and page:
        body["nextPageToken"] = _cursor(page[-1])
    return JSONResponse(body)


async def yt_videos(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    ids = [i for i in q.get("id", "").split(",") if i]
    if len(ids) > 50:
        return errors.youtube(400, "badRequest", "The request specifies more than 50 video ids.")
    parts = set(q.get("part", "").split(","))
    items = []
    for video_id in ids:
        post = _live(sim, "youtube", sim.world.post("youtube", video_id), now)
        if post is not None:  # deleted or unknown videos are simply left out
            meta = _meta(sim, "youtube", post)
            items.append(_yt_video(post, _counters(sim, post, now), parts, meta))
    return JSONResponse(
        {
            "kind": "youtube#videoListResponse",
            "items": items,
            "pageInfo": {"totalResults": len(items), "resultsPerPage": len(items)},
        }
    )


async def yt_search(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("type", "") != "channel":
        return errors.youtube(400, "invalidSearchFilter", "Only type=channel is simulated.")
    size = _clamp(q.get("maxResults"), 5, 0, 50)
    found = sim.world.search("youtube", q.get("q", ""))
    start = int(q.get("pageToken") or 0)
    page = found[start : start + size]
    body: dict[str, Any] = {
        "kind": "youtube#searchListResponse",
        "pageInfo": {"totalResults": len(found), "resultsPerPage": size},
        "items": [
            {
                "kind": "youtube#searchResult",
                "id": {"kind": "youtube#channel", "channelId": a.external_id},
                "snippet": {
                    "channelId": a.external_id,
                    "title": a.display_name,
                    "description": f"{a.display_name}: {a.category}",
                    "channelTitle": a.display_name,
                },
            }
            for a in page
        ],
    }
    if start + size < len(found):
        body["nextPageToken"] = str(start + size)
    return JSONResponse(body)


# ---- X API v2 -------------------------------------------------------------------------------


def _x_auth(request: Request) -> bool:
    return _bearer(request) is not None


def _x_user(account: Account, now: datetime) -> dict[str, Any]:
    return {
        "id": account.external_id,
        "name": account.display_name,
        "username": account.handle,
        "description": f"{account.category} · {account.display_name}",
        "public_metrics": {
            "followers_count": account.followers(now),
            "following_count": account.following,
            "tweet_count": account.posts_count(now),
            "listed_count": account.followers(now) // 200,
        },
    }


def _x_tweet(post: Post, counters: Any) -> dict[str, Any]:
    hashtags = []
    for tag in post.hashtags:
        start = post.text.find(f"#{tag}")
        hashtags.append({"start": start, "end": start + len(tag) + 1, "tag": tag})
    return {
        "id": post.external_id,
        "text": post.text,
        "author_id": post.account.external_id,
        "created_at": _iso_ms(post.published_at),
        "edit_history_tweet_ids": [post.external_id],
        "entities": {"hashtags": hashtags},
        "public_metrics": {
            "retweet_count": counters.reposts,
            "reply_count": counters.comments,
            "like_count": counters.likes,
            "quote_count": counters.quotes,
            "bookmark_count": counters.bookmarks,
            "impression_count": counters.impressions,
        },
    }


async def x_user_by_username(request: Request, sim: Sim, now: datetime) -> Response:
    username = request.path_params["username"]
    account = sim.world.account("x", username)
    if account is None or account.handle.lower() != username.lower():
        return JSONResponse({"errors": [errors.x_not_found("user", "username", username)]})
    return JSONResponse({"data": _x_user(account, now)})


async def x_user(request: Request, sim: Sim, now: datetime) -> Response:
    user_id = request.path_params["id"]
    account = sim.world.account("x", user_id)
    if account is None or account.external_id != user_id:
        return JSONResponse({"errors": [errors.x_not_found("user", "id", user_id)]})
    return JSONResponse({"data": _x_user(account, now)})


async def x_user_tweets(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    account = sim.world.account("x", request.path_params["id"])
    if account is None:
        return JSONResponse(
            {"errors": [errors.x_not_found("user", "id", request.path_params["id"])]}
        )
    size = _clamp(q.get("max_results"), 10, 5, 100)
    posts = _feed(sim, account, now)
    if q.get("start_time"):
        since = datetime.fromisoformat(q["start_time"].replace("Z", "+00:00"))
        posts = [p for p in posts if p.published_at >= since]
    posts = _older(posts, q.get("pagination_token"))
    page, rest = posts[:size], posts[size:]
    meta: dict[str, Any] = {"result_count": len(page)}
    if page:
        meta["newest_id"] = page[0].external_id
        meta["oldest_id"] = page[-1].external_id
    if rest and page:
        meta["next_token"] = _cursor(page[-1])
    body: dict[str, Any] = {"meta": meta}
    if page:
        body["data"] = [_x_tweet(p, p.counters(now)) for p in page]
    return JSONResponse(body)


async def x_tweets(request: Request, sim: Sim, now: datetime) -> Response:
    ids = [i for i in request.query_params.get("ids", "").split(",") if i]
    if not ids or len(ids) > 100:
        return JSONResponse(
            {
                "errors": [{"parameters": {"ids": ids}, "message": "ids must hold 1 to 100 ids"}],
                "title": "Invalid Request",
                "detail": "One or more parameters to your request was invalid.",
                "type": "https://api.twitter.com/2/problems/invalid-request",
            },
            400,
        )
    data, problems = [], []
    for tweet_id in ids:
        post = _live(sim, "x", sim.world.post("x", tweet_id), now)
        if post is None:
            problems.append(errors.x_not_found("tweet", "ids", tweet_id))
        else:
            data.append(_x_tweet(post, _counters(sim, post, now)))
    body: dict[str, Any] = {}
    if data:
        body["data"] = data
    if problems:
        body["errors"] = problems
    return JSONResponse(body)


async def x_users_search(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    size = _clamp(q.get("max_results"), 100, 1, 1000)
    found = sim.world.search("x", q.get("query", ""))
    start = int(q.get("next_token") or 0)
    page = found[start : start + size]
    meta: dict[str, Any] = {"result_count": len(page)}
    if start + size < len(found):
        meta["next_token"] = str(start + size)
    body: dict[str, Any] = {"meta": meta}
    if page:
        body["data"] = [_x_user(a, now) for a in page]
    return JSONResponse(body)


# ---- Instagram Graph API --------------------------------------------------------------------

IG_METRICS = (
    "impressions",
    "reach",
    "likes",
    "comments",
    "shares",
    "saved",
    "total_interactions",
    "views",
    "plays",
)
HASHTAG_PREFIX = "17843"
HASHTAGS = ALL_TOPICS + CATEGORIES  # a category name is a hashtag too


def _ig_auth(request: Request) -> bool:
    return bool(request.query_params.get("access_token") or _bearer(request))


def _ig_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


def _ig_media(post: Post, fields: set[str], now: datetime) -> dict[str, Any]:
    kind = {"image": "IMAGE", "video": "VIDEO", "carousel": "CAROUSEL_ALBUM"}[post.media_type]
    counters = post.counters(now)
    item: dict[str, Any] = {
        "id": post.external_id,
        "caption": post.text,
        "media_type": kind,
        "media_product_type": "REELS" if kind == "VIDEO" else "FEED",
        "permalink": f"https://www.instagram.com/p/{post.number:x}/",
        "timestamp": _ig_time(post.published_at),
        "like_count": counters.likes,
        "comments_count": counters.comments,
        # Graph returns the owner only for your own media; the simulator always does, so that
        # creator discovery through hashtags can name accounts (documented).
        "username": post.account.handle,
        "owner": {"id": post.account.external_id},
    }
    return {k: v for k, v in item.items() if k == "id" or k in fields}


def _ig_not_found(node: str) -> JSONResponse:
    return errors.graph(
        400,
        100,
        f"Unsupported get request. Object with ID '{node}' does not exist, cannot be loaded due "
        "to missing permissions, or does not support this operation.",
        subcode=33,
    )


def _ig_page(request: Request, items: list[Any], after: str | None) -> dict[str, Any]:
    paging: dict[str, Any] = {"cursors": {"before": "", "after": after or ""}}
    if after:
        params = dict(request.query_params)
        params["after"] = after
        query = "&".join(f"{k}={v}" for k, v in params.items())
        paging["next"] = f"{str(request.url).split('?')[0]}?{query}"
    return {"data": items, "paging": paging}


async def ig_node(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /{node}: a hashtag search or an account (the write side answers its own first)."""
    node = request.path_params["node"]
    q = request.query_params
    if node == "ig_hashtag_search":
        topic = q.get("q", "").lower().lstrip("#")
        if topic not in HASHTAGS:
            return JSONResponse({"data": []})
        return JSONResponse({"data": [{"id": f"{HASHTAG_PREFIX}{HASHTAGS.index(topic):010d}"}]})
    account = sim.world.account("instagram", node)
    if account is None or account.external_id != node:
        return _ig_not_found(node)
    fields = set(q.get("fields", "id,username").split(","))
    full = {
        "id": account.external_id,
        "username": account.handle,
        "name": account.display_name,
        "biography": f"{account.category} · {account.display_name}",
        "followers_count": account.followers(now),
        "follows_count": account.following,
        "media_count": account.posts_count(now),
    }
    return JSONResponse({k: v for k, v in full.items() if k == "id" or k in fields})


async def ig_edge(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /{node}/{edge}: media and insights (the write side answers its own first)."""
    node, edge = request.path_params["node"], request.path_params["edge"]
    q = request.query_params
    if edge == "media":
        account = sim.world.account("instagram", node)
        if account is None or account.external_id != node:
            return _ig_not_found(node)
        size = _clamp(q.get("limit"), 25, 1, 100)
        fields = set(q.get("fields", "id").split(","))
        posts = _older(_feed(sim, account, now), q.get("after"))
        page, rest = posts[:size], posts[size:]
        after = _cursor(page[-1]) if rest and page else None
        return JSONResponse(_ig_page(request, [_ig_media(p, fields, now) for p in page], after))
    if edge == "insights":
        return ig_insights(request, sim, now, node)
    if edge == "top_media" and node.startswith(HASHTAG_PREFIX):
        topic = HASHTAGS[int(node[len(HASHTAG_PREFIX) :]) % len(HASHTAGS)]
        fields = set(q.get("fields", "id").split(","))
        media: list[Post] = []
        for account in sim.world.accounts("instagram"):
            if account.kind == "creator":
                media.extend(
                    p
                    for p in _feed(sim, account, now)[:10]
                    if topic in p.hashtags or topic == account.category
                )
        media.sort(key=lambda p: -p.counters(now).likes)
        size = _clamp(q.get("limit"), 25, 1, 50)
        return JSONResponse(
            _ig_page(request, [_ig_media(p, fields, now) for p in media[:size]], None)
        )
    return _ig_not_found(f"{node}/{edge}")


def ig_insights(request: Request, sim: Sim, now: datetime, node: str) -> Response:
    post = _live(sim, "instagram", sim.world.post("instagram", node), now)
    if post is None:
        return _ig_not_found(node)
    metrics = [m for m in request.query_params.get("metric", "").split(",") if m]
    for metric in metrics:
        if metric not in IG_METRICS:
            return errors.graph(
                400,
                100,
                f"(#100) metric[{metrics.index(metric)}] must be one of the following "
                f"values: {', '.join(IG_METRICS)}",
            )
    refused = sim.take_metric_error("instagram", metrics)
    if refused is None and post.media_type == "video" and "impressions" in metrics:
        refused = "impressions"  # as on Instagram: reels report plays/views, not impressions
    if refused is not None:
        return errors.graph(
            400,
            100,
            f"(#100) The Media Insights API does not support the {refused} metric for "
            "this media product type.",
        )
    c = _counters(sim, post, now)
    values = {
        "impressions": c.impressions,
        "reach": c.reach,
        "likes": c.likes,
        "comments": c.comments,
        "shares": c.shares,
        "saved": c.saves,
        "total_interactions": c.likes + c.comments + c.shares + c.saves,
        "views": c.impressions,
        "plays": c.impressions,
    }
    data = [
        {
            "name": metric,
            "period": "lifetime",
            "values": [{"value": values[metric]}],
            "title": metric.replace("_", " ").title(),
            "description": f"Lifetime {metric}",
            "id": f"{node}/insights/{metric}/lifetime",
        }
        for metric in metrics
    ]
    return JSONResponse({"data": data})


# ---- LinkedIn Community Management API ------------------------------------------------------

ORG = "urn:li:organization:"


def _li_auth(request: Request) -> bool:
    return _bearer(request) is not None


def _li_checked(handler: Handler) -> Handler:
    """LinkedIn refuses versioned REST calls that do not name a version."""

    async def run(request: Request, sim: Sim, now: datetime) -> Response:
        if not request.headers.get("linkedin-version"):
            return errors.linkedin(
                426,
                "A version must be present. Please specify a version by adding the "
                "LinkedIn-Version header.",
                code="VERSION_MISSING",
            )
        if request.headers.get("x-restli-protocol-version") != "2.0.0":
            return errors.linkedin(400, "Rest.li protocol 2.0.0 is required.")
        return await handler(request, sim, now)

    return run


def _li_org(sim: Sim, urn_or_id: str) -> Account | None:
    org_id = urn_or_id.removeprefix(ORG)
    account = sim.world.account("linkedin", org_id)
    return account if account is not None and account.external_id == org_id else None


def _li_org_body(account: Account) -> dict[str, Any]:
    numeric = account.external_id.isdigit()
    return {
        "id": int(account.external_id) if numeric else account.external_id,
        "localizedName": account.display_name,
        "vanityName": account.handle,
        "localizedDescription": f"{account.display_name}: {account.category}",
        "localizedWebsite": f"https://{account.handle}.example.com",
    }


async def li_organization(request: Request, sim: Sim, now: datetime) -> Response:
    account = _li_org(sim, request.path_params["id"])
    if account is None:
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    return JSONResponse(_li_org_body(account))


async def li_organizations(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("q") != "vanityName":
        return errors.linkedin(400, "Only q=vanityName is simulated.")
    found = sim.world.search("linkedin", q.get("vanityName", ""))
    size = _clamp(q.get("count"), 10, 1, 100)
    start = _clamp(q.get("start"), 0, 0, 10**6)
    page = found[start : start + size]
    return JSONResponse(
        {
            "elements": [_li_org_body(a) for a in page],
            "paging": {"start": start, "count": size, "total": len(found), "links": []},
        }
    )


async def li_network_size(request: Request, sim: Sim, now: datetime) -> Response:
    account = _li_org(sim, request.path_params["urn"])
    if account is None:
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    return JSONResponse({"firstDegreeSize": account.followers(now)})


def _li_post(post: Post) -> dict[str, Any]:
    ms = int(post.published_at.timestamp() * 1000)
    body: dict[str, Any] = {
        "id": post.external_id,
        "author": ORG + post.account.external_id,
        "commentary": post.text,
        "visibility": "PUBLIC",
        "lifecycleState": "PUBLISHED",
        "createdAt": ms,
        "publishedAt": ms,
        "lastModifiedAt": ms,
        "distribution": {"feedDistribution": "MAIN_FEED"},
        "isReshareDisabledByAuthor": False,
    }
    if post.media_type in ("image", "video"):
        body["content"] = {"media": {"id": f"urn:li:{post.media_type}:C4D{post.number}"}}
    elif post.media_type == "link":
        body["content"] = {"article": {"source": "https://example.com/read", "title": "Read"}}
    return body


async def li_posts(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("q") != "author":
        return errors.linkedin(400, "Only q=author is simulated.")
    account = _li_org(sim, q.get("author", ""))
    if account is None:
        return errors.linkedin(
            403, "Not enough permissions to access: partnerApiPostsExternal", code="ACCESS_DENIED"
        )
    size = _clamp(q.get("count"), 10, 1, 100)
    start = _clamp(q.get("start"), 0, 0, 10**6)
    posts = _feed(sim, account, now)
    page = posts[start : start + size]
    return JSONResponse(
        {
            "elements": [_li_post(p) for p in page],
            "paging": {"start": start, "count": size, "total": len(posts), "links": []},
        }
    )


def _restli_list(value: str) -> list[str]:
    inner = value.strip()
    if inner.startswith("List(") and inner.endswith(")"):
        inner = inner[5:-1]
    return [v for v in inner.split(",") if v]


async def li_share_statistics(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    account = _li_org(sim, q.get("organizationalEntity", ""))
    if q.get("q") != "organizationalEntity" or account is None:
        return errors.linkedin(400, "organizationalEntity must be an organization URN.")
    elements = []
    for urn in _restli_list(q.get("shares", "")):
        post = _live(sim, "linkedin", sim.world.post("linkedin", urn), now)
        if post is None:
            continue  # statistics of deleted shares are no longer returned
        c = _counters(sim, post, now)
        engagement = (
            (c.likes + c.comments + c.shares + c.clicks) / c.impressions if c.impressions else 0.0
        )
        elements.append(
            {
                "organizationalEntity": ORG + account.external_id,
                "share": urn,
                "totalShareStatistics": {
                    "uniqueImpressionsCount": c.reach,
                    "shareCount": c.shares,
                    "engagement": round(engagement, 6),
                    "clickCount": c.clicks,
                    "likeCount": c.likes,
                    "impressionCount": c.impressions,
                    "commentCount": c.comments,
                },
            }
        )
    return JSONResponse(
        {"elements": elements, "paging": {"start": 0, "count": len(elements), "links": []}}
    )


# ---- TikTok API v2 --------------------------------------------------------------------------


def simulator_tiktok_token(open_id: str) -> str:
    """The user access token the simulator issues for an account: it names the account."""
    return f"act.{open_id}"


def _tt_auth(request: Request) -> bool:
    return _bearer(request) is not None


def _tt_ok(data: Any) -> JSONResponse:
    return JSONResponse(
        {"data": data, "error": {"code": "ok", "message": "", "log_id": "202400000000"}}
    )


def _fields(request: Request) -> set[str]:
    return set(request.query_params.get("fields", "").split(","))


def _tt_video(post: Post, counters: Any, fields: set[str]) -> dict[str, Any]:
    full = {
        "id": post.external_id,
        "create_time": int(post.published_at.timestamp()),
        "title": post.text.split(" #")[0],
        "video_description": post.text,
        "duration": 15 + post.number % 45,
        "share_url": f"https://www.tiktok.com/@{post.account.handle}/video/{post.external_id}",
        "view_count": counters.views,
        "like_count": counters.likes,
        "comment_count": counters.comments,
        "share_count": counters.shares,
        "username": post.account.handle,
        "hashtag_names": list(post.hashtags),
        "region_code": "US",
    }
    return {k: v for k, v in full.items() if k == "id" or k in fields}


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (ValueError, json.JSONDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


async def tt_user_info(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "tiktok", "act.")
    if account is None:
        return errors.expired("tiktok")
    full = {
        "open_id": account.external_id,
        "union_id": account.external_id,
        "display_name": account.display_name,
        "username": account.handle,
        "follower_count": account.followers(now),
        "following_count": account.following,
        "likes_count": account.followers(now) * 3,
        "video_count": account.posts_count(now),
    }
    fields = _fields(request)
    return _tt_ok({"user": {k: v for k, v in full.items() if k in fields}})


async def tt_video_list(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "tiktok", "act.")
    if account is None:
        return errors.expired("tiktok")
    body = await _json(request)
    size = max(1, min(20, int(body.get("max_count") or 10)))
    posts = _feed(sim, account, now)
    cursor = body.get("cursor")
    if cursor:  # a Unix-ms timestamp: videos created before it
        posts = [p for p in posts if p.published_at.timestamp() * 1000 < int(cursor)]
    page, rest = posts[:size], posts[size:]
    fields = _fields(request)
    next_cursor = int(page[-1].published_at.timestamp() * 1000) if page else 0
    return _tt_ok(
        {
            "videos": [_tt_video(p, p.counters(now), fields) for p in page],
            "cursor": next_cursor,
            "has_more": bool(rest),
        }
    )


async def tt_video_query(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "tiktok", "act.")
    if account is None:
        return errors.expired("tiktok")
    body = await _json(request)
    ids = list((body.get("filters") or {}).get("video_ids") or [])
    if not ids or len(ids) > 20:
        return errors.tiktok(400, "invalid_params", "video_ids must hold 1 to 20 ids")
    fields = _fields(request)
    videos = []
    for video_id in ids:
        post = _live(sim, "tiktok", sim.world.post("tiktok", str(video_id)), now)
        if post is not None and post.account.external_id == account.external_id:
            videos.append(_tt_video(post, _counters(sim, post, now), fields))
    return _tt_ok({"videos": videos, "cursor": 0, "has_more": False})


async def tt_research_user(request: Request, sim: Sim, now: datetime) -> Response:
    body = await _json(request)
    username = str(body.get("username") or "")
    account = sim.world.account("tiktok", username)
    if account is None or account.handle != username:
        return errors.tiktok(404, "invalid_params", f"user {username} does not exist")
    full = {
        "display_name": account.display_name,
        "bio_description": f"{account.category} · {account.display_name}",
        "is_verified": account.base_followers > 100_000,
        "follower_count": account.followers(now),
        "following_count": account.following,
        "likes_count": account.followers(now) * 3,
        "video_count": account.posts_count(now),
    }
    fields = _fields(request)
    return _tt_ok({k: v for k, v in full.items() if k in fields})


def _tt_condition(post: Post, cond: dict[str, Any]) -> bool:
    values = [str(v).lower() for v in cond.get("field_values") or []]
    name = cond.get("field_name")
    if name == "username":
        return post.account.handle.lower() in values
    if name == "video_id":
        return post.external_id in values
    if name == "hashtag_name":
        return any(tag in values for tag in post.hashtags)
    if name == "keyword":
        text = post.text.lower()
        return any(v in text for v in values)
    return False


async def tt_research_videos(request: Request, sim: Sim, now: datetime) -> Response:
    body = await _json(request)
    conditions = list(((body.get("query") or {}).get("and")) or [])
    try:
        start = datetime.strptime(str(body["start_date"]), "%Y%m%d").replace(tzinfo=UTC)
        end = datetime.strptime(str(body["end_date"]), "%Y%m%d").replace(tzinfo=UTC)
    except (KeyError, ValueError):
        return errors.tiktok(
            400, "invalid_params", "start_date and end_date (YYYYMMDD) are required"
        )
    if end - start > timedelta(days=30):
        return errors.tiktok(400, "invalid_params", "the date range must be 30 days or less")
    size = max(1, min(100, int(body.get("max_count") or 20)))
    offset = int(body.get("cursor") or 0)
    usernames = [
        str(v).lower()
        for c in conditions
        if c.get("field_name") == "username"
        for v in c.get("field_values") or []
    ]
    video_ids = [
        str(v)
        for c in conditions
        if c.get("field_name") == "video_id"
        for v in c.get("field_values") or []
    ]
    if video_ids:
        # Asked by id (a metrics batch): the posts themselves, not a scan of every feed.
        found = (sim.world.post("tiktok", i) for i in dict.fromkeys(video_ids))
        candidates = [
            p
            for p in found
            if p is not None
            and (not usernames or p.account.handle.lower() in usernames)
            and _in_feed(sim, p, now)
        ]
    else:
        candidates = [
            p
            for a in sim.world.accounts("tiktok")
            if not usernames or a.handle.lower() in usernames
            for p in _feed(sim, a, now)
        ]
    matched = [
        p
        for p in candidates
        if start <= p.published_at < end + timedelta(days=1)
        and all(_tt_condition(p, c) for c in conditions)
    ]
    matched.sort(key=lambda p: (-p.published_at.timestamp(), -p.number))
    page = matched[offset : offset + size]
    fields = _fields(request)
    return _tt_ok(
        {
            "videos": [_tt_video(p, _counters(sim, p, now), fields) for p in page],
            "cursor": offset + len(page),
            "has_more": offset + size < len(matched),
            "search_id": body.get("search_id") or "7201388525814961198",
        }
    )


# ---- Bluesky (AT Protocol XRPC) -------------------------------------------------------------


def _bsky_auth(request: Request) -> bool:
    return True  # the public AppView answers these reads without a session


def _bsky_actor(account: Account, now: datetime) -> dict[str, Any]:
    return {
        "did": account.external_id,
        "handle": account.handle,
        "displayName": account.display_name,
        "description": f"{account.category} · {account.display_name}",
        "followersCount": account.followers(now),
        "followsCount": account.following,
        "postsCount": account.posts_count(now),
        "indexedAt": "2024-01-01T00:00:00.000Z",
    }


def _bsky_post(post: Post, counters: Any, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    facets = []
    encoded = post.text.encode()
    for tag in post.hashtags:
        start = encoded.find(f"#{tag}".encode())
        facets.append(
            {
                "index": {"byteStart": start, "byteEnd": start + len(tag) + 1},
                "features": [{"$type": "app.bsky.richtext.facet#tag", "tag": tag}],
            }
        )
    view: dict[str, Any] = {
        "uri": post.external_id,
        "cid": f"bafyrei{post.number:x}",
        "author": {
            "did": post.account.external_id,
            "handle": post.account.handle,
            "displayName": post.account.display_name,
        },
        "record": {
            "$type": "app.bsky.feed.post",
            "text": post.text,
            "createdAt": _iso_ms(post.published_at),
            "facets": (meta or {}).get("facets") or facets,
            "langs": ["en"],
            **((meta or {}).get("record") or {}),
        },
        "replyCount": counters.comments,
        "repostCount": counters.reposts,
        "likeCount": counters.likes,
        "quoteCount": counters.quotes,
        "indexedAt": _iso_ms(post.published_at),
        "labels": [],
    }
    if post.media_type == "image":
        view["embed"] = {"$type": "app.bsky.embed.images#view", "images": []}
    elif post.media_type == "link":
        view["embed"] = {"$type": "app.bsky.embed.external#view", "external": {}}
    return view


def _bsky_find(sim: Sim, actor: str) -> Account | None:
    return sim.world.account("bluesky", actor)


async def bsky_profile(request: Request, sim: Sim, now: datetime) -> Response:
    actor = request.query_params.get("actor", "")
    account = _bsky_find(sim, actor)
    if account is None:
        return errors.bluesky(400, "InvalidRequest", "Profile not found")
    return JSONResponse(_bsky_actor(account, now))


async def bsky_author_feed(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    account = _bsky_find(sim, q.get("actor", ""))
    if account is None:
        return errors.bluesky(400, "InvalidRequest", "Profile not found")
    size = _clamp(q.get("limit"), 50, 1, 100)
    posts = _older(_feed(sim, account, now), q.get("cursor"))
    page, rest = posts[:size], posts[size:]
    body: dict[str, Any] = {
        "feed": [{"post": _bsky_post(p, p.counters(now), _meta(sim, "bluesky", p))} for p in page]
    }
    if rest and page:
        body["cursor"] = _cursor(page[-1])
    return JSONResponse(body)


async def bsky_posts(request: Request, sim: Sim, now: datetime) -> Response:
    uris = request.query_params.getlist("uris")
    if len(uris) > 25:
        return errors.bluesky(400, "InvalidRequest", "uris must not have more than 25 elements")
    views = []
    for uri in uris:
        post = _live(sim, "bluesky", sim.world.post("bluesky", uri), now)
        if post is not None:  # deleted posts are simply absent
            views.append(_bsky_post(post, _counters(sim, post, now)))
    return JSONResponse({"posts": views})


async def bsky_search_actors(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    size = _clamp(q.get("limit"), 25, 1, 100)
    found = sim.world.search("bluesky", q.get("q", ""))
    start = int(q.get("cursor") or 0)
    page = found[start : start + size]
    body: dict[str, Any] = {"actors": [_bsky_actor(a, now) for a in page]}
    if start + size < len(found):
        body["cursor"] = str(start + size)
    return JSONResponse(body)


# ---- Facebook Pages, Threads and Pinterest: the reads ingest uses ---------------------------
# Profiles and post lists of Facebook and Threads are answered by the Graph routes of
# simulator.writes (GET /{node}, /{page}/posts, /{user}/threads); these are the rest.

FB_IDS_MAX = 50  # Graph's multi-id lookup takes at most 50 ids


def _lifetime(name: str, value: int, node: str) -> dict[str, Any]:
    return {
        "name": name,
        "period": "lifetime",
        "values": [{"value": value}],
        "id": f"{node}/insights/{name}/lifetime",
    }


async def fb_ids(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /?ids=a,b&fields=…: several Page posts at once, with their counters and insights.

    Graph fails the whole call when one id does not exist; here a deleted post is left out,
    which a client must handle either way.
    """
    ids = [i for i in request.query_params.get("ids", "").split(",") if i]
    if not ids or len(ids) > FB_IDS_MAX:
        return errors.graph(400, 100, f"(#100) ids takes 1 to {FB_IDS_MAX} ids")
    out: dict[str, Any] = {}
    for node in ids:
        post = _live(sim, "facebook", sim.world.post("facebook", node), now)
        if post is None:
            continue
        c = _counters(sim, post, now)
        out[node] = {
            "id": node,
            "shares": {"count": c.shares},
            "reactions": {"data": [], "summary": {"total_count": c.likes}},
            "comments": {"data": [], "summary": {"total_count": c.comments}},
            "insights": {
                "data": [
                    _lifetime("post_impressions", c.impressions, node),
                    _lifetime("post_impressions_unique", c.reach, node),
                    _lifetime("post_clicks", c.clicks, node),
                ]
            },
        }
    return JSONResponse(out)


async def fb_pages_search(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /pages/search?q=…&limit=…: public Pages whose name or category matches."""
    q = request.query_params
    size = _clamp(q.get("limit"), 25, 1, 100)
    pages = sim.world.search("facebook", q.get("q", ""))[:size]
    return JSONResponse(
        {
            "data": [
                {
                    "id": a.external_id,
                    "name": a.display_name,
                    "link": f"https://www.facebook.com/{a.handle}",
                }
                for a in pages
            ]
        }
    )


async def threads_insights(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /{threads-media-id}/insights?metric=views,likes,replies,reposts,quotes,shares."""
    node = request.path_params["node"]
    post = _live(sim, "threads", sim.world.post("threads", node), now)
    if post is None:
        return errors.graph(
            400,
            100,
            f"Unsupported get request. Object with ID '{node}' does not exist.",
            subcode=33,
        )
    c = _counters(sim, post, now)
    values = {
        "views": c.impressions,
        "likes": c.likes,
        "replies": c.comments,
        "reposts": c.reposts,
        "quotes": c.quotes,
        "shares": c.shares,
    }
    metrics = [m for m in request.query_params.get("metric", "").split(",") if m] or list(values)
    unknown = [m for m in metrics if m not in values]
    if unknown:
        return errors.graph(400, 100, f"(#100) metric must be one of: {', '.join(values)}")
    return JSONResponse({"data": [_lifetime(m, values[m], node) for m in metrics]})


async def threads_keyword_search(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /keyword_search?q=…&search_type=TOP: the newest public thread of each matching
    profile (with its owner, so that the profile can be read)."""
    q = request.query_params
    size = _clamp(q.get("limit"), 25, 1, 100)
    data = []
    for account in sim.world.search("threads", q.get("q", "")):
        feed = _feed(sim, account, now)
        if feed:
            post = feed[0]
            data.append(
                {
                    "id": post.external_id,
                    "text": post.text,
                    "timestamp": _ig_time(post.published_at),
                    "username": account.handle,
                    "owner": {"id": account.external_id},
                }
            )
        if len(data) == size:
            break
    return JSONResponse({"data": data})


async def pin_user_account(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /v5/user_account: the token's own account, with its follower count."""
    account = token_owner(sim, request, "pinterest", "pina_")
    if account is None:
        return errors.pinterest(401, 2, "Authentication failed.")
    return JSONResponse(
        {
            "id": account.external_id,
            "username": account.handle,
            "business_name": account.display_name,
            "account_type": "BUSINESS",
            "follower_count": account.followers(now),
            "following_count": account.following,
            "pin_count": len(_feed(sim, account, now)),
        }
    )


async def pin_get(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /v5/pins/{pin_id}?pin_metrics=true: one pin, with its lifetime metrics."""
    account = token_owner(sim, request, "pinterest", "pina_")
    if account is None:
        return errors.pinterest(401, 2, "Authentication failed.")
    pin_id = request.path_params["pin_id"]
    post = _live(sim, "pinterest", sim.world.post("pinterest", pin_id), now)
    if post is None or post.account.external_id != account.external_id:
        return errors.pinterest(404, 50, "Pin not found.")
    body: dict[str, Any] = {
        "id": post.external_id,
        "created_at": post.published_at.strftime("%Y-%m-%dT%H:%M:%S"),
        "description": post.text,
        "media": {"media_type": post.media_type},
    }
    if request.query_params.get("pin_metrics") == "true":
        c = _counters(sim, post, now)
        body["pin_metrics"] = {
            "lifetime_metrics": {
                "impression": c.impressions,
                "save": c.saves,
                "pin_click": c.clicks,
                "outbound_click": 0,
                "reaction": c.likes,
                "comment": c.comments,
            }
        }
    return JSONResponse(body)


def graph_read_routes() -> list[BaseRoute]:
    """The Facebook and Threads reads above: they must come before the Graph catch-alls."""
    table: list[tuple[str, str, Handler]] = [
        ("facebook", "/", fb_ids),
        ("facebook", "/pages/search", fb_pages_search),
        ("threads", "/keyword_search", threads_keyword_search),
        ("threads", "/{node}/insights", threads_insights),
    ]
    return [
        Route(f"/{platform}{path}", endpoint(platform, handler, auth=_graph_auth), methods=["GET"])
        for platform, path, handler in table
    ]


def _graph_auth(request: Request) -> bool:
    return bool(_bearer(request) or request.query_params.get("access_token"))


# ---- routes ---------------------------------------------------------------------------------


def routes() -> list[BaseRoute]:
    """Every platform's read endpoints under its prefix (/youtube, /x, …); Instagram's Graph
    reads are composed with the write side's in simulator/writes.py."""
    table: list[tuple[str, str, Handler, Callable[[Request], bool], list[str]]] = [
        ("youtube", "/youtube/v3/channels", yt_channels, _yt_auth, ["GET"]),
        ("youtube", "/youtube/v3/playlistItems", yt_playlist_items, _yt_auth, ["GET"]),
        ("youtube", "/youtube/v3/videos", yt_videos, _yt_auth, ["GET"]),
        ("youtube", "/youtube/v3/search", yt_search, _yt_auth, ["GET"]),
        ("x", "/2/users/by/username/{username}", x_user_by_username, _x_auth, ["GET"]),
        ("x", "/2/users/search", x_users_search, _x_auth, ["GET"]),
        ("x", "/2/users/{id}/tweets", x_user_tweets, _x_auth, ["GET"]),
        ("x", "/2/users/{id}", x_user, _x_auth, ["GET"]),
        ("x", "/2/tweets", x_tweets, _x_auth, ["GET"]),
        ("linkedin", "/rest/organizations/{id}", _li_checked(li_organization), _li_auth, ["GET"]),
        ("linkedin", "/rest/organizations", _li_checked(li_organizations), _li_auth, ["GET"]),
        ("linkedin", "/rest/networkSizes/{urn}", _li_checked(li_network_size), _li_auth, ["GET"]),
        ("linkedin", "/rest/posts", _li_checked(li_posts), _li_auth, ["GET"]),
        (
            "linkedin",
            "/rest/organizationalEntityShareStatistics",
            _li_checked(li_share_statistics),
            _li_auth,
            ["GET"],
        ),
        ("tiktok", "/v2/user/info/", tt_user_info, _tt_auth, ["GET", "POST"]),
        ("tiktok", "/v2/video/list/", tt_video_list, _tt_auth, ["POST"]),
        ("tiktok", "/v2/video/query/", tt_video_query, _tt_auth, ["POST"]),
        ("tiktok", "/v2/research/user/info/", tt_research_user, _tt_auth, ["POST"]),
        ("tiktok", "/v2/research/video/query/", tt_research_videos, _tt_auth, ["POST"]),
        ("bluesky", "/xrpc/app.bsky.actor.getProfile", bsky_profile, _bsky_auth, ["GET"]),
        ("bluesky", "/xrpc/app.bsky.feed.getAuthorFeed", bsky_author_feed, _bsky_auth, ["GET"]),
        ("bluesky", "/xrpc/app.bsky.feed.getPosts", bsky_posts, _bsky_auth, ["GET"]),
        ("bluesky", "/xrpc/app.bsky.actor.searchActors", bsky_search_actors, _bsky_auth, ["GET"]),
        ("pinterest", "/v5/user_account", pin_user_account, lambda r: True, ["GET"]),
        ("pinterest", "/v5/pins/{pin_id}", pin_get, lambda r: True, ["GET"]),
    ]
    return [
        Route(f"/{platform}{path}", endpoint(platform, handler, auth=auth), methods=methods)
        for platform, path, handler, auth, methods in table
    ]
