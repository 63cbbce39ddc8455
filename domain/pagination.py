"""Cursor pagination: opaque, signed keyset cursors bound to the endpoint that issued them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from domain.errors import ValidationFailed
from domain.schemas import Page, Pagination

T = TypeVar("T")
R = TypeVar("R")


class CursorCodec:
    """Signs cursors so that a tampered one, or another endpoint's, is refused."""

    def __init__(self, key: str) -> None:
        self._key = key.encode()

    def _mac(self, endpoint: str, payload: bytes) -> bytes:
        return hmac.new(self._key, endpoint.encode() + b"\0" + payload, hashlib.sha256).digest()[
            :12
        ]

    def encode(self, endpoint: str, position: list[Any]) -> str:
        payload = json.dumps(position, separators=(",", ":"), default=str).encode()
        token = self._mac(endpoint, payload) + payload
        return base64.urlsafe_b64encode(token).decode().rstrip("=")

    def decode(self, endpoint: str, cursor: str) -> list[Any]:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            mac, payload = raw[:12], raw[12:]
            if not hmac.compare_digest(mac, self._mac(endpoint, payload)):
                raise ValueError("signature")
            position = json.loads(payload)
            if not isinstance(position, list):
                raise ValueError("shape")
            return position
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValidationFailed.on(
                "cursor", "invalid", "The cursor is not one this endpoint issued."
            ) from exc


@dataclass(frozen=True)
class PageRequest:
    """The page a list call asks for: its size and where the previous page ended."""

    limit: int
    after: list[Any] | None
    endpoint: str
    codec: CursorCodec

    @property
    def fetch(self) -> int:
        """Rows to read: one more than the page, to learn whether another page follows."""
        return self.limit + 1

    def key(self) -> tuple[Any, ...] | None:
        """Where the page starts, hashable (for caches keyed by the request)."""
        return None if self.after is None else tuple(self.after)

    def after_value(self, index: int = 0) -> Any:
        return None if self.after is None else self.after[index]

    def page(
        self,
        rows: Sequence[R],
        convert: Callable[[R], T],
        position: Callable[[R], list[Any]],
    ) -> Page[T]:
        """Cut ``rows`` (read with ``fetch``) into a page and the cursor after its last row."""
        has_more = len(rows) > self.limit
        kept = list(rows[: self.limit])
        next_cursor = (
            self.codec.encode(self.endpoint, position(kept[-1])) if has_more and kept else None
        )
        return Page(
            items=[convert(row) for row in kept],
            pagination=Pagination(limit=self.limit, next_cursor=next_cursor, has_more=has_more),
        )
