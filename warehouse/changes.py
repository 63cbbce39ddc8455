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
"""

from __future__ import annotations

import mmap
import os
import random
import threading
from pathlib import Path

TOKEN_BYTES = 16
# Two tokens side by side: [0:16] moves on every committed write; [16:32] on every write
# except an API request's, which never touches ``api_keys`` (keys are minted and revoked
# through the CLI and Store.run), so resolved keys survive a burst of POST /posts.
_SIZE = 2 * TOKEN_BYTES


class ChangeSignal:
    """The token file of one store: ``token()`` to read it, ``bump()`` after a commit.

    ``sees_every_writer``: whether every process that writes the store writes this file,
    which holds when both halves are files of one machine. At scale (PostgreSQL, writers on
    several machines) it does not, and the tokens then never repeat: no cache is trusted.
    """

    def __init__(self, path: Path, *, sees_every_writer: bool = True) -> None:
        self.path = path
        self.sees_every_writer = sees_every_writer
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
