"""The one root of Murmur's errors: a message, a machine-readable code and field details.

Every layer raises below it (the store, the connectors, the domain, the workers), so that a
caller catches Murmur's failures by one class. Nothing here knows HTTP: the API maps each
class to its status in one table (api/errors.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorDetail:
    """One field's problem: where (a dotted path or a parameter), why (a machine word), what."""

    field: str
    issue: str
    message: str


class MurmurError(Exception):
    """The root of every error Murmur raises on purpose."""

    #: Machine-readable code, when the error has one (the domain's are the API's codes).
    code: str | None = None
    #: Seconds after which the same call may succeed, when that is known.
    retry_after: float | None = None

    def __init__(
        self,
        message: str = "",
        details: Sequence[ErrorDetail] = (),
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details)
        if retry_after is not None:
            self.retry_after = retry_after
