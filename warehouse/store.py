"""The store, opened by every process itself: the publishing database and the lake (ADR 0002).

No process owns it and none waits for another to be up. The publishing half (workspaces,
keys, posts, inbox, queues, webhooks…) is :class:`~warehouse.pubdb.engine.PubDB`: a SQLite
file in WAL mode embedded, PostgreSQL at scale. The analytics half (raw captures, staging,
marts) is a :class:`~warehouse.lake.Lake`: DuckLake, its catalog in SQLite or PostgreSQL,
its Parquet on disk or S3, read and written through DuckDB sessions.

A process reaches a SQLite file through one copy of SQLite only (ADR 0002, Consequences):
Python's ``sqlite3`` (under PubDB) and DuckDB's ``sqlite`` extension do not see each
other's locks in one process. So the API, the workers and the pipeline read and write the
publishing tables through PubDB, and a pipeline's DuckDB session gets the few publishing
rows its SQL joins as a copy (:class:`Lakehouse`); only an analyst's own DuckDB attaches
the publishing file itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from warehouse import lake as lakes
from warehouse.changes import ChangeSignal
from warehouse.cursor import Cursor, StoreCursor
from warehouse.errors import StoreUnavailableError, translate
from warehouse.extensions import ArrowStream, connect
from warehouse.files import private_dir, sync_dir
from warehouse.lake import Lake, maintenance
from warehouse.lake.maintenance import Upkeep
from warehouse.pubdb.engine import PubDB, PubTransaction
from warehouse.retry import retrying
from warehouse.sealing import Keyring, Sealer, SealingKeyError

if TYPE_CHECKING:
    import duckdb

log = structlog.get_logger(__name__)

T = TypeVar("T")

__all__ = [
    "Lakehouse",
    "Secrets",
    "Store",
    "StoreCursor",
    "StoreUnavailableError",
    "Transaction",
]

#: The columns of ``accounts`` a pipeline's SQL joins, copied into its session as ``pub.accounts``.
PIPELINE_ACCOUNT_COLUMNS = ("id", "workspace_id", "platform", "handle", "external_id", "status")


@dataclass(frozen=True)
class Secrets:
    """Per-installation secrets kept in the data directory (mode 0600)."""

    signing_key: str
    sealing_key: str  # hex, 32 bytes: what warehouse/sealing.py seals secrets at rest with
    # Keys sealing_key replaced (warehouse/rotation.py): still read, never sealed with.
    previous_sealing_keys: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)
    # Which version of the file these keys were read from (see _KeyFile).
    stamp: tuple[int, int, int] | None = field(default=None, compare=False)

    @classmethod
    def load(cls, data_dir: Path) -> Secrets:
        """Read the data directory's secrets, creating them (or a key added since) on first use."""
        path = private_dir(data_dir) / ".secret"
        read = _read_secrets(path) if path.exists() else None
        if read is None or "signing_key" not in read[0] or "sealing_key" not in read[0]:
            # Under a lock, read again: two processes adding a key must agree on one.
            with _locked(path.with_name(".secret.lock")):
                body = _read_secrets(path)[0] if path.exists() else {}
                if "signing_key" not in body or "sealing_key" not in body:
                    body.setdefault("signing_key", secrets.token_hex(32))
                    body.setdefault("sealing_key", secrets.token_hex(32))
                    _write_secrets(path, body)
                read = _read_secrets(path)
        return cls._of(*read, path)

    @classmethod
    def _of(cls, body: dict[str, Any], stamp: tuple[int, int, int], path: Path) -> Secrets:
        previous = tuple(str(key) for key in body.get("previous_sealing_keys", ()))
        return cls(body["signing_key"], body["sealing_key"], previous, path, stamp)

    def keyring(self) -> Keyring:
        return Keyring(
            bytes.fromhex(self.sealing_key), tuple(map(bytes.fromhex, self.previous_sealing_keys))
        )

    def sealer(self) -> Sealer:
        """What seals this installation's secrets at rest; it reads ``.secret`` again when
        that was replaced (a rotation), so a running process needs no restart."""
        keys = self.keyring()
        refresh = None
        if self.path is not None and self.stamp is not None:
            refresh = _KeyFile(self.path, self.stamp)
        return Sealer(keys.current, keys.previous, refresh=refresh)

    @classmethod
    def rotate_sealing_key(cls, data_dir: Path) -> Secrets:
        """A new sealing key in ``.secret``, the current one kept among the previous ones."""
        cls.load(data_dir)  # made if missing
        path = data_dir / ".secret"
        with _locked(path.with_name(".secret.lock")):
            body = _read_secrets(path)[0]
            kept = [body["sealing_key"], *body.get("previous_sealing_keys", ())]
            body["previous_sealing_keys"] = list(dict.fromkeys(kept))
            body["sealing_key"] = secrets.token_hex(32)
            _write_secrets(path, body)
            return cls._of(*_read_secrets(path), path)

    @classmethod
    def forget_previous_sealing_keys(cls, data_dir: Path, *, current: str) -> int:
        """Drop the previous sealing keys, if ``current`` is still the current one; how many.

        The caller has found no value sealed under them: a rotation since would have made
        ``current`` one of them, so the check is made again under the file's lock.
        """
        path = data_dir / ".secret"
        with _locked(path.with_name(".secret.lock")):
            body = _read_secrets(path)[0]
            if body["sealing_key"] != current:
                raise SealingKeyError("the sealing key was rotated meanwhile: check again")
            dropped = len(body.pop("previous_sealing_keys", ()))
            if dropped:
                _write_secrets(path, body)
        return dropped


def _read_secrets(path: Path) -> tuple[dict[str, Any], tuple[int, int, int]]:
    """The file's keys, and what tells this version of it from a later one (it is replaced
    whole, so a new inode)."""
    with path.open() as fh:
        st = os.fstat(fh.fileno())
        body: dict[str, Any] = json.load(fh)
    return body, (st.st_ino, st.st_mtime_ns, st.st_size)


def _write_secrets(path: Path, body: dict[str, Any]) -> None:
    """Replace ``path`` whole, durably: a reader (or a crash) sees the old file or the new."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(body, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    sync_dir(path.parent)


class _KeyFile:
    """The sealing keys of ``.secret`` again, when the file was replaced since last read."""

    def __init__(self, path: Path, stamp: tuple[int, int, int]) -> None:
        self._path = path
        self._stamp = stamp

    def __call__(self) -> Keyring | None:
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return None
        if (st.st_ino, st.st_mtime_ns, st.st_size) == self._stamp:
            return None
        body, self._stamp = _read_secrets(self._path)
        return Secrets._of(body, self._stamp, self._path).keyring()


@contextlib.contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class Store:
    """This process's handle on the store: publishing transactions and lake reads.

    Writes to the publishing tables go through :meth:`transaction` / :meth:`run` (or a
    request's :class:`Transaction`); each committed write replaces the change token
    (warehouse/changes.py) so that every process's caches see it. Reads of the analytics
    tables go through :meth:`analytics`, a read-only DuckDB session on the lake.
    """

    def __init__(
        self, pub: PubDB, lake: Lake, changes: ChangeSignal, *, lake_prepared: bool = True
    ) -> None:
        self.pub = pub
        self.lake = lake
        self.changes = changes
        # Set by whoever opens the store with its data directory (Settings.open_store).
        self.sealer: Sealer | None = None
        # DuckDB threads of each of this process's lake sessions (None: DuckDB's own, one a
        # core); set with the sealer.
        self.duckdb_threads: int | None = None
        self._lake_lock = threading.Lock()
        self._lake_con: duckdb.DuckDBPyConnection | None = None
        self._lake_prepared = lake_prepared
        self._closed = False

    @classmethod
    def open(
        cls,
        pub_url: str,
        lake: Lake,
        changes_path: Path,
        *,
        prepare_lake: bool = True,
        connections: int = 5,
    ) -> Store:
        """Open both halves (created and migrated when missing); unavailable ones raise.

        ``prepare_lake=False`` leaves the lake until its first read: for a command that uses
        only the publishing half (``murmur keys``), which would spend most of its time there.
        ``connections``: the publishing database's pool (:meth:`PubDB.open`).
        """
        pub = PubDB.open(pub_url, connections=connections)
        try:
            if prepare_lake:
                # A writer's attach creates and migrates a missing lake, so readers find it.
                lakes.prepare(lake)
        except BaseException:
            pub.close()
            raise
        # One machine's files: every writer also writes the change file. Otherwise not.
        local = pub.engine.dialect.name == "sqlite" and lake.kind == "sqlite"
        changes = ChangeSignal(changes_path, sees_every_writer=local)
        return cls(pub, lake, changes, lake_prepared=prepare_lake)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called: every query now refuses."""
        return self._closed

    # -- the publishing tables ------------------------------------------------------------

    def begin(self, *, write: bool) -> Transaction:
        """A request-shaped transaction, begun on first use (see :class:`Transaction`)."""
        return Transaction(self, write=write)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Cursor]:
        """One write transaction: committed when the block ends, rolled back if it raises."""
        txn = self.begin(write=True)
        try:
            yield txn.cur
        except BaseException:
            txn.rollback()
            raise
        txn.commit(wrote=True, keys=True)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        """One read transaction: a consistent view that takes no lock."""
        txn = self.begin(write=False)
        try:
            yield txn.cur
        finally:
            txn.rollback()

    def run(self, work: Callable[[Cursor], T]) -> T:
        """``work`` in a write transaction, again whole when a concurrent writer refused it."""

        def once() -> T:
            with self.transaction() as cur:
                return work(cur)

        return retrying(once)

    def read(self, work: Callable[[Cursor], T]) -> T:
        """``work`` in a read transaction."""
        with self.snapshot() as cur:
            return work(cur)

    # -- the analytics tables -------------------------------------------------------------

    def duckdb_config(self) -> dict[str, str | bool | int | float | list[str]]:
        """The DuckDB settings every lake session of this process starts with."""
        return {} if self.duckdb_threads is None else {"threads": self.duckdb_threads}

    def analytics_cursor(self) -> StoreCursor:
        """A read-only DuckDB cursor on the lake (its tables unqualified); the caller closes it."""
        import duckdb

        with self._lake_lock:
            if self._closed:
                raise StoreUnavailableError("the store is closed")
            if self._lake_con is None:
                if not self._lake_prepared:
                    lakes.prepare(self.lake)
                    self._lake_prepared = True
                con = connect(self.duckdb_config())
                try:
                    self.lake.attach(con, read_only=True)
                except BaseException:
                    con.close()
                    raise
                self._lake_con = con
            raw = self._lake_con.cursor()
        try:
            raw.execute("USE lake")
        except duckdb.Error as exc:
            raw.close()
            raise translate(exc) from exc
        return StoreCursor(raw)

    @contextlib.contextmanager
    def analytics(self) -> Iterator[StoreCursor]:
        """A read-only cursor on the lake for one unit of work, in one lake snapshot."""
        cur = self.analytics_cursor()
        try:
            cur.execute("BEGIN TRANSACTION")
            yield cur
        finally:
            with contextlib.suppress(Exception):
                cur.execute("ROLLBACK")
            cur.close()

    def close(self) -> None:
        with self._lake_lock:
            if self._closed:
                return
            self._closed = True
            con, self._lake_con = self._lake_con, None
        if con is not None:
            con.close()
        self.pub.close()
        self.changes.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Transaction:
    """A request's transaction on the publishing tables, begun on first use.

    ``token`` is the change token read when the request started, before the transaction
    began: what the transaction reads is at least that new, so it may be cached under it.
    A read answered from such a cache never begins a transaction at all. Its lake reads
    (:attr:`analytics`) run in one lake snapshot of their own, ended with the transaction.
    """

    def __init__(self, store: Store, *, write: bool) -> None:
        self.store = store
        self.write = write
        self.token = store.changes.token()
        self.keys_token = store.changes.keys_token()
        self._pub: PubTransaction = store.pub.begin(write=write)
        self._analytics: StoreCursor | None = None

    @property
    def begun(self) -> bool:
        return self._pub.begun

    @property
    def cur(self) -> Cursor:
        """The transaction's cursor, beginning the transaction if this is its first use."""
        return self._pub.cur

    @property
    def analytics(self) -> StoreCursor:
        """A read-only lake cursor for this request (one lake snapshot)."""
        if self._analytics is None:
            cur = self.store.analytics_cursor()
            cur.execute("BEGIN TRANSACTION")
            self._analytics = cur
        return self._analytics

    def commit(self, *, wrote: bool, keys: bool = False) -> None:
        """Commit; a write replaces the change token once it is committed.

        ``keys``: the write may have touched ``api_keys`` (a request's never does).
        """
        self._end_analytics()
        begun = self._pub.begun
        self._pub.commit()
        if wrote and begun:
            self.store.changes.bump(keys=keys)

    def rollback(self) -> None:
        self._end_analytics()
        self._pub.rollback()

    def _end_analytics(self) -> None:
        cur, self._analytics = self._analytics, None
        if cur is not None:
            with contextlib.suppress(Exception):
                cur.execute("ROLLBACK")
            cur.close()


class Lakehouse:
    """A pipeline's DuckDB session: the lake read-write, the publishing rows it joins as ``pub``.

    The lake is attached as ``lake`` and is the session's default catalog, so the pipeline's
    SQL names its tables unqualified. The connected accounts that SQL joins are copied in
    through PubDB when the session opens (:data:`PIPELINE_ACCOUNT_COLUMNS`), into an
    in-memory ``pub`` catalog: the names an analyst's attached publishing file has.
    Every write is one lake transaction, run again whole when a concurrent commit refused
    it (warehouse/lake ``run``).
    """

    def __init__(
        self,
        store: Store,
        *,
        owned: bool = False,
        memory_limit: str | None = None,
        spill_dir: Path | None = None,
    ) -> None:
        import duckdb

        self.store = store
        self._owned = owned
        self._lock = threading.RLock()
        config = store.duckdb_config()
        # Without both, an in-memory session takes 80% of the machine's memory and spills
        # into the working directory's .tmp (the full build over 100M snapshots: 20 GB RSS).
        if memory_limit is not None:
            config["memory_limit"] = memory_limit
        if spill_dir is not None:
            config["temp_directory"] = str(spill_dir)
        self._con = connect(config)
        try:
            store.lake.attach(self._con)
            self._con.execute("USE lake")
            self._con.execute("ATTACH ':memory:' AS pub")
            self.refresh_publishing()
        except duckdb.Error as exc:
            self._con.close()
            raise translate(exc) from exc
        except BaseException:
            self._con.close()
            raise

    def refresh_publishing(self) -> None:
        """Copy the publishing rows the pipeline joins into the session's ``pub`` catalog."""
        import polars as pl  # the pipeline's: a process that runs none never loads it

        names = ", ".join(PIPELINE_ACCOUNT_COLUMNS)
        with self.store.snapshot() as cur:
            cur.execute(f"SELECT {names} FROM accounts")  # noqa: S608 - constants
            rows = cur.fetchall()
        frame = pl.DataFrame(
            rows, schema=dict.fromkeys(PIPELINE_ACCOUNT_COLUMNS, pl.String), orient="row"
        )
        with self._lock:
            self._con.register("_pub_accounts", ArrowStream(frame))
            try:
                self._con.execute(
                    "CREATE OR REPLACE TABLE pub.accounts AS SELECT * FROM _pub_accounts"
                )
            finally:
                self._con.unregister("_pub_accounts")

    @property
    def publishing(self) -> Store:
        """The store, for the pipeline's reads and writes of publishing tables (PubDB)."""
        return self.store

    @contextlib.contextmanager
    def cursor(self) -> Iterator[StoreCursor]:
        """The session's cursor for work that manages its own transaction (or none)."""
        with self._lock:
            yield StoreCursor(self._con)

    def run(self, work: Callable[[StoreCursor], T]) -> T:
        """``work`` in one lake transaction, again whole when a concurrent commit refused it."""
        try:
            with self._lock:
                return lakes.run(
                    self._con, lambda con: work(StoreCursor(con)), files=self.store.lake.local_data
                )
        finally:
            # It may have written: the API's caches of the marts re-check their version.
            self.store.changes.bump(keys=False)

    def execute_script(self, sql: str, *, upserts_dimensions: bool = False) -> None:
        """A multi-statement script as one lake transaction, again after a refused commit.

        Parallel partition runs refuse each other's commits (two rewrites of one table);
        a refused script leaves nothing behind, so it runs again. A script that upserts the
        dimensions takes turns with the others that do: the lake has no keys, and two runs
        inserting a post new to both would commit it twice without conflicting.
        """

        def once(con: duckdb.DuckDBPyConnection) -> None:
            con.execute(sql)

        turn = (
            self.store.lake.locked("dims", lakes.DIMENSIONS_LOCK)
            if upserts_dimensions
            else contextlib.nullcontext()
        )
        with self._lock, turn:
            lakes.run(self._con, once, files=self.store.lake.local_data)
        self.store.changes.bump(keys=False)

    def maintain(self, keep: timedelta) -> Upkeep:
        """One pass of the lake's upkeep; snapshots older than ``keep`` are expired."""
        with self._lock:
            return maintenance.maintain(self._con, self.store.lake, keep=keep)

    def close(self) -> None:
        with self._lock:
            self._con.close()
        if self._owned:
            self.store.close()

    def __enter__(self) -> Lakehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
