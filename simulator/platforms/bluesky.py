"""Bluesky in the simulator: the app view's reads and the PDS's sessions, blobs and records."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from simulator import errors, inbox
from simulator.platforms.common import (
    account_by_id,
    bearer_token,
    clamp,
    counters_at,
    cursor_of,
    endpoint,
    feed_of,
    find_event,
    has_bearer,
    iso_ms,
    live_post,
    meta_of,
    mount,
    older_than,
    own_events,
    picture_name,
    reads,
    record_reply,
    request_params,
    write,
)
from simulator.state import Sim
from simulator.world import Account, Post


def _bsky_auth(request: Request) -> bool:
    return True  # the public AppView answers these reads without a session


def _bsky_cdn(kind: str, did: str, *parts: object) -> str:
    """A picture on the AppView's CDN: cdn.bsky.app/img/<kind>/plain/<did>/<blob cid>@jpeg."""
    return f"https://cdn.bsky.app/img/{kind}/plain/{did}/bafkrei{picture_name(*parts)}@jpeg"


def _bsky_avatar(account: Account) -> str:
    return _bsky_cdn("avatar", account.external_id, "bluesky", "avatar", account.external_id)


def _bsky_actor(account: Account, now: datetime) -> dict[str, Any]:
    return {
        "did": account.external_id,
        "handle": account.handle,
        "displayName": account.display_name,
        "avatar": _bsky_avatar(account),
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
            "avatar": _bsky_avatar(post.account),
        },
        "record": {
            "$type": "app.bsky.feed.post",
            "text": post.text,
            "createdAt": iso_ms(post.published_at),
            "facets": (meta or {}).get("facets") or facets,
            "langs": ["en"],
            **((meta or {}).get("record") or {}),
        },
        "replyCount": counters.comments,
        "repostCount": counters.reposts,
        "likeCount": counters.likes,
        "quoteCount": counters.quotes,
        "indexedAt": iso_ms(post.published_at),
        "labels": [],
    }
    if post.media_type == "image":
        did, key = post.account.external_id, ("bluesky", "image", post.external_id)
        image = {
            "thumb": _bsky_cdn("feed_thumbnail", did, *key),
            "fullsize": _bsky_cdn("feed_fullsize", did, *key),
            "alt": "",
        }
        view["embed"] = {"$type": "app.bsky.embed.images#view", "images": [image]}
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
    size = clamp(q.get("limit"), 50, 1, 100)
    posts = older_than(feed_of(sim, account, now), q.get("cursor"))
    page, rest = posts[:size], posts[size:]
    body: dict[str, Any] = {
        "feed": [{"post": _bsky_post(p, p.counters(now), meta_of(sim, "bluesky", p))} for p in page]
    }
    if rest and page:
        body["cursor"] = cursor_of(page[-1])
    return JSONResponse(body)


async def bsky_posts(request: Request, sim: Sim, now: datetime) -> Response:
    uris = request.query_params.getlist("uris")
    if len(uris) > 25:
        return errors.bluesky(400, "InvalidRequest", "uris must not have more than 25 elements")
    views = []
    for uri in uris:
        post = live_post(sim, "bluesky", sim.world.post("bluesky", uri), now)
        if post is not None:  # deleted posts are simply absent
            views.append(_bsky_post(post, counters_at(sim, post, now)))
    return JSONResponse({"posts": views})


async def bsky_search_actors(request: Request, sim: Sim, now: datetime) -> Response:
    q = request.query_params
    size = clamp(q.get("limit"), 25, 1, 100)
    found = sim.world.search("bluesky", q.get("q", ""))
    start = int(q.get("cursor") or 0)
    page = found[start : start + size]
    body: dict[str, Any] = {"actors": [_bsky_actor(a, now) for a in page]}
    if start + size < len(found):
        body["cursor"] = str(start + size)
    return JSONResponse(body)


def _bsky_session(sim: Sim, request: Request) -> Account | None:
    token = bearer_token(request) or ""
    if not token.startswith("sim-jwt-"):
        return None
    return account_by_id(sim, "bluesky", token[8:])


async def bsky_create_session(request: Request, sim: Sim, now: datetime) -> Response:
    body = await request_params(request)
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


def _record_of(event: inbox.Event) -> dict[str, Any]:
    """An inbound post's record: its text, and the post it replies to when it is a comment."""
    record: dict[str, Any] = {
        "$type": "app.bsky.feed.post",
        "text": event.text,
        "createdAt": iso_ms(event.at),
    }
    if event.post is not None:
        ref = {"uri": event.post.external_id, "cid": _cid(event.post.external_id)}
        record["reply"] = {"root": ref, "parent": ref}
    return record


async def bsky_create_record(request: Request, sim: Sim, now: datetime) -> Response:
    account = _bsky_session(sim, request)
    if account is None:
        return errors.bluesky(400, "ExpiredToken", "Token has expired")
    body = await request_params(request)
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
        event = find_event(sim, "bluesky", parent, now)
        if event is None:
            return errors.bluesky(400, "InvalidRequest", "reply parent not found")
        rkey = f"3l{sim.next_id():011d}"
        uri = f"at://{account.external_id}/app.bsky.feed.post/{rkey}"
        record_reply(sim, "bluesky", event.thread_id, text, now, uri=uri)
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
    found = own_events(sim, account, now, None)
    found.reverse()
    size = clamp(q.get("limit"), 50, 1, 100)
    start = int(q.get("cursor") or 0)
    page = found[start : start + size]
    notes = []
    for e in page:
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
                "record": _record_of(e),
                "isRead": False,
                "indexedAt": iso_ms(e.at),
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
    event = find_event(sim, "bluesky", uri, now)
    if event is None:
        post = sim.world.post("bluesky", uri)
        if post is None:
            return errors.bluesky(400, "RecordNotFound", f"Could not locate record: {uri}")
        return JSONResponse({"uri": uri, "cid": _cid(uri), "value": {"text": post.text}})
    return JSONResponse({"uri": uri, "cid": _cid(uri), "value": _record_of(event)})


def routes() -> list[BaseRoute]:
    """Bluesky's XRPC endpoints: the app view's reads, sessions, blobs, records, notifications."""
    return mount(
        "bluesky",
        [
            (
                "/xrpc/com.atproto.server.createSession",
                write("bluesky", bsky_create_session, commit=False, auth=lambda r: True),
                ["POST"],
            ),
            (
                "/xrpc/com.atproto.repo.uploadBlob",
                write("bluesky", bsky_upload_blob, commit=False, auth=has_bearer),
                ["POST"],
            ),
            (
                "/xrpc/com.atproto.repo.createRecord",
                write("bluesky", bsky_create_record, commit=True, auth=has_bearer),
                ["POST"],
            ),
            (
                "/xrpc/com.atproto.repo.getRecord",
                endpoint("bluesky", bsky_get_record, auth=lambda r: True),
                ["GET"],
            ),
            (
                "/xrpc/app.bsky.notification.listNotifications",
                endpoint("bluesky", bsky_notifications, auth=has_bearer),
                ["GET"],
            ),
            *reads(
                "bluesky",
                _bsky_auth,
                {
                    "/xrpc/app.bsky.actor.getProfile": bsky_profile,
                    "/xrpc/app.bsky.feed.getAuthorFeed": bsky_author_feed,
                    "/xrpc/app.bsky.feed.getPosts": bsky_posts,
                    "/xrpc/app.bsky.actor.searchActors": bsky_search_actors,
                },
            ),
        ],
    )
