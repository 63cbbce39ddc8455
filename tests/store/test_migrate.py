"""``murmur migrate``: a ./data made by Murmur before ADR 0002 moves into the new store whole.

The old store is built with the old schema (tests/store/old_schema, as Murmur made it) and
rows made from each column's type (tests/store/old_store.py); after the command, the test
reads every row back from the publishing database and the lake itself and compares.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from tests.store import old_store, test_lake_copy, test_pubdb_copy
from warehouse.pubdb.engine import PubDB

# One worker runs the module: its old store is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

MURMUR = [sys.executable, "-m", "murmur"]

Written = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def old_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Written]:
    """An old store built once (~4 CPU-s), and what each of its tables holds."""
    path = tmp_path_factory.mktemp("old") / "murmur.duckdb"
    return path, old_store.build_old_store(path, {**test_pubdb_copy.KEYS, **test_lake_copy.KEYS})


def _old_data_dir(tmp_path: Path, old_once: tuple[Path, Written]) -> tuple[Settings, Written]:
    """A data directory of the test's own holding a copy of the old store."""
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    shutil.copy(old_once[0], settings.old_store_path)  # its mode too
    return settings, old_once[1]


def _murmur(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MURMUR_DATA_DIR=str(data_dir))
    return subprocess.run(
        [*MURMUR, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_migrate_moves_every_row_of_an_old_data_dir_and_the_service_then_opens_it(
    tmp_path: Path, old_once: tuple[Path, Written]
) -> None:
    settings, written = _old_data_dir(tmp_path, old_once)
    refused = _murmur(settings.data_dir, "keys", "list")
    assert refused.returncode != 0
    assert "murmur migrate" in refused.stderr

    moved = _murmur(settings.data_dir, "migrate")
    assert moved.returncode == 0, moved.stderr
    assert f"{32 * old_store.ROWS_PER_TABLE:,} publishing rows (32 tables)" in moved.stdout
    assert f"{17 * old_store.ROWS_PER_TABLE:,} analytics rows (17 tables)" in moved.stdout
    assert not settings.old_store_path.exists()
    assert settings.old_store_path.with_name("murmur.duckdb.migrated").exists()

    with PubDB.open(settings.pub_url) as db:
        copied = test_pubdb_copy._read_back(db)
    for name in test_pubdb_copy.KEYS:
        key = test_pubdb_copy._key(name)
        assert sorted(copied[name], key=key) == sorted(written[name], key=key), name
    reader = test_lake_copy._lake(settings.data_dir, read_only=True)
    try:
        for table in test_lake_copy.KEYS:
            assert test_lake_copy._rows(reader, table) == test_lake_copy.as_copied(
                table, written[table]
            ), table
    finally:
        reader.close()

    # The service opens the moved store; a second migrate has nothing left to move.
    assert _murmur(settings.data_dir, "keys", "list").returncode == 0
    again = _murmur(settings.data_dir, "migrate")
    assert again.returncode == 0, again.stderr
    assert "No store of an earlier Murmur" in again.stdout


def test_a_migrate_stopped_half_way_runs_again_to_the_end(
    tmp_path: Path, old_once: tuple[Path, Written]
) -> None:
    """The publishing half moved, then the process died: the rerun moves the lake's half."""
    from murmur.migrate import _open_old, _publishing
    from warehouse.store import Store

    settings, _ = _old_data_dir(tmp_path, old_once)
    with Store.open(settings.pub_url, settings.lake, settings.changes_file) as store:
        source = _open_old(settings.old_store_path)
        try:
            _publishing(source, store, lambda _name: None)
        finally:
            source.close()
    moved = _murmur(settings.data_dir, "migrate")
    assert moved.returncode == 0, moved.stderr
    assert "analytics rows (17 tables)" in moved.stdout
    assert not settings.old_store_path.exists()


def test_an_old_store_still_in_use_is_refused_in_one_line(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
            " sys.stdin.read()",
            str(settings.old_store_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        refused = _murmur(settings.data_dir, "migrate")
        assert refused.returncode == 1
        assert "Cannot migrate" in refused.stderr
        assert "still running" in refused.stderr.replace("\n", " ")
        assert "Traceback" not in refused.stderr
    finally:
        holder.kill()
        holder.wait()
    assert settings.old_store_path.exists()
