"""The store's change signal: a token every committed write replaces, readable in ~1 µs.

Neither half of the store tells anyone when a transaction commits, and asking costs a
statement. Every process that writes through :class:`~warehouse.store.Store` (the API
processes, the workers, the pipeline, the CLI) therefore writes 16 fresh random bytes into
a small file in the data directory *after* each commit, and each API process keeps its
caches (keys, mart versions, pages) keyed by those bytes. A
reader reads the token *before* it opens its transaction, so whatever it then reads and
caches under that token is at least as new as the token; the next commit anywhere
replaces the token and every such entry stops matching.

The file is mapped into memory (shared), so reading the token is a 16-byte copy that
neither makes a system call nor releases the GIL (a released GIL costs the event loop a
wait behind the worker threads); a torn read yields a value never seen before, which only
costs a cache miss. Analysts' sessions are read-only, so they have nothing to signal.

At scale (the publishing database on PostgreSQL) the writers are on several machines, and
a file of one machine does not see them: :class:`SharedChangeSignal` keeps the tokens in
two PostgreSQL sequences instead, which every writer advances after its commit (sequences
are outside transactions: the new value is seen by every session at once). An API process
reads them once per request, before it reads anything else: :meth:`SharedChangeSignal.fresh`,
one query that every request arriving while none is under way shares (so a burst of N
requests costs a query or two, not N).
"""

from __future__ import annotations

import asyncio
import logging
import mmap
import os
import random
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine

log = logging.getLogger(__name__)

TOKEN_BYTES = 16
# Two tokens side by side: [0:16] moves on every committed write; [16:32] on every write
# except an API request's, which never touches ``api_keys`` (keys are minted and revoked
# through the CLI and Store.run), so resolved keys survive a burst of POST /posts.
_SIZE = 2 * TOKEN_BYTES


# The tokens a request read when it arrived (SharedChangeSignal.fresh, set by the API's
# edge): what its transaction reads is at least that new, so it may be cached under them.
request_tokens: ContextVar[tuple[bytes, bytes] | None] = ContextVar(
    "murmur_change_tokens", default=None
)


def _never_seen() -> bytes:
    return random.randbytes(TOKEN_BYTES)


class ChangeSignal:
    """The token file of one store: ``token()`` to read it, ``bump()`` after a commit.

    ``sees_every_writer``: whether every process that writes the store writes this file,
    which holds when both halves are files of one machine. At scale (PostgreSQL, writers on
    several machines) it does not, and the tokens then never repeat: no cache is trusted.
    """

    def __init__(self, path: Path, *, sees_every_writer: bool = True) -> None:
        self.path = path
        self.sees_every_writer = sees_every_writer
        self.shared = False  # whether the API reads the tokens per request (fresh())
        self._map: mmap.mmap | None = None
        self._lock = threading.Lock()

    def _open(self) -> mmap.mmap:
        with self._lock:
            if self._map is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    if os.fstat(fd).st_size < _SIZE:
                        os.pwrite(fd, random.randbytes(_SIZE), 0)
                    self._map = mmap.mmap(fd, _SIZE)
                finally:
                    os.close(fd)
            return self._map

    def token(self) -> bytes:
        """The current token (changes whenever any process commits a write)."""
        if not self.sees_every_writer:
            return random.randbytes(TOKEN_BYTES)
        return (self._map or self._open())[:TOKEN_BYTES]

    def local_token(self) -> bytes:
        """The file's token even where it is not trusted: it moves on every commit of a
        process on this machine (at scale, not of every writer; a bound in time must cover
        the others)."""
        return (self._map or self._open())[:TOKEN_BYTES]

    def keys_token(self) -> bytes:
        """A token that every write except an API request's changes (what key caches need)."""
        if not self.sees_every_writer:
            return random.randbytes(TOKEN_BYTES)
        return (self._map or self._open())[TOKEN_BYTES:_SIZE]

    async def fresh(self) -> tuple[bytes, bytes]:
        """The tokens as of now (a file's: read where they are needed, at no cost)."""
        return self.token(), self.keys_token()

    def bump(self, *, keys: bool = True) -> None:
        """Announce a committed write: every cache keyed by the old token stops matching."""
        found = self._map or self._open()
        # Not secrets: 128 random bits only need to differ from every earlier token.
        found[:TOKEN_BYTES] = random.randbytes(TOKEN_BYTES)
        if keys:
            found[TOKEN_BYTES:_SIZE] = random.randbytes(TOKEN_BYTES)

    def close(self) -> None:
        with self._lock:
            if self._map is not None:
                self._map.close()
                self._map = None


# Both tokens in one round trip; a sequence's last_value is the newest any session drew.
READ_TOKENS = (
    "SELECT (SELECT last_value FROM murmur_changes), (SELECT last_value FROM murmur_key_changes)"
)
BUMP = "SELECT nextval('murmur_changes')"
BUMP_WITH_KEYS = "SELECT nextval('murmur_changes'), nextval('murmur_key_changes')"


class SharedChangeSignal(ChangeSignal):
    """The tokens of a store whose writers are on several machines: two PostgreSQL sequences.

    ``bump()`` advances them after each commit (and the machine's file, for its
    ``local_token`` readers); ``fresh()`` reads them for a request, which then finds them in
    ``token()`` and ``keys_token()``. Outside a request (a worker, the pipeline) the tokens
    never repeat, as before: only the API caches.
    """

    def __init__(self, path: Path, engine: Engine) -> None:
        super().__init__(path, sees_every_writer=False)
        self.shared = True
        self.engine = engine
        # One connection, used by one thread: reads of the tokens queue behind each other.
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="change-tokens")
        self._connection: Any = None
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Coalesced] = (
            weakref.WeakKeyDictionary()
        )

    def token(self) -> bytes:
        read = request_tokens.get()
        return read[0] if read is not None else _never_seen()

    def keys_token(self) -> bytes:
        read = request_tokens.get()
        return read[1] if read is not None else _never_seen()

    def bump(self, *, keys: bool = True) -> None:
        super().bump(keys=keys)
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql(BUMP_WITH_KEYS if keys else BUMP)
                conn.commit()
        except Exception:
            # The write is committed; until the next bump the other replicas' caches may
            # answer what was there before it.
            log.exception("the change tokens could not be advanced after a commit")

    async def fresh(self) -> tuple[bytes, bytes]:
        """The tokens as read by a query that began after this call (shared with others)."""
        loop = asyncio.get_running_loop()
        pending = self._pending.get(loop)
        if pending is None:
            pending = self._pending[loop] = _Coalesced(loop, self._reader, self._read)
        return await pending.next()

    def _read(self) -> tuple[bytes, bytes]:
        import psycopg

        try:
            if self._connection is None or self._connection.closed:
                url = self.engine.url.set(drivername="postgresql")
                self._connection = psycopg.connect(
                    url.render_as_string(hide_password=False), autocommit=True
                )
            changes, keys = self._connection.execute(READ_TOKENS).fetchone()
        except Exception:
            log.warning("the change tokens could not be read: nothing cached is trusted")
            if self._connection is not None:
                self._connection.close()
            self._connection = None
            return _never_seen(), _never_seen()
        return int(changes).to_bytes(TOKEN_BYTES, "big"), int(keys).to_bytes(TOKEN_BYTES, "big")

    def close(self) -> None:
        super().close()
        self._reader.shutdown(wait=True)
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class _Coalesced:
    """One read of the tokens at a time; a caller gets the first read begun after it asked."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        reader: ThreadPoolExecutor,
        read: Any,
    ) -> None:
        self.loop = loop
        self.reader = reader
        self.read = read
        self.waiting: asyncio.Future[tuple[bytes, bytes]] | None = None
        self.running = False

    async def next(self) -> tuple[bytes, bytes]:
        if self.waiting is None:
            self.waiting = self.loop.create_future()
        waiting = self.waiting
        if not self.running:
            self._start()
        return await asyncio.shield(waiting)

    def _start(self) -> None:
        # Those waiting now get this read; whoever asks from here on, the next one.
        waiting, self.waiting = self.waiting, None
        if waiting is None:
            self.running = False
            return
        self.running = True
        try:
            done = self.loop.run_in_executor(self.reader, self.read)
        except RuntimeError:  # the store was closed: its queries refuse, as they say
            self.running = False
            waiting.set_result((_never_seen(), _never_seen()))
            return

        def settle(read: asyncio.Future[tuple[bytes, bytes]]) -> None:
            if read.cancelled() or read.exception() is not None:
                waiting.set_result((_never_seen(), _never_seen()))
            else:
                waiting.set_result(read.result())
            self._start()

        done.add_done_callback(settle)
