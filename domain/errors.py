"""The domain's refusals: what a caller asked that the rules or the resource's state forbid.

Each carries the contract's machine code (docs/api.md, Errors); the HTTP status of each is
the API's business alone (api/errors.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from core.errors import ErrorDetail, MurmurError

T = TypeVar("T")


class DomainError(MurmurError):
    """A refusal reported to the caller (the API's envelope, a worker's report)."""

    code: str = "VALIDATION_ERROR"


class ValidationFailed(DomainError):
    code = "VALIDATION_ERROR"

    @classmethod
    def on(cls, field: str, issue: str, message: str) -> ValidationFailed:
        """A validation error about one field."""
        return cls(message, [ErrorDetail(field=field, issue=issue, message=message)])


class IdempotencyKeyRequired(DomainError):
    code = "IDEMPOTENCY_KEY_REQUIRED"


class AuthRequired(DomainError):
    code = "AUTH_REQUIRED"


class ApiKeyInvalid(DomainError):
    code = "API_KEY_INVALID"


class ApiKeyExpired(DomainError):
    code = "API_KEY_EXPIRED"


class ScopeForbidden(DomainError):
    code = "SCOPE_FORBIDDEN"


class WorkspaceForbidden(DomainError):
    code = "WORKSPACE_FORBIDDEN"


class NotFound(DomainError):
    code = "NOT_FOUND"

    @classmethod
    def resource(cls, kind: str, ident: str) -> NotFound:
        """NOT_FOUND naming the ``kind`` with id ``ident``."""
        return cls(f"No {kind} {ident!r} in this workspace.")


def found(row: T | None, kind: str, ident: str) -> T:
    """``row``, or NOT_FOUND naming the ``kind`` with id ``ident`` when there is none."""
    if row is None:
        raise NotFound.resource(kind, ident)
    return row


class InvalidState(DomainError):
    code = "INVALID_STATE"


class IdempotencyConflict(DomainError):
    code = "IDEMPOTENCY_CONFLICT"


class IdempotencyInProgress(DomainError):
    code = "IDEMPOTENCY_IN_PROGRESS"


class PayloadTooLarge(DomainError):
    code = "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(DomainError):
    code = "UNSUPPORTED_MEDIA_TYPE"


class RateLimited(DomainError):
    code = "RATE_LIMITED"


class ServiceUnavailable(DomainError):
    code = "SERVICE_UNAVAILABLE"


# Pydantic's error types, as the contract's `issue` words.
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
_WHERE = {"body", "query", "path", "header", "cookie"}


def _field_of(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in _WHERE:
        parts = parts[1:]
    return ".".join(parts) or "body"


def shape_details(errors: Iterable[Mapping[str, Any]]) -> list[ErrorDetail]:
    """Pydantic's errors of a value that does not fit its model, as the contract's details."""
    details = []
    for err in errors:
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
