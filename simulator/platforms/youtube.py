"""YouTube in the simulator: the Data API v3 reads, resumable uploads and comments."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from simulator import errors
from simulator.platforms.common import (
    account_by_id,
    any_token,
    bearer_token,
    clamp,
    counters_at,
    cursor_of,
    endpoint,
    feed_of,
    find_event,
    live_post,
    meta_of,
    mount,
    older_than,
    own_events,
    picture_name,
    reads,
    record_reply,
    request_params,
    token_owner,
    write,
)
from simulator.state import Sim
from simulator.world import Account, Post

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


def _video_thumbnails(video_id: str) -> dict[str, Any]:
    """snippet.thumbnails of a video: i.ytimg.com's files, named by the video id."""
    sizes = {"default": (120, 90), "medium": (320, 180), "high": (480, 360)}
    files = {"default": "default", "medium": "mqdefault", "high": "hqdefault"}
    return {
        name: {
            "url": f"https://i.ytimg.com/vi/{video_id}/{files[name]}.jpg",
            "width": w,
            "height": h,
        }
        for name, (w, h) in sizes.items()
    }


def _channel_thumbnails(account: Account) -> dict[str, Any]:
    """snippet.thumbnails of a channel: its avatar on yt3.ggpht.com, in three sizes."""
    name = picture_name("youtube", "avatar", account.external_id)
    return {
        size: {"url": f"https://yt3.ggpht.com/ytc/{name}=s{px}-c-k-c0x00ffffff-no-rj"}
        for size, px in (("default", 88), ("medium", 240), ("high", 800))
    }


def _yt_auth(request: Request) -> bool:
    return bool(request.query_params.get("key") or bearer_token(request))


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
            "thumbnails": _video_thumbnails(post.external_id),
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
                "thumbnails": _channel_thumbnails(account),
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
    size = clamp(q.get("maxResults"), 5, 0, 50)
    posts = older_than(feed_of(sim, account, now), q.get("pageToken"))
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
                    "title": meta_of(sim, "youtube", post).get("title") or post.text.split(" #")[0],
                    "description": post.text,
                    "thumbnails": _video_thumbnails(post.external_id),
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
        body["nextPageToken"] = cursor_of(page[-1])
    return JSONResponse(body)


async def yt_videos(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    ids = [i for i in q.get("id", "").split(",") if i]
    if len(ids) > 50:
        return errors.youtube(400, "badRequest", "The request specifies more than 50 video ids.")
    parts = set(q.get("part", "").split(","))
    items = []
    for video_id in ids:
        post = live_post(sim, "youtube", sim.world.post("youtube", video_id), now)
        if post is not None:  # deleted or unknown videos are simply left out
            meta = meta_of(sim, "youtube", post)
            items.append(_yt_video(post, counters_at(sim, post, now), parts, meta))
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
    size = clamp(q.get("maxResults"), 5, 0, 50)
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
                    "thumbnails": _channel_thumbnails(a),
                    "channelTitle": a.display_name,
                },
            }
            for a in page
        ],
    }
    if start + size < len(found):
        body["nextPageToken"] = str(start + size)
    return JSONResponse(body)


async def yt_upload_init(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("uploadType") != "resumable":
        return errors.youtube(400, "badRequest", "Only uploadType=resumable is simulated.")
    body = await request_params(request)
    snippet = body.get("snippet") or {}
    if not snippet.get("title"):
        return errors.youtube(
            400, "invalidTitle", "The request metadata specifies an invalid or empty video title."
        )
    channel = q.get("onBehalfOfContentOwnerChannel") or ""
    account = (
        account_by_id(sim, "youtube", channel)
        if channel
        else token_owner(sim, request, "youtube", "sim-user-", own_by_default=True)
    )
    if account is None:
        return errors.youtube(403, "forbidden", "The channel is not accessible.")
    upload_id = hashlib.sha1(f"{sim.next_id()}".encode()).hexdigest()
    sim.pending[f"youtube:upload:{upload_id}"] = {
        "account": account.external_id,
        "snippet": snippet,
        "status": body.get("status") or {},
        "video": None,
    }
    location = (
        f"{str(request.base_url).rstrip('/')}/youtube/upload/youtube/v3/videos"
        f"?uploadType=resumable&upload_id={upload_id}"
    )
    return Response(status_code=200, headers={"Location": location})


async def yt_upload_put(request: Request, sim: Sim, now: datetime) -> Response:
    state = sim.pending.get(f"youtube:upload:{request.query_params.get('upload_id')}")
    if state is None:
        return errors.youtube(404, "notFound", "The upload session does not exist.")
    data = await request.body()
    if not data:
        return errors.youtube(400, "badContent", "The media content is empty.")
    account = account_by_id(sim, "youtube", state["account"])
    assert account is not None
    snippet = state["snippet"]
    text = str(snippet.get("description") or snippet.get("title") or "")
    post = sim.publish(
        account,
        text,
        "video",
        now,
        media_count=1,
        meta={"title": snippet.get("title"), "tags": list(snippet.get("tags") or [])},
    )
    state["video"] = post.external_id
    return JSONResponse(
        {
            "kind": "youtube#video",
            "id": post.external_id,
            "snippet": {
                "publishedAt": post.published_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "channelId": account.external_id,
                "title": snippet.get("title"),
                "description": snippet.get("description"),
                "tags": snippet.get("tags") or [],
            },
            "status": {
                "uploadStatus": "uploaded",
                "privacyStatus": state["status"].get("privacyStatus", "public"),
            },
        }
    )


async def yt_comment_threads(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    channel = q.get("allThreadsRelatedToChannelId") or ""
    account = account_by_id(sim, "youtube", channel)
    if account is None:
        return errors.youtube(404, "channelNotFound", "The channel could not be found.")
    found = [e for e in own_events(sim, account, now, None) if e.kind == "comment"]
    found.reverse()
    size = clamp(q.get("maxResults"), 20, 1, 100)
    start = int(q.get("pageToken") or 0)
    page = found[start : start + size]
    items = []
    for e in page:
        top = {
            "kind": "youtube#comment",
            "id": e.message_id,
            "snippet": {
                "videoId": e.post.external_id if e.post else None,
                "textDisplay": e.text,
                "textOriginal": e.text,
                "authorDisplayName": e.author_name,
                "authorChannelId": {"value": f"UC{e.author_id}"},
                "publishedAt": e.at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
        replies = sim.thread_replies("youtube", e.thread_id)
        item: dict[str, Any] = {
            "kind": "youtube#commentThread",
            "id": e.message_id,
            "snippet": {
                "channelId": account.external_id,
                "videoId": e.post.external_id if e.post else None,
                "topLevelComment": top,
                "totalReplyCount": len(replies),
            },
        }
        if replies:
            item["replies"] = {
                "comments": [
                    {
                        "kind": "youtube#comment",
                        "id": f"{e.message_id}.{r['id']}",
                        "snippet": {"textOriginal": r["text"], "parentId": e.message_id},
                    }
                    for r in replies
                ]
            }
        items.append(item)
    body: dict[str, Any] = {"kind": "youtube#commentThreadListResponse", "items": items}
    if start + size < len(found):
        body["nextPageToken"] = str(start + size)
    return JSONResponse(body)


async def yt_comment_insert(request: Request, sim: Sim, now: datetime) -> Response:
    body = await request_params(request)
    snippet = body.get("snippet") or {}
    parent = str(snippet.get("parentId") or "")
    event = find_event(sim, "youtube", parent, now)
    if event is None:
        return errors.youtube(
            404, "parentCommentNotFound", "The parent comment could not be found."
        )
    text = str(snippet.get("textOriginal") or "")
    reply_id = record_reply(sim, "youtube", event.thread_id, text, now)
    return JSONResponse(
        {
            "kind": "youtube#comment",
            "id": f"{parent}.{reply_id}",
            "snippet": {"parentId": parent, "textOriginal": text, "textDisplay": text},
        }
    )


def routes() -> list[BaseRoute]:
    """YouTube's endpoints: the Data API's reads, uploads and comments."""
    return mount(
        "youtube",
        [
            ("/upload/youtube/v3/videos", write("youtube", yt_upload_init, commit=False), ["POST"]),
            (
                "/upload/youtube/v3/videos",
                write("youtube", yt_upload_put, commit=True, auth=lambda r: True),
                ["PUT"],
            ),
            (
                "/youtube/v3/commentThreads",
                endpoint("youtube", yt_comment_threads, auth=any_token),
                ["GET"],
            ),
            ("/youtube/v3/comments", write("youtube", yt_comment_insert, commit=True), ["POST"]),
            *reads(
                "youtube",
                _yt_auth,
                {
                    "/youtube/v3/channels": yt_channels,
                    "/youtube/v3/playlistItems": yt_playlist_items,
                    "/youtube/v3/videos": yt_videos,
                    "/youtube/v3/search": yt_search,
                },
            ),
        ],
    )
