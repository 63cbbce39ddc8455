"""The domain's refusals: what a caller asked that the rules or the resource's state forbid.

Each carries the contract's machine code (docs/api.md, Errors); the HTTP status of each is
the API's business alone (api/errors.py).
"""

from __future__ import annotations

from typing import TypeVar

from murmur.errors import ErrorDetail, MurmurError

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
