"""The analytics lake (ADR 0002): DuckLake, its catalog a SQLite file in WAL mode, Parquet on disk.

Every process attaches it to a DuckDB session of its own (no owner); so does an analyst,
beside the publishing database, read-only: one catalog with ``pub.*`` and ``lake.*``.
"""

from __future__ import annotations

import contextlib
import fcntl
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb

from warehouse.errors import ConflictError, translate
from warehouse.migrations import migrate
from warehouse.retry import retrying
from warehouse.sql import literal
from warehouse.store import load_extension

MIGRATIONS = "warehouse.lake.migrations"
#: A lake commit holds the catalog while it writes its files' entries: a day of 25,000 rows
#: was refused up to 6 times beside two other runs (ADR 0002): 14 attempts wait 8-25 s in all.
COMMIT_ATTEMPTS = 14
T = TypeVar("T")


@dataclass(frozen=True)
class Lake:
    """Where a lake lives: its catalog database and the folder of its Parquet files."""

    catalog: Path
    data: Path

    @classmethod
    def under(cls, data_dir: Path) -> Lake:
        """The embedded lake of a data directory: ``lake.sqlite`` and ``lake/``, absolute."""
        root = data_dir.resolve()
        return cls(catalog=root / "lake.sqlite", data=root / "lake")

    def attach_sql(self, alias: str = "lake", *, read_only: bool = False) -> str:
        """The ATTACH statement of this lake (DuckLake keeps a relative DATA_PATH as given)."""
        options = f"DATA_PATH {literal(str(self.data) + '/')}"
        if read_only:
            options += ", READ_ONLY"
        return f"ATTACH {literal('ducklake:sqlite:' + str(self.catalog))} AS {alias} ({options})"

    def attach(
        self, con: duckdb.DuckDBPyConnection, alias: str = "lake", *, read_only: bool = False
    ) -> None:
        """Attach the lake to ``con`` as ``alias``; a writer's attach creates and migrates it."""
        load_extension(con, "sqlite")
        load_extension(con, "ducklake")
        if read_only:
            _attach(con, self.attach_sql(alias, read_only=True))
            return
        self.data.mkdir(parents=True, exist_ok=True)
        # Writers attach one at a time: DuckLake creating a new catalog is not safe against
        # a second creator (measured: "Failed to initialize DuckLake: … database is locked").
        with _exclusive(self.catalog.with_name(self.catalog.name + ".lock")):
            _wal(self.catalog)
            _attach(con, self.attach_sql(alias))
            _migrate(con, alias)


def attach_publishing(
    con: duckdb.DuckDBPyConnection, path: Path, alias: str = "pub", *, read_only: bool = True
) -> None:
    """Attach the publishing database (SQLite) to ``con``: read-only unless asked otherwise."""
    load_extension(con, "sqlite")
    options = "TYPE sqlite, READ_ONLY" if read_only else "TYPE sqlite"
    _attach(con, f"ATTACH {literal(str(path.resolve()))} AS {alias} ({options})")


def _attach(con: duckdb.DuckDBPyConnection, statement: str) -> None:
    try:
        con.execute(statement)
    except duckdb.Error as exc:
        raise translate(exc) from exc


@contextlib.contextmanager
def _exclusive(lock_file: Path) -> Iterator[None]:
    with lock_file.open("a") as handle:
        # Released by the kernel when the process dies, so a killed attach blocks nobody.
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _wal(catalog: Path) -> None:
    # Measured in ADR 0002: with the catalog in SQLite's default journal mode, readers
    # stalled to 4-5 s behind a writer's commit; WAL persists in the file once set.
    con = sqlite3.connect(catalog)
    try:
        con.execute("PRAGMA journal_mode=WAL")
    finally:
        con.close()


def _migrate(con: duckdb.DuckDBPyConnection, alias: str) -> list[int]:
    # Unqualified names in the migrations are the lake's while they run.
    previous = con.execute("SELECT current_database()").fetchone()
    con.execute(f"USE {alias}")
    try:
        return migrate(con, MIGRATIONS, keyed=False)
    except duckdb.Error as exc:
        raise translate(exc) from exc
    finally:
        if previous:
            con.execute(f"USE {previous[0]}")


def run(con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """``work`` as one lake transaction, run again whole when a concurrent commit refused it."""

    def once() -> T:
        con.execute("BEGIN TRANSACTION")
        try:
            result = work(con)
            con.execute("COMMIT")
        except BaseException as exc:
            _rollback(con)
            raise translate(exc) from exc
        return result

    return retrying(once, retry_on=(ConflictError,), attempts=COMMIT_ATTEMPTS)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    # A refused COMMIT has already ended the transaction; anything else left it open.
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("ROLLBACK")
