"""Everything Murmur writes under its data directory is owner-only, whatever the umask."""

from __future__ import annotations

import os
import signal
import stat
import struct
import subprocess
import sys
import uuid
import zlib
from pathlib import Path

import httpx

from tests.support import free_port, run_checked, wait_until_answers

MURMUR = [sys.executable, "-m", "murmur"]


def _png() -> bytes:
    """A valid 1x1 PNG, built by hand."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _loose(root: Path) -> list[str]:
    """Paths under ``root`` that a group or other user could read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {oct(mode)}")
    return found


def _permissive() -> None:
    os.umask(0o022)


def test_store_media_and_landing_files_are_owner_only_under_umask_022(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    env = dict(
        os.environ,
        MURMUR_DATA_DIR=str(data_dir),
        MURMUR_PORT=str(port),
        MURMUR_PLATFORMS_URL="http://127.0.0.1:9",  # never reached: no worker runs here
    )
    made = run_checked([*MURMUR, "keys", "create"], env=env, timeout=120, preexec_fn=_permissive)
    key = made.stdout.strip().splitlines()[-1]
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [*MURMUR, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_permissive
    )
    base = f"http://127.0.0.1:{port}/api/public/v1"
    headers = {"Authorization": f"Bearer {key}"}
    try:
        wait_until_answers(serve, f"{base}/openapi.json", "murmur serve", tmp_path / "serve.log")
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            uploaded = http.post(
                "/media/upload",
                files={"file": ("dot.png", _png(), "image/png")},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            assert uploaded.status_code == 201, uploaded.text
            created = http.post(
                "/posts",
                json={"text": "private", "platforms": ["x"], "draft": True},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            assert created.status_code == 201, created.text
        # While the API runs: both halves of the store and their WALs, the change token, media.
        assert (data_dir / "publishing.sqlite").exists()
        assert (data_dir / "lake.sqlite").exists()
        assert list((data_dir / "media").rglob("*.*")), "the upload left no file"
        assert _loose(data_dir) == []
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(30)
        log.close()
    assert _loose(data_dir) == []


def test_a_store_made_before_is_tightened_when_opened(tmp_path: Path) -> None:
    data_dir = tmp_path / "old"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    store_file = data_dir / "murmur.duckdb"
    store_file.touch()
    store_file.unlink()  # DuckDB makes it; only the directory is left loose here
    run_checked(
        [*MURMUR, "migrate", "--data-dir", str(data_dir)], timeout=120, preexec_fn=_permissive
    )
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert _loose(data_dir) == []
