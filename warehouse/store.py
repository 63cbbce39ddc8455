"""The shared DuckDB store: one host process owns the file; the others reach it over Quack.

DuckDB lets one process open a file read-write and no other process open it at all
while that lasts. The host (the API server) therefore owns the file, reads and writes it
in-process with a cursor per request, and serves DuckDB's Quack protocol on loopback.
Any other process (a Dagster run, the CLI, an analyst) finds the host through
``store.host.json`` and attaches over Quack; when no host is up it opens the file
itself for as long as it needs it. See docs/adr/0001-store.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import duckdb
import structlog

from warehouse.changes import ChangeSignal
from warehouse.cursor import StoreCursor
from warehouse.errors import (
    ConflictError,
    DuplicateKeyError,
    StoreError,
    StoreUnavailableError,
    translate,
)
from warehouse.files import private_dir
from warehouse.integrity import check_and_repair
from warehouse.migrations import migrate
from warehouse.retry import retrying
from warehouse.sql import bind

log = structlog.get_logger(__name__)

# DuckDB's Python client tries ``import pandas`` three times per statement; without pandas
# installed each try is a failed import that walks sys.path under the interpreter's import
# lock, which 32 request threads then queue on (py-spy: 12% of a POST /posts under load;
# ~80 us per statement with 8 threads). A None entry makes the failure immediate; it is set
# only when pandas is absent, so nothing that could import it loses it.
if importlib.util.find_spec("pandas") is None:
    sys.modules.setdefault("pandas", None)  # type: ignore[arg-type]

T = TypeVar("T")

Mode = Literal["host", "direct", "remote"]

# Quack is served by an extension; these ship as wheels so that nothing is downloaded.
_QUACK_EXTENSIONS = ("httpfs", "quack")

__all__ = ["Secrets", "Store", "StoreCursor", "StoreUnavailableError", "Transaction"]


@dataclass(frozen=True)
class Secrets:
    """Per-installation secrets kept beside the store (mode 0600)."""

    quack_token: str
    signing_key: str

    @classmethod
    def load(cls, data_dir: Path) -> Secrets:
        """Read the data directory's secrets, creating them on first use."""
        path = private_dir(data_dir) / ".secret"
        if not path.exists():
            body = {"quack_token": secrets.token_urlsafe(24), "signing_key": secrets.token_hex(32)}
            tmp = path.with_suffix(".tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(body, fh)
            # Another process may have raced us; keep whichever landed first.
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
            tmp.unlink(missing_ok=True)
        body = json.loads(path.read_text())
        return cls(quack_token=body["quack_token"], signing_key=body["signing_key"])


def load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load a DuckDB extension from its installed wheel, or from DuckDB's repository when online."""
    try:
        from duckdb_extensions import import_extension

        import_extension(name, con=con)
    except (ImportError, duckdb.Error, OSError):
        con.execute(f"INSTALL {name}")  # name is one of our own constants
    con.execute(f"LOAD {name}")


def is_lock_error(exc: BaseException) -> bool:
    """The file is held by another process (opening it, before any cursor exists)."""
    return isinstance(translate(exc), StoreUnavailableError)


@dataclass(frozen=True)
class HostInfo:
    """Where the store host serves Quack, as written to store.host.json."""

    uri: str
    pid: int
    store_path: str

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def read_host_file(path: Path) -> HostInfo | None:
    try:
        body = json.loads(path.read_text())
        info = HostInfo(uri=body["uri"], pid=int(body["pid"]), store_path=body["store_path"])
    except (OSError, ValueError, KeyError):
        return None
    return info if info.alive() else None


class HostCursor:
    """The part of a DuckDB cursor the repositories use, running each statement on the host.

    Over Quack (DuckDB 1.5.5) an attached catalog takes only single-table SELECTs and plain
    INSERTs: an UPDATE or DELETE fails ("Can only update base table"), a statement reading two
    tables fails ("Multiple streaming scans"), and RETURNING is refused. ``quack_query(uri,
    sql)`` runs any statement on the host, but binds no parameters; so the repositories keep
    writing bound SQL and this cursor renders each value through :func:`warehouse.sql.bind`,
    the one rendering helper. Each statement commits on its own on the host.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows: list[tuple[Any, ...]] = []
        self.description: list[tuple[Any, ...]] | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> HostCursor:
        self._rows = []
        self.description, self._rows = self._store._on_host(bind(sql, list(params or [])))
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def close(self) -> None:
        self._rows = []


class Store:
    """A handle on the store for this process: as its host, directly, or through the host."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        mode: Mode,
        path: Path,
        *,
        host_file: Path | None = None,
        quack_uri: str | None = None,
    ) -> None:
        self._con = con
        self.mode: Mode = mode
        self.path = path
        self.quack_uri = quack_uri
        self._host_file = host_file
        # A Quack client connection is not safe for concurrent statements.
        self._remote_lock = threading.RLock() if mode == "remote" else None
        self._closed = False
        self._port_claim: PortClaim | None = None
        self.changes = ChangeSignal(path.with_name(path.name + ".changes"))

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open_host(
        cls,
        path: Path,
        *,
        host_file: Path,
        quack_token: str,
        quack_host: str = "127.0.0.1",
        quack_port: int = 9494,
        lock_timeout: float = 30.0,
        checkpoint_wal_mb: int = 256,
    ) -> Store:
        """Own the store file, upgrade its schema and serve it over Quack to other processes."""
        con = _connect_file(path, lock_timeout)
        claim: PortClaim | None = None
        try:
            # A checkpoint stalls every commit for ~0.1-0.15 s per table it touches whatever
            # the WAL holds (measured at 140k posts: ~0.35 s after a burst of POST /posts),
            # so it should be rare: at DuckDB's default (16 MB) a steady 900 posts/s met one
            # every ~4 s, which set the writes' p99; at 256 MB it is about once a minute.
            con.execute(f"SET checkpoint_threshold = '{int(checkpoint_wal_mb)}MB'")
            for ext in _QUACK_EXTENSIONS:
                load_extension(con, ext)
            claim = PortClaim.take(quack_host, quack_port)
            row = con.execute(
                "SELECT * FROM quack_serve(?, token := ?)",
                [f"quack:{quack_host}:{claim.port}", quack_token],
            ).fetchone()
        except BaseException:
            if claim is not None:
                claim.release()
            _close_instance(path, con)
            raise
        uri = str(row[0]) if row else f"quack:{quack_host}:{claim.port}"
        _write_host_file(host_file, uri, path)
        log.info("store.host", path=str(path), quack=uri)
        store = cls(con, "host", path, host_file=host_file, quack_uri=uri)
        store._port_claim = claim
        return store

    @classmethod
    def connect(
        cls,
        path: Path,
        *,
        host_file: Path,
        quack_token: str,
        lock_timeout: float = 30.0,
        migrate_schema: bool = True,
    ) -> Store:
        """Reach the store from a non-host process: through the host if one is up, else directly."""
        deadline = time.monotonic() + lock_timeout
        warned = False
        private_dir(path.parent)
        while True:
            info = read_host_file(host_file)
            if info is not None:
                try:
                    return cls._attach_remote(path, info, quack_token)
                except duckdb.Error as exc:
                    if not warned:
                        log.warning("store.host_unreachable", uri=info.uri, error=str(exc))
                        warned = True
            try:
                con = _open_instance(path, migrate_schema=migrate_schema)
            except duckdb.Error as exc:
                if not is_lock_error(exc) or time.monotonic() > deadline:
                    raise StoreUnavailableError(
                        f"{path} is held by another process and no store host answered: {exc}"
                    ) from exc
                time.sleep(0.2)
                continue
            return cls(con, "direct", path)

    @classmethod
    def _attach_remote(cls, path: Path, info: HostInfo, quack_token: str) -> Store:
        con = duckdb.connect()
        for ext in _QUACK_EXTENSIONS:
            load_extension(con, ext)
        con.execute("CREATE OR REPLACE SECRET murmur_quack (TYPE quack, TOKEN ?)", [quack_token])
        con.execute(f"ATTACH '{_quote(info.uri)}' AS murmur")
        con.execute("USE murmur")
        return cls(con, "remote", path, quack_uri=info.uri)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.mode == "host" and self._host_file is not None:
            current = read_host_file(self._host_file)
            if current is not None and current.pid == os.getpid():
                self._host_file.unlink(missing_ok=True)
            with contextlib.suppress(duckdb.Error):
                self._con.execute("SELECT * FROM quack_stop(?)", [self.quack_uri])
            if self._port_claim is not None:
                self._port_claim.release()
        if self.mode == "remote":
            self._con.close()
        else:
            _close_instance(self.path, self._con)
        self.changes.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- using -----------------------------------------------------------------------------

    def new_cursor(self) -> StoreCursor:
        """A connection of its own that the caller closes (host and direct mode only)."""
        if self.mode == "remote":
            raise RuntimeError("a remote store has one connection; use cursor()")
        return StoreCursor(self._con.cursor())

    @contextlib.contextmanager
    def cursor(self) -> Iterator[StoreCursor]:
        """A connection of its own for one unit of work (cheap: ~0.1 ms in-process).

        Remote, it is a :class:`HostCursor`: each statement runs on the host. The unit may
        have written, so the change token is replaced when it ends (see warehouse/changes.py).
        """
        try:
            if self.mode == "remote":
                yield StoreCursor(HostCursor(self))
                return
            cur = StoreCursor(self._con.cursor())
            try:
                yield cur
            finally:
                cur.close()
        finally:
            self.changes.bump()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[StoreCursor]:
        """One transaction: committed when the block ends, rolled back if it raises.

        Over Quack (remote mode) each statement commits on its own: a client-side BEGIN
        does not make the block atomic (DuckDB 1.5.5), so none is sent and the block must
        be idempotent. Atomic multi-statement work goes through :meth:`execute_script`.
        """
        if self.mode == "remote":
            with self.cursor() as cur:
                yield cur
            return
        with self.cursor() as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                with contextlib.suppress(StoreError):
                    cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def run(self, work: Callable[[StoreCursor], T]) -> T:
        """Run ``work`` in a transaction, again when a concurrent writer wins a conflict.

        In remote mode ``work`` runs statement by statement (see :meth:`transaction`); the
        callers that can reach a remote store (the CLI's admin commands) are idempotent.
        """

        def once() -> T:
            with self.transaction() as cur:
                return work(cur)

        return retrying(once)

    def _on_host(self, sql: str) -> tuple[list[tuple[Any, ...]] | None, list[tuple[Any, ...]]]:
        """Run one statement on the host over Quack; its description and rows."""
        assert self._remote_lock is not None
        with self._remote_lock:
            self._con.execute("SELECT * FROM quack_query(?, ?)", [self.quack_uri, sql])
            description = list(self._con.description or [])
            return description, list(self._con.fetchall())

    def execute_script(self, sql: str) -> None:
        """Run a multi-statement script atomically where the data lives, again after a conflict.

        Parallel partition runs refuse each other's commits (two rewrites of one table, or two
        upserts of one key that was new to both); a refused script leaves nothing behind, so
        it runs again.
        """
        body = f"BEGIN TRANSACTION;\n{sql}\nCOMMIT;"
        retrying(lambda: self._script_once(body), retry_on=(ConflictError, DuplicateKeyError))

    def _script_once(self, body: str) -> None:
        if self.mode == "remote":
            assert self._remote_lock is not None
            with self._remote_lock:
                try:
                    self._con.execute("SELECT * FROM quack_query(?, ?)", [self.quack_uri, body])
                except duckdb.Error as exc:
                    raise translate(exc) from exc
                finally:
                    self.changes.bump()
                self._con.execute("CALL quack_clear_cache()")
            return
        with self.cursor() as cur:
            try:
                cur.execute(body)
            except BaseException:
                with contextlib.suppress(StoreError):
                    cur.execute("ROLLBACK")
                raise


class Transaction:
    """A request's transaction on the host, begun on first use.

    ``token`` is the change token read when the request started, before the transaction
    began: what the transaction reads is at least that new, so it may be cached under it.
    A read answered from such a cache never begins a transaction at all.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.token = store.changes.token()
        self.keys_token = store.changes.keys_token()
        self._cur: StoreCursor | None = None

    @property
    def begun(self) -> bool:
        return self._cur is not None

    @property
    def cur(self) -> StoreCursor:
        """The transaction's cursor, beginning the transaction if this is its first use."""
        if self._cur is None:
            cur = self.store.new_cursor()
            cur.execute("BEGIN TRANSACTION")
            self._cur = cur
        return self._cur

    def commit(self, *, wrote: bool) -> None:
        """Commit (and close); a write replaces the change token once it is committed."""
        cur, self._cur = self._cur, None
        if cur is None:
            return
        try:
            cur.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(StoreError):
                cur.execute("ROLLBACK")
            raise
        finally:
            cur.close()
        if wrote:
            # A request's transaction never writes api_keys (see warehouse/changes.py).
            self.store.changes.bump(keys=False)

    def rollback(self) -> None:
        cur, self._cur = self._cur, None
        if cur is None:
            return
        with contextlib.suppress(StoreError):
            cur.execute("ROLLBACK")
        cur.close()


def _connect_file(path: Path, lock_timeout: float) -> duckdb.DuckDBPyConnection:
    private_dir(path.parent)
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            return _open_instance(path)
        except duckdb.Error as exc:
            if not is_lock_error(exc) or time.monotonic() > deadline:
                raise StoreUnavailableError(f"cannot own {path}: {exc}") from exc
            log.info("store.waiting_for_lock", path=str(path))
            time.sleep(0.25)


def _write_host_file(host_file: Path, uri: str, path: Path) -> None:
    body = json.dumps({"uri": uri, "pid": os.getpid(), "store_path": str(path.resolve())})
    tmp = host_file.with_suffix(".tmp")
    tmp.write_text(body)
    tmp.replace(host_file)


# Connections this process holds on each store file. Connections to one path in one process
# share one DuckDB instance: the first prepares it (it is the one that replayed any WAL), the
# last checkpoints it, and others wait meanwhile rather than checkpoint beside its writes.
_instances: dict[Path, int] = {}
_instances_lock = threading.Lock()


def _open_instance(path: Path, *, migrate_schema: bool = True) -> duckdb.DuckDBPyConnection:
    key = path.resolve()
    with _instances_lock:
        con = duckdb.connect(str(path))
        if not _instances.get(key):
            try:
                prepare(con, migrate_schema=migrate_schema)
            except BaseException:
                con.close()
                raise
        _instances[key] = _instances.get(key, 0) + 1
        return con


def _close_instance(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    key = path.resolve()
    with _instances_lock:
        left = _instances.get(key, 1) - 1
        if left <= 0:
            _instances.pop(key, None)
            # Leave no WAL behind: the next engine to open the file then replays nothing.
            with contextlib.suppress(duckdb.Error):
                con.execute("CHECKPOINT")
        else:
            _instances[key] = left
        con.close()


def prepare(con: duckdb.DuckDBPyConnection, *, migrate_schema: bool = True) -> None:
    """Make a file just opened by this engine safe to use: checkpoint, migrate, check indexes.

    The checkpoint comes first: if the last engine died with a WAL pending, this one has just
    replayed it, and checkpointing it now (with a client context) rather than at shutdown is
    what keeps DuckDB 1.5.5 from serializing a stale index (duckdb/duckdb#23788; measured in
    docs/adr/0001-store.md, addendum). The index check is the net under that and migration 0008.
    """
    try:
        con.execute("CHECKPOINT")
    except duckdb.TransactionException:
        # Another connection of this process is writing through the same database instance:
        # the instance replayed the WAL when that connection opened it, and was prepared then.
        return
    if migrate_schema:
        migrate(con)
    check_and_repair(con)


class PortInUseError(StoreUnavailableError):
    """The Quack port asked for is already served, by another Murmur or anything else."""


@dataclass
class PortClaim:
    """This process's claim on a Quack port, so that two stores never serve on one port.

    quack_serve binds with SO_REUSEPORT and starts without a word on a port that another
    process serves (two stores then share one port and its connections). A plain bind
    fails on a port anything listens on; a lock file per port closes the window between
    two Murmurs that check at the same moment.
    """

    host: str
    port: int
    _lock: Any = None

    @classmethod
    def take(cls, host: str, port: int) -> PortClaim:
        """Claim ``port`` (0: a free one) or raise PortInUseError naming it."""
        for _ in range(20 if port == 0 else 1):
            candidate = port or _free_port(host)
            lock = _lock_port(host, candidate)
            if lock is not None and _bindable(host, candidate):
                return cls(host, candidate, lock)
            if lock is not None:
                lock.close()
        raise PortInUseError(
            f"Quack port {host}:{port} is already in use (another Murmur store?);"
            " set MURMUR_QUACK_PORT to a free port, or 0 to pick one"
        )

    def release(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _lock_port(host: str, port: int) -> Any:
    """An open, exclusively locked file for ``host:port``, or None if another process holds it."""
    import fcntl
    import tempfile

    path = Path(tempfile.gettempdir()) / f"murmur-quack-{host}-{port}.lock"
    try:
        fh = open(path, "a+")  # noqa: SIM115 - held open for the claim's lifetime
    except OSError:
        return _NoLock()  # another user's file: the bind check alone decides
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return None
    return fh


class _NoLock:
    def close(self) -> None:
        pass


def _bindable(host: str, port: int) -> bool:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        # SO_REUSEADDR: a restart must not be refused for its predecessor's TIME_WAIT
        # connections; on Linux the bind still fails while anything listens on the port.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _quote(text: str) -> str:
    return text.replace("'", "''")
