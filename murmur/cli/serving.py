"""Where a data directory's API listens: each serving process's record of its address.

``murmur serve --port 9000`` (or ``up``) listens where its command line says, which no other
command can learn from the settings: ``murmur dashboard`` in another shell printed ``:8000``
whatever port served. So each API process (murmur/cli/host.py) writes
``<data dir>/serving/<pid>.json`` once its port is bound, and holds an exclusive lock on it
while it serves. A record whose lock can be taken is a process that is gone (a ``kill -9``
leaves its file; the kernel drops its lock): it is skipped, so a reused pid is never
mistaken for a server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

FOLDER = "serving"


@dataclass
class Serving:
    """This process's record, locked until :meth:`close`."""

    path: Path
    file: IO[str]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        self.file.close()


def record(data_dir: Path, host: str, port: int) -> Serving | None:
    """Say that this process serves ``data_dir``'s API on ``host:port``; None if it cannot."""
    from warehouse.files import private_dir

    try:
        folder = private_dir(data_dir / FOLDER)
        path = folder / f"{os.getpid()}.json"
        file = path.open("w", encoding="utf-8")
    except OSError:
        return None  # a read-only data directory serves all the same; the link says the settings'
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        json.dump({"host": host, "port": port, "pid": os.getpid()}, file)
        file.flush()
    except OSError:
        file.close()
        return None
    return Serving(path, file)


def running(data_dir: Path) -> tuple[str, int] | None:
    """The host and port of an API serving ``data_dir`` now (the latest started), if any."""
    dated = []
    with contextlib.suppress(OSError):
        for path in (data_dir / FOLDER).glob("*.json"):
            with contextlib.suppress(OSError):
                dated.append((path.stat().st_mtime, path))
    for _, path in sorted(dated, reverse=True):
        try:
            with path.open(encoding="utf-8") as file:
                try:
                    fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    found = json.load(file)  # locked: its process serves
                    return str(found["host"]), int(found["port"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # gone meanwhile, or still being written
    return None


def link_host(host: str) -> str:
    """``host`` as a browser on this machine reaches it (a wildcard is loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"[{host}]" if ":" in host else host
