"""A full disk under the publishing database (issue 32, point 5; issue 50, point 3).

The data directory lives on a small tmpfs the test mounts (root only; skipped where the
mount is refused), filled to the last byte with a file of the test's own. A write then meets
SQLite's disk-full error (SQLITE_FULL), which the API answers 503 SERVICE_UNAVAILABLE in the
envelope with Retry-After, having written nothing; once space returns, the same request
(same Idempotency-Key) succeeds and the post exists once, with no restart. The doctor and
the pipeline name a full disk as one, in one line, never as damage.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.settings import Settings
from murmur.logs import configure_logging
from tests.posts.helpers import post_body
from tests.support import (
    LiveServer,
    Tenant,
    assert_error,
    new_tenant,
    run_checked,
    start_server,
)

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

SIZE = "48m"
MURMUR = [sys.executable, "-m", "murmur"]


@contextlib.contextmanager
def _tmpfs() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="murmur-full-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(root)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        root.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)
        root.rmdir()


@pytest.fixture(scope="module")
def small_disk() -> Iterator[tuple[LiveServer, Path]]:
    configure_logging()
    with _tmpfs() as root:
        live = start_server(Settings(data_dir=root / "data"))
        try:
            yield live, root
        finally:
            live.stop()


def _fill(root: Path) -> Path:
    """Write to ``root`` until the filesystem refuses a byte more."""
    filler = root / "filler"
    chunk = b"\0" * (1 << 20)
    with filler.open("wb", buffering=0) as out:
        for size in (1 << 20, 1 << 12, 1):
            try:
                while True:
                    out.write(chunk[:size])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    return filler


def _posts(server: LiveServer, workspace_id: str) -> list[str]:
    def work(cur: Any) -> list[str]:
        cur.execute("SELECT id FROM posts WHERE workspace_id = ?", [workspace_id])
        return [str(row[0]) for row in cur.fetchall()]

    return server.store.run(work)


def test_a_full_disk_answers_503_and_recovers(small_disk: tuple[LiveServer, Path]) -> None:
    server, root = small_disk
    tenant: Tenant = new_tenant(server)
    api = tenant.api
    api.ok(api.post("/posts", json=post_body()), 201)  # the store works
    # The next write must grow a file: the WAL is emptied into the database first.
    with contextlib.closing(sqlite3.connect(root / "data" / "publishing.sqlite")) as con:
        assert con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    before = _posts(server, tenant.workspace_id)
    key = str(uuid.uuid4())
    body = post_body(text="Written when space returns")
    filler = _fill(root)
    try:
        response = api.post("/posts", json=body, idempotency_key=key)
        error = assert_error(response, 503, "SERVICE_UNAVAILABLE")
        assert response.headers["Retry-After"].isdigit()
        assert "retry" in error["message"].lower()
        assert _posts(server, tenant.workspace_id) == before  # nothing half-written
        # Reads still work; the readiness probe, which opens the lake's catalog, fails.
        listed = api.ok(api.get("/posts", params={"limit": 100}))["items"]
        assert sorted(p["id"] for p in listed) == sorted(before)
        probe = httpx.get(f"{server.base_url}/readyz", timeout=30)
        probe_error = assert_error(probe, 503, "SERVICE_UNAVAILABLE")
        assert probe_error["message"] == (
            "The store is unavailable: the disk under the data directory is full."
        )
        assert probe.headers["Retry-After"].isdigit()
    finally:
        os.unlink(filler)
    assert httpx.get(f"{server.base_url}/readyz", timeout=30).status_code == 200
    post = api.ok(api.post("/posts", json=body, idempotency_key=key), 201)
    assert post["text"] == "Written when space returns"
    assert sorted(_posts(server, tenant.workspace_id)) == sorted([*before, post["id"]])
    api.close()


@contextlib.contextmanager
def _held_open(data_dir: Path) -> Iterator[None]:
    """Both databases open in this process, as a running API holds them: their WAL and
    shared-memory files exist, so SQLite opens them on a full disk, and a run gets as far as
    its steps' writes."""
    with contextlib.ExitStack() as stack:
        for name in ("publishing.sqlite", "lake.sqlite"):
            con = stack.enter_context(contextlib.closing(sqlite3.connect(data_dir / name)))
            con.execute("SELECT count(*) FROM sqlite_master").fetchall()
        yield


def test_doctor_says_disk_full_in_one_line() -> None:
    """Not "the catalog is damaged; restore a backup" (SQLite cannot open the catalog's WAL
    without room for its shared memory): a restore would lose every write since the backup."""
    with _tmpfs() as root:
        env = dict(os.environ, MURMUR_DATA_DIR=str(root / "data"), COLUMNS="400")
        run_checked([*MURMUR, "init"], env=env, timeout=120)
        filler = _fill(root)
        try:
            doctor = run_checked(
                [*MURMUR, "doctor", "--no-repair"], env=env, timeout=120, returncode=1
            )
        finally:
            os.unlink(filler)
        output = doctor.stdout + doctor.stderr
        problems = [line.strip() for line in output.splitlines() if "problem:" in line]
        assert problems == [
            f"problem: disk full: the disk under {root / 'data'} has no space left and every"
            " write fails meanwhile; a full disk is not damage (a restore would only lose the"
            " writes since the backup): free space, then `murmur doctor` again"
        ], output
        assert "damaged" not in output
        assert "Not healthy." in doctor.stdout
        assert "Traceback" not in output
        again = run_checked([*MURMUR, "doctor", "--no-repair"], env=env, timeout=120)
        assert "Healthy." in again.stdout


def test_the_pipeline_says_disk_full_in_one_line() -> None:
    """With the databases held open (an API running), the run gets to its steps and fails
    on the disk: one line says so, where Dagster's traces ran to 190 lines."""
    with _tmpfs() as root:
        data = root / "data"
        env = dict(os.environ, MURMUR_DATA_DIR=str(data), COLUMNS="400")
        env.pop("DAGSTER_HOME", None)
        run_checked([*MURMUR, "init"], env=env, timeout=120)
        with _held_open(data):
            filler = _fill(root)
            try:
                run = run_checked(
                    [*MURMUR, "pipeline", "run", "--no-ingest"], env=env, timeout=300, returncode=1
                )
            finally:
                os.unlink(filler)
        output = run.stdout + run.stderr
        assert run.stderr.splitlines() == [
            f"Stopped: disk full: the disk under {data} has no space left and every write"
            " fails meanwhile; a full disk is not damage (a restore would only lose the writes"
            " since the backup): free space, then `murmur pipeline run` again"
        ], output
        (summary,) = [ln for ln in run.stdout.splitlines() if ln.startswith("Pipeline failed")]
        assert summary.startswith("Pipeline failed (insights all): "), run.stdout
        assert summary.endswith("; days due again next run: none."), summary
