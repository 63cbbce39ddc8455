"""The edge middleware (request ids, access log, body and rate limits, headers, 500s) and CORS."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import structlog
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.caching import FastReads, Signature, envelope, signature
from api.context import request_id_var
from api.deps import anonymous_bucket
from api.errors import error_response
from api.health.metrics import Metrics
from api.ratelimit import Budget, Network, RateLimiter, client_address, parse_networks
from api.request_state import RequestState
from warehouse.changes import request_tokens
from warehouse.ids import new_id

log = structlog.get_logger("murmur.access")

JSON_UTF8 = "application/json; charset=utf-8"
_JSON_UTF8 = JSON_UTF8.encode()

# Security headers (docs/security.md, "Response headers"), pre-encoded: the edge adds them to
# every answer in the one pass it makes over the headers anyway.
NOSNIFF = (b"x-content-type-options", b"nosniff")
# An answer with an ETag is a conditional read (api/caching.py): a browser may keep it to
# revalidate (a 304), but only for this user and never without asking; any other answer is
# not kept at all. Both keep tenant data out of shared caches and proxies.
NO_STORE = (b"cache-control", b"no-store")
REVALIDATE = (b"cache-control", b"private, no-cache")
# An HTML page (the docs page, the dashboard) may not be framed by any origin.
NO_FRAMES = (b"x-frame-options", b"DENY")
NO_FRAME_ANCESTORS = (b"content-security-policy", b"frame-ancestors 'none'")


# CORS (docs/api.md, "CORS"): what a page on a listed origin may send and read.
CORS_METHODS = ("GET", "POST", "PATCH", "PUT", "DELETE")
CORS_REQUEST_HEADERS = (
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "If-None-Match",
    "X-Workspace-Id",
)
CORS_EXPOSED_HEADERS = (
    "ETag",
    "X-Request-Id",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "Retry-After",
    "Idempotent-Replayed",
)
CORS_MAX_AGE_SECONDS = 600


class Cors(CORSMiddleware):
    """Starlette's CORS outside the edge: a preflight is answered here, never budgeted or logged.

    A request without ``Origin`` (no browser asking across origins) skips Starlette's layer,
    which costs ~18 µs a request in header objects; it only gets ``Vary: Origin`` when some
    origin is listed, since an answer to a listed origin differs (a cache must not mix them).
    """

    def __init__(self, app: ASGIApp, *, origins: Iterable[str]) -> None:
        super().__init__(
            app,
            allow_origins=tuple(origins),
            allow_methods=CORS_METHODS,
            allow_headers=CORS_REQUEST_HEADERS,
            expose_headers=CORS_EXPOSED_HEADERS,
            max_age=CORS_MAX_AGE_SECONDS,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or any(n == b"origin" for n, _ in scope["headers"]):
            if scope["type"] == "http" and scope["method"] == "OPTIONS":
                # A preflight is answered here, never reaching the edge that adds the rest.
                await super().__call__(scope, receive, _with_nosniff(send))
            else:
                await super().__call__(scope, receive, send)
            return
        if not self.allow_origins:
            await self.app(scope, receive, send)
            return

        async def vary_on_origin(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (b"vary", b"Origin")]
            await send(message)

        await self.app(scope, receive, vary_on_origin)


def _with_nosniff(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), NOSNIFF]
        await send(message)

    return sending


class _BodyTooLarge(StarletteHTTPException):
    """Raised from ``receive``; an HTTPException so that FastAPI's body parsing lets it through."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body is over {limit} bytes.")


class EdgeMiddleware:
    """The outermost layer: everything here happens for every request, errors included."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limiter: RateLimiter,
        default_read_limit: int,
        max_body_bytes: int,
        unlimited_paths: tuple[str, ...] = (),
        anonymous_limit: int | None = None,
        trusted_proxies: Iterable[str | Network] | None = None,
        metrics: Metrics | None = None,
        unmetered_paths: frozenset[str] = frozenset(),
        fast_reads: FastReads | None = None,
        access_log: bool = False,
    ) -> None:
        self.app = app
        # A line per request only when asked (the setting access_log): the metrics count
        # every request either way.
        self.access_log = access_log
        self.metrics = metrics
        self.fast_reads = fast_reads
        self.unmetered_paths = unmetered_paths  # probes and scrapes: no rate limit, no headers
        self.limiter = limiter
        self.default_read_limit = default_read_limit
        self.max_body_bytes = max_body_bytes
        self.unlimited_paths = unlimited_paths
        self.anonymous_limit = anonymous_limit
        self.trusted: tuple[Network, ...] | None = (
            None if trusted_proxies is None else parse_networks(trusted_proxies)
        )

    def _configure(self, scope: Scope) -> tuple[int, tuple[Network, ...]]:
        """The anonymous budget and trusted proxies: given, else the app's settings."""
        if self.anonymous_limit is None or self.trusted is None:
            settings: Any = getattr(getattr(scope.get("app"), "state", None), "settings", None)
            if self.anonymous_limit is None:
                self.anonymous_limit = getattr(
                    settings, "unauthenticated_rate_limit", self.default_read_limit
                )
            if self.trusted is None:
                self.trusted = parse_networks(getattr(settings, "trusted_proxies", ()))
        return self.anonymous_limit, self.trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_id("req")
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        store = getattr(getattr(scope.get("app"), "state", None), "store", None)
        if store is not None and store.changes.shared:
            # At scale: the store's tokens as of now, before anything is read (and cached)
            # under them; this request's context keeps them (warehouse/changes.py).
            request_tokens.set(await store.changes.fresh())
        if self.fast_reads and scope["method"] == "GET":
            signed = signature(scope)
            if signed is not None and await self._answer_again(scope, send, signed, started):
                request_id_var.reset(token)
                return
        state = RequestState.of(scope)
        status_holder: dict[str, Any] = {"status": 500, "sent": False}
        path: str = scope["path"]
        anonymous_limit, trusted = self._configure(scope)
        address = client_address(scope, trusted)
        state.client_address = address
        unmetered = path in self.unmetered_paths
        if not unmetered and not _has_credentials(scope):
            # No key at all: budgeted per address before anything else runs.
            state.rate_budget = self.limiter.hit(anonymous_bucket(address), anonymous_limit)

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                status_holder["sent"] = True
                headers, replay_of = _complete(list(message.get("headers", ())))
                if replay_of is None:
                    headers.append((b"x-request-id", request_id.encode()))
                else:  # an idempotent replay answers under the stored response's own id
                    status_holder["replay_of"] = replay_of
                budget = state.rate_budget
                if budget is None and not unmetered:
                    # A key was sent but never checked (no such path…): the address pays.
                    budget = self.limiter.hit(anonymous_bucket(address), anonymous_limit)
                if budget is not None:
                    headers += _encoded_rate_headers(budget)
                message["headers"] = headers
            await send(message)

        refused = state.rate_budget
        if refused is not None and not refused.allowed:
            response = error_response(
                429,
                "RATE_LIMITED",
                f"Over {anonymous_limit} requests a minute without an API key from this address.",
                headers={"Retry-After": str(refused.retry_after)},
            )
            await response(scope, receive, send_wrapper)
            self._log(scope, status_holder["status"], started)
            request_id_var.reset(token)
            return

        receive_wrapper = receive
        if not path.startswith(self.unlimited_paths):
            declared = _content_length(scope)
            if declared is not None and declared > self.max_body_bytes:
                response = error_response(
                    413,
                    "PAYLOAD_TOO_LARGE",
                    f"The request body is over {self.max_body_bytes} bytes.",
                )
                await response(scope, receive, send_wrapper)
                self._log(scope, status_holder["status"], started)
                request_id_var.reset(token)
                return
            seen = 0

            async def receive_wrapper() -> Message:
                nonlocal seen
                message = await receive()
                if message["type"] == "http.request":
                    seen += len(message.get("body", b""))
                    if seen > self.max_body_bytes:
                        raise _BodyTooLarge(self.max_body_bytes)
                return message

        try:
            await self.app(scope, receive_wrapper, send_wrapper)
        except _BodyTooLarge:
            if not status_holder["sent"]:
                response = error_response(
                    413,
                    "PAYLOAD_TOO_LARGE",
                    f"The request body is over {self.max_body_bytes} bytes.",
                )
                await response(scope, receive, send_wrapper)
        except Exception:
            log.exception("request.crashed", request_id=request_id)
            if not status_holder["sent"]:
                response = error_response(500, "INTERNAL_ERROR", "An unexpected error occurred.")
                await response(scope, receive, send_wrapper)
        finally:
            self._log(scope, status_holder["status"], started, status_holder.get("replay_of"))
            request_id_var.reset(token)

    async def _answer_again(
        self, scope: Scope, send: Send, signed: tuple[Signature, bytes | None], started: float
    ) -> bool:
        """Answer a read the full path answered under the same change token (api/caching.py)."""
        assert self.fast_reads is not None
        now = time.time()
        found = self.fast_reads.lookup(signed[0], scope["app"].state.store.changes.token(), now)
        if found is None:
            return False
        budget = self.limiter.hit(found.bucket, found.limit, now)
        if not budget.allowed:
            # The full path refuses it (429) from this budget, without counting it again.
            RequestState.of(scope).rate_budget = budget
            return False
        etag = found.cached.etag.encode()
        if_none_match = signed[1]
        # What the full path's answer carries (send_wrapper's _complete), as one list.
        if if_none_match is not None and etag in if_none_match:
            status, body = 304, b""
            headers = [(b"etag", etag), NOSNIFF, REVALIDATE]
        else:
            status, body = 200, envelope(found.cached.data_at(now), request_id_var.get())
            headers = [
                (b"content-length", str(len(body)).encode()),
                (b"content-type", _JSON_UTF8),
                (b"etag", etag),
                NOSNIFF,
                REVALIDATE,
            ]
        headers.append((b"x-request-id", request_id_var.get().encode()))
        headers += _encoded_rate_headers(budget)
        scope["route"] = found.route  # the metrics' template
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        finally:
            self._log(scope, status, started)
        return True

    def _log(self, scope: Scope, status: int, started: float, replay_of: str | None = None) -> None:
        elapsed = time.perf_counter() - started
        if self.metrics is not None:
            self.metrics.observe(scope, status, elapsed)
        if not self.access_log:
            return
        extra = {} if replay_of is None else {"replay_of": replay_of}
        log.info(
            "request",
            **extra,
            request_id=request_id_var.get(),
            method=scope["method"],
            path=scope["path"],
            status=status,
            ms=round(elapsed * 1000, 2),
        )


def _rate_headers(budget: Budget) -> tuple[tuple[str, str], ...]:
    """The X-RateLimit-* headers of ``budget``."""
    reset = datetime.fromtimestamp(budget.reset_at, UTC).isoformat().replace("+00:00", "Z")
    return (
        ("X-RateLimit-Limit", str(budget.limit)),
        ("X-RateLimit-Remaining", str(budget.remaining)),
        ("X-RateLimit-Reset", reset),
    )


def _encoded_rate_headers(budget: Budget) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode(), value.encode()) for name, value in _rate_headers(budget)]


#: The headers an answer set that decide which defaults ``_complete`` adds to it.
_DEFAULTED = frozenset(
    {
        b"etag",
        b"cache-control",
        b"x-content-type-options",
        b"x-frame-options",
        b"content-security-policy",
    }
)


def _complete(headers: list[tuple[bytes, bytes]]) -> tuple[list[tuple[bytes, bytes]], str | None]:
    """``headers`` with the contract's media type and the security headers; the request id.

    One pass over what the app set: a JSON answer names its charset; every answer gets
    ``nosniff`` and a ``Cache-Control`` unless it set its own; an HTML page gets
    ``X-Frame-Options`` and ``frame-ancestors`` unless it set a policy of its own.
    """
    request_id = None
    html = False
    present: set[bytes] = set()
    for index, (name, value) in enumerate(headers):
        if name == b"content-type":
            if value == b"application/json":
                headers[index] = (name, _JSON_UTF8)  # the contract's media type
            else:
                html = value.startswith(b"text/html")
        elif name == b"x-request-id":
            request_id = value
        elif name in _DEFAULTED:
            present.add(name)
    if b"x-content-type-options" not in present:
        headers.append(NOSNIFF)
    if b"cache-control" not in present:
        headers.append(REVALIDATE if b"etag" in present else NO_STORE)
    if html:
        if b"x-frame-options" not in present:
            headers.append(NO_FRAMES)
        if b"content-security-policy" not in present:
            headers.append(NO_FRAME_ANCESTORS)
    return headers, None if request_id is None else request_id.decode("latin-1")


def _has_credentials(scope: Scope) -> bool:
    return any(name == b"authorization" for name, _ in scope.get("headers", ()))


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
