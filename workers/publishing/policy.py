"""How the publishing worker reads a failure: retry when, fail how, and with which code."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from connectors.base import (
    AuthExpiredError,
    ConnectorError,
    NotFoundError,
    PermanentError,
    RateLimitedError,
    TransientError,
)

Action = Literal["retry", "fail", "reconnect"]


@dataclass(frozen=True)
class Verdict:
    """What to do after a failed attempt, and the error to record."""

    action: Action
    code: str
    message: str
    retry_after: float | None = None  # the platform's own Retry-After, when it sent one
    unknown_outcome: bool = False  # the platform may have created the post (timeout, 5xx)


def classify(exc: BaseException) -> Verdict:
    """Map a connector error (or any other exception) onto retry / fail / reconnect."""
    message = str(exc) or type(exc).__name__
    platform_code = getattr(exc, "code", None)
    detail = f"{message} (platform code {platform_code})" if platform_code else message
    if isinstance(exc, AuthExpiredError):
        return Verdict("reconnect", "auth_expired", f"The account's token was refused: {detail}")
    if isinstance(exc, NotFoundError):
        return Verdict("fail", "not_found", f"The platform answered not found: {detail}")
    if isinstance(exc, PermanentError):
        return Verdict("fail", "rejected", f"The platform rejected the post: {detail}")
    if isinstance(exc, RateLimitedError):
        return Verdict("retry", "rate_limited", detail, retry_after=exc.retry_after)
    if isinstance(exc, TransientError):
        if platform_code == "timeout":
            return Verdict("retry", "timeout", detail, unknown_outcome=True)
        if platform_code == "connection":
            # The request may have been sent before the connection broke.
            return Verdict("retry", "connection_error", detail, unknown_outcome=True)
        return Verdict("retry", "platform_unavailable", detail, unknown_outcome=True)
    if isinstance(exc, ConnectorError):
        return Verdict("fail", "rejected", detail)
    # A bug or an unexpected library error: retrying is safe (the next attempt checks the
    # platform first) and bounded by max_attempts, so it never loops forever.
    return Verdict(
        "retry", "internal_error", f"{type(exc).__name__}: {message}", unknown_outcome=True
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts, backoff and lease of the publishing worker."""

    max_attempts: int = 5
    base_delay: float = 2.0  # seconds before the 2nd attempt (before jitter)
    max_delay: float = 300.0
    max_retry_after: float = 3600.0  # a longer Retry-After is still honoured, capped here
    lease_seconds: float = 60.0  # well above the HTTP timeout, so a live call keeps its claim
    http_timeout: float = 15.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.lease_seconds <= self.http_timeout:
            raise ValueError("lease_seconds must exceed http_timeout")

    def delay(self, attempt: int, verdict: Verdict, rng: random.Random | None = None) -> float:
        """Seconds before the next attempt after failed attempt ``attempt`` (1-based).

        The platform's Retry-After when it gave one; else exponential backoff with "equal
        jitter" (between half and all of base·2^(n-1), capped), so workers retrying the same
        burst spread out but never retry immediately.
        """
        if verdict.retry_after is not None:
            return min(max(verdict.retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        fraction: float = (rng or random).random()
        return float(ceiling * (0.5 + 0.5 * fraction))

    def exhausted(self, attempt: int) -> bool:
        """True when ``attempt`` was the last one allowed."""
        return attempt >= self.max_attempts
