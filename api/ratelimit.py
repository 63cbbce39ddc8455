"""Request budgets over a rolling minute (sliding-window counter), and whose budget it is."""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.types import Scope

WINDOW_SECONDS = 60.0
# Buckets whose minutes have both passed are dropped once the table holds this many: the
# addresses of unauthenticated clients are not bounded by anything the server controls.
_PRUNE_AT = 50_000


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
        """Count one request against ``bucket`` if the budget allows it."""
        return self._take(bucket, limit, now, count=True)

    def peek(self, bucket: str, limit: int, now: float | None = None) -> Budget:
        """The budget as it stands, counting nothing."""
        return self._take(bucket, limit, now, count=False)

    def _take(self, bucket: str, limit: int, now: float | None, *, count: bool) -> Budget:
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
            if count:
                if allowed:
                    current += 1
                    used += 1
                if len(self._buckets) >= _PRUNE_AT and bucket not in self._buckets:
                    self._prune(window)
                self._buckets[bucket] = (window, current, previous)
        reset_at = (window + 1) * WINDOW_SECONDS
        return Budget(limit, max(0, int(limit - used)), reset_at, allowed)

    def _prune(self, window: int) -> None:
        stale = [b for b, (start, _, _) in self._buckets.items() if start < window - 1]
        for bucket in stale:
            del self._buckets[bucket]


# -- whose budget: the client's address --------------------------------------------------------

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# uvicorn rewrites the ASGI ``client`` from X-Forwarded-For by default (--proxy-headers),
# trusting these peers unless FORWARDED_ALLOW_IPS says otherwise.
_SERVER_TRUSTED = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("::1/128"))


def parse_networks(entries: Iterable[str | Network]) -> tuple[Network, ...]:
    """Addresses (a host each) or CIDR networks; ValueError on anything else."""
    return tuple(ipaddress.ip_network(str(entry).strip(), strict=False) for entry in entries)


def _host(entry: str) -> str:
    """The host of one X-Forwarded-For entry (``1.2.3.4``, ``1.2.3.4:80``, ``[::1]:80``)."""
    entry = entry.strip()
    if entry.startswith("["):
        return entry[1:].partition("]")[0]
    if entry.count(":") == 1:
        return entry.partition(":")[0]
    return entry


def _within(host: str, networks: tuple[Network, ...]) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in network for network in networks)


def _client_of(hops: list[str], trusted: tuple[Network, ...]) -> str:
    """The nearest hop that is not a trusted proxy (each proxy appends the peer it saw)."""
    for hop in reversed(hops):
        if not _within(hop, trusted):
            return hop
    return hops[0]


def client_address(scope: Scope, trusted: tuple[Network, ...]) -> str:
    """The address a request's anonymous budget is kept under (see docs/security.md)."""
    # The direct peer, unless that peer is one of `trusted` (the trusted_proxies setting):
    # then the nearest X-Forwarded-For entry that is not a trusted proxy. A client cannot
    # choose its own budget by sending the header.
    client = scope.get("client")
    peer = str(client[0]) if client else "unknown"
    hops = [
        _host(entry)
        for name, value in scope.get("headers", ())
        if name == b"x-forwarded-for"
        for entry in value.decode("latin-1").split(",")
        if entry.strip()
    ]
    if not hops:
        return peer
    if peer == _client_of(hops, _SERVER_TRUSTED):
        # The server already put a forwarded entry in place of the peer: it does so only
        # for connections from loopback (uvicorn's default), so that is where this came from.
        peer = "127.0.0.1"
    if not _within(peer, trusted):
        return peer
    return _client_of(hops, trusted)
