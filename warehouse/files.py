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


def sync_dir(path: Path) -> None:
    """Make ``path``'s entries (a file created, renamed or removed in it) survive a power cut."""
    _fsync(path, directory=True)


def sync_file(path: Path) -> None:
    """Make the file ``path``, its bytes and its name in its folder, survive a power cut."""
    _fsync(path)
    sync_dir(path.parent)


def sync_new_files(root: Path, since: float) -> int:
    """fsync every file created under ``root`` since ``since`` (epoch seconds), and the folders
    they were created in; how many files.

    For writers that do not flush their own files before the commit that names them: DuckLake
    writes a Parquet file and fsyncs only its catalog (measured with strace, DuckDB 1.5.5), so
    a power cut could leave a committed snapshot naming an empty file. Every folder is
    listed, but files are stat'ed only in folders whose entries changed since (a new file
    changes its folder's mtime): a listing per folder, then the cost of what was written.
    """
    synced = 0
    pending = [str(root)]
    while pending:
        folder = pending.pop()
        try:
            changed = os.stat(folder).st_mtime >= since
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue  # removed meanwhile (the lake's cleanup of expired files)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            elif changed and entry.is_file(follow_symlinks=False):
                synced += _sync_if_newer(entry.path, since)
        if changed:
            _sync_if_newer(folder, since, directory=True)
    return synced


def _sync_if_newer(path: str, since: float, *, directory: bool = False) -> int:
    try:
        if os.stat(path).st_mtime < since:
            return 0
        _fsync(path, directory=directory)
    except FileNotFoundError:
        return 0  # removed meanwhile
    return 1


def _fsync(path: str | Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
