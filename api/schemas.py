"""The HTTP wire's own shapes: the success and error envelopes and the documented codes."""

from __future__ import annotations

from typing import Annotated, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, Field

from domain.schemas import Named

T = TypeVar("T")


class ErrorDetail(BaseModel):
    field: str = Field(description="Dotted path into the body, or the query parameter's name.")
    issue: str = Field(description="Machine-readable reason, e.g. `min_items`, `required`.")
    message: str


ErrorCodeName = Literal[
    "VALIDATION_ERROR",
    "IDEMPOTENCY_KEY_REQUIRED",
    "AUTH_REQUIRED",
    "API_KEY_INVALID",
    "API_KEY_EXPIRED",
    "SCOPE_FORBIDDEN",
    "WORKSPACE_FORBIDDEN",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "INVALID_STATE",
    "IDEMPOTENCY_CONFLICT",
    "IDEMPOTENCY_IN_PROGRESS",
    "PAYLOAD_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "RATE_LIMITED",
    "INTERNAL_ERROR",
    "SERVICE_UNAVAILABLE",
]
ERROR_CODES: tuple[str, ...] = get_args(ErrorCodeName)
# The documented codes (docs/api.md, "Errors"), one schema in the OpenAPI document.
ErrorCode = Annotated[ErrorCodeName, Named("ErrorCode")]


class ErrorBody(BaseModel):
    code: ErrorCode = Field(description="Machine-readable code (docs/api.md, Errors).")
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorEnvelope(BaseModel):
    """Every error response."""

    success: Literal[False] = False
    error: ErrorBody
    request_id: str


class Envelope(BaseModel, Generic[T]):
    """Every successful response."""

    success: Literal[True] = True
    data: T
    request_id: str


def ok(data: T) -> Envelope[T]:
    """Wrap a result in the success envelope of the current request."""
    from api.context import request_id_var

    return Envelope(data=data, request_id=request_id_var.get())
