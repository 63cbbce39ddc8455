"""The store's failures in Murmur's terms: the engine's errors are translated here, once.

Application code catches these, never the engine's classes or messages. DuckDB (the lake's
engine) reports the same failure under different classes and texts depending on where it
happens (in a statement, at ``COMMIT``, or in DuckLake's catalog as a message);
:func:`translate` is the one place that knows them, and the cursors
(:class:`warehouse.cursor.StoreCursor`, :class:`warehouse.cursor.PubCursor`) apply it to
every statement.
SQLite and PostgreSQL (the publishing database, warehouse/pubdb) name their failures by
result code and SQLSTATE, which :class:`warehouse.pubdb.engine.PubDB` hands here through
SQLAlchemy.
"""

from __future__ import annotations

import re
import sqlite3
import sys

from sqlalchemy.exc import DBAPIError

from core.errors import MurmurError

_CONFLICT = re.compile(r"\bconflict\b", re.IGNORECASE)


class StoreError(MurmurError):
    """A failure of the store; the engine's own error is its ``__cause__``."""

    #: Whether running the same unit of work again may succeed.
    retryable = False


class ConflictError(StoreError):
    """A concurrent transaction changed the same rows first: the unit of work may run again."""

    retryable = True


class DuplicateKeyError(StoreError):
    """A primary or unique key refused a row that another write already holds."""


class CopyMismatchError(StoreError):
    """A table copied into the new store (ADR 0002 step 4) reads back unlike its source."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached: a file cannot be opened, or a database server answers not."""


class LakeDamagedError(StoreUnavailableError):
    """A file the lake's catalog names is missing or does not read (``murmur doctor``)."""


class DiskFullError(StoreUnavailableError):
    """The disk under the store has no space left: writes fail until space is freed."""


# The engines' words for a full disk: SQLite's SQLITE_FULL, the OS's ENOSPC (DuckDB's,
# Polars' "os error 28"). A write that meets it may name the file it was writing, and is
# then no damaged file: this is checked first.
_NO_SPACE = re.compile(r"no space left on device|database or disk is full|os error 28", re.I)


def says_disk_full(text: str) -> bool:
    """Whether an error's text says the disk is full."""
    return _NO_SPACE.search(text) is not None


# DuckDB reading a lake file that is cut short ("No magic bytes found at end of file
# '….parquet'", 'Could not read enough bytes from file "….parquet"'), gone ('Cannot open file
# "….parquet": No such file or directory') or otherwise not Parquet.
_DAMAGED_FILE = re.compile(
    r"(no magic bytes|could not read enough bytes|cannot open file|no such file|corrupt"
    r"|invalid parquet)[^\n]*\.parquet|\.parquet[^\n]*(no magic bytes|no such file|corrupt)",
    re.IGNORECASE,
)

# SQLite's extended result codes (Python's ``sqlite_errorname``) for the failures above.
_SQLITE_DUPLICATE = {"SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"}
_SQLITE_BUSY = {"SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_LOCKED"}
_SQLITE_UNAVAILABLE = {"SQLITE_CANTOPEN", "SQLITE_READONLY"}


def _translate_sqlite(exc: sqlite3.Error) -> StoreError:
    name = getattr(exc, "sqlite_errorname", "")
    if name in _SQLITE_DUPLICATE:
        return DuplicateKeyError(str(exc))
    if name in _SQLITE_BUSY:
        # The write lock stayed with another writer past busy_timeout, or a reader's
        # snapshot went stale under a writer: the unit of work may run again.
        return ConflictError(str(exc))
    if name == "SQLITE_FULL":
        return DiskFullError(str(exc))
    if name.startswith("SQLITE_IOERR") or name in _SQLITE_UNAVAILABLE:
        return StoreUnavailableError(str(exc))
    return StoreError(str(exc))


def _translate_sqlstate(exc: BaseException) -> StoreError:
    # PostgreSQL's SQLSTATE codes (psycopg's ``sqlstate``); None: no server answered.
    state: str | None = getattr(exc, "sqlstate", None)
    text = str(exc)
    if state == "23505":  # unique_violation
        return DuplicateKeyError(text)
    if state in ("40001", "40P01", "55P03"):  # serialization, deadlock, lock not available
        return ConflictError(text)
    if state == "53100":  # disk_full
        return DiskFullError(text)
    if state is None or state.startswith("08") or state.startswith("57P"):
        return StoreUnavailableError(text)  # no connection, or the server shutting down
    return StoreError(text)


def _psycopg(exc: BaseException) -> bool:
    """Whether ``exc`` is psycopg's; not imported here, as only PostgreSQL's users load it."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.Error)


def translate(exc: BaseException) -> BaseException:
    """Murmur's error for an engine error; anything else is returned as it is."""
    # Through SQLAlchemy (``PubDB``) or straight from the driver (``PubCursor``).
    driver: BaseException = exc
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        driver = exc.orig
    if isinstance(exc, DBAPIError) or isinstance(driver, sqlite3.Error) or _psycopg(driver):
        translated_error = (
            _translate_sqlite(driver)
            if isinstance(driver, sqlite3.Error)
            else _translate_sqlstate(driver)
        )
        translated_error.__cause__ = exc
        return translated_error
    # Looked up, not imported: a process that never loaded DuckDB has none of its errors
    # (`murmur keys` opens the publishing half alone, and starts faster without DuckDB).
    duckdb = sys.modules.get("duckdb")
    if duckdb is None or isinstance(exc, StoreError) or not isinstance(exc, duckdb.Error):
        return exc
    text = str(exc)
    lowered = text.lower()
    translated: StoreError
    if isinstance(exc, duckdb.IOException) and "lock" in lowered:
        # "Could not set lock on file …: Conflicting lock is held in …" (another process).
        translated = StoreUnavailableError(text)
    elif _CONFLICT.search(text) or "database is locked" in lowered:
        # DuckDB's own ("Conflict on update!", "Conflict on tuple deletion!"), a catalog's
        # "write-write conflict", a DuckLake commit whose SQLite catalog another commit
        # holds ("Failed to flush changes into DuckLake: database is locked"): all a
        # concurrent writer winning.
        translated = ConflictError(text)
    elif (
        isinstance(exc, duckdb.ConstraintException | duckdb.TransactionException)
        and ("duplicate key" in lowered or "primary key" in lowered or "unique" in lowered)
    ) or ("duplicate key" in lowered and "constraint" in lowered):
        # In a statement (ConstraintException), at COMMIT (TransactionException), or under
        # another class whose text still names the key's constraint.
        translated = DuplicateKeyError(text)
    elif says_disk_full(text):
        translated = DiskFullError(text)
    elif _DAMAGED_FILE.search(text):
        translated = LakeDamagedError(text)
    else:
        translated = StoreError(text)
    translated.__cause__ = exc
    return translated
