"""The cursor application code is given: the engine's cursor, with Murmur's errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import duckdb

from warehouse.errors import translate


class RawCursor(Protocol):
    """What the store's cursors have in common: a DuckDB connection, or the host's."""

    @property
    def description(self) -> Any: ...

    def execute(self, query: str, parameters: Any = ..., /) -> Any: ...

    def fetchone(self) -> tuple[Any, ...] | None: ...

    def fetchall(self) -> list[tuple[Any, ...]]: ...

    def close(self) -> None: ...


class StoreCursor:
    """Runs statements on the engine's cursor; a failure is raised as a ``StoreError``.

    Every statement of the application goes through :meth:`execute`, so the engine's
    errors are translated here once (warehouse/errors.py) and callers catch
    ``ConflictError`` or ``DuplicateKeyError`` instead of matching the engine's messages.
    What else a DuckDB cursor offers (``pl()``, ``arrow()``, …) is reached through it.
    """

    __slots__ = ("raw",)

    def __init__(self, raw: RawCursor) -> None:
        self.raw = raw

    def execute(
        self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
    ) -> StoreCursor:
        try:
            if params is None:
                self.raw.execute(sql)
            else:
                self.raw.execute(sql, params)
        except duckdb.Error as exc:
            raise translate(exc) from exc
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        try:
            return self.raw.fetchone()
        except duckdb.Error as exc:
            raise translate(exc) from exc

    def fetchall(self) -> list[tuple[Any, ...]]:
        try:
            return self.raw.fetchall()
        except duckdb.Error as exc:
            raise translate(exc) from exc

    @property
    def description(self) -> Any:
        return self.raw.description

    def register(self, name: str, data: object) -> None:
        """Expose ``data`` (an Arrow stream, a frame) as a view of this cursor's session."""
        try:
            self.raw.register(name, data)  # type: ignore[attr-defined]
        except duckdb.Error as exc:
            raise translate(exc) from exc

    def unregister(self, name: str) -> None:
        try:
            self.raw.unregister(name)  # type: ignore[attr-defined]
        except duckdb.Error as exc:
            raise translate(exc) from exc

    def close(self) -> None:
        self.raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)
