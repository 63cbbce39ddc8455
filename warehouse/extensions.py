"""DuckDB extensions, loaded from the wheels the project installs, and frames handed to DuckDB."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from warehouse.sql import literal

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# DuckDB's Python client tries ``import pandas`` three times per statement; without pandas
# installed each try is a failed import that walks sys.path under the interpreter's import
# lock, which request threads then queue on (py-spy: 12% of a request under load; ~80 us per
# statement with 8 threads). A None entry makes the failure immediate; it is set only when
# pandas is absent, so nothing that could import it loses it.
if importlib.util.find_spec("pandas") is None:
    sys.modules.setdefault("pandas", None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Checked:
    """An extension's file as DuckDB found its signature good: its path, inode, size and mtime."""

    path: str
    identity: tuple[int, int, int]

    def unchanged(self) -> bool:
        try:
            return _identity(self.path) == self.identity
        except OSError:
            return False


def _identity(path: str) -> tuple[int, int, int]:
    found = os.stat(path)
    return (found.st_ino, found.st_size, found.st_mtime_ns)


# DuckDB checks an extension's signature at every LOAD, in every connection: a SHA-256 of
# the whole file (20-40 MB), 120 ms of CPU for each of the two or three extensions a lake
# session loads (measured: LOAD sqlite 62 ms wall, 119 ms CPU; 0.4 ms unchecked). A process
# has DuckDB check each file once, then loads that same file (same inode, size and mtime) on
# connections made by ``connect``, which skip the check. A file changed since is checked again.
_CHECKED: dict[str, _Checked] = {}
_CHECKING = threading.Lock()


def connect(config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection whose extensions (``load_extension``) are checked once a process.

    Nothing but ``load_extension`` loads an extension on Murmur's connections, and it loads
    only files whose signature DuckDB has checked in this process.
    """
    import duckdb

    return duckdb.connect(config={**(config or {}), "allow_unsigned_extensions": True})


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load a DuckDB extension from its installed wheel, or from DuckDB's repository when online."""
    import duckdb

    with _CHECKING:
        checked = _CHECKED.get(name)
        if checked is None or not checked.unchanged():
            # A connection that checks signatures checks this one as it loads it.
            checker = duckdb.connect() if _skips_checks(con) else con
            try:
                checked = _check(checker, name)
            finally:
                if checker is not con:
                    checker.close()
            _CHECKED[name] = checked
            if checker is con:
                return
    con.execute(f"LOAD {literal(checked.path)}")


def _skips_checks(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` loads extensions without checking their signature (``connect``'s)."""
    row = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()
    return bool(row and row[0])


def _check(con: duckdb.DuckDBPyConnection, name: str) -> _Checked:
    """Install ``name`` if need be and load it on ``con``, which checks its signature."""
    import duckdb

    try:
        from duckdb_extensions import import_extension

        import_extension(name, con=con)
    except (ImportError, duckdb.Error, OSError):
        con.execute(f"INSTALL {name}")  # name is one of our own constants
    con.execute(f"LOAD {name}")
    row = con.execute(
        "SELECT install_path FROM duckdb_extensions()"
        " WHERE loaded AND (extension_name = ? OR list_contains(aliases, ?))",
        [name, name],
    ).fetchone()
    if row is None:
        raise duckdb.IOException(f"the extension {name} was loaded but DuckDB lists no file of it")
    path = str(row[0])
    return _Checked(path, _identity(path))


class ArrowStream:
    """A polars frame seen by DuckDB through the Arrow C stream interface (no pyarrow needed)."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self._frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._frame.__arrow_c_stream__(requested_schema)
