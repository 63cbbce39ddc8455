"""The FastAPI application: routers of every resource group under /api/public/v1."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import structlog
from anyio import to_thread
from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline

from api.auth import KeyCache
from api.caching import FastReads, ResponseCache
from api.dashboard import router as dashboard
from api.errors import install_error_handlers
from api.health import router as health
from api.health.metrics import Metrics
from api.idempotency import OPENAPI_PARAMETER
from api.mcp.mount import McpMount
from api.middleware import Cors, EdgeMiddleware
from api.posts.router import record_posts
from api.ratelimit import RateLimiter
from api.routing import MurmurRoute
from api.schemas import ErrorEnvelope
from core.settings import Settings
from domain.pagination import CursorCodec
from warehouse import idempotency as idem_repo
from warehouse import webhooks as webhooks_repo
from warehouse.group_commit import GroupCommit
from warehouse.store import Secrets, Store

BASE_PATH = "/api/public/v1"
DOCS_ASSETS = f"{BASE_PATH}/docs/assets"
log = structlog.get_logger(__name__)


def api_router() -> APIRouter:
    """Every resource group's router, mounted under the base path."""
    from api.analytics.publishing import router as reliability
    from api.analytics.router import router as analytics
    from api.approvals.router import router as approvals
    from api.automation.router import router as automation
    from api.experiments.router import router as experiments
    from api.inbox.router import router as inbox
    from api.posts.router import router as posts
    from api.webhooks.router import router as webhooks
    from api.workspaces.router import router as workspaces
    from api.workspaces.sessions import router as sessions

    root = APIRouter(prefix=BASE_PATH, generate_unique_id_function=operation_id)
    groups = (
        posts,
        workspaces,
        sessions,
        approvals,
        inbox,
        automation,
        experiments,
        analytics,
        webhooks,
    )
    for router in (*groups, reliability):  # reliability: GET /analytics/publishing
        # include_router keeps each route's own class, so the group routers must declare
        # MurmurRoute themselves: without it a request's transaction is never committed.
        stray = [getattr(r, "path", r) for r in router.routes if not isinstance(r, MurmurRoute)]
        if stray:
            raise RuntimeError(f"routes without route_class=MurmurRoute: {stray}")
        root.include_router(router)
    return root


def operation_id(route: APIRoute) -> str:
    """A route's operationId: its endpoint's name, unless it declares ``operation_id``.

    Short and stable, so that generated clients get ``create_post``, not
    ``create_post_api_public_v1_posts_post``; the document refuses duplicates.
    """
    return route.name


async def _purge_idempotency(store: Store) -> None:
    while True:
        await asyncio.sleep(600)
        try:
            removed = await asyncio.to_thread(store.run, idem_repo.purge_expired)
            log.info("idempotency.purged", removed=removed)
        except Exception:
            log.exception("idempotency.purge_failed")


def create_app(settings: Settings | None = None, store: Store | None = None) -> FastAPI:
    """Build the API; without ``store`` it opens the store itself when it starts."""
    settings = settings or Settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = settings.request_threads
        owned = app.state.store is None
        if owned:
            app.state.store = await asyncio.to_thread(settings.open_store)
        secrets = Secrets.load(settings.data_dir)
        app.state.cursor_codec = CursorCodec(secrets.signing_key)
        if app.state.store.sealer is None:
            app.state.store.sealer = secrets.sealer()
        # Secrets stored before sealing are sealed now; looked for first with a read, so
        # that every later start (and every replica's) takes no write lock.
        if await asyncio.to_thread(app.state.store.read, webhooks_repo.has_plaintext_secrets):
            await asyncio.to_thread(
                app.state.store.run,
                partial(webhooks_repo.seal_plaintext_secrets, sealer=app.state.store.sealer),
            )
        app.state.post_writes = GroupCommit(app.state.store, record_posts, name="posts")
        purge = asyncio.create_task(_purge_idempotency(app.state.store))
        # The modules, routes and models loaded so far live as long as the process: moved
        # out of the collector's sight, a full collection no longer walks them (under load
        # those walks were the p99: 13 full collections of up to 128 ms in 25 s of reads).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await app.state.mcp.aclose()
            purge.cancel()
            await asyncio.to_thread(app.state.post_writes.close)
            if owned:
                app.state.store.close()

    # The docs page's script and styles are served from the fastapi-offline package, not a
    # CDN: the page works offline and its requests stay on this server.
    app = FastAPIOffline(
        title="Murmur Public API",
        version="1.0.0",
        description=(
            "Publishing, collaboration, engagement, automation and analytics for social media. "
            "Every response is an envelope; see docs/api.md for the contract."
        ),
        lifespan=lifespan,
        openapi_url=f"{BASE_PATH}/openapi.json",
        docs_url=f"{BASE_PATH}/docs",
        redoc_url=None,
        static_url=DOCS_ASSETS,
        favicon_url=f"{DOCS_ASSETS}/favicon.png",
        swagger_ui_oauth2_redirect_url=f"{BASE_PATH}/docs/oauth2-redirect",
        # No validator badge: Swagger UI would send the document to validator.swagger.io.
        swagger_ui_parameters={"validatorUrl": None},
        default_response_class=JSONResponse,
    )
    app.state.settings = settings
    app.state.store = store
    app.state.rate_limiter = RateLimiter()
    app.state.keys = KeyCache()
    app.state.responses = ResponseCache()
    app.state.fast_reads = FastReads()
    app.state.metrics = Metrics()
    if store is not None:
        app.state.cursor_codec = CursorCodec(Secrets.load(settings.data_dir).signing_key)
    install_error_handlers(app)
    # First: a probe or scrape is matched against its three routes, not after walking every
    # route of the API (a third of a scrape's time), which pays three checks in return.
    app.include_router(health.router)  # /healthz, /readyz, /metrics: docs/operations.md
    app.include_router(api_router())
    app.state.mcp = McpMount(app)  # /mcp: docs/mcp.md
    app.add_route("/mcp", app.state.mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    app.include_router(dashboard.router)  # /dashboard/: docs/dashboard.md
    app.add_middleware(
        EdgeMiddleware,
        limiter=app.state.rate_limiter,
        default_read_limit=settings.read_rate_limit,
        max_body_bytes=settings.max_json_body_bytes,
        unlimited_paths=(f"{BASE_PATH}/media/upload",),
        metrics=app.state.metrics,
        unmetered_paths=health.PATHS | dashboard.PATHS,
        fast_reads=app.state.fast_reads,
        access_log=settings.access_log,
    )
    # Outside the edge: a preflight is answered before any budget, log line or metric.
    app.add_middleware(Cors, origins=settings.cors_origins)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


_ERRORS_READ = {
    "400": "Validation failed (`VALIDATION_ERROR`).",
    "401": "Missing, unknown, revoked or expired key.",
    "403": "The key lacks the scope or the workspace.",
    "404": "No such resource (in the path, or named by a filter) in this workspace.",
    "429": "Over the key's rate limit (`RATE_LIMITED`, with `Retry-After`).",
    "500": "Unexpected error (`INTERNAL_ERROR`).",
    "503": "The store is unavailable (`SERVICE_UNAVAILABLE`, with `Retry-After`).",
}
_ERRORS_WRITE = {
    **_ERRORS_READ,
    "400": "Validation failed, or no `Idempotency-Key` (`IDEMPOTENCY_KEY_REQUIRED`).",
    "409": "`INVALID_STATE`, `IDEMPOTENCY_CONFLICT` or `IDEMPOTENCY_IN_PROGRESS` (with "
    "`Retry-After`).",
    "413": "The body is over the limit (`PAYLOAD_TOO_LARGE`).",
}


def _header(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "required": False, "schema": schema}


# Every response carries these (docs/api.md, "The envelope" and "Rate limits").
_RATE_HEADERS = {
    "X-Request-Id": _header(
        "This request's id (also `request_id` in the body).", {"type": "string"}
    ),
    "X-RateLimit-Limit": _header("Requests allowed in the window.", {"type": "integer"}),
    "X-RateLimit-Remaining": _header("Requests left in the window.", {"type": "integer"}),
    "X-RateLimit-Reset": _header(
        "When the current window ends (ISO 8601 UTC).", {"type": "string", "format": "date-time"}
    ),
}
_RETRY_AFTER = {
    "Retry-After": _header("Seconds to wait before retrying.", {"type": "integer", "minimum": 0})
}
_REPLAYED = {
    "Idempotent-Replayed": _header(
        "`true` when this is the stored response of an earlier request with the same "
        "Idempotency-Key.",
        {"type": "string", "enum": ["true"]},
    )
}
_ETAG = {
    "ETag": _header(
        "Weak validator of this answer; send it back as `If-None-Match` for a 304.",
        {"type": "string"},
    )
}
_WWW_AUTHENTICATE = {
    "WWW-Authenticate": _header("`Bearer`, as RFC 6750 has it.", {"type": "string"})
}
# The reads that answer with an ETag and honour If-None-Match (api/caching.py).
_CONDITIONAL = frozenset({"list_posts", "get_unified_analytics", "list_viral_trends"})
_IF_NONE_MATCH = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "An `ETag` from an earlier answer: 304 with no body while it still holds.",
    "schema": {"type": "string"},
}


def _error_headers(status: str, is_write: bool) -> dict[str, Any]:
    headers: dict[str, Any] = dict(_RATE_HEADERS)
    if status in {"409", "429", "503"}:
        headers.update(_RETRY_AFTER)
    if status == "401":
        headers.update(_WWW_AUTHENTICATE)
    if is_write and status in {"404", "409"}:
        headers.update(_REPLAYED)  # a refusal from the resource's state is stored and replayed
    return headers


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, completed with the envelope's errors, headers and Idempotency-Key."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    # Paths are relative to the API's root, which is the one server (on whichever host
    # serves this document): a generated client takes `http://host:8000/api/public/v1`.
    schema["servers"] = [{"url": BASE_PATH, "description": "The public API, v1."}]
    schema["paths"] = {
        path.removeprefix(BASE_PATH) or "/": operations
        for path, operations in schema.get("paths", {}).items()
    }
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, sub in ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")[
        "$defs"
    ].items():
        components.setdefault(name, sub)
    envelope = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    envelope.pop("$defs", None)
    components["ErrorEnvelope"] = envelope
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    error_ref = {"$ref": "#/components/schemas/ErrorEnvelope"}
    seen: dict[str, str] = {}
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            op_id = operation.get("operationId", "")
            if op_id in seen:
                raise RuntimeError(f"operationId {op_id!r} of {path} is {seen[op_id]}'s too")
            seen[op_id] = path
            is_write = method.upper() in {"POST", "PUT", "PATCH", "DELETE"}
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, text in (_ERRORS_WRITE if is_write else _ERRORS_READ).items():
                responses[status] = {
                    "description": text,
                    "headers": _error_headers(status, is_write),
                    "content": {"application/json": {"schema": error_ref}},
                }
            if "upload" in path:
                responses["415"] = {
                    "description": "The file's bytes are not an accepted type.",
                    "headers": _error_headers("415", is_write),
                    "content": {"application/json": {"schema": error_ref}},
                }
            for status, response in responses.items():
                if status.startswith("2"):
                    headers = dict(_RATE_HEADERS)
                    if is_write:
                        headers.update(_REPLAYED)
                    if op_id in _CONDITIONAL:
                        headers.update(_ETAG)
                    response["headers"] = headers
            if op_id in _CONDITIONAL:
                operation.setdefault("parameters", []).append(dict(_IF_NONE_MATCH))
                responses["304"] = {
                    "description": "Not Modified: the `If-None-Match` tag still holds; no body.",
                    "headers": {**_RATE_HEADERS, **_ETAG},
                }
            if is_write:
                # The one place a write's Idempotency-Key is declared; a route that declares
                # its own (the sessions: not required) keeps it instead.
                params = operation.setdefault("parameters", [])
                if not any(p.get("name") == OPENAPI_PARAMETER["name"] for p in params):
                    params.append(copy.deepcopy(OPENAPI_PARAMETER))
    app.openapi_schema = schema
    return schema
