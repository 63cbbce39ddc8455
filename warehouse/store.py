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
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from warehouse import lake as lakes
from warehouse.changes import ChangeSignal, SharedChangeSignal
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
    "LakeSnapshot",
    "Lakehouse",
    "Secrets",
    "SnapshotLookup",
    "Store",
    "StoreCursor",
    "StoreUnavailableError",
    "Transaction",
]

#: The columns of ``accounts`` a pipeline's SQL joins, copied into its session as ``pub.accounts``.
PIPELINE_ACCOUNT_COLUMNS = ("id", "workspace_id", "platform", "handle", "external_id", "status")

#: Past snapshots of the lake a process keeps attached for ``as_of`` reads (each attach costs
#: ~10 ms and a catalog connection): the least recently used one unused is detached past it.
SNAPSHOTS_ATTACHED = 8

# A snapshot asked for by id ($id) or as the one current at an instant ($at), the newest,
# the first committed at or after $since, and the first of the newest's schema (a migration
# since makes the older ones unreadable by this code); read in the catalog DuckLake attaches
# beside the lake (its times are text in a SQLite catalog, hence the cast). One scan of a
# table of one row per commit kept (a week of hourly runs: a few thousand).
_FIND_SNAPSHOT = """
WITH s AS MATERIALIZED (
    SELECT snapshot_id AS id, snapshot_time::TIMESTAMPTZ AS committed, schema_version
    FROM __ducklake_metadata_lake.ducklake_snapshot
), newest AS (
    SELECT id, committed, schema_version FROM s ORDER BY id DESC LIMIT 1
), target AS (
    SELECT id, committed FROM s
    WHERE CASE WHEN $id::BIGINT IS NULL THEN committed <= $at::TIMESTAMPTZ
               ELSE id = $id::BIGINT END
    ORDER BY id DESC LIMIT 1
)
SELECT newest.id, newest.committed, target.id, target.committed,
       (SELECT min(committed) FROM s WHERE committed >= $since::TIMESTAMPTZ),
       (SELECT min(committed) FROM s WHERE s.schema_version = newest.schema_version)
FROM newest LEFT JOIN target ON true
"""


@dataclass(frozen=True)
class LakeSnapshot:
    """One snapshot of the lake (DuckLake's: one per commit), and the clock a read of it keeps.

    ``clock`` is the moment an ``as_of`` read answers as of (its default range ends there,
    its freshness is measured there): the instant asked, or the snapshot's commit.
    ``expires_at``: when an answer at it stops being served (it leaves the retention); None
    while it is the newest.
    """

    id: int
    committed_at: datetime  # aware UTC
    clock: datetime  # aware UTC
    expires_at: datetime | None = None


@dataclass(frozen=True)
class SnapshotLookup:
    """What the lake's catalog says of a snapshot asked for by id or by instant."""

    found: tuple[int, datetime] | None  # (id, committed at, aware UTC); None: no such snapshot
    newest: tuple[int, datetime]
    first_since: datetime | None  # the first commit at or after the lookup's ``since``
    schema_since: datetime  # the first commit of the newest snapshot's schema (a migration)


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
        # Past snapshots attached to that connection (``as_of``), least recently used first,
        # with the cursors reading each: one in use is never detached.
        self._snapshots_lock = threading.Lock()
        self._snapshots: OrderedDict[int, int] = OrderedDict()

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
        # One machine's files: every writer also writes the change file. On PostgreSQL every
        # writer, wherever it runs, advances the database's own tokens. Otherwise (a file
        # of one machine beside a lake elsewhere) nothing cached is trusted.
        changes: ChangeSignal
        if pub.engine.dialect.name == "postgresql":
            changes = SharedChangeSignal(changes_path, pub.engine)
        else:
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

    def _lake_cursor(self) -> duckdb.DuckDBPyConnection:
        """A new cursor of this process's read-only lake session (opened on first use)."""
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
            return self._lake_con.cursor()

    def analytics_cursor(self, snapshot: int | None = None) -> StoreCursor:
        """A read-only DuckDB cursor on the lake (its tables unqualified); the caller closes it.

        ``snapshot``: the lake as of that snapshot id (time travel), its catalog the cursor's
        ``current_database()``; the caller hands it back with :meth:`release_snapshot`.
        """
        import duckdb

        raw = self._lake_cursor()
        alias = "lake"
        held = False
        try:
            if snapshot is not None:
                alias = self._hold_snapshot(raw, snapshot)
                held = True
            raw.execute(f"USE {alias}")
        except BaseException as exc:
            raw.close()
            if held and snapshot is not None:
                self.release_snapshot(snapshot)
            if isinstance(exc, duckdb.Error):
                raise translate(exc) from exc
            raise
        return StoreCursor(raw)

    def find_snapshot(
        self, *, snapshot_id: int | None = None, at: datetime | None = None, since: datetime
    ) -> SnapshotLookup:
        """The snapshot ``snapshot_id``, or the one current at ``at`` (the newest committed at
        or before it), read in the lake's catalog now; ``since`` bounds ``first_since``."""
        if (snapshot_id is None) == (at is None):
            raise ValueError("name a snapshot by id or by instant, not both")
        cur = StoreCursor(self._lake_cursor())
        try:
            found = cur.execute(
                _FIND_SNAPSHOT, {"id": snapshot_id, "at": at, "since": since}
            ).fetchone()
        finally:
            cur.close()
        assert found is not None  # a lake always has its first snapshot
        newest_id, newest_at, target_id, target_at, first_since, schema_since = found
        return SnapshotLookup(
            found=None if target_id is None else (int(target_id), _utc(target_at)),
            newest=(int(newest_id), _utc(newest_at)),
            first_since=None if first_since is None else _utc(first_since),
            schema_since=_utc(schema_since),
        )

    def _hold_snapshot(self, raw: duckdb.DuckDBPyConnection, snapshot: int) -> str:
        """The alias of ``snapshot`` attached (now, if need be), counted as read by one more."""
        alias = snapshot_alias(snapshot)
        with self._snapshots_lock:
            if snapshot not in self._snapshots:
                # An attach is the session's, seen by every cursor of it; snapshots never
                # change, so one attach serves every read of that snapshot.
                self.lake.attach(raw, alias, read_only=True, snapshot=snapshot)
                self._snapshots[snapshot] = 0
            self._snapshots[snapshot] += 1
            self._snapshots.move_to_end(snapshot)
        return alias

    def release_snapshot(self, snapshot: int) -> None:
        """A cursor of ``snapshot`` closed; past :data:`SNAPSHOTS_ATTACHED`, the least recently
        used ones no cursor reads are detached."""
        import duckdb

        with self._snapshots_lock:
            if snapshot in self._snapshots:
                self._snapshots[snapshot] = max(0, self._snapshots[snapshot] - 1)
            idle = [s for s, users in self._snapshots.items() if users == 0]
            extra = len(self._snapshots) - SNAPSHOTS_ATTACHED
            if extra <= 0 or not idle:
                return
            with self._lake_lock:
                con = self._lake_con
            if con is None:
                return  # closed: every attach went with the session
            detaching = con.cursor()
            try:
                for old in idle[:extra]:
                    try:
                        detaching.execute(f"DETACH {snapshot_alias(old)}")
                    except duckdb.Error:
                        continue  # still attached: tried again at the next release
                    del self._snapshots[old]
            finally:
                detaching.close()

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
        with self._snapshots_lock:
            self._snapshots.clear()
        if con is not None:
            con.close()
        self.pub.close()
        self.changes.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def snapshot_alias(snapshot: int) -> str:
    """The catalog name a past snapshot of the lake is attached as (an identifier)."""
    if isinstance(snapshot, bool) or not isinstance(snapshot, int) or snapshot < 0:
        raise ValueError(f"a snapshot id is a non-negative integer, not {snapshot!r}")
    return f"lake_at_{snapshot}"


def _utc(value: datetime) -> datetime:
    """A TIMESTAMPTZ as DuckDB returns it (in the session's zone) in UTC."""
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _end_past_reads(cur: StoreCursor, store: Store, snapshot: int) -> None:
    """Close a cursor of a past snapshot, then hand the snapshot back (it may be detached)."""
    with contextlib.suppress(Exception):
        cur.execute("ROLLBACK")
    with contextlib.suppress(Exception):
        cur.close()
    store.release_snapshot(snapshot)


class Transaction:
    """A request's transaction on the publishing tables, begun on first use.

    ``token`` is the change token read when the request started, before the transaction
    began: what the transaction reads is at least that new, so it may be cached under it.
    A read answered from such a cache never begins a transaction at all. Its lake reads
    (:attr:`analytics`) run in one lake snapshot of their own, ended with the transaction:
    the newest, or the one :meth:`travel` names (``as_of``).
    """

    def __init__(self, store: Store, *, write: bool) -> None:
        self.store = store
        self.write = write
        self.token = store.changes.token()
        self.keys_token = store.changes.keys_token()
        self._pub: PubTransaction = store.pub.begin(write=write)
        self._analytics: StoreCursor | None = None
        self._as_of: LakeSnapshot | None = None
        self._end_as_of: weakref.finalize[Any, Transaction] | None = None

    @property
    def begun(self) -> bool:
        return self._pub.begun

    @property
    def cur(self) -> Cursor:
        """The transaction's cursor, beginning the transaction if this is its first use."""
        return self._pub.cur

    @property
    def as_of(self) -> LakeSnapshot | None:
        """The past snapshot the lake reads are of (:meth:`travel`); None: the newest."""
        return self._as_of

    def travel(self, snapshot: LakeSnapshot) -> None:
        """Make the lake reads of this transaction those of ``snapshot`` (before the first)."""
        if self._analytics is not None:
            raise RuntimeError("the lake was read already: travel before the first lake read")
        self._as_of = snapshot

    @property
    def analytics(self) -> StoreCursor:
        """A read-only lake cursor for this request (one lake snapshot)."""
        if self._analytics is None:
            if self._as_of is None:
                cur = self.store.analytics_cursor()
                cur.execute("BEGIN TRANSACTION")
            else:
                snapshot = self._as_of.id
                cur = self.store.analytics_cursor(snapshot)
                # A read that began no publishing transaction is never ended by the route
                # (its cursor goes with it): the snapshot is handed back then, not leaked.
                self._end_as_of = weakref.finalize(self, _end_past_reads, cur, self.store, snapshot)
                self._end_as_of.atexit = False
                cur.execute("BEGIN TRANSACTION")
            self._analytics = cur
        return self._analytics

    def end_lake_reads(self) -> None:
        """End the lake reads now (an ``as_of`` read's snapshot handed back); again: nothing."""
        self._end_analytics()

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
        end, self._end_as_of = self._end_as_of, None
        if end is not None:
            end()  # once: closes the cursor and hands its snapshot back
        elif cur is not None:
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
