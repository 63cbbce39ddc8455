"""Owner-only files: the data directory holds every tenant's posts, messages and secrets."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


def private_dir(path: Path) -> Path:
    """Make ``path`` (and this process's later files) reachable by the owner alone.

    The umask is the one setting every writer honours, DuckDB's WAL and checkpoint files,
    media, landing files, logs and Dagster's storage included, so it is set here for the
    whole process: a Murmur process writes nothing another local user should read. The
    directory itself is 0700 even if it existed, so files made before are out of reach too.
    """
    os.umask(0o077)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not stat.S_IMODE(path.stat().st_mode) & 0o077:
        return path  # made by Murmur under this umask: its files are owner-only already
    path.chmod(0o700)
    # A directory made before with a looser umask: so were its files (the store, its WAL,
    # the secrets beside it).
    for file in path.iterdir():
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if file.is_file() and stat.S_IMODE(file.stat().st_mode) & 0o077:
                file.chmod(0o600)
    return path
