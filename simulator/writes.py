"""The platforms' write side: publishing, uploads, conversations, replies, in each API's shape."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from simulator import errors, inbox
from simulator.platforms import (
    ORG,
    _bearer,
    _clamp,
    _cursor,
    _feed,
    _ig_auth,
    _iso_ms,
    _json,
    _li_checked,
    _older,
    _sim,
    _tt_ok,
    endpoint,
    ig_edge,
    ig_node,
    token_owner,
)
from simulator.state import Sim
from simulator.world import Account, Post

Handler = Callable[[Request, Sim, datetime], Awaitable[Response]]
GRAPH = ("instagram", "facebook", "threads")


def _auth(request: Request) -> bool:
    return bool(_bearer(request) or request.query_params.get("access_token"))


def write(
    platform: str,
    handler: Handler,
    *,
    commit: bool | Callable[[Request], bool],
    auth: Callable[[Request], bool] = _auth,
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a write: write-scoped faults, then the any-call faults and the token check; a
    ``timeout_after_commit`` fault lets a committing call happen and holds its answer back."""
    read = endpoint(platform, handler, auth=auth)

    async def run(request: Request) -> Response:
        sim = _sim(request)
        now = sim.now()
        commits = commit(request) if callable(commit) else commit
        fault = sim.next_write_fault(platform, commits)
        if fault is None:
            return await read(request)
        if fault.kind == "reject":
            return errors.reject(platform, fault.message or "media type not supported")
        if fault.kind == "timeout_after_commit":
            response = await read(request)
            await asyncio.sleep(fault.delay)  # the client gives up first; the post exists
            return response
        return errors.fault(platform, fault.kind, now, fault.retry_after)

    return run


async def _params(request: Request) -> dict[str, Any]:
    """Graph-style parameters: the query string, then a form or JSON body on top."""
    params: dict[str, Any] = dict(request.query_params)
    raw = await request.body()
    if not raw:
        return params
    kind = request.headers.get("content-type", "")
    if "json" in kind:
        try:
            body = json.loads(raw)
        except ValueError:
            return params
        if isinstance(body, dict):
            params.update(body)
    elif "x-www-form-urlencoded" in kind:
        params.update(dict(parse_qsl(raw.decode())))
    return params


def _account(sim: Sim, platform: str, key: str) -> Account | None:
    account = sim.world.account(platform, key)
    return account if account is not None and account.external_id == key else None


def _reply(sim: Sim, platform: str, thread: str, text: str, now: datetime, **extra: Any) -> str:
    reply_id = f"{sim.next_id()}"
    sim.add_reply(
        platform, thread, {"id": reply_id, "text": text, "created_at": now.isoformat(), **extra}
    )
    return reply_id


def _event(sim: Sim, platform: str, external_id: str, now: datetime) -> inbox.Event | None:
    return inbox.find(sim.world, platform, external_id, now)


def _own_events(sim: Sim, account: Account, now: datetime, since: str | None) -> list[inbox.Event]:
    start = None
    if since:
        try:
            start = datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError:
            start = None
        if start is not None and start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
    return inbox.events(sim.world, account, start, now)


# ---- X API v2 -------------------------------------------------------------------------------


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
    body = await _params(request)
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
        event = _event(sim, "x", str(reply_to), now)
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
    account = _account(sim, "x", request.path_params["id"])
    if account is None:
        return JSONResponse(
            {"errors": [errors.x_not_found("user", "id", request.path_params["id"])]}
        )
    q = request.query_params
    found = [e for e in _own_events(sim, account, now, q.get("start_time")) if e.kind != "dm"]
    found.reverse()  # newest first, as X lists them
    size = _clamp(q.get("max_results"), 10, 5, 100)
    start = int(q.get("pagination_token") or 0)
    page = found[start : start + size]
    data = []
    for e in page:
        tweet: dict[str, Any] = {
            "id": e.message_id,
            "text": e.text,
            "author_id": e.author_id,
            "created_at": _iso_ms(e.at),
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
    found = [e for e in _own_events(sim, account, now, None) if e.kind == "dm"]
    found.reverse()
    size = _clamp(q.get("max_results"), 100, 1, 100)
    start = int(q.get("pagination_token") or 0)
    page = found[start : start + size]
    data = [
        {
            "id": e.message_id,
            "event_type": "MessageCreate",
            "text": e.text,
            "sender_id": e.author_id,
            "dm_conversation_id": e.thread_id,
            "created_at": _iso_ms(e.at),
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
    if _event(sim, "x", conversation, now) is None:
        return errors.x(404, f"Could not find DM conversation with id: [{conversation}].")
    body = await _params(request)
    text = str(body.get("text") or "")
    event_id = _reply(sim, "x", conversation, text, now)
    return JSONResponse(
        {"data": {"dm_conversation_id": conversation, "dm_event_id": event_id}}, 201
    )


# ---- Graph API: Instagram, Facebook Pages, Threads ------------------------------------------


def _graph_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


def _graph_missing(node: str) -> JSONResponse:
    return errors.graph(
        400,
        100,
        f"Unsupported post request. Object with ID '{node}' does not exist, cannot be loaded due "
        "to missing permissions, or does not support this operation.",
        subcode=33,
    )


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
                return _graph_missing(str(child))
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
        event = _event(sim, platform, str(reply_to), now)
        if event is None:
            return _graph_missing(str(reply_to))
        reply_id = _reply(sim, platform, event.thread_id, state["text"], now)
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
    dms = [e for e in _own_events(sim, account, now, None) if e.kind == "dm"]
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
        params = await _params(request)
        account = _account(sim, platform, node)
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
                    for e in _own_events(sim, account, now, None)
                    if e.kind == "dm" and e.author_id == recipient
                ]
                if not dms:
                    return errors.graph(400, 100, "(#100) No matching user found", subcode=2018001)
                message_id = _reply(sim, platform, dms[-1].thread_id, text, now)
                return JSONResponse({"recipient_id": recipient, "message_id": f"m_{message_id}"})
            return _graph_missing(f"{node}/{edge}")
        # A comment: replies go under it (Instagram /replies, Facebook /comments).
        if (platform, edge) in (("instagram", "replies"), ("facebook", "comments")):
            event = _event(sim, platform, node, now)
            if event is None or event.kind != "comment":
                return _graph_missing(node)
            text = str(params.get("message") or "")
            return JSONResponse({"id": _reply(sim, platform, event.thread_id, text, now)})
        return _graph_missing(node)

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
            event = _event(sim, platform, node, now)
            if event is not None and event.kind == "dm":
                return _graph_conversations_one(sim, platform, event)
        if platform == "threads":
            return _threads_media(sim, node, q.get("fields"), now)
        return None
    account = _account(sim, platform, node)
    if account is not None:
        if edge == "conversations" and platform in ("instagram", "facebook"):
            return _graph_conversations(sim, platform, account, now)
        if (platform, edge) in (
            ("facebook", "posts"),
            ("facebook", "feed"),
            ("threads", "threads"),
        ):
            size = _clamp(q.get("limit"), 25, 1, 100)
            posts = _older(_feed(sim, account, now), q.get("after"))
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
                }
                for p in page
            ]
            after = _cursor(page[-1]) if rest and page else ""
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
    event = _event(sim, platform, node, now)
    if event is not None and edge in ("comments", "replies"):
        return JSONResponse({"data": _graph_reply_items(sim, platform, event.thread_id)})
    return None


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
        account = _account(sim, platform, node)
        if account is not None and "edge" not in request.path_params:
            return JSONResponse(
                {
                    "id": account.external_id,
                    "name": account.display_name,
                    "username": account.handle,
                    "followers_count": account.followers(now),
                    "fan_count": account.followers(now),
                }
            )
        return errors.graph(
            400,
            100,
            f"Unsupported get request. Object with ID '{node}' does not exist, cannot be loaded "
            "due to missing permissions, or does not support this operation.",
            subcode=33,
        )

    return run


# ---- LinkedIn -------------------------------------------------------------------------------


async def li_create_post(request: Request, sim: Sim, now: datetime) -> Response:
    body = await _params(request)
    author = str(body.get("author") or "")
    account = _account(sim, "linkedin", author.removeprefix(ORG))
    if account is None:
        return errors.linkedin(
            403,
            "Not enough permissions to access: partnerApiPostsExternal.CREATE",
            code="ACCESS_DENIED",
        )
    if body.get("lifecycleState") != "PUBLISHED" or not body.get("distribution"):
        return errors.linkedin(
            422, "lifecycleState and distribution are required", code="UNPROCESSABLE_ENTITY"
        )
    content = body.get("content") or {}
    media = "text"
    if "media" in content:
        media = "video" if "video" in str(content["media"].get("id")) else "image"
    elif "article" in content:
        media = "link"
    elif "multiImage" in content:
        media = "carousel"
    post = sim.publish(
        account,
        str(body.get("commentary") or ""),
        media,
        now,
        media_count=0 if media in ("text", "link") else 1,
    )
    return Response(status_code=201, headers={"x-restli-id": post.external_id})


async def li_init_upload(request: Request, sim: Sim, now: datetime) -> Response:
    if request.path_params["kind"] not in ("images", "videos"):
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    if request.query_params.get("action") != "initializeUpload":
        return errors.linkedin(400, "action=initializeUpload is required")
    number = sim.next_id()
    kind = request.path_params["kind"].rstrip("s")  # images -> image, videos -> video
    urn = f"urn:li:{kind}:C4D{number}"
    sim.pending[f"linkedin:upload:{number}"] = {"urn": urn, "bytes": 0}
    upload = f"{str(request.base_url).rstrip('/')}/linkedin/_upload/{number}"
    return JSONResponse({"value": {"uploadUrl": upload, kind: urn, "uploadUrlExpiresAt": 0}})


async def li_upload(request: Request) -> Response:
    sim = _sim(request)
    state = sim.pending.get(f"linkedin:upload:{request.path_params['n']}")
    if state is None:
        return errors.linkedin(404, "Not Found")
    state["bytes"] = len(await request.body())
    return Response(status_code=201)


def _li_comment_out(
    urn: str, actor: str, text: str, at: str | int, comment_id: str
) -> dict[str, Any]:
    return {
        "id": comment_id,
        "$URN": comment_id,
        "actor": actor,
        "object": urn,
        "message": {"text": text},
        "created": {"time": at},
    }


async def li_comments(request: Request, sim: Sim, now: datetime) -> Response:
    target = request.path_params["urn"]
    if request.method == "POST":
        body = await _params(request)
        text = str((body.get("message") or {}).get("text") or "")
        parent = str(body.get("parentComment") or target)
        event = _event(sim, "linkedin", parent, now)
        if event is None:
            return errors.linkedin(404, "Not Found", code="NOT_FOUND")
        reply_id = _reply(sim, "linkedin", event.thread_id, text, now, actor=body.get("actor"))
        urn = f"urn:li:comment:({event.post.external_id if event.post else target},{reply_id})"
        return Response(status_code=201, headers={"x-restli-id": urn})
    event = _event(sim, "linkedin", target, now)
    if event is not None:  # a comment's own comments: our replies
        return JSONResponse(
            {
                "elements": [
                    _li_comment_out(
                        target, str(r.get("actor") or ""), r["text"], r["created_at"], r["id"]
                    )
                    for r in sim.thread_replies("linkedin", event.thread_id)
                ],
                "paging": {"start": 0, "count": 100, "links": []},
            }
        )
    post = sim.world.post("linkedin", target)
    if post is None:
        return errors.linkedin(404, "Not Found", code="NOT_FOUND")
    found = [
        e
        for e in inbox.events(sim.world, post.account, None, now)
        if e.post is not None and e.post.external_id == post.external_id
    ]
    return JSONResponse(
        {
            "elements": [
                {
                    **_li_comment_out(
                        post.external_id,
                        f"urn:li:person:{e.author_id}",
                        e.text,
                        int(e.at.timestamp() * 1000),
                        e.message_id,
                    ),
                    "actorName": e.author_name,
                }
                for e in found
            ],
            "paging": {"start": 0, "count": len(found), "links": []},
        }
    )


# ---- TikTok Content Posting API -------------------------------------------------------------


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


# ---- YouTube --------------------------------------------------------------------------------


async def yt_upload_init(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    if q.get("uploadType") != "resumable":
        return errors.youtube(400, "badRequest", "Only uploadType=resumable is simulated.")
    body = await _params(request)
    snippet = body.get("snippet") or {}
    if not snippet.get("title"):
        return errors.youtube(
            400, "invalidTitle", "The request metadata specifies an invalid or empty video title."
        )
    channel = q.get("onBehalfOfContentOwnerChannel") or ""
    account = (
        _account(sim, "youtube", channel)
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
    account = _account(sim, "youtube", state["account"])
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
    account = _account(sim, "youtube", channel)
    if account is None:
        return errors.youtube(404, "channelNotFound", "The channel could not be found.")
    found = [e for e in _own_events(sim, account, now, None) if e.kind == "comment"]
    found.reverse()
    size = _clamp(q.get("maxResults"), 20, 1, 100)
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
    body = await _params(request)
    snippet = body.get("snippet") or {}
    parent = str(snippet.get("parentId") or "")
    event = _event(sim, "youtube", parent, now)
    if event is None:
        return errors.youtube(
            404, "parentCommentNotFound", "The parent comment could not be found."
        )
    text = str(snippet.get("textOriginal") or "")
    reply_id = _reply(sim, "youtube", event.thread_id, text, now)
    return JSONResponse(
        {
            "kind": "youtube#comment",
            "id": f"{parent}.{reply_id}",
            "snippet": {"parentId": parent, "textOriginal": text, "textDisplay": text},
        }
    )


# ---- Bluesky --------------------------------------------------------------------------------


def _bsky_session(sim: Sim, request: Request) -> Account | None:
    token = _bearer(request) or ""
    if not token.startswith("sim-jwt-"):
        return None
    return _account(sim, "bluesky", token[8:])


def _bsky_needs_session(request: Request) -> bool:
    return _bearer(request) is not None


async def bsky_create_session(request: Request, sim: Sim, now: datetime) -> Response:
    body = await _params(request)
    identifier = str(body.get("identifier") or "")
    account = sim.world.account("bluesky", identifier)
    if account is None or not body.get("password"):
        return errors.bluesky(401, "AuthenticationRequired", "Invalid identifier or password")
    return JSONResponse(
        {
            "did": account.external_id,
            "handle": account.handle,
            "accessJwt": f"sim-jwt-{account.external_id}",
            "refreshJwt": f"sim-refresh-{account.external_id}",
            "active": True,
        }
    )


async def bsky_upload_blob(request: Request, sim: Sim, now: datetime) -> Response:
    if _bsky_session(sim, request) is None:
        return errors.bluesky(400, "ExpiredToken", "Token has expired")
    data = await request.body()
    link = "bafkrei" + hashlib.sha256(data).hexdigest()[:52]
    mime = request.headers.get("content-type", "application/octet-stream")
    return JSONResponse(
        {"blob": {"$type": "blob", "ref": {"$link": link}, "mimeType": mime, "size": len(data)}}
    )


def _cid(uri: str) -> str:
    return "bafyrei" + hashlib.sha256(uri.encode()).hexdigest()[:52]


async def bsky_create_record(request: Request, sim: Sim, now: datetime) -> Response:
    account = _bsky_session(sim, request)
    if account is None:
        return errors.bluesky(400, "ExpiredToken", "Token has expired")
    body = await _params(request)
    record = body.get("record") or {}
    if body.get("collection") != "app.bsky.feed.post" or body.get("repo") not in (
        account.external_id,
        account.handle,
    ):
        return errors.bluesky(400, "InvalidRequest", "Only app.bsky.feed.post in your own repo")
    if not record.get("createdAt"):
        return errors.bluesky(400, "InvalidRequest", "Record/createdAt must be a valid datetime")
    text = str(record.get("text") or "")
    reply = record.get("reply")
    if reply:
        parent = str((reply.get("parent") or {}).get("uri") or "")
        event = _event(sim, "bluesky", parent, now)
        if event is None:
            return errors.bluesky(400, "InvalidRequest", "reply parent not found")
        rkey = f"3l{sim.next_id():011d}"
        uri = f"at://{account.external_id}/app.bsky.feed.post/{rkey}"
        _reply(sim, "bluesky", event.thread_id, text, now, uri=uri)
        return JSONResponse({"uri": uri, "cid": _cid(uri), "validationStatus": "valid"})
    embed = record.get("embed") or {}
    media = {
        "app.bsky.embed.images": "image",
        "app.bsky.embed.video": "video",
        "app.bsky.embed.external": "link",
    }.get(str(embed.get("$type")), "text")
    extra = {
        k: v
        for k, v in record.items()
        if k not in ("$type", "text", "createdAt", "facets", "langs", "embed")
    }
    post = sim.publish(
        account,
        text,
        media,
        now,
        media_count=len(embed.get("images") or []) if media == "image" else int(media == "video"),
        meta={"record": extra, "facets": record.get("facets") or []},
    )
    return JSONResponse(
        {
            "uri": post.external_id,
            "cid": _cid(post.external_id),
            "commit": {"cid": _cid(f"commit:{post.external_id}"), "rev": f"3l{post.number}"},
            "validationStatus": "valid",
        }
    )


async def bsky_notifications(request: Request, sim: Sim, now: datetime) -> Response:
    account = _bsky_session(sim, request)
    if account is None:
        return errors.bluesky(400, "ExpiredToken", "Token has expired")
    q = request.query_params
    found = _own_events(sim, account, now, None)
    found.reverse()
    size = _clamp(q.get("limit"), 50, 1, 100)
    start = int(q.get("cursor") or 0)
    page = found[start : start + size]
    notes = []
    for e in page:
        record: dict[str, Any] = {
            "$type": "app.bsky.feed.post",
            "text": e.text,
            "createdAt": _iso_ms(e.at),
        }
        if e.post is not None:
            ref = {"uri": e.post.external_id, "cid": _cid(e.post.external_id)}
            record["reply"] = {"root": ref, "parent": ref}
        notes.append(
            {
                "uri": e.message_id,
                "cid": _cid(e.message_id),
                "author": {
                    "did": f"did:plc:fan{e.author_id}",
                    "handle": e.author_handle,
                    "displayName": e.author_name,
                },
                "reason": "reply" if e.kind == "comment" else "mention",
                "reasonSubject": e.post.external_id if e.post else None,
                "record": record,
                "isRead": False,
                "indexedAt": _iso_ms(e.at),
            }
        )
    body: dict[str, Any] = {"notifications": notes}
    if start + size < len(found):
        body["cursor"] = str(start + size)
    return JSONResponse(body)


async def bsky_get_record(request: Request, sim: Sim, now: datetime) -> Response:
    """com.atproto.repo.getRecord: the inbound posts a reply needs the cid of."""
    q = request.query_params
    uri = f"at://{q.get('repo')}/{q.get('collection')}/{q.get('rkey')}"
    event = _event(sim, "bluesky", uri, now)
    if event is None:
        post = sim.world.post("bluesky", uri)
        if post is None:
            return errors.bluesky(400, "RecordNotFound", f"Could not locate record: {uri}")
        return JSONResponse({"uri": uri, "cid": _cid(uri), "value": {"text": post.text}})
    value: dict[str, Any] = {
        "$type": "app.bsky.feed.post",
        "text": event.text,
        "createdAt": _iso_ms(event.at),
    }
    if event.post is not None:
        ref = {"uri": event.post.external_id, "cid": _cid(event.post.external_id)}
        value["reply"] = {"root": ref, "parent": ref}
    return JSONResponse({"uri": uri, "cid": _cid(uri), "value": value})


# ---- Pinterest API v5 -----------------------------------------------------------------------


def _board_id(account: Account) -> str:
    return f"{900_000_000_000_000 + account.index}"


def _pin(sim: Sim, post: Post) -> dict[str, Any]:
    meta = sim.meta("pinterest", post.external_id)
    return {
        "id": post.external_id,
        "created_at": post.published_at.strftime("%Y-%m-%dT%H:%M:%S"),
        "title": meta.get("title") or post.text[:100],
        "description": post.text,
        "note": meta.get("note") or "",
        "board_id": meta.get("board_id") or _board_id(post.account),
        "link": meta.get("link"),
        "media": {"media_type": post.media_type},
    }


async def pin_boards(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "pinterest", "pina_")
    if account is None:
        return errors.pinterest(401, 2, "Authentication failed.")
    return JSONResponse(
        {
            "items": [
                {
                    "id": _board_id(account),
                    "name": f"{account.display_name} board",
                    "owner": {"username": account.handle},
                    "privacy": "PUBLIC",
                }
            ],
            "bookmark": None,
        }
    )


async def pin_create(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "pinterest", "pina_")
    if account is None:
        return errors.pinterest(401, 2, "Authentication failed.")
    body = await _params(request)
    if str(body.get("board_id") or "") != _board_id(account):
        return errors.pinterest(404, 2, "Board not found.")
    source = body.get("media_source") or {}
    kind = source.get("source_type")
    if kind not in ("image_url", "image_base64", "video_id", "multiple_image_urls"):
        return errors.pinterest(400, 1, "Invalid media_source.source_type")
    media = "video" if kind == "video_id" else "image"
    text = str(body.get("description") or "")
    post = sim.publish(
        account,
        text,
        media,
        now,
        media_count=1,
        meta={k: body.get(k) for k in ("title", "note", "board_id", "link", "alt_text")},
    )
    return JSONResponse(_pin(sim, post), 201)


async def pin_list(request: Request, sim: Sim, now: datetime) -> Response:
    account = token_owner(sim, request, "pinterest", "pina_")
    if account is None:
        return errors.pinterest(401, 2, "Authentication failed.")
    q = request.query_params
    size = _clamp(q.get("page_size"), 25, 1, 250)
    posts = _older(_feed(sim, account, now), q.get("bookmark"))
    page, rest = posts[:size], posts[size:]
    return JSONResponse(
        {
            "items": [_pin(sim, p) for p in page],
            "bookmark": _cursor(page[-1]) if rest and page else None,
        }
    )


# ---- admin ----------------------------------------------------------------------------------


async def sim_posts(request: Request) -> Response:
    """GET /_sim/posts?platform=&account=: what the write APIs published, with counts per text."""
    sim = _sim(request)
    platform = request.query_params.get("platform")
    account = request.query_params.get("account")
    with sim.lock:
        posts = [
            dict(p)
            for p in sim.published
            if platform in (None, p["platform"]) and account in (None, p["account"])
        ]
    counts: dict[str, int] = {}
    for p in posts:
        counts[p["text"]] = counts.get(p["text"], 0) + 1
    return JSONResponse({"posts": posts, "count": len(posts), "count_by_text": counts})


async def sim_thread(request: Request) -> Response:
    """GET /_sim/thread?platform=&id=: an inbound conversation and the replies it got."""
    sim = _sim(request)
    platform = request.query_params.get("platform", "")
    thread = request.query_params.get("id", "")
    event = inbox.find(sim.world, platform, thread, sim.now())
    if event is None:
        return JSONResponse({"error": "no such conversation"}, 404)
    return JSONResponse(
        {
            "platform": platform,
            "id": event.thread_id,
            "kind": event.kind,
            "account": event.account.external_id,
            "inbound": {
                "id": event.message_id,
                "text": event.text,
                "at": event.at.isoformat(),
                "author": event.author_handle,
            },
            "replies": sim.thread_replies(platform, event.thread_id),
        }
    )


def routes() -> list[BaseRoute]:
    """The write endpoints and the reads they bring (must come before the read routes)."""
    w = write
    table: list[tuple[str, str, Callable[[Request], Awaitable[Response]], list[str]]] = [
        ("x", "/2/media/upload", w("x", x_media_upload, commit=False), ["POST"]),
        ("x", "/2/tweets", w("x", x_create_tweet, commit=True), ["POST"]),
        ("x", "/2/users/{id}/mentions", endpoint("x", x_mentions, auth=_auth), ["GET"]),
        ("x", "/2/dm_events", endpoint("x", x_dm_events, auth=_auth), ["GET"]),
        ("x", "/2/dm_conversations/{id}/messages", w("x", x_dm_send, commit=True), ["POST"]),
        (
            "linkedin",
            "/rest/posts",
            w("linkedin", _li_checked(li_create_post), commit=True),
            ["POST"],
        ),
        (
            "linkedin",
            "/rest/{kind:str}",
            w("linkedin", _li_checked(li_init_upload), commit=False),
            ["POST"],
        ),
        (
            "linkedin",
            "/rest/socialActions/{urn:path}/comments",
            w("linkedin", _li_checked(li_comments), commit=True),
            ["POST"],
        ),
        (
            "linkedin",
            "/rest/socialActions/{urn:path}/comments",
            endpoint("linkedin", _li_checked(li_comments), auth=_auth),
            ["GET"],
        ),
        (
            "tiktok",
            "/v2/post/publish/video/init/",
            w("tiktok", tt_publish_init, commit=True),
            ["POST"],
        ),
        (
            "tiktok",
            "/v2/post/publish/content/init/",
            w("tiktok", tt_publish_init, commit=True),
            ["POST"],
        ),
        (
            "tiktok",
            "/v2/post/publish/status/fetch/",
            endpoint("tiktok", tt_publish_status, auth=_auth),
            ["POST"],
        ),
        (
            "youtube",
            "/upload/youtube/v3/videos",
            w("youtube", yt_upload_init, commit=False),
            ["POST"],
        ),
        (
            "youtube",
            "/upload/youtube/v3/videos",
            w("youtube", yt_upload_put, commit=True, auth=lambda r: True),
            ["PUT"],
        ),
        (
            "youtube",
            "/youtube/v3/commentThreads",
            endpoint("youtube", yt_comment_threads, auth=_auth),
            ["GET"],
        ),
        ("youtube", "/youtube/v3/comments", w("youtube", yt_comment_insert, commit=True), ["POST"]),
        (
            "bluesky",
            "/xrpc/com.atproto.server.createSession",
            w("bluesky", bsky_create_session, commit=False, auth=lambda r: True),
            ["POST"],
        ),
        (
            "bluesky",
            "/xrpc/com.atproto.repo.uploadBlob",
            w("bluesky", bsky_upload_blob, commit=False, auth=_bsky_needs_session),
            ["POST"],
        ),
        (
            "bluesky",
            "/xrpc/com.atproto.repo.createRecord",
            w("bluesky", bsky_create_record, commit=True, auth=_bsky_needs_session),
            ["POST"],
        ),
        (
            "bluesky",
            "/xrpc/com.atproto.repo.getRecord",
            endpoint("bluesky", bsky_get_record, auth=lambda r: True),
            ["GET"],
        ),
        (
            "bluesky",
            "/xrpc/app.bsky.notification.listNotifications",
            endpoint("bluesky", bsky_notifications, auth=_bsky_needs_session),
            ["GET"],
        ),
        ("pinterest", "/v5/boards", endpoint("pinterest", pin_boards, auth=_auth), ["GET"]),
        ("pinterest", "/v5/pins", w("pinterest", pin_create, commit=True), ["POST"]),
        ("pinterest", "/v5/pins", endpoint("pinterest", pin_list, auth=_auth), ["GET"]),
    ]
    for platform in GRAPH:
        handler = w(platform, graph_post(platform), commit=_graph_commits)
        table.append((platform, "/{node}/{edge}", handler, ["POST"]))
    for path, reads in (("/{node}/{edge}", ig_edge), ("/{node}", ig_node)):
        handler = endpoint("instagram", graph_first("instagram", reads), auth=_ig_auth)
        table.append(("instagram", path, handler, ["GET"]))
    for platform in ("facebook", "threads"):
        table.append(
            (
                platform,
                "/{node}/{edge}",
                endpoint(platform, graph_get(platform), auth=_auth),
                ["GET"],
            )
        )
        table.append(
            (platform, "/{node}", endpoint(platform, graph_get(platform), auth=_auth), ["GET"])
        )
    out: list[BaseRoute] = [
        Route("/_sim/posts", sim_posts, methods=["GET"]),
        Route("/_sim/thread", sim_thread, methods=["GET"]),
        Route("/linkedin/_upload/{n}", li_upload, methods=["PUT"]),
        Route("/tiktok/_upload/{publish_id:path}", tt_upload, methods=["PUT"]),
    ]
    out += [Route(f"/{p}{path}", handler, methods=methods) for p, path, handler, methods in table]
    return out
