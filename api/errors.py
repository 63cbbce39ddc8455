"""The one place that turns every failure into the contract's envelope and HTTP status."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from api.context import request_id_var
from api.schemas import ErrorBody, ErrorDetail, ErrorEnvelope
from core.errors import MurmurError
from domain.errors import (
    ApiKeyExpired,
    ApiKeyInvalid,
    AuthRequired,
    DomainError,
    IdempotencyConflict,
    IdempotencyInProgress,
    IdempotencyKeyRequired,
    InvalidState,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ScopeForbidden,
    ServiceUnavailable,
    UnsupportedMediaType,
    ValidationFailed,
    WorkspaceForbidden,
    shape_details,
)
from warehouse.errors import LakeDamagedError, StoreUnavailableError

log = structlog.get_logger(__name__)


# Which errors a completed write stores as its idempotent outcome: those that come from the
# resource's state, not from the request's shape, auth or the server's health.
STORABLE_ERRORS: tuple[type[MurmurError], ...] = (NotFound, InvalidState)


def error_response(
    status: int,
    code: str,
    message: str,
    details: Sequence[ErrorDetail] = (),
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = ErrorEnvelope(
        error=ErrorBody(code=code, message=message, details=list(details)),
        request_id=request_id_var.get(),
    )
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


@dataclass(frozen=True)
class Reply:
    """How the API answers one class of error: its status, and what it says beyond the error."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    #: The code and message sent instead of the error's own (whose text may name internals).
    code: str | None = None
    message: str | None = None


_INVALID_TOKEN = {"WWW-Authenticate": 'Bearer error="invalid_token"'}

# Every error the API reports, by class (a subclass answers as its nearest listed base): the
# one table of HTTP statuses. An error not listed is a server fault, the generic 500.
REPLIES: dict[type[MurmurError], Reply] = {
    ValidationFailed: Reply(400),
    IdempotencyKeyRequired: Reply(400),
    AuthRequired: Reply(401, {"WWW-Authenticate": "Bearer"}),
    ApiKeyInvalid: Reply(401, _INVALID_TOKEN),
    ApiKeyExpired: Reply(401, _INVALID_TOKEN),
    ScopeForbidden: Reply(403),
    WorkspaceForbidden: Reply(403),
    NotFound: Reply(404),
    InvalidState: Reply(409),
    IdempotencyConflict: Reply(409),
    IdempotencyInProgress: Reply(409),
    PayloadTooLarge: Reply(413),
    UnsupportedMediaType: Reply(415),
    RateLimited: Reply(429),
    ServiceUnavailable: Reply(503),
    # A refusal of the domain's not listed above: the contract's default, as its code says.
    DomainError: Reply(400),
    # Retrying will not mend a damaged file: an operator's `murmur doctor` names it.
    LakeDamagedError: Reply(
        503,
        {"Retry-After": "60"},
        code="SERVICE_UNAVAILABLE",
        message="Analytics are unavailable: a file of the analytics store is damaged."
        " Publishing is not affected.",
    ),
    # The cause names files or servers: the log says it, the client hears the store is down.
    StoreUnavailableError: Reply(
        503,
        {"Retry-After": "1"},
        code="SERVICE_UNAVAILABLE",
        message="The store is unavailable; retry shortly with the same Idempotency-Key.",
    ),
}


def reply_for(exc: MurmurError) -> Reply | None:
    """The table's answer to ``exc``, by its class or nearest listed base; None if unlisted."""
    for cls in type(exc).__mro__:
        reply = REPLIES.get(cls)
        if reply is not None:
            return reply
    return None


def http_status(exc: MurmurError) -> int | None:
    """The status the API answers ``exc`` with; None for a server fault (500)."""
    reply = reply_for(exc)
    return None if reply is None else reply.status


def murmur_error_response(exc: MurmurError, reply: Reply | None = None) -> JSONResponse:
    """The envelope of a listed error, its details converted to the wire's schema."""
    reply = reply or reply_for(exc)
    if reply is None:
        raise exc  # not the client's doing: the generic 500, logged with its traceback
    headers = dict(reply.headers)
    if exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    details = [ErrorDetail(field=d.field, issue=d.issue, message=d.message) for d in exc.details]
    return error_response(
        reply.status,
        reply.code or exc.code or "INTERNAL_ERROR",
        reply.message or exc.message,
        [] if reply.message else details,
        headers or None,
    )


def validation_details(exc: RequestValidationError) -> list[ErrorDetail]:
    return [
        ErrorDetail(field=d.field, issue=d.issue, message=d.message)
        for d in shape_details(exc.errors())
    ]


def _method_table(app: FastAPI) -> list[tuple[re.Pattern[str], frozenset[str]]]:
    """Each route's path pattern and methods, built once per app."""
    table: list[tuple[re.Pattern[str], frozenset[str]]] | None = getattr(
        app.state, "allow_table", None
    )
    if table is None:
        table = [
            (compile_path(context.path)[0], frozenset(context.methods))
            for context in iter_route_contexts(app.routes)
            if context.path and context.methods
        ]
        app.state.allow_table = table
    return table


def allowed_methods(request: Request) -> str:
    """Every method some route serves on this path (the router names only the first route's)."""
    path = request.scope.get("path", "")
    methods = {
        m for pattern, found in _method_table(request.app) if pattern.match(path) for m in found
    }
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    """Route every failure, ours or the framework's, through the envelope."""

    @app.exception_handler(MurmurError)
    async def _murmur(_: Request, exc: MurmurError) -> JSONResponse:
        reply = reply_for(exc)
        if reply is None:
            raise exc  # the 500 below, as for any exception of ours not meant for the client
        if isinstance(exc, StoreUnavailableError):
            log.warning("request.store_unavailable", error=str(exc))
        return murmur_error_response(exc, reply)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        details = validation_details(exc)
        first = details[0] if details else None
        message = f"{first.field}: {first.message}" if first else "The request failed validation."
        return error_response(400, "VALIDATION_ERROR", message, details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_response(404, "NOT_FOUND", "No such endpoint.")
        if exc.status_code == 405:
            return error_response(
                405,
                "METHOD_NOT_ALLOWED",
                "Method not allowed on this path.",
                headers={**(exc.headers or {}), "Allow": allowed_methods(request)},
            )
        if exc.status_code == 413:
            return error_response(413, "PAYLOAD_TOO_LARGE", str(exc.detail))
        return error_response(exc.status_code, "VALIDATION_ERROR", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request.unhandled", error=type(exc).__name__)
        return error_response(500, "INTERNAL_ERROR", "An unexpected error occurred.")
