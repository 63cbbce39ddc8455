"""The simulator's memory across restarts: an append-only log of what its write side changed.

The generated world is a pure function of (seed, clock), but what clients did through the write
APIs (posts, replies, registered accounts, the admin clock, ids handed out) is not: without this
log a restarted simulator forgets its published posts and answers for their ids as if they were
generated ones. One JSON object per line; a torn last line (a crash mid-write) is skipped.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

VERSION = 1


class Journal:
    """Appends events to ``<state_dir>/seed-<seed>.jsonl`` and replays them at start."""

    def __init__(self, state_dir: Path, seed: int) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        # One file per seed: another seed's posts would get other engagement curves.
        self.path = state_dir / f"seed-{seed}.jsonl"
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def replay(self) -> Iterator[dict[str, Any]]:
        """Every event written so far, oldest first."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        for number, line in enumerate(lines, start=1):
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("simulator journal %s: line %d is not JSON, skipped", self.path, number)
                continue
            if isinstance(event, dict) and event.get("v") == VERSION:
                yield event

    def append(self, kind: str, **fields: Any) -> None:
        """Write one event; flushed at once, so a crash right after loses nothing written."""
        line = json.dumps({"v": VERSION, "kind": kind, **fields}, separators=(",", ":"))
        with self._lock:
            if self._file is None:
                self._file = self.path.open("a", encoding="utf-8")
                if self._file.tell() and not self._ends_with_newline():
                    # A line torn by a crash: end it, so this event starts a line of its own.
                    self._file.write("\n")
            self._file.write(line + "\n")
            self._file.flush()

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as raw:
            raw.seek(-1, 2)
            return raw.read(1) == b"\n"

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
