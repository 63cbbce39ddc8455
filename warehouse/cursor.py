"""The cursor application code is given: the engine's cursor, with Murmur's errors.

Repositories write one SQL text with ``?`` placeholders and run it on either cursor:
:class:`StoreCursor` over DuckDB (the lake's sessions) or :class:`PubCursor` over the
publishing database (SQLite or PostgreSQL, ADR 0002). Where the engines' SQL differs
(lists, casts, JSON), the repositories ask ``warehouse.sql`` for the fragment of the
cursor's :attr:`dialect`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from enum import Enum
from typing import Any, Protocol

from sqlalchemy import Connection

from warehouse.errors import DuplicateKeyError, translate
from warehouse.sql import Dialect, placeholders

#: How the publishing database stores a timestamp on SQLite: SQLAlchemy's own text form
#: (microseconds always written), so that text comparisons order and match as times do.
SQLITE_TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"


def _duckdb() -> Any:
    """DuckDB's module, already loaded by whoever opened the connection a cursor wraps."""
    # Imported here, not at the top: the publishing half's commands never load DuckDB.
    import duckdb

    return duckdb


class RawCursor(Protocol):
    """What a DuckDB connection offers the store's cursor."""

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

    dialect: Dialect = "duckdb"

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
        except _duckdb().Error as exc:
            raise translate(exc) from exc
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        try:
            return self.raw.fetchone()
        except _duckdb().Error as exc:
            raise translate(exc) from exc

    def fetchall(self) -> list[tuple[Any, ...]]:
        try:
            return self.raw.fetchall()
        except _duckdb().Error as exc:
            raise translate(exc) from exc

    @property
    def description(self) -> Any:
        return self.raw.description

    def register(self, name: str, data: object) -> None:
        """Expose ``data`` (an Arrow stream, a frame) as a view of this cursor's session."""
        try:
            self.raw.register(name, data)  # type: ignore[attr-defined]
        except _duckdb().Error as exc:
            raise translate(exc) from exc

    def unregister(self, name: str) -> None:
        try:
            self.raw.unregister(name)  # type: ignore[attr-defined]
        except _duckdb().Error as exc:
            raise translate(exc) from exc

    def close(self) -> None:
        self.raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _bound(value: Any, dialect: Dialect) -> Any:
    """A parameter as the publishing database's driver takes it (lists and dicts as JSON)."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime(SQLITE_TIMESTAMP) if dialect == "sqlite" else value
    if isinstance(value, date) and dialect == "sqlite":
        return value.isoformat()
    return value


def _pyformat(sql: str) -> str:
    """``sql`` with each ``?`` outside quotes as ``%s`` and every ``%`` doubled (psycopg's)."""
    return placeholders(sql.replace("%", "%%"), lambda: "%s")


class PubCursor:
    """Runs the repositories' statements on the publishing database, in its transaction.

    Takes the same ``?`` SQL and parameter lists as :class:`StoreCursor`: lists and dicts
    are bound as JSON text (the tables keep lists as JSON), timestamps as SQLite's text form
    there, and ``?`` becomes psycopg's ``%s`` on PostgreSQL. The connection's transaction is
    its owner's (``PubDB.transaction`` or ``PubDB.snapshot``); failures arrive translated.
    """

    __slots__ = ("_raw", "dialect")

    def __init__(self, conn: Connection) -> None:
        name = conn.dialect.name
        if name not in ("sqlite", "postgresql"):
            raise ValueError(f"no publishing database on {name}")
        self.dialect: Dialect = "sqlite" if name == "sqlite" else "postgresql"
        driver: Any = conn.connection.dbapi_connection
        # Client-side binding, as SQLite's and DuckDB's drivers bind: PostgreSQL then infers
        # a type for "? IS NULL OR …" from the literal instead of refusing an untyped $1.
        if self.dialect == "sqlite":
            self._raw: Any = driver.cursor()
        else:
            import psycopg  # PostgreSQL's driver: loaded only where PostgreSQL is used

            self._raw = psycopg.ClientCursor(driver)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> PubCursor:
        if isinstance(params, dict):
            raise TypeError("the publishing database takes positional parameters only")
        values = [_bound(value, self.dialect) for value in params or []]
        if self.dialect == "postgresql":
            sql = _pyformat(sql)
        try:
            self._raw.execute(sql, values)
        except Exception as exc:
            translated = translate(exc)
            if translated is exc:
                raise
            raise translated from exc
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        row = self._raw.fetchone()
        return None if row is None else tuple(row)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._raw.fetchall()]

    @property
    def description(self) -> Any:
        return self._raw.description

    def close(self) -> None:
        self._raw.close()


class Cursor(Protocol):
    """What a repository is handed: either engine's cursor (DuckDB-only code takes StoreCursor)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def description(self) -> Any: ...

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None, /) -> Any: ...

    def fetchone(self) -> tuple[Any, ...] | None: ...

    def fetchall(self) -> list[tuple[Any, ...]]: ...


def insert_once(cur: Cursor, sql: str, params: Sequence[Any]) -> bool:
    """Run an INSERT whose key makes it a claim; False when that key was taken already.

    Inside a transaction, a caller given False must roll it back (PostgreSQL aborts it).
    """
    try:
        cur.execute(sql, params)
    except DuplicateKeyError:
        return False
    return True
