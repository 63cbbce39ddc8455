"""The simulator's ASGI app: platform routes, the clock and fault admin endpoints, and serve()."""

from __future__ import annotations

import logging
from datetime import datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from simulator import inbox
from simulator.journal import Journal
from simulator.platforms import routes
from simulator.platforms.common import sim_of
from simulator.state import FAULT_KINDS, Fault, Sim, parse_iso
from simulator.world import PLATFORMS, World

DEFAULT_SEED = 7
log = logging.getLogger(__name__)


def _problem(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


async def clock(request: Request) -> Response:
    """GET: the world's time. POST {"now": iso} | {"advance_seconds": n} | {"real": true}."""
    sim = sim_of(request)
    if request.method == "POST":
        body = await _body(request)
        if body.get("real"):
            sim.reset_clock()
        else:
            try:
                now = parse_iso(str(body["now"])) if body.get("now") else None
                advance = float(body.get("advance_seconds") or 0)
            except ValueError as exc:
                return _problem(f"bad clock request: {exc}")
            sim.set_clock(now, advance)
    fixed = sim.fixed_now is not None
    return JSONResponse({"now": sim.now().isoformat(), "fixed": fixed})


async def faults(request: Request) -> Response:
    """POST {platform, kind, count, retry_after, post_id, factor, metric, message, delay, on};
    DELETE clears all."""
    sim = sim_of(request)
    if request.method == "DELETE":
        sim.clear()
        return JSONResponse({"cleared": True})
    body = await _body(request)
    platform, kind = body.get("platform"), str(body.get("kind", ""))
    if platform not in PLATFORMS:
        return _problem(f"platform must be one of {', '.join(PLATFORMS)}")
    if kind not in FAULT_KINDS:
        return _problem(f"kind must be one of {', '.join(FAULT_KINDS)}")
    if kind == "deleted" and not body.get("post_id"):
        return _problem("a deleted fault needs post_id")
    if kind == "metric_error" and not body.get("metric"):
        return _problem("a metric_error fault needs metric")
    if body.get("on", "any") not in ("any", "write"):
        return _problem('on must be "any" or "write"')
    try:
        count = int(body.get("count", 1))
        fault = Fault(
            kind=kind,
            retry_after=int(body.get("retry_after", 2)),
            post_id=body.get("post_id"),
            factor=float(body.get("factor", 0.9)),
            metric=body.get("metric"),
            message=body.get("message")
            or ("media type not supported" if kind == "reject" else None),
            delay=float(body.get("delay", 5.0)),
            on=str(body.get("on", "any")),
        )
    except (TypeError, ValueError) as exc:
        return _problem(f"bad fault: {exc}")
    sim.inject(str(platform), fault, count)
    return JSONResponse({"injected": kind, "platform": platform, "count": count}, 201)


async def accounts(request: Request) -> Response:
    """GET: the accounts. POST {platform, external_id, handle, kind?, category?} registers one."""
    sim = sim_of(request)
    if request.method == "POST":
        body = await _body(request)
        platform = body.get("platform")
        if platform not in PLATFORMS or not body.get("external_id") or not body.get("handle"):
            return _problem("platform, external_id and handle are required")
        account = sim.register(
            str(platform),
            str(body["external_id"]),
            str(body["handle"]),
            kind=str(body.get("kind", "own")),
            category=body.get("category"),
            display_name=body.get("display_name"),
        )
        return JSONResponse(_account_out(account), 201)
    wanted = request.query_params.get("platform")
    return JSONResponse(
        {
            "accounts": [
                _account_out(a)
                for p in PLATFORMS
                if wanted in (None, p)
                for a in sim.world.accounts(p)
            ]
        }
    )


def _account_out(account: Any) -> dict[str, Any]:
    return {
        "platform": account.platform,
        "external_id": account.external_id,
        "handle": account.handle,
        "display_name": account.display_name,
        "kind": account.kind,
        "category": account.category,
    }


async def health(request: Request) -> Response:
    """Liveness, the seed and the world's time."""
    sim = sim_of(request)
    return JSONResponse({"ok": True, "seed": sim.world.seed, "now": sim.now().isoformat()})


class WorldDate:
    """Stamp every response's Date header with the world's time, so clients see its clock."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sim: Sim | None = scope["app"].state.sim if "app" in scope else None
        at = parse_qs(scope.get("query_string", b"").decode()).get("at", [None])[0]

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start" and sim is not None:
                try:
                    now = sim.now(at)
                except ValueError:
                    now = sim.now()
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                headers.append((b"date", format_datetime(now, usegmt=True).encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, stamped)


async def sim_posts(request: Request) -> Response:
    """GET /_sim/posts?platform=&account=: what the write APIs published, with counts per text."""
    sim = sim_of(request)
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
    sim = sim_of(request)
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


def create_app(
    seed: int = DEFAULT_SEED,
    *,
    fault_rate: float = 0.0,
    now: datetime | None = None,
    state_dir: Path | None = None,
) -> Starlette:
    """The simulator app, remembering its write side in ``state_dir``; ``now`` fixes the clock."""
    # Without state_dir a restart forgets what clients published (tests want a fresh world).
    app = Starlette(
        routes=[
            Route("/_sim/health", health, methods=["GET"]),
            Route("/_sim/clock", clock, methods=["GET", "POST"]),
            Route("/_sim/faults", faults, methods=["POST", "DELETE"]),
            Route("/_sim/accounts", accounts, methods=["GET", "POST"]),
            Route("/_sim/posts", sim_posts, methods=["GET"]),
            Route("/_sim/thread", sim_thread, methods=["GET"]),
            *routes(),
        ]
    )
    journal = Journal(state_dir, seed) if state_dir is not None else None
    sim = Sim(world=World(seed), fault_rate=fault_rate, journal=journal)
    replayed = sim.restore()
    if replayed:
        log.info("simulator: %d events replayed from %s", replayed, state_dir)
    if now is not None:
        sim.fixed_now = now
    app.state.sim = sim
    app.add_middleware(WorldDate)
    return app


STOP_GRACE_SECONDS = 1  # how long a stopping simulator lets calls in flight finish


def serve(
    host: str, port: int, seed: int, fault_rate: float = 0.0, state_dir: Path | None = None
) -> None:
    """Run the simulator in the foreground (``murmur simulator``)."""
    # date_header=False: the app writes Date itself, from the world's clock.
    uvicorn.run(
        create_app(seed, fault_rate=fault_rate, state_dir=state_dir),
        host=host,
        port=port,
        log_level="warning",
        date_header=False,
        # An answer held back by a fault (timeout_after_commit) is cut at stop, not waited for.
        timeout_graceful_shutdown=STOP_GRACE_SECONDS,
    )
