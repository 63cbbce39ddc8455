"""What a commit names is on disk first: the lake's new Parquet files and an upload's bytes.

DuckLake fsyncs its catalog but not the Parquet files a commit names (strace, DuckDB 1.5.5), and
an upload used to be renamed into place unflushed: after a power cut a committed snapshot
could name an empty file and an acknowledged upload come back empty. Each test watches the
process's fsync calls (the real call, recorded on its way: a power cut cannot be staged here).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from core.settings import Settings
from tests.posts.helpers import PNG, upload
from tests.support import LiveServer, Tenant
from warehouse.store import StoreCursor


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths this process fsyncs while the test runs."""
    paths: list[str] = []
    real: Callable[[int], None] = os.fsync

    def fsync(fd: int) -> None:
        paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return paths


def test_a_lake_commit_flushes_the_files_it_names_and_their_folder(
    tmp_path: Path, synced: list[str]
) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    folder = settings.lake.local_data
    assert folder is not None
    with settings.open_lakehouse() as lake:
        before = set(folder.rglob("*.parquet"))
        synced.clear()

        def write(cur: StoreCursor) -> None:
            cur.execute(
                "INSERT INTO mart_snapshots (mart, partition_key, computed_at, rows, run_id)"
                " SELECT 'm' || i, 'p', now(), 1, 'r' FROM range(50000) t(i)"
            )

        lake.run(write)
    written = set(folder.rglob("*.parquet")) - before
    assert written, "the insert wrote no file"
    for file in written:
        assert str(file) in synced
        assert str(file.parent) in synced


def test_an_upload_is_flushed_before_it_is_acknowledged(
    server: LiveServer, tenant: Tenant, synced: list[str]
) -> None:
    media_dir = server.settings.media_dir.resolve()
    media = tenant.api.ok(upload(tenant.api, PNG), 201)
    assert (media_dir / f"{media['id']}.png").read_bytes() == PNG
    parts = [p for p in synced if p.startswith(f"{media_dir}/.upload-")]
    assert parts, synced  # the bytes, under their temporary name
    assert str(media_dir) in synced  # the rename that gives them their final one
