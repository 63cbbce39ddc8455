"""The analytics lake (ADR 0002): DuckLake, its catalog a SQLite file in WAL mode, Parquet on disk.

Every process attaches it to a DuckDB session of its own (no owner); so does an analyst,
beside the publishing database, read-only: one catalog with ``pub.*`` and ``lake.*``.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.engine import make_url

from warehouse.errors import ConflictError, translate
from warehouse.extensions import connect, load_extension
from warehouse.files import sync_new_files
from warehouse.lake.migrations import migrate
from warehouse.retry import retrying
from warehouse.sql import literal

if TYPE_CHECKING:
    import duckdb

#: A lake commit holds the catalog while it writes its files' entries: a day of 25,000 rows
#: was refused up to 6 times beside two other runs (ADR 0002): 14 attempts wait 8-25 s in all.
COMMIT_ATTEMPTS = 14
#: PostgreSQL advisory lock key held by a process creating or migrating a lake ("lake").
CREATION_LOCK = 0x6C616B65
#: The lock upserts of the lake's dimensions take turns on ("dims"): see Lakehouse.
DIMENSIONS_LOCK = 0x64696D73
T = TypeVar("T")

# The lakes this process has migrated or found migrated. A lake's schema only moves forward,
# and only by newer code than this process's: checking again on every session's open cost
# ~0.4 s, and a separate connection in ``prepare`` ~0.9 s, of a pipeline step's ~2 s.
_MIGRATED: set[tuple[object, ...]] = set()


@dataclass(frozen=True)
class S3:
    """An S3-compatible endpoint holding a lake's Parquet files, and the key to it."""

    endpoint: str  # host:port
    key_id: str
    secret: str
    region: str = "us-east-1"
    use_ssl: bool = True


@dataclass(frozen=True)
class Lake:
    """Where a lake lives: its catalog (``sqlite:PATH`` or ``postgres:DSN``) and its files.

    ``data`` is DuckLake's DATA_PATH: an absolute folder ending in ``/``, or
    ``s3://bucket/prefix/`` with :attr:`s3` saying where and with which key.
    """

    catalog: str
    data: str
    s3: S3 | None = None
    # The data directory's own lake: its files are wherever the directory is now.
    relocatable: bool = False

    @classmethod
    def under(cls, data_dir: Path) -> Lake:
        """The embedded lake of a data directory: ``lake.sqlite`` and ``lake/``, absolute."""
        root = data_dir.resolve()
        return cls(
            catalog=f"sqlite:{root / 'lake.sqlite'}", data=f"{root / 'lake'}/", relocatable=True
        )

    @property
    def local_data(self) -> Path | None:
        """The folder of the lake's files when it is on this machine (None: on S3)."""
        return None if "://" in self.data else Path(self.data)

    @property
    def kind(self) -> str:
        """The catalog's engine: ``sqlite`` or ``postgres``."""
        return self.catalog.split(":", 1)[0]

    def attach_sql(
        self, alias: str = "lake", *, read_only: bool = False, snapshot: int | None = None
    ) -> str:
        """The ATTACH statement of this lake (DuckLake keeps a relative DATA_PATH as given).

        ``snapshot``: the lake as of that snapshot id (DuckLake's time travel), read-only.
        """
        options = f"DATA_PATH {literal(self.data)}"
        if self.relocatable:
            # The catalog keeps the folder it was created in, absolute; a data directory
            # moved or copied elsewhere (a backup restored, a benchmark's copy) still opens.
            options += ", OVERRIDE_DATA_PATH true"
        if read_only or snapshot is not None:
            options += ", READ_ONLY"
        if snapshot is not None:
            if isinstance(snapshot, bool) or not isinstance(snapshot, int) or snapshot < 0:
                raise ValueError(f"a snapshot id is a non-negative integer, not {snapshot!r}")
            options += f", SNAPSHOT_VERSION {snapshot}"
        return f"ATTACH {literal('ducklake:' + self.catalog)} AS {alias} ({options})"

    def secret_sql(self) -> str | None:
        """The session's S3 secret for the data path, when the files are on S3."""
        if self.s3 is None:
            return None
        return (
            "CREATE OR REPLACE SECRET lake_s3 (TYPE s3, URL_STYLE 'path',"
            f" ENDPOINT {literal(self.s3.endpoint)}, KEY_ID {literal(self.s3.key_id)},"
            f" SECRET {literal(self.s3.secret)}, REGION {literal(self.s3.region)},"
            f" USE_SSL {'true' if self.s3.use_ssl else 'false'})"
        )

    def prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        """Load what ``con`` needs to attach the lake: its catalog's and DuckLake's extensions,
        and the S3 secret when the files are on S3."""
        load_extension(con, self.kind)
        load_extension(con, "ducklake")
        secret = self.secret_sql()
        if secret is not None:
            load_extension(con, "httpfs")
            con.execute(secret)

    def attach(
        self,
        con: duckdb.DuckDBPyConnection,
        alias: str = "lake",
        *,
        read_only: bool = False,
        snapshot: int | None = None,
    ) -> None:
        """Attach the lake to ``con`` as ``alias``; a writer's attach creates and migrates it.

        ``snapshot``: read-only, as of that snapshot id (:meth:`attach_sql`).
        """
        self.prepare(con)
        if read_only or snapshot is not None:
            _attach(con, self.attach_sql(alias, read_only=True, snapshot=snapshot))
            return
        # Writers attach one at a time: DuckLake creating a new catalog is not safe against
        # a second creator (measured: "Failed to initialize DuckLake: … database is locked").
        with self._one_writer_at_a_time():
            _attach(con, self.attach_sql(alias))
            identity = self.migrated_as()
            if identity is None or identity not in _MIGRATED:
                _migrate(con, alias)
                # Imported here: the module commits through this one's run().
                from warehouse.lake.statistics import give_statistics

                give_statistics(con, alias)
                if identity is not None:
                    _MIGRATED.add(identity)

    def migrated_as(self) -> tuple[object, ...] | None:
        """The key this process remembers the lake's migration by (None: no catalog yet); a
        SQLite catalog is known by its file, so one deleted and made again is another lake."""
        if self.kind != "sqlite":
            return (self.catalog, self.data)
        try:
            stat = Path(self.catalog.split(":", 1)[1]).stat()
        except OSError:
            return None
        return (self.catalog, self.data, stat.st_dev, stat.st_ino)

    @contextlib.contextmanager
    def locked(self, name: str, key: int) -> Iterator[None]:
        """Hold this lake's lock ``name`` (``key`` at scale) against every other process.

        A flock beside a SQLite catalog; a PostgreSQL advisory lock beside a PostgreSQL one,
        which holds across machines. Both are dropped when their holder dies.
        """
        location = self.catalog.split(":", 1)[1]
        if self.kind == "postgres":
            import psycopg  # PostgreSQL's driver: loaded only where PostgreSQL is used

            with psycopg.connect(location, autocommit=True) as lock:
                # A session lock: released when this connection closes, or its process dies.
                lock.execute("SELECT pg_advisory_lock(%s)", [key])
                yield
            return
        catalog = Path(location)
        with _exclusive(catalog.with_name(f"{catalog.name}.{name}")):
            yield

    @contextlib.contextmanager
    def _one_writer_at_a_time(self) -> Iterator[None]:
        if self.kind == "sqlite" and not self.data.startswith("s3://"):
            Path(self.data).mkdir(parents=True, exist_ok=True)
        with self.locked("lock", CREATION_LOCK):
            if self.kind == "sqlite":
                catalog = Path(self.catalog.split(":", 1)[1])
                if not catalog.exists():
                    _new_wal_catalog(catalog)
            yield


def prepare(lake: Lake) -> None:
    """Create and migrate ``lake`` if need be, so that read-only sessions find its tables."""
    identity = lake.migrated_as()
    if identity is not None and identity in _MIGRATED:
        return
    con = connect()
    try:
        lake.attach(con)
    finally:
        con.close()


def publishing_target(url: str) -> tuple[str, str]:
    """The DuckDB extension and ATTACH target of the publishing database's SQLAlchemy URL."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return "sqlite", str(Path(parsed.database or "").resolve())
    # libpq's key=value string, each value quoted as libpq reads it (a password with a
    # space, a quote or a backslash would otherwise end its value early or break the string).
    from psycopg.conninfo import make_conninfo  # only PostgreSQL's users load psycopg

    parts = {
        "host": parsed.host,
        "port": parsed.port,
        "user": parsed.username,
        "password": parsed.password,
        "dbname": parsed.database,
    }
    return "postgres", make_conninfo("", **{key: value for key, value in parts.items() if value})


def attach_publishing_sql(url: str, alias: str = "pub", *, read_only: bool = True) -> str:
    """The ATTACH statement of the publishing database (its SQLAlchemy URL)."""
    kind, target = publishing_target(url)
    options = f"TYPE {kind}, READ_ONLY" if read_only else f"TYPE {kind}"
    return f"ATTACH {literal(target)} AS {alias} ({options})"


def attach_publishing(
    con: duckdb.DuckDBPyConnection, url: str, alias: str = "pub", *, read_only: bool = True
) -> None:
    """Attach the publishing database (its SQLAlchemy URL) to ``con``, read-only by default.

    For a process that does not also reach that database through PubDB (ADR 0002: one copy
    of SQLite per file in a process): an analyst's session, a test's.
    """
    load_extension(con, publishing_target(url)[0])
    _attach(con, attach_publishing_sql(url, alias, read_only=read_only))


# A libpq ``password=`` value, bare or quoted, as an engine's error may echo it.
_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)", re.IGNORECASE)


def _attach(con: duckdb.DuckDBPyConnection, statement: str) -> None:
    import duckdb

    try:
        con.execute(statement)
    except duckdb.Error as exc:
        # DuckDB's postgres extension quotes the whole connection string in a failed
        # attach's error: neither the error nor its log may carry the password.
        text = str(exc)
        hidden = _PASSWORD.sub(r"\1***", text)
        if hidden != text:
            raise translate(type(exc)(hidden)) from None
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


def _new_wal_catalog(catalog: Path) -> None:
    # Measured in ADR 0002: with the catalog in SQLite's default journal mode, readers
    # stalled to 4-5 s behind a writer's commit; WAL persists in the file once set. Only
    # for a new file: Python's sqlite3 and DuckDB's sqlite extension are two copies of
    # SQLite whose POSIX locks do not see each other in one process, and closing this
    # connection would drop the locks a DuckDB session here holds on an existing catalog.
    con = sqlite3.connect(catalog)
    try:
        con.execute("PRAGMA journal_mode=WAL")
    finally:
        con.close()


def _migrate(con: duckdb.DuckDBPyConnection, alias: str) -> list[int]:
    import duckdb

    # Unqualified names in the migrations are the lake's while they run.
    previous = con.execute("SELECT current_database()").fetchone()
    con.execute(f"USE {alias}")
    try:
        return migrate(con)
    except duckdb.Error as exc:
        raise translate(exc) from exc
    finally:
        if previous:
            con.execute(f"USE {previous[0]}")


def run(
    con: duckdb.DuckDBPyConnection,
    work: Callable[[duckdb.DuckDBPyConnection], T],
    *,
    files: Path | None = None,
) -> T:
    """``work`` as one lake transaction, run again whole when a concurrent commit refused it.

    ``files``: the lake's local folder, whose files the transaction wrote are flushed to disk
    before the commit names them (DuckLake flushes only its catalog).
    """

    def once() -> T:
        import duckdb

        # The kernel stamps files with a coarser clock than time.time(): a second's margin.
        began = time.time() - 1.0
        con.execute("BEGIN TRANSACTION")
        try:
            result = work(con)
            if files is not None:
                sync_new_files(files, began)
            con.execute("COMMIT")
        except duckdb.Error as exc:
            _rollback(con)
            raise translate(exc) from exc
        except BaseException:
            _rollback(con)
            raise
        return result

    return retrying(once, retry_on=(ConflictError,), attempts=COMMIT_ATTEMPTS)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    import duckdb

    # A refused COMMIT has already ended the transaction; anything else left it open.
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("ROLLBACK")
