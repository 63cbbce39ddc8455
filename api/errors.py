"""Domain errors and the one place that turns every failure into the contract's envelope."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from api.context import request_id_var
from api.schemas import ErrorBody, ErrorDetail, ErrorEnvelope
from warehouse.errors import StoreUnavailableError

T = TypeVar("T")

log = structlog.get_logger(__name__)


class MurmurError(Exception):
    """An error the API reports to the client in the envelope."""

    status_code = 400
    code = "VALIDATION_ERROR"
    headers: ClassVar[dict[str, str] | None] = None

    def __init__(
        self,
        message: str,
        details: Sequence[ErrorDetail] = (),
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details)
        if headers is not None:
            self.headers = headers  # type: ignore[misc]


class ValidationFailed(MurmurError):
    status_code, code = 400, "VALIDATION_ERROR"

    @classmethod
    def on(cls, field: str, issue: str, message: str) -> ValidationFailed:
        """A validation error about one field."""
        return cls(message, [ErrorDetail(field=field, issue=issue, message=message)])


class IdempotencyKeyRequired(MurmurError):
    status_code, code = 400, "IDEMPOTENCY_KEY_REQUIRED"


class AuthRequired(MurmurError):
    status_code, code = 401, "AUTH_REQUIRED"
    headers: ClassVar[dict[str, str] | None] = {"WWW-Authenticate": "Bearer"}


class ApiKeyInvalid(MurmurError):
    status_code, code = 401, "API_KEY_INVALID"
    headers: ClassVar[dict[str, str] | None] = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


class ApiKeyExpired(MurmurError):
    status_code, code = 401, "API_KEY_EXPIRED"
    headers: ClassVar[dict[str, str] | None] = {"WWW-Authenticate": 'Bearer error="invalid_token"'}


class ScopeForbidden(MurmurError):
    status_code, code = 403, "SCOPE_FORBIDDEN"


class WorkspaceForbidden(MurmurError):
    status_code, code = 403, "WORKSPACE_FORBIDDEN"


class NotFound(MurmurError):
    status_code, code = 404, "NOT_FOUND"

    @classmethod
    def resource(cls, kind: str, ident: str) -> NotFound:
        return cls(f"No {kind} {ident!r} in this workspace.")


def found(row: T | None, kind: str, ident: str) -> T:
    """``row``, or NOT_FOUND naming the ``kind`` with id ``ident`` when there is none."""
    if row is None:
        raise NotFound.resource(kind, ident)
    return row


class InvalidState(MurmurError):
    status_code, code = 409, "INVALID_STATE"


class IdempotencyConflict(MurmurError):
    status_code, code = 409, "IDEMPOTENCY_CONFLICT"


class IdempotencyInProgress(MurmurError):
    status_code, code = 409, "IDEMPOTENCY_IN_PROGRESS"


class PayloadTooLarge(MurmurError):
    status_code, code = 413, "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(MurmurError):
    status_code, code = 415, "UNSUPPORTED_MEDIA_TYPE"


class RateLimited(MurmurError):
    status_code, code = 429, "RATE_LIMITED"


class ServiceUnavailable(MurmurError):
    status_code, code = 503, "SERVICE_UNAVAILABLE"


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


def murmur_error_response(exc: MurmurError) -> JSONResponse:
    return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)


def _field_of(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in {"body", "query", "path", "header", "cookie"}:
        parts = parts[1:]
    return ".".join(parts) or "body"


_ISSUES = {
    "missing": "required",
    "too_short": "min_items",
    "too_long": "max_items",
    "string_too_short": "min_length",
    "string_too_long": "max_length",
    "timezone_aware": "offset_required",
    "extra_forbidden": "unknown_field",
    "json_invalid": "invalid_json",
    "greater_than_equal": "min_value",
    "less_than_equal": "max_value",
}


def validation_details(exc: RequestValidationError) -> list[ErrorDetail]:
    details = []
    for err in exc.errors():
        kind = str(err.get("type", "invalid"))
        loc = err.get("loc", ())
        if kind == "json_invalid":
            loc = ("body",)  # its second part is a character position, not a field
        details.append(
            ErrorDetail(
                field=_field_of(loc),
                issue=_ISSUES.get(kind, kind),
                message=str(err.get("msg", "Invalid value.")),
            )
        )
    return details


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
        return murmur_error_response(exc)

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

    @app.exception_handler(StoreUnavailableError)
    async def _store_unavailable(_: Request, exc: StoreUnavailableError) -> JSONResponse:
        # The cause names files or servers: the log says it, the client hears the store is down.
        log.warning("request.store_unavailable", error=str(exc))
        return error_response(
            503,
            "SERVICE_UNAVAILABLE",
            "The store is unavailable; retry shortly with the same Idempotency-Key.",
            headers={"Retry-After": "1"},
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request.unhandled", error=type(exc).__name__)
        return error_response(500, "INTERNAL_ERROR", "An unexpected error occurred.")
