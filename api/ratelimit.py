"""Per-key request budgets over a rolling minute (sliding-window counter)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class Budget:
    """What is left of a budget, as the X-RateLimit-* headers report it."""

    limit: int
    remaining: int
    reset_at: float  # epoch seconds when the current window ends
    allowed: bool

    @property
    def retry_after(self) -> int:
        return max(1, math.ceil(self.reset_at - time.time()))


class RateLimiter:
    """Counts hits per bucket in fixed minutes and weighs the previous minute by its overlap.

    The weighted count approximates a true rolling window within a few percent, in O(1)
    memory per bucket (the approach of Cloudflare's and Redis' sliding-window limiters).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[int, int, int]] = {}  # bucket -> (window, current, previous)

    def hit(self, bucket: str, limit: int, now: float | None = None) -> Budget:
        now = time.time() if now is None else now
        window = int(now // WINDOW_SECONDS)
        with self._lock:
            start, current, previous = self._buckets.get(bucket, (window, 0, 0))
            if start != window:
                previous = current if start == window - 1 else 0
                current = 0
            elapsed = (now % WINDOW_SECONDS) / WINDOW_SECONDS
            used = previous * (1.0 - elapsed) + current
            allowed = used + 1 <= limit
            if allowed:
                current += 1
                used += 1
            self._buckets[bucket] = (window, current, previous)
        reset_at = (window + 1) * WINDOW_SECONDS
        return Budget(limit, max(0, int(limit - used)), reset_at, allowed)
