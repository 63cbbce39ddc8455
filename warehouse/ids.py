"""Opaque, prefixed, time-sortable identifiers and UTC time helpers."""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC, datetime

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def new_id(prefix: str) -> str:
    """``prefix_`` + 26 chars: 48 bits of milliseconds then 80 bits that only grow within one ms.

    Lexicographic order is creation order within this process, so ``ORDER BY id`` pages
    stably without a second sort column.
    """
    global _last_ms, _last_rand
    # The random bits make ids unique across processes, not secret (every read is checked
    # against the key's workspace); Mersenne Twister bits, unlike os.urandom, keep the GIL,
    # so a thread holding _lock is never parked behind others (10% of POST /posts samples).
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms
            rand = _last_rand + 1 + random.getrandbits(16)
        else:
            rand = random.getrandbits(79)  # head-room to increment
        _last_ms, _last_rand = ms, rand
    value = (ms << 80) | (rand & ((1 << 80) - 1))
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


def id_floor(prefix: str, at: datetime) -> str:
    """The smallest id :func:`new_id` can make at or after ``at`` (naive UTC): a keyset bound."""
    value = int(at.replace(tzinfo=UTC).timestamp() * 1000) << 80
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


def utcnow() -> datetime:
    """Now, as the naive UTC timestamp every TIMESTAMP column holds."""
    return datetime.now(UTC).replace(tzinfo=None)


def to_db(value: datetime | None) -> datetime | None:
    """An aware datetime as naive UTC for storage."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("timestamps must carry an offset")
    return value.astimezone(UTC).replace(tzinfo=None)


def naive_utc(moment: datetime) -> datetime:
    """A connector's timestamp as the store keeps it: naive UTC (a naive one is taken as UTC)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def from_db(value: datetime | None) -> datetime | None:
    """A stored naive-UTC timestamp as an aware UTC datetime."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC)
