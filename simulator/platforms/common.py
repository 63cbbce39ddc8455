"""What every simulated platform shares: the request's world, tokens, faults, paging, writes."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from simulator import errors, inbox
from simulator.state import Sim, decode_cursor, encode_cursor
from simulator.world import WINDOW_DAYS, Account, Post, day_number

Handler = Callable[[Request, Sim, datetime], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


def sim_of(request: Request) -> Sim:
    sim: Sim = request.app.state.sim
    return sim


def bearer_token(request: Request) -> str | None:
    value = request.headers.get("authorization", "")
    return value[7:].strip() or None if value.lower().startswith("bearer ") else None


def token_owner(
    sim: Sim, request: Request, platform: str, prefix: str, *, own_by_default: bool = False
) -> Account | None:
    """The account the request's bearer token names (``<prefix><external id>``).

    Where the platform's tokens are user-context (X, YouTube), any other token stands for the
    world's own account; elsewhere it names no one.
    """
    token = bearer_token(request) or ""
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
        sim = sim_of(request)
        now = sim.now(request.query_params.get("at"))
        fault = sim.next_fault(platform)
        if fault is not None:
            return errors.fault(platform, fault.kind, now, fault.retry_after)
        if not auth(request):
            return errors.expired(platform)
        return await handler(request, sim, now)

    return run


def older_than(posts: list[Post], cursor: str | None) -> list[Post]:
    """Posts (newest first) strictly after a keyset cursor of (published, number)."""
    if not cursor:
        return posts
    parts = decode_cursor(cursor)
    if not parts or len(parts) != 2:
        return []
    key = (int(parts[0]), int(parts[1]))
    return [p for p in posts if (int(p.published_at.timestamp()), p.number) < key]


def cursor_of(post: Post) -> str:
    return encode_cursor(int(post.published_at.timestamp()), post.number)


def clamp(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value is not None else default
    except ValueError:
        number = default
    return max(low, min(high, number))


def counters_at(sim: Sim, post: Post, now: datetime) -> Any:
    counters = post.counters(now)
    factor = sim.take_drop(post.platform, post.external_id)
    return counters if factor == 1.0 else counters.scaled(factor)


def live_post(sim: Sim, platform: str, post: Post | None, now: datetime) -> Post | None:
    if post is None or not post.visible(now) or sim.is_deleted(platform, post.external_id, now):
        return None
    return post


def feed_of(sim: Sim, account: Account, now: datetime) -> list[Post]:
    return [
        p
        for p in sim.world.posts(account, now)
        if not sim.is_deleted(account.platform, p.external_id, now)
    ]


def in_feed(sim: Sim, post: Post, now: datetime) -> bool:
    """Whether ``post`` is in its account's feed at ``now`` (what ``feed_of`` lists)."""
    return (
        post.visible(now)
        and day_number(post.published_at) >= day_number(now) - WINDOW_DAYS
        and not sim.is_deleted(post.account.platform, post.external_id, now)
    )


def meta_of(sim: Sim, platform: str, post: Post) -> dict[str, Any]:
    """What a client attached to a post it published (none for the generated ones)."""
    from simulator.world import PUBLISHED_BASE

    return sim.meta(platform, post.external_id) if post.number >= PUBLISHED_BASE else {}


def picture_name(*parts: object) -> str:
    """A stable file name for a simulated picture (an avatar, a cover, a thumbnail).

    The simulator names pictures on the platforms' own CDN hosts, as their APIs do; nothing
    is served there (a client shows them or not, as it would a real platform's).
    """
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:32]


def has_picture(post: Post) -> bool:
    """Whether the post shows a picture (an image, a video's cover, a carousel's first)."""
    return post.media_type in ("image", "video", "carousel")


def iso_ms(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


GRAPH = ("instagram", "facebook", "threads")


def any_token(request: Request) -> bool:
    return bool(bearer_token(request) or request.query_params.get("access_token"))


def has_bearer(request: Request) -> bool:
    """Whether the request carries a bearer token: the one kind of token some platforms take."""
    return bearer_token(request) is not None


def write(
    platform: str,
    handler: Handler,
    *,
    commit: bool | Callable[[Request], bool],
    auth: Callable[[Request], bool] = any_token,
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a write: write-scoped faults, then the any-call faults and the token check; a
    ``timeout_after_commit`` fault lets a committing call happen and holds its answer back."""
    read = endpoint(platform, handler, auth=auth)

    async def run(request: Request) -> Response:
        sim = sim_of(request)
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


async def request_params(request: Request) -> dict[str, Any]:
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


def account_by_id(sim: Sim, platform: str, key: str) -> Account | None:
    account = sim.world.account(platform, key)
    return account if account is not None and account.external_id == key else None


def record_reply(
    sim: Sim, platform: str, thread: str, text: str, now: datetime, **extra: Any
) -> str:
    reply_id = f"{sim.next_id()}"
    sim.add_reply(
        platform, thread, {"id": reply_id, "text": text, "created_at": now.isoformat(), **extra}
    )
    return reply_id


def find_event(sim: Sim, platform: str, external_id: str, now: datetime) -> inbox.Event | None:
    return inbox.find(sim.world, platform, external_id, now)


def own_events(sim: Sim, account: Account, now: datetime, since: str | None) -> list[inbox.Event]:
    start = None
    if since:
        try:
            start = datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError:
            start = None
        if start is not None and start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
    return inbox.events(sim.world, account, start, now)


def reads(
    platform: str,
    auth: Callable[[Request], bool],
    table: dict[str, Handler],
    methods: tuple[str, ...] = ("GET",),
) -> list[tuple[str, Endpoint, list[str]]]:
    """Entries of a :func:`mount` table: handlers behind one token check, in the table's order."""
    return [
        (path, endpoint(platform, handler, auth=auth), list(methods))
        for path, handler in table.items()
    ]


def mount(platform: str, table: list[tuple[str, Endpoint, list[str]]]) -> list[BaseRoute]:
    """The platform's routes under its prefix (/youtube, /x, …), in the table's order."""
    return [
        Route(f"/{platform}{path}", handler, methods=methods) for path, handler, methods in table
    ]
