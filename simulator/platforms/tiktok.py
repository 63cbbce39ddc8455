"""TikTok in the simulator: API v2 and Research reads, the Content Posting API."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from simulator import errors
from simulator.platforms.common import (
    any_token,
    counters_at,
    endpoint,
    feed_of,
    has_bearer,
    in_feed,
    live_post,
    mount,
    picture_name,
    reads,
    token_owner,
    write,
)
from simulator.state import Sim
from simulator.world import Account, Post


def _tt_ok(data: Any) -> JSONResponse:
    return JSONResponse(
        {"data": data, "error": {"code": "ok", "message": "", "log_id": "202400000000"}}
    )


def _fields(request: Request) -> set[str]:
    return set(request.query_params.get("fields", "").split(","))


def _tt_cdn(*parts: object) -> str:
    """A picture on TikTok's CDN (signed URLs there expire; the simulator's do not)."""
    name = picture_name("tiktok", *parts)
    return f"https://p16-sign-va.tiktokcdn.com/tos-maliva-p-0068/{name}~tplv-noop.image"


def _tt_avatar(account: Account) -> str:
    return _tt_cdn("avatar", account.external_id)


def _tt_video(post: Post, counters: Any, fields: set[str]) -> dict[str, Any]:
    full = {
        "id": post.external_id,
        "create_time": int(post.published_at.timestamp()),
        "title": post.text.split(" #")[0],
        "video_description": post.text,
        "duration": 15 + post.number % 45,
        "share_url": f"https://www.tiktok.com/@{post.account.handle}/video/{post.external_id}",
        # The Display API's cover; the Research API has no such field (the reader never asks).
        "cover_image_url": _tt_cdn("cover", post.external_id),
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
        "avatar_url": _tt_avatar(account),
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
    posts = feed_of(sim, account, now)
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
        post = live_post(sim, "tiktok", sim.world.post("tiktok", str(video_id)), now)
        if post is not None and post.account.external_id == account.external_id:
            videos.append(_tt_video(post, counters_at(sim, post, now), fields))
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
        "avatar_url": _tt_avatar(account),
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
            and in_feed(sim, p, now)
        ]
    else:
        candidates = [
            p
            for a in sim.world.accounts("tiktok")
            if not usernames or a.handle.lower() in usernames
            for p in feed_of(sim, a, now)
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
            "videos": [_tt_video(p, counters_at(sim, p, now), fields) for p in page],
            "cursor": offset + len(page),
            "has_more": offset + size < len(matched),
            "search_id": body.get("search_id") or "7201388525814961198",
        }
    )


async def tt_publish_init(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "tiktok", "act.")
    if account is None:
        return errors.expired("tiktok")
    body = await _json(request)
    info = body.get("post_info") or {}
    source = body.get("source_info") or {}
    kind = source.get("source")
    if kind not in ("PULL_FROM_URL", "FILE_UPLOAD"):
        return errors.tiktok(
            400, "invalid_params", "source_info.source must be PULL_FROM_URL or FILE_UPLOAD"
        )
    photo = request.url.path.endswith("/content/init/")
    text = str(info.get("title") or info.get("description") or "")
    # The simulator creates the post at init (the real one after download and moderation),
    # so a timeout here leaves a post behind, as it can on TikTok.
    post = sim.publish(account, text, "image" if photo else "video", now, media_count=1)
    publish_id = f"v_pub_url~v2-1.{sim.next_id()}"
    sim.pending[f"tiktok:publish:{publish_id}"] = {"post": post.external_id, "polls": 0}
    data: dict[str, Any] = {"publish_id": publish_id}
    if kind == "FILE_UPLOAD":
        data["upload_url"] = f"{str(request.base_url).rstrip('/')}/tiktok/_upload/{publish_id}"
    return _tt_ok(data)


async def tt_publish_status(request: Request, sim: Sim, now: datetime) -> Response:
    body = await _json(request)
    state = sim.pending.get(f"tiktok:publish:{body.get('publish_id')}")
    if state is None:
        return errors.tiktok(400, "invalid_publish_id", "The publish_id does not exist")
    state["polls"] += 1
    if state["polls"] < 2:
        return _tt_ok({"status": "PROCESSING_DOWNLOAD", "uploaded_bytes": 0})
    return _tt_ok(
        {"status": "PUBLISH_COMPLETE", "publicaly_available_post_id": [int(state["post"])]}
    )


async def tt_upload(request: Request) -> Response:
    await request.body()
    return Response(status_code=201)


def routes() -> list[BaseRoute]:
    """TikTok's endpoints: API v2 reads, the Research API and the Content Posting API."""
    return [
        Route("/tiktok/_upload/{publish_id:path}", tt_upload, methods=["PUT"]),
        *mount(
            "tiktok",
            [
                (
                    "/v2/post/publish/video/init/",
                    write("tiktok", tt_publish_init, commit=True),
                    ["POST"],
                ),
                (
                    "/v2/post/publish/content/init/",
                    write("tiktok", tt_publish_init, commit=True),
                    ["POST"],
                ),
                (
                    "/v2/post/publish/status/fetch/",
                    endpoint("tiktok", tt_publish_status, auth=any_token),
                    ["POST"],
                ),
                (
                    "/v2/user/info/",
                    endpoint("tiktok", tt_user_info, auth=has_bearer),
                    ["GET", "POST"],
                ),
                *reads(
                    "tiktok",
                    has_bearer,
                    {
                        "/v2/video/list/": tt_video_list,
                        "/v2/video/query/": tt_video_query,
                        "/v2/research/user/info/": tt_research_user,
                        "/v2/research/video/query/": tt_research_videos,
                    },
                    methods=("POST",),
                ),
            ],
        ),
    ]
