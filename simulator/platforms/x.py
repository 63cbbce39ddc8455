"""X in the simulator: API v2 reads, media upload, tweets, mentions and DMs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from simulator import errors, inbox
from simulator.platforms.common import (
    account_by_id,
    any_token,
    clamp,
    counters_at,
    cursor_of,
    endpoint,
    feed_of,
    find_event,
    has_bearer,
    has_picture,
    iso_ms,
    live_post,
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


def _x_user(account: Account, now: datetime) -> dict[str, Any]:
    avatar = picture_name("x", "avatar", account.external_id)
    return {
        "id": account.external_id,
        "name": account.display_name,
        "username": account.handle,
        "profile_image_url": (
            f"https://pbs.twimg.com/profile_images/{account.index}/{avatar}_normal.jpg"
        ),
        "description": f"{account.category} · {account.display_name}",
        "public_metrics": {
            "followers_count": account.followers(now),
            "following_count": account.following,
            "tweet_count": account.posts_count(now),
            "listed_count": account.followers(now) // 200,
        },
    }


def _x_media(post: Post) -> dict[str, Any]:
    """The tweet's media object (includes.media): a photo's url, a video's preview image."""
    name = picture_name("x", "media", post.external_id)
    if post.media_type == "video":
        return {
            "media_key": f"7_{post.external_id}",
            "type": "video",
            "preview_image_url": f"https://pbs.twimg.com/ext_tw_video_thumb/{post.external_id}"
            f"/pu/img/{name}.jpg",
        }
    return {
        "media_key": f"3_{post.external_id}",
        "type": "photo",
        "url": f"https://pbs.twimg.com/media/{name}.jpg",
    }


def _x_includes(request: Request, posts: list[Post]) -> dict[str, Any]:
    """includes.media of the tweets, when the request expands attachments.media_keys."""
    if "attachments.media_keys" not in request.query_params.get("expansions", "").split(","):
        return {}
    media = [_x_media(p) for p in posts if has_picture(p)]
    return {"includes": {"media": media}} if media else {}


def _x_tweet(post: Post, counters: Any) -> dict[str, Any]:
    hashtags = []
    for tag in post.hashtags:
        start = post.text.find(f"#{tag}")
        hashtags.append({"start": start, "end": start + len(tag) + 1, "tag": tag})
    return {
        "id": post.external_id,
        "text": post.text,
        "author_id": post.account.external_id,
        "created_at": iso_ms(post.published_at),
        "edit_history_tweet_ids": [post.external_id],
        "entities": {"hashtags": hashtags},
        **(
            {"attachments": {"media_keys": [_x_media(post)["media_key"]]}}
            if has_picture(post)
            else {}
        ),
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
    size = clamp(q.get("max_results"), 10, 5, 100)
    posts = feed_of(sim, account, now)
    if q.get("start_time"):
        since = datetime.fromisoformat(q["start_time"].replace("Z", "+00:00"))
        posts = [p for p in posts if p.published_at >= since]
    posts = older_than(posts, q.get("pagination_token"))
    page, rest = posts[:size], posts[size:]
    meta: dict[str, Any] = {"result_count": len(page)}
    if page:
        meta["newest_id"] = page[0].external_id
        meta["oldest_id"] = page[-1].external_id
    if rest and page:
        meta["next_token"] = cursor_of(page[-1])
    body: dict[str, Any] = {"meta": meta}
    if page:
        body["data"] = [_x_tweet(p, p.counters(now)) for p in page]
        body.update(_x_includes(request, page))
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
    data, problems, found = [], [], []
    for tweet_id in ids:
        post = live_post(sim, "x", sim.world.post("x", tweet_id), now)
        if post is None:
            problems.append(errors.x_not_found("tweet", "ids", tweet_id))
        else:
            found.append(post)
            data.append(_x_tweet(post, counters_at(sim, post, now)))
    body: dict[str, Any] = {}
    if data:
        body["data"] = data
        body.update(_x_includes(request, found))
    if problems:
        body["errors"] = problems
    return JSONResponse(body)


async def x_users_search(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    size = clamp(q.get("max_results"), 100, 1, 1000)
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


async def x_media_upload(request: Request, sim: Sim, now: datetime) -> Response:
    form = await request.form()
    media = form.get("media")
    if media is None:
        return errors.x(400, "media is required")
    media_id = str(1_800_000_000_000_000_000 + sim.next_id())
    category = str(form.get("media_category") or "tweet_image")
    sim.pending[f"x:media:{media_id}"] = {"category": category}
    return JSONResponse(
        {
            "data": {
                "id": media_id,
                "media_key": f"3_{media_id}",
                "expires_after_secs": 86400,
                "processing_info": {"state": "succeeded"},
            }
        }
    )


async def x_create_tweet(request: Request, sim: Sim, now: datetime) -> Response:
    body = await request_params(request)
    text = str(body.get("text") or "")
    media_ids = list((body.get("media") or {}).get("media_ids") or [])
    for media_id in media_ids:
        if f"x:media:{media_id}" not in sim.pending:
            return errors.x(400, f"Your media IDs are invalid: {media_id}")
    if not text and not media_ids:
        return errors.x(400, "text or media is required")
    account = token_owner(sim, request, "x", "sim-user-", own_by_default=True)
    if account is None:
        return errors.x(401, "Unauthorized")
    reply_to = (body.get("reply") or {}).get("in_reply_to_tweet_id")
    if reply_to:
        event = find_event(sim, "x", str(reply_to), now)
        if event is None:
            return errors.x(400, "The Tweet you are replying to does not exist.")
        reply_id = str(1_900_000_000_000_000_000 + sim.next_id())
        sim.add_reply(
            "x", event.thread_id, {"id": reply_id, "text": text, "created_at": now.isoformat()}
        )
        return JSONResponse(
            {"data": {"id": reply_id, "text": text, "edit_history_tweet_ids": [reply_id]}}, 201
        )
    media = "image" if media_ids else "text"
    post = sim.publish(account, text, media, now, media_count=len(media_ids))
    data = {"id": post.external_id, "text": text, "edit_history_tweet_ids": [post.external_id]}
    return JSONResponse({"data": data}, 201)


def _x_user_ref(event: inbox.Event) -> dict[str, Any]:
    return {"id": event.author_id, "username": event.author_handle, "name": event.author_name}


async def x_mentions(request: Request, sim: Sim, now: datetime) -> Response:
    account = account_by_id(sim, "x", request.path_params["id"])
    if account is None:
        return JSONResponse(
            {"errors": [errors.x_not_found("user", "id", request.path_params["id"])]}
        )
    q = request.query_params
    found = [e for e in own_events(sim, account, now, q.get("start_time")) if e.kind != "dm"]
    found.reverse()  # newest first, as X lists them
    size = clamp(q.get("max_results"), 10, 5, 100)
    start = int(q.get("pagination_token") or 0)
    page = found[start : start + size]
    data = []
    for e in page:
        tweet: dict[str, Any] = {
            "id": e.message_id,
            "text": e.text,
            "author_id": e.author_id,
            "created_at": iso_ms(e.at),
            "conversation_id": e.post.external_id if e.post else e.message_id,
            "edit_history_tweet_ids": [e.message_id],
        }
        if e.post is not None:
            tweet["in_reply_to_user_id"] = account.external_id
            tweet["referenced_tweets"] = [{"type": "replied_to", "id": e.post.external_id}]
        data.append(tweet)
    meta: dict[str, Any] = {"result_count": len(page)}
    if start + size < len(found):
        meta["next_token"] = str(start + size)
    body: dict[str, Any] = {"meta": meta}
    if data:
        body["data"] = data
        body["includes"] = {"users": [_x_user_ref(e) for e in page]}
    return JSONResponse(body)


async def x_dm_events(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "x", "sim-user-", own_by_default=True)
    if account is None:
        return errors.x(401, "Unauthorized")
    q = request.query_params
    found = [e for e in own_events(sim, account, now, None) if e.kind == "dm"]
    found.reverse()
    size = clamp(q.get("max_results"), 100, 1, 100)
    start = int(q.get("pagination_token") or 0)
    page = found[start : start + size]
    data = [
        {
            "id": e.message_id,
            "event_type": "MessageCreate",
            "text": e.text,
            "sender_id": e.author_id,
            "dm_conversation_id": e.thread_id,
            "created_at": iso_ms(e.at),
        }
        for e in page
    ]
    meta: dict[str, Any] = {"result_count": len(page)}
    if start + size < len(found):
        meta["next_token"] = str(start + size)
    body: dict[str, Any] = {"meta": meta, "data": data}
    if page:
        body["includes"] = {"users": [_x_user_ref(e) for e in page]}
    return JSONResponse(body)


async def x_dm_send(request: Request, sim: Sim, now: datetime) -> Response:
    conversation = request.path_params["id"]
    if find_event(sim, "x", conversation, now) is None:
        return errors.x(404, f"Could not find DM conversation with id: [{conversation}].")
    body = await request_params(request)
    text = str(body.get("text") or "")
    event_id = record_reply(sim, "x", conversation, text, now)
    return JSONResponse(
        {"data": {"dm_conversation_id": conversation, "dm_event_id": event_id}}, 201
    )


def routes() -> list[BaseRoute]:
    """X's endpoints: API v2 reads, media upload, tweets, mentions and DMs."""
    return mount(
        "x",
        [
            ("/2/media/upload", write("x", x_media_upload, commit=False), ["POST"]),
            ("/2/tweets", write("x", x_create_tweet, commit=True), ["POST"]),
            ("/2/users/{id}/mentions", endpoint("x", x_mentions, auth=any_token), ["GET"]),
            ("/2/dm_events", endpoint("x", x_dm_events, auth=any_token), ["GET"]),
            ("/2/dm_conversations/{id}/messages", write("x", x_dm_send, commit=True), ["POST"]),
            *reads(
                "x",
                has_bearer,
                {
                    "/2/users/by/username/{username}": x_user_by_username,
                    "/2/users/search": x_users_search,
                    "/2/users/{id}/tweets": x_user_tweets,
                    "/2/users/{id}": x_user,
                    "/2/tweets": x_tweets,
                },
            ),
        ],
    )
