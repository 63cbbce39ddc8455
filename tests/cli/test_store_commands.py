"""Two APIs never on one port by chance; `murmur doctor`; unparsable HTTP in the envelope."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from api.app import create_app
from api.server import server_options
from domain.workspaces.service import bootstrap_test_workspace
from tests.support import HANG_SECONDS, answers, embedded_settings, free_port, serve_in_thread

MURMUR = [sys.executable, "-m", "murmur"]


def _env(data_dir: Path, port: int | None = None) -> dict[str, str]:
    return dict(
        os.environ,
        MURMUR_DATA_DIR=str(data_dir),
        MURMUR_PORT=str(port or free_port()),
    )


def _init(data_dir: Path) -> None:
    """What `murmur init` makes (the store and the test workspace), in this process."""
    # A copy of an empty store: creating one in a process of its own cost ~2 CPU-s a test.
    with embedded_settings(data_dir).open_store(prepare_lake=False) as store:
        store.run(bootstrap_test_workspace)


def _wait_for_api(proc: subprocess.Popen[str], env: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{env['MURMUR_PORT']}/api/public/v1/openapi.json"
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "murmur serve did not answer"
        if answers(url):
            return
        time.sleep(0.1)


def test_a_second_api_asking_for_a_taken_port_is_refused_in_one_line(tmp_path: Path) -> None:
    port = free_port()
    embedded_settings(tmp_path / "a")  # a new store, copied: the claim is the port's
    first_env = _env(tmp_path / "a", port)
    first = subprocess.Popen([*MURMUR, "serve"], env=first_env, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_api(first, first_env)
        # Another data directory or the same one: a port is one API's unless both share it.
        for data_dir in (tmp_path / "b", tmp_path / "a"):
            second = subprocess.run(
                [*MURMUR, "serve"],
                env=_env(data_dir, port),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert second.returncode == 1
            refusal = [line for line in second.stderr.splitlines() if "Refused" in line]
            assert len(refusal) == 1, second.stderr
            assert f"127.0.0.1:{port} is in use" in second.stderr.replace("\n", "")
            assert "Traceback" not in second.stderr
        _wait_for_api(first, first_env)  # the first still serves, alone, on its port
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    assert first.returncode == 0


def test_doctor_checks_both_halves_and_repairs_loose_files(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = _env(data_dir)
    _init(data_dir)
    loose = data_dir / "media" / "left-by-hand.bin"
    loose.write_bytes(b"x")
    loose.chmod(0o644)
    check = subprocess.run(
        [*MURMUR, "doctor", "--no-repair"], env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 1, check.stdout + check.stderr
    assert "left-by-hand.bin" in check.stdout
    assert "Publishing database: sqlite" in check.stdout
    assert "Lake: sqlite:" in check.stdout
    assert "Not healthy." in check.stdout
    fixed = subprocess.run(
        [*MURMUR, "doctor"], env=env, capture_output=True, text=True, timeout=120
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Healthy." in fixed.stdout
    assert (loose.stat().st_mode & 0o077) == 0


def test_doctor_reports_a_damaged_publishing_database(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = _env(data_dir)
    _init(data_dir)
    database = data_dir / "publishing.sqlite"
    # Damage the headers of pages past the first (the one SQLite needs to open the file).
    with database.open("r+b") as fh:
        for page in range(2, 12):
            fh.seek((page - 1) * 4096)
            fh.write(b"\xff" * 16)
    check = subprocess.run(
        [*MURMUR, "doctor"], env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 1, check.stdout + check.stderr
    assert "Not healthy." in check.stdout
    assert "problem" in check.stderr or "Error" in check.stderr


def test_a_request_the_http_parser_refuses_is_answered_in_the_envelope(tmp_path: Path) -> None:
    settings = embedded_settings(tmp_path / "data")
    running = serve_in_thread(
        create_app(settings),
        **{k: v for k, v in server_options().items() if k not in {"log_config", "access_log"}},
    )
    try:
        host, port = running.root.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /api/public/v1/accounts HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    finally:
        running.stop()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    envelope = json.loads(body)
    assert envelope["success"] is False
    assert envelope["error"]["code"] == "VALIDATION_ERROR"
    assert envelope["request_id"].startswith("req_")
