"""Opening the publishing database: SQLite in WAL mode embedded, PostgreSQL at scale.

Every process opens it itself (no owner, no host): SQLite in WAL mode lets readers run
beside one writer; writers take turns in a :class:`WriteQueue`, then take the write lock
when their transaction begins (``BEGIN IMMEDIATE``), so none fails half-way on a read lock
it cannot upgrade. Failures arrive as the store's own errors (warehouse/errors.py), and the
schema is brought to Alembic's head on open.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError

from warehouse.cursor import PubCursor
from warehouse.errors import ConflictError, StoreError, StoreUnavailableError, translate
from warehouse.retry import retrying

T = TypeVar("T")

#: How long a writer waits for another's write lock before its work is refused as a conflict.
BUSY_TIMEOUT_MS = 10_000
#: The Alembic environment of the publishing tables (warehouse/pubdb/migrations).
SCRIPT_LOCATION = "warehouse.pubdb:migrations"
#: Its scripts, each file named after its revision (``0003_sign_in_links.py``).
VERSIONS = Path(__file__).parent / "migrations" / "versions"
#: PostgreSQL advisory lock key held by a migrating process ("murmur" in ASCII).
MIGRATION_LOCK = 0x6D75726D7572


def sqlite_url(path: Path) -> str:
    """The SQLAlchemy URL of a SQLite database file."""
    return f"sqlite:///{path}"


def head_revision() -> str:
    """The newest migration's revision, read from the file names (a test holds Alembic to it)."""
    return max(path.name.split("_", 1)[0] for path in VERSIONS.glob("[0-9]*_*.py"))


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


@contextmanager
def _undone_on_error(undo: Callable[[], object]) -> Iterator[None]:
    """Call ``undo`` when the block fails, whatever failed; an engine error leaves translated."""
    try:
        yield
    except DBAPIError as exc:
        undo()
        raise translate(exc) from exc
    except BaseException:
        undo()
        raise


class WriteQueue:
    """Writers of one SQLite file take turns: a flock on a file beside it, waited for bounded.

    SQLite's busy handler polls, sleeping up to 100 ms between tries, so a writer that
    commits and begins again at once keeps the lock from the others: measured, two processes
    writing back to back got 4,625 and 3,127 posts in 10 s with 1.3-1.7 s stalls, and in a
    test one got no commit in during 40 of the other's. A waiter on a flock is woken when it
    is released, so writers take turns (3,377 and 3,371, stalls of 10 ms at most). The
    kernel drops a killed process's lock.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Hold the queue; ConflictError if another writer keeps it past the timeout."""
        try:
            queue = self.path.open("a")
        except OSError as exc:
            raise StoreUnavailableError(f"cannot open {self.path}: {exc}") from exc
        if not self._take(queue):
            raise ConflictError(f"another writer held {self.path} for {self.timeout:g} s")
        try:
            yield
        finally:
            queue.close()  # closing the file releases its flock

    def _take(self, queue: IO[str]) -> bool:
        try:
            fcntl.flock(queue, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        # A blocking flock cannot be given a timeout: a helper thread waits in it, and if we
        # stop waiting first, it lets go of the lock (closing the file) as soon as it has it.
        taken = threading.Event()
        guard = threading.Lock()
        abandoned = False

        def wait() -> None:
            fcntl.flock(queue, fcntl.LOCK_EX)
            with guard:
                if abandoned:
                    queue.close()
                else:
                    taken.set()

        threading.Thread(target=wait, name="pubdb-write-queue", daemon=True).start()
        if taken.wait(self.timeout):
            return True
        with guard:
            if taken.is_set():
                return True
            abandoned = True
        return False


class PubDB:
    """The publishing database: transactions on a SQLAlchemy engine, failures as StoreErrors."""

    def __init__(self, engine: Engine, write_queue: WriteQueue | None = None) -> None:
        self.engine = engine
        self.write_queue = write_queue
        # A reader sees one snapshot for its whole transaction: SQLite's WAL gives one to a
        # plain BEGIN; PostgreSQL's default (read committed) would see each commit at once.
        self.reader_options: dict[str, Any] = (
            {"snapshot": True}
            if engine.dialect.name == "sqlite"
            else {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        )

    @classmethod
    def open(
        cls,
        url: str,
        *,
        migrate: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        connections: int = 5,
    ) -> PubDB:
        """Open the database at ``url`` (created if missing) and bring its schema up to date.

        ``connections``: how many the pool keeps open once used on PostgreSQL, as many as
        the process runs store calls at once. Past the pool a connection is made and closed
        per use: an API process at scale with SQLAlchemy's default of 5 made 742 PostgreSQL
        sessions in 8 s of 32 clients writing (docs/performance.md, *The scale profile*).
        """
        # PostgreSQL only: a session there costs a backend and a round trip each; SQLite keeps
        # SQLAlchemy's default pool, which every embedded process has been tested with.
        sqlite = make_url(url).get_backend_name() == "sqlite"
        pooled = {} if sqlite else {"pool_size": connections, "max_overflow": 10}
        engine = create_engine(url, **pooled)
        write_queue = None
        if sqlite:
            _prepare_sqlite(engine, busy_timeout_ms)
            if engine.url.database:
                write_queue = WriteQueue(
                    Path(engine.url.database + ".write-queue"), busy_timeout_ms / 1000
                )
        db = cls(engine, write_queue)
        if migrate and not db.at_head():
            db.upgrade()
        return db

    def at_head(self) -> bool:
        """Whether the schema is at this code's newest revision, asked without Alembic.

        Nearly every open finds it so; importing and running Alembic to learn it cost each
        process (every command, API process, worker and pipeline step) ~0.25 s.
        """
        try:
            with self.snapshot() as conn:
                found = conn.exec_driver_sql("SELECT version_num FROM alembic_version").all()
        except StoreError:
            return False  # a new database (no table yet); anything worse, the upgrade reports
        return [row[0] for row in found] == [head_revision()]

    def upgrade(self, revision: str = "head") -> None:
        """Apply the Alembic migrations up to ``revision``; concurrent openers queue on the lock."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", SCRIPT_LOCATION)
        with self.transaction() as conn:
            if conn.dialect.name == "postgresql":
                # SQLite's writers already queue; PostgreSQL's migrators need a lock.
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            config.attributes["connection"] = conn
            command.upgrade(config, revision)

    def revision(self) -> str | None:
        """The Alembic revision the schema is at, or None before the first migration."""
        from alembic.runtime.migration import MigrationContext

        with self.snapshot() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def integrity_problems(self) -> list[str]:
        """What SQLite's integrity check finds wrong with the file (none on PostgreSQL)."""
        if self.engine.dialect.name != "sqlite":
            return []
        with self.snapshot() as conn:
            found = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check")]
        return [] if found == ["ok"] else found

    def begin(self, *, write: bool) -> PubTransaction:
        """A transaction begun on first use: a writer's, or a reader's snapshot."""
        return PubTransaction(self, write=write)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        with self._block(write=True) as conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction: one consistent view of the database, no lock taken."""
        with self._block(write=False) as conn:
            yield conn

    @contextmanager
    def _block(self, *, write: bool) -> Iterator[Connection]:
        txn = self.begin(write=write)
        with _undone_on_error(txn.rollback):
            yield txn.conn
        txn.commit()

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


class PubTransaction:
    """One transaction on the publishing database, begun when first used.

    A writer's takes its turn in the write queue (SQLite) and the write lock at ``BEGIN``;
    a reader's is a snapshot that takes no lock. :meth:`commit` and :meth:`rollback` end
    it and give the connection back; a transaction never begun ends at no cost, so a
    request answered from a cache never touches the database.
    """

    def __init__(self, db: PubDB, *, write: bool) -> None:
        self._db = db
        self.write = write
        self._held: contextlib.ExitStack | None = None
        self._conn: Connection | None = None
        self._cur: PubCursor | None = None

    @property
    def begun(self) -> bool:
        return self._conn is not None

    @property
    def conn(self) -> Connection:
        """The transaction's connection, beginning the transaction if this is its first use."""
        if self._conn is None:
            held = contextlib.ExitStack()
            with _undone_on_error(held.close):
                if self.write and self._db.write_queue is not None:
                    held.enter_context(self._db.write_queue.turn())
                conn = held.enter_context(self._db.engine.connect())
                if not self.write:
                    conn = conn.execution_options(**self._db.reader_options)
                conn.begin()
            self._held, self._conn = held, conn
        return self._conn

    @property
    def cur(self) -> PubCursor:
        """A cursor of the transaction (the repositories' kind), beginning it if need be."""
        if self._cur is None:
            self._cur = PubCursor(self.conn)
        return self._cur

    def commit(self) -> None:
        """Commit and give the connection back (nothing to do if never begun)."""
        conn, held = self._release()
        if conn is None or held is None:
            return
        try:
            conn.commit()
        except DBAPIError as exc:
            raise translate(exc) from exc
        finally:
            held.close()  # a failed commit's connection goes back rolled back

    def rollback(self) -> None:
        """Roll back and give the connection back; a connection already lost is let go."""
        conn, held = self._release()
        if conn is None or held is None:
            return
        try:
            with contextlib.suppress(DBAPIError):
                conn.rollback()
        finally:
            held.close()

    def _release(self) -> tuple[Connection | None, contextlib.ExitStack | None]:
        conn, held = self._conn, self._held
        if self._cur is not None:
            with contextlib.suppress(Exception):
                self._cur.close()
        self._conn, self._held, self._cur = None, None, None
        return conn, held
