"""Opening the publishing database: SQLite in WAL mode embedded, PostgreSQL at scale.

Every process opens it itself (no owner, no host): SQLite in WAL mode lets readers run
beside one writer, and each write transaction takes the write lock when it begins
(``BEGIN IMMEDIATE``), so two writers queue on ``busy_timeout`` instead of one failing
half-way when its read lock cannot be upgraded. Failures arrive as the store's own errors
(warehouse/errors.py), and the schema is brought to Alembic's head on open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError

from warehouse.errors import ConflictError, translate
from warehouse.retry import retrying

T = TypeVar("T")

#: How long a writer waits for another's write lock before its work is refused as a conflict.
BUSY_TIMEOUT_MS = 10_000
#: The Alembic environment of the publishing tables (warehouse/pubdb/migrations).
SCRIPT_LOCATION = "warehouse.pubdb:migrations"
#: PostgreSQL advisory lock key held by a migrating process ("murmur" in ASCII).
MIGRATION_LOCK = 0x6D75726D7572


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of a SQLite database file."""
    return f"sqlite:///{path}"


def _prepare_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_con: Any, _record: Any) -> None:
        # SQLAlchemy's documented recipe: the driver leaves transactions to us (BEGIN below).
        dbapi_con.isolation_level = None
        cur = dbapi_con.cursor()
        # WAL persists in the file: later openers (an analyst's DuckDB too) find it on.
        cur.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before it is acknowledged, power loss included.
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # A reader's BEGIN takes no lock (WAL gives it a snapshot); a writer's takes the
        # write lock now, so it never fails later on a lock it cannot upgrade.
        read = conn.get_execution_options().get("snapshot", False)
        conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")


class PubDB:
    """The publishing database: transactions on a SQLAlchemy engine, failures as StoreErrors."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(
        cls, url: str, *, migrate: bool = True, busy_timeout_ms: int = BUSY_TIMEOUT_MS
    ) -> PubDB:
        """Open the database at ``url`` (created if missing) and bring its schema up to date."""
        engine = create_engine(url)
        if engine.dialect.name == "sqlite":
            _prepare_sqlite(engine, busy_timeout_ms)
        db = cls(engine)
        if migrate:
            db.upgrade()
        return db

    def upgrade(self, revision: str = "head") -> None:
        """Apply the Alembic migrations up to ``revision``; concurrent openers queue on the lock."""
        config = Config()
        config.set_main_option("script_location", SCRIPT_LOCATION)
        with self.transaction() as conn:
            if conn.dialect.name == "postgresql":
                # SQLite's BEGIN IMMEDIATE already queues migrators; PostgreSQL needs a lock.
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            config.attributes["connection"] = conn
            command.upgrade(config, revision)

    def revision(self) -> str | None:
        """The Alembic revision the schema is at, or None before the first migration."""
        from alembic.runtime.migration import MigrationContext

        with self.snapshot() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except DBAPIError as exc:
            raise translate(exc) from exc

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction: one consistent view of the database, no lock taken."""
        try:
            with self.engine.connect() as conn:
                conn = conn.execution_options(snapshot=True)
                with conn.begin():
                    yield conn
        except DBAPIError as exc:
            raise translate(exc) from exc

    def run(self, work: Callable[[Connection], T]) -> T:
        """``work`` in a write transaction, run again (whole) if a concurrent writer refused it."""

        def once() -> T:
            with self.transaction() as conn:
                return work(conn)

        return retrying(once, retry_on=(ConflictError,))

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> PubDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
