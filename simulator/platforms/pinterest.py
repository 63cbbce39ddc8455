"""Pinterest in the simulator: API v5 account, boards and pins."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from simulator import errors
from simulator.platforms.common import (
    any_token,
    clamp,
    counters_at,
    cursor_of,
    endpoint,
    feed_of,
    live_post,
    mount,
    older_than,
    picture_name,
    request_params,
    token_owner,
    write,
)
from simulator.state import Sim
from simulator.world import Account, Post


def _pinimg(size: str, *parts: object) -> str:
    """A picture on i.pinimg.com, filed as Pinterest files them (by the name's first bytes)."""
    name = picture_name("pinterest", *parts)
    return f"https://i.pinimg.com/{size}/{name[:2]}/{name[2:4]}/{name[4:6]}/{name}.jpg"


def _pin_media(post: Post) -> dict[str, Any]:
    """A pin's media object: an image pin's sizes, a video pin's cover."""
    if post.media_type == "video":
        return {
            "media_type": "video",
            "cover_image_url": _pinimg("videos/thumbnails/originals", post.external_id),
        }
    sizes = {
        "150x150": (150, 150),
        "400x300": (400, 300),
        "600x": (600, 900),
        "1200x": (1200, 1800),
    }
    return {
        "media_type": post.media_type,
        "images": {
            size: {"width": w, "height": h, "url": _pinimg(size, post.external_id)}
            for size, (w, h) in sizes.items()
        },
    }


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
            "profile_image": _pinimg("75x75_RS", "avatar", account.external_id),
            "follower_count": account.followers(now),
            "following_count": account.following,
            "pin_count": len(feed_of(sim, account, now)),
        }
    )


async def pin_get(request: Request, sim: Sim, now: datetime) -> Response:
    """GET /v5/pins/{pin_id}?pin_metrics=true: one pin, with its lifetime metrics."""
    account = token_owner(sim, request, "pinterest", "pina_")
    if account is None:
        return errors.pinterest(401, 2, "Authentication failed.")
    pin_id = request.path_params["pin_id"]
    post = live_post(sim, "pinterest", sim.world.post("pinterest", pin_id), now)
    if post is None or post.account.external_id != account.external_id:
        return errors.pinterest(404, 50, "Pin not found.")
    body: dict[str, Any] = {
        "id": post.external_id,
        "created_at": post.published_at.strftime("%Y-%m-%dT%H:%M:%S"),
        "description": post.text,
        "media": _pin_media(post),
    }
    if request.query_params.get("pin_metrics") == "true":
        c = counters_at(sim, post, now)
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
        "media": _pin_media(post),
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
    body = await request_params(request)
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
    size = clamp(q.get("page_size"), 25, 1, 250)
    posts = older_than(feed_of(sim, account, now), q.get("bookmark"))
    page, rest = posts[:size], posts[size:]
    return JSONResponse(
        {
            "items": [_pin(sim, p) for p in page],
            "bookmark": cursor_of(page[-1]) if rest and page else None,
        }
    )


def routes() -> list[BaseRoute]:
    """Pinterest's API v5 endpoints: the token's account, boards and pins."""
    anyone = lambda r: True  # noqa: E731 - the handlers check the token themselves
    return mount(
        "pinterest",
        [
            ("/v5/boards", endpoint("pinterest", pin_boards, auth=any_token), ["GET"]),
            ("/v5/pins", write("pinterest", pin_create, commit=True), ["POST"]),
            ("/v5/pins", endpoint("pinterest", pin_list, auth=any_token), ["GET"]),
            ("/v5/user_account", endpoint("pinterest", pin_user_account, auth=anyone), ["GET"]),
            ("/v5/pins/{pin_id}", endpoint("pinterest", pin_get, auth=anyone), ["GET"]),
        ],
    )
