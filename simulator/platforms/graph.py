"""Meta's Graph API in the simulator: Instagram, Facebook Pages and Threads, reads and writes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from simulator import errors, inbox
from simulator.platforms.common import (
    GRAPH,
    Handler,
    account_by_id,
    any_token,
    clamp,
    counters_at,
    cursor_of,
    endpoint,
    feed_of,
    find_event,
    has_picture,
    live_post,
    mount,
    older_than,
    own_events,
    picture_name,
    record_reply,
    request_params,
    write,
)
from simulator.state import Sim
from simulator.world import ALL_TOPICS, CATEGORIES, Account, Post

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


def _ig_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


def _scontent(platform: str, *parts: object, ext: str = "jpg") -> str:
    """A picture's URL on Meta's CDN (Instagram and Threads: cdninstagram; Facebook: fbcdn)."""
    host = "scontent.xx.fbcdn.net" if platform == "facebook" else "scontent.cdninstagram.com"
    return f"https://{host}/v/t51.29350-15/{picture_name(platform, *parts)}_n.{ext}"


def media_pictures(platform: str, post: Post) -> dict[str, str]:
    """media_url (the image, or the video's file) and, for a video, thumbnail_url (its cover)."""
    if not has_picture(post):
        return {}
    video = post.media_type == "video"
    found = {"media_url": _scontent(platform, post.external_id, ext="mp4" if video else "jpg")}
    if video:
        found["thumbnail_url"] = _scontent(platform, post.external_id, "cover")
    return found


def profile_picture(account: Account) -> str:
    """An account's profile picture on Meta's CDN."""
    return _scontent(account.platform, "avatar", account.external_id)


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
        **media_pictures("instagram", post),
    }
    return {k: v for k, v in item.items() if k == "id" or k in fields}


def _unsupported(node: str, method: str = "get") -> JSONResponse:
    """Graph's answer for a node it cannot find (or may not show) to a get or post request."""
    return errors.graph(
        400,
        100,
        f"Unsupported {method} request. Object with ID '{node}' does not exist, cannot be loaded "
        "due to missing permissions, or does not support this operation.",
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
        return _unsupported(node)
    fields = set(q.get("fields", "id,username").split(","))
    full = {
        "id": account.external_id,
        "username": account.handle,
        "name": account.display_name,
        "biography": f"{account.category} · {account.display_name}",
        "followers_count": account.followers(now),
        "follows_count": account.following,
        "media_count": account.posts_count(now),
        "profile_picture_url": profile_picture(account),
    }
    return JSONResponse({k: v for k, v in full.items() if k == "id" or k in fields})


async def ig_edge(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /{node}/{edge}: media and insights (the write side answers its own first)."""
    node, edge = request.path_params["node"], request.path_params["edge"]
    q = request.query_params
    if edge == "media":
        account = sim.world.account("instagram", node)
        if account is None or account.external_id != node:
            return _unsupported(node)
        size = clamp(q.get("limit"), 25, 1, 100)
        fields = set(q.get("fields", "id").split(","))
        posts = older_than(feed_of(sim, account, now), q.get("after"))
        page, rest = posts[:size], posts[size:]
        after = cursor_of(page[-1]) if rest and page else None
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
                    for p in feed_of(sim, account, now)[:10]
                    if topic in p.hashtags or topic == account.category
                )
        media.sort(key=lambda p: -p.counters(now).likes)
        size = clamp(q.get("limit"), 25, 1, 50)
        return JSONResponse(
            _ig_page(request, [_ig_media(p, fields, now) for p in media[:size]], None)
        )
    return _unsupported(f"{node}/{edge}")


def ig_insights(request: Request, sim: Sim, now: datetime, node: str) -> Response:
    post = live_post(sim, "instagram", sim.world.post("instagram", node), now)
    if post is None:
        return _unsupported(node)
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
        return _unsupported_metric(refused)
    values = _ig_values(counters_at(sim, post, now))
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


def _unsupported_metric(metric: str) -> JSONResponse:
    """Instagram's answer to a metric the media does not report."""
    return errors.graph(
        400,
        100,
        f"(#100) The Media Insights API does not support the {metric} metric for "
        "this media product type.",
    )


IDS_MAX = 50  # Graph's multi-id lookup takes at most 50 ids


def _ids_of(request: Request) -> list[str] | None:
    """The ids of a multi-id lookup (``?ids=a,b``), or None when there are none or too many."""
    ids = [i for i in request.query_params.get("ids", "").split(",") if i]
    return ids if 0 < len(ids) <= IDS_MAX else None


def _bad_ids() -> JSONResponse:
    return errors.graph(400, 100, f"(#100) ids takes 1 to {IDS_MAX} ids")


_INSIGHTS_FIELD = re.compile(r"insights\.metric\(([^)]*)\)")


async def ig_ids(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /?ids=a,b&fields=id,insights.metric(reach,likes,…): several media's insights at once.

    As Graph's multi-id lookup does, the whole call fails when one id does not exist (#803)
    or one media refuses a metric (#100, as its /insights would): a client asks those one by
    one. A metric fault due is left for that media's own /insights call to take.
    """
    ids = _ids_of(request)
    if ids is None:
        return _bad_ids()
    fields = request.query_params.get("fields", "id")
    asked = _INSIGHTS_FIELD.search(fields)
    metrics = [m for m in asked.group(1).split(",") if m] if asked else []
    for metric in metrics:
        if metric not in IG_METRICS:
            return errors.graph(
                400, 100, f"(#100) metric must be one of the following values: {IG_METRICS}"
            )
    found: dict[str, Post] = {}
    for node in ids:
        post = live_post(sim, "instagram", sim.world.post("instagram", node), now)
        if post is not None:
            found[node] = post
    missing = [node for node in ids if node not in found]
    if missing:
        return errors.graph(
            404, 803, f"(#803) Some of the aliases you requested do not exist: {','.join(missing)}"
        )
    refused = sim.metric_error_due("instagram", metrics)
    reels = any(post.media_type == "video" for post in found.values())
    if refused is None and reels and "impressions" in metrics:
        refused = "impressions"  # as on Instagram: reels report plays/views, not impressions
    if refused is not None:
        return _unsupported_metric(refused)
    out: dict[str, Any] = {}
    for node, post in found.items():
        item: dict[str, Any] = {"id": node}
        if asked:
            values = _ig_values(counters_at(sim, post, now))
            item["insights"] = {"data": [_lifetime(m, values[m], node) for m in metrics]}
        out[node] = item
    return JSONResponse(out)


def _ig_values(c: Any) -> dict[str, int]:
    """A media's insights by metric name, from its counters."""
    return {
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


# Profiles and post lists of Facebook and Threads are answered by the Graph routes of
# simulator.writes (GET /{node}, /{page}/posts, /{user}/threads); these are the rest.


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
    ids = _ids_of(request)
    if ids is None:
        return _bad_ids()
    out: dict[str, Any] = {}
    for node in ids:
        post = live_post(sim, "facebook", sim.world.post("facebook", node), now)
        if post is None:
            continue
        c = counters_at(sim, post, now)
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
    size = clamp(q.get("limit"), 25, 1, 100)
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
    post = live_post(sim, "threads", sim.world.post("threads", node), now)
    if post is None:
        return errors.graph(
            400,
            100,
            f"Unsupported get request. Object with ID '{node}' does not exist.",
            subcode=33,
        )
    c = counters_at(sim, post, now)
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
    size = clamp(q.get("limit"), 25, 1, 100)
    data = []
    for account in sim.world.search("threads", q.get("q", "")):
        feed = feed_of(sim, account, now)
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


def _graph_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


def _container(sim: Sim, platform: str, account: Account, params: dict[str, Any]) -> Response:
    kind = str(params.get("media_type") or "").upper()
    if platform == "threads" and not kind:
        return errors.graph(400, 100, "The parameter media_type is required.")
    if not kind:
        kind = "VIDEO" if params.get("video_url") else "IMAGE"
    if kind in ("IMAGE",) and not params.get("image_url"):
        return errors.graph(400, 100, "The parameter image_url is required.")
    if kind in ("VIDEO", "REELS") and not params.get("video_url"):
        return errors.graph(400, 100, "The parameter video_url is required.")
    children = params.get("children") or []
    if isinstance(children, str):
        children = [c for c in children.split(",") if c]
    if kind == "CAROUSEL":
        for child in children:
            if f"{platform}:container:{child}" not in sim.pending:
                return _unsupported(str(child), "post")
    container_id = str(17_900_000_000_000_000 + sim.next_id())
    sim.pending[f"{platform}:container:{container_id}"] = {
        "account": account.external_id,
        "media_type": kind,
        "text": str(params.get("caption") or params.get("text") or ""),
        "children": children,
        "reply_to_id": params.get("reply_to_id"),
        "polls": 0,
        "published": None,
    }
    return JSONResponse({"id": container_id})


def _container_status(sim: Sim, platform: str, container_id: str) -> JSONResponse | None:
    """GET /{container-id}?fields=status_code: videos are IN_PROGRESS at the first look."""
    state = sim.pending.get(f"{platform}:container:{container_id}")
    if state is None:
        return None
    state["polls"] += 1
    done = state["media_type"] not in ("VIDEO", "REELS") or state["polls"] > 1
    status = "FINISHED" if done else "IN_PROGRESS"
    if state["published"]:
        status = "PUBLISHED"
    return JSONResponse({"id": container_id, "status_code": status, "status": status})


def _media_label(kind: str) -> str:
    return {"VIDEO": "video", "REELS": "video", "CAROUSEL": "carousel", "TEXT": "text"}.get(
        kind, "image"
    )


def _graph_publish(
    sim: Sim, platform: str, account: Account, params: dict[str, Any], now: datetime
) -> Response:
    creation = str(params.get("creation_id") or "")
    state = sim.pending.get(f"{platform}:container:{creation}")
    if state is None or state["account"] != account.external_id:
        return errors.graph(400, 100, "The parameter creation_id is invalid.", subcode=2207027)
    if state["media_type"] in ("VIDEO", "REELS") and state["polls"] < 2:
        return errors.graph(
            400,
            9007,
            "The media is not ready for publishing, please wait for a moment",
            subcode=2207027,
        )
    if state["published"]:
        return errors.graph(400, 100, "The container has already been published.", subcode=2207008)
    reply_to = state.get("reply_to_id")
    if reply_to:  # a Threads reply: it joins the conversation, not the profile
        event = find_event(sim, platform, str(reply_to), now)
        if event is None:
            return _unsupported(str(reply_to), "post")
        reply_id = record_reply(sim, platform, event.thread_id, state["text"], now)
        state["published"] = reply_id
        return JSONResponse({"id": reply_id})
    post = sim.publish(
        account,
        state["text"],
        _media_label(state["media_type"]),
        now,
        media_count=max(1, len(state["children"])) if state["media_type"] != "TEXT" else 0,
    )
    state["published"] = post.external_id
    return JSONResponse({"id": post.external_id})


def _fb_post(
    sim: Sim, account: Account, params: dict[str, Any], now: datetime, media: str
) -> Response:
    text = str(params.get("message") or params.get("caption") or params.get("description") or "")
    if media == "text" and not text and not params.get("link") and not params.get("attached_media"):
        return errors.graph(400, 100, "(#100) The parameter message or link is required.")
    if media == "image" and not params.get("url"):
        return errors.graph(400, 324, "(#324) Requires upload file")
    if media == "video" and not params.get("file_url"):
        return errors.graph(400, 100, "(#100) The parameter file_url is required.")
    if media == "image" and str(params.get("published", "true")).lower() == "false":
        photo_id = str(sim.next_id())  # an unpublished photo, to attach to a /feed post
        sim.pending[f"facebook:photo:{photo_id}"] = {"account": account.external_id}
        return JSONResponse({"id": photo_id})
    attached = params.get("attached_media") or []
    if media == "text" and attached:
        media = "image"
    if media == "text" and params.get("link"):
        media = "link"
    post = sim.publish(account, text, media, now, media_count=0 if media in ("text", "link") else 1)
    if media == "image":
        return JSONResponse({"id": str(sim.next_id()), "post_id": post.external_id})
    return JSONResponse({"id": post.external_id})


def _graph_comment(e: inbox.Event, fields: set[str]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": e.message_id,
        "text": e.text,
        "message": e.text,
        "timestamp": _graph_time(e.at),
        "created_time": _graph_time(e.at),
        "username": e.author_handle,
        "from": {"id": e.author_id, "name": e.author_name, "username": e.author_handle},
    }
    return item


def _graph_reply_items(sim: Sim, platform: str, thread: str) -> list[dict[str, Any]]:
    return [
        {
            "id": r["id"],
            "text": r["text"],
            "message": r["text"],
            "timestamp": r["created_at"],
            "created_time": r["created_at"],
        }
        for r in sim.thread_replies(platform, thread)
    ]


def _graph_conversations(sim: Sim, platform: str, account: Account, now: datetime) -> Response:
    dms = [e for e in own_events(sim, account, now, None) if e.kind == "dm"]
    dms.reverse()
    data = []
    for e in dms:
        messages = [
            {
                "id": e.message_id,
                "message": e.text,
                "created_time": _graph_time(e.at),
                "from": {"id": e.author_id, "username": e.author_handle, "name": e.author_name},
            }
        ]
        messages += [
            {
                "id": r["id"],
                "message": r["text"],
                "created_time": r["created_at"],
                "from": {"id": account.external_id, "username": account.handle},
            }
            for r in sim.thread_replies(platform, e.thread_id)
        ]
        messages.sort(key=lambda m: str(m["created_time"]), reverse=True)
        data.append(
            {
                "id": e.thread_id,
                "updated_time": _graph_time(e.at),
                "participants": {
                    "data": [
                        {"id": account.external_id, "username": account.handle},
                        {"id": e.author_id, "username": e.author_handle, "name": e.author_name},
                    ]
                },
                "messages": {"data": messages},
            }
        )
    return JSONResponse({"data": data, "paging": {"cursors": {"before": "", "after": ""}}})


def _graph_commits(request: Request) -> bool:
    """Which Graph POSTs make something visible (containers and uploads do not)."""
    return request.path_params.get("edge") not in ("media", "threads")


def graph_post(platform: str) -> Handler:
    """POST /{node}/{edge} for one Graph-shaped platform."""

    async def run(request: Request, sim: Sim, now: datetime) -> Response:
        node, edge = request.path_params["node"], request.path_params["edge"]
        params = await request_params(request)
        account = account_by_id(sim, platform, node)
        if account is not None:
            if (platform, edge) in (("instagram", "media"), ("threads", "threads")):
                return _container(sim, platform, account, params)
            if (platform, edge) in (("instagram", "media_publish"), ("threads", "threads_publish")):
                return _graph_publish(sim, platform, account, params, now)
            if platform == "facebook" and edge in ("feed", "photos", "videos"):
                media = {"feed": "text", "photos": "image", "videos": "video"}[edge]
                return _fb_post(sim, account, params, now, media)
            if edge == "messages" and platform in ("instagram", "facebook"):
                recipient = str((params.get("recipient") or {}).get("id") or "")
                text = str((params.get("message") or {}).get("text") or "")
                dms = [
                    e
                    for e in own_events(sim, account, now, None)
                    if e.kind == "dm" and e.author_id == recipient
                ]
                if not dms:
                    return errors.graph(400, 100, "(#100) No matching user found", subcode=2018001)
                message_id = record_reply(sim, platform, dms[-1].thread_id, text, now)
                return JSONResponse({"recipient_id": recipient, "message_id": f"m_{message_id}"})
            return _unsupported(f"{node}/{edge}", "post")
        # A comment: replies go under it (Instagram /replies, Facebook /comments).
        if (platform, edge) in (("instagram", "replies"), ("facebook", "comments")):
            event = find_event(sim, platform, node, now)
            if event is None or event.kind != "comment":
                return _unsupported(node, "post")
            text = str(params.get("message") or "")
            return JSONResponse({"id": record_reply(sim, platform, event.thread_id, text, now)})
        return _unsupported(node, "post")

    return run


def _graph_permalink(platform: str, post: Post) -> str:
    return f"https://www.{platform}.com/{post.account.handle}/posts/{post.number}"


def _threads_media(sim: Sim, node: str, fields: str | None, now: datetime) -> Response | None:
    """GET /{threads-media-id}?fields=…: one of the account's threads (None: not a thread)."""
    post = sim.world.post("threads", node)
    if post is None or not post.visible(now):
        return None
    item = {
        "id": post.external_id,
        "text": post.text,
        "timestamp": _graph_time(post.published_at),
        "media_type": "TEXT_POST" if post.media_type == "text" else post.media_type.upper(),
        "permalink": _graph_permalink("threads", post),
        "username": post.account.handle,
        **media_pictures("threads", post),
    }
    wanted = set((fields or "id").split(","))
    return JSONResponse({k: v for k, v in item.items() if k == "id" or k in wanted})


def graph_read(sim: Sim, platform: str, request: Request, now: datetime) -> Response | None:
    """The Graph reads the write side adds (containers, comments, conversations, a page's
    posts, Threads' profile threads); None when the request is not one of them."""
    node = request.path_params["node"]
    edge = request.path_params.get("edge")
    q = request.query_params
    if edge is None:
        status = _container_status(sim, platform, node)
        if status is not None:
            return status
        if platform in ("instagram", "facebook"):
            event = find_event(sim, platform, node, now)
            if event is not None and event.kind == "dm":
                return _graph_conversations_one(sim, platform, event)
        if platform == "threads":
            return _threads_media(sim, node, q.get("fields"), now)
        return None
    account = account_by_id(sim, platform, node)
    if account is not None:
        if edge == "conversations" and platform in ("instagram", "facebook"):
            return _graph_conversations(sim, platform, account, now)
        if (platform, edge) in (
            ("facebook", "posts"),
            ("facebook", "feed"),
            ("threads", "threads"),
        ):
            size = clamp(q.get("limit"), 25, 1, 100)
            posts = older_than(feed_of(sim, account, now), q.get("after"))
            page, rest = posts[:size], posts[size:]
            items = [
                {
                    "id": p.external_id,
                    "message": p.text,
                    "text": p.text,
                    "created_time": _graph_time(p.published_at),
                    "timestamp": _graph_time(p.published_at),
                    "media_type": "TEXT_POST" if p.media_type == "text" else p.media_type.upper(),
                    "permalink": _graph_permalink(platform, p),
                    "permalink_url": f"https://www.facebook.com/{p.external_id}",
                    **_post_pictures(platform, p),
                }
                for p in page
            ]
            after = cursor_of(page[-1]) if rest and page else ""
            paging: dict[str, Any] = {"cursors": {"before": "", "after": after}}
            if after:
                paging["next"] = f"{str(request.url).split('?')[0]}?after={after}"
            return JSONResponse({"data": items, "paging": paging})
        return None
    post = sim.world.post(platform, node)
    if post is not None and edge in ("comments", "replies"):
        found = [
            e
            for e in inbox.events(sim.world, post.account, None, now)
            if e.post is not None and e.post.external_id == post.external_id
        ]
        fields = set(q.get("fields", "id,text").split(","))
        return JSONResponse({"data": [_graph_comment(e, fields) for e in found]})
    event = find_event(sim, platform, node, now)
    if event is not None and edge in ("comments", "replies"):
        return JSONResponse({"data": _graph_reply_items(sim, platform, event.thread_id)})
    return None


def _post_pictures(platform: str, post: Post) -> dict[str, str]:
    """A post's pictures as its platform names them: Facebook's full_picture, Threads' media."""
    found = media_pictures(platform, post)
    if platform != "facebook":
        return found
    picture = found.get("thumbnail_url") or found.get("media_url")
    return {"full_picture": picture} if picture else {}


def _graph_conversations_one(sim: Sim, platform: str, event: inbox.Event) -> Response:
    account = event.account
    return JSONResponse(
        {
            "id": event.thread_id,
            "participants": {
                "data": [
                    {"id": account.external_id, "username": account.handle},
                    {"id": event.author_id, "username": event.author_handle},
                ]
            },
        }
    )


def graph_first(platform: str, reads: Handler) -> Handler:
    """The write side's Graph reads first (containers, comments, conversations), then ``reads``."""

    async def run(request: Request, sim: Sim, now: datetime) -> Response:
        answer = graph_read(sim, platform, request, now)
        return answer if answer is not None else await reads(request, sim, now)

    return run


def graph_get(platform: str) -> Handler:
    """GET /{node} and /{node}/{edge} for Facebook and Threads (Instagram extends its own)."""

    async def run(request: Request, sim: Sim, now: datetime) -> Response:
        answer = graph_read(sim, platform, request, now)
        if answer is not None:
            return answer
        node = request.path_params["node"]
        account = account_by_id(sim, platform, node)
        if account is not None and "edge" not in request.path_params:
            node_body: dict[str, Any] = {
                "id": account.external_id,
                "name": account.display_name,
                "username": account.handle,
                "followers_count": account.followers(now),
                "fan_count": account.followers(now),
            }
            # The profile picture: a Page's picture edge inlined, a Threads user's URL.
            if platform == "facebook":
                node_body["picture"] = {
                    "data": {
                        "height": 50,
                        "width": 50,
                        "is_silhouette": False,
                        "url": profile_picture(account),
                    }
                }
            else:
                node_body["threads_profile_picture_url"] = profile_picture(account)
            return JSONResponse(node_body)
        return errors.graph(
            400,
            100,
            f"Unsupported get request. Object with ID '{node}' does not exist, cannot be loaded "
            "due to missing permissions, or does not support this operation.",
            subcode=33,
        )

    return run


def routes() -> list[BaseRoute]:
    """The Graph API's endpoints for Instagram, Facebook Pages and Threads.

    The few fixed read paths come first: the node catch-alls (``/{node}``, ``/{node}/{edge}``)
    would take them otherwise.
    """
    fixed: list[tuple[str, str, Handler]] = [
        ("facebook", "/", fb_ids),
        ("facebook", "/pages/search", fb_pages_search),
        ("threads", "/keyword_search", threads_keyword_search),
        ("threads", "/{node}/insights", threads_insights),
    ]
    out: list[BaseRoute] = [
        Route(f"/{platform}{path}", endpoint(platform, handler, auth=any_token), methods=["GET"])
        for platform, path, handler in fixed
    ]
    out.append(Route("/instagram/", endpoint("instagram", ig_ids, auth=any_token), methods=["GET"]))
    for platform in GRAPH:
        out += mount(
            platform,
            [
                (
                    "/{node}/{edge}",
                    write(platform, graph_post(platform), commit=_graph_commits),
                    ["POST"],
                )
            ],
        )
    for path, reads in (("/{node}/{edge}", ig_edge), ("/{node}", ig_node)):
        handler = endpoint("instagram", graph_first("instagram", reads), auth=any_token)
        out += mount("instagram", [(path, handler, ["GET"])])
    for platform in ("facebook", "threads"):
        handler = endpoint(platform, graph_get(platform), auth=any_token)
        out += mount(
            platform, [("/{node}/{edge}", handler, ["GET"]), ("/{node}", handler, ["GET"])]
        )
    return out
