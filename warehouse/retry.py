"""The one retry policy for work the store refused for now (a conflict, a key taken meanwhile).

Bounded attempts with exponential backoff and jitter: the losers of a conflict spread apart
instead of colliding again on the same row. Callers say which of the store's errors their
work may be repeated after (``retry_on``); the work itself must be safe to run again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from warehouse.errors import ConflictError, StoreError

T = TypeVar("T")

ATTEMPTS = 10  # ~3 s of waiting at most: the publishing workers' claims contend hardest
BASE_SECONDS = 0.002


def delay(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): doubling, with jitter."""
    jitter: float = random.uniform(0.5, 1.5)
    return BASE_SECONDS * 2.0 ** (attempt - 1) * jitter


def may_retry(
    exc: BaseException,
    attempt: int,
    retry_on: tuple[type[StoreError], ...],
    attempts: int = ATTEMPTS,
) -> bool:
    """Whether failed attempt ``attempt`` (1-based), refused with ``exc``, may run again."""
    return attempt < attempts and isinstance(exc, retry_on)


def retrying(
    work: Callable[[], T],
    *,
    retry_on: tuple[type[StoreError], ...] = (ConflictError,),
    attempts: int = ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``work``, again after each refusal in ``retry_on``, up to ``attempts`` times."""
    attempt = 1
    while True:
        try:
            return work()
        except StoreError as exc:
            if not may_retry(exc, attempt, retry_on, attempts):
                raise
        sleep(delay(attempt))
        attempt += 1
