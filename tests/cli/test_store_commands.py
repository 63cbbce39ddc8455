"""Two stores never on one Quack port; `murmur doctor`; unparsable HTTP in the envelope."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx

from api.app import create_app
from api.server import server_options
from murmur.settings import Settings
from tests.support import HANG_SECONDS, free_port, serve_in_thread

MURMUR = [sys.executable, "-m", "murmur"]


def _env(data_dir: Path, quack_port: int) -> dict[str, str]:
    return dict(
        os.environ,
        MURMUR_DATA_DIR=str(data_dir),
        MURMUR_PORT=str(free_port()),
        MURMUR_QUACK_PORT=str(quack_port),
    )


def _wait_for_api(proc: subprocess.Popen[str], env: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{env['MURMUR_PORT']}/api/public/v1/openapi.json"
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "murmur serve did not answer"
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)


def test_a_second_store_asking_for_a_taken_quack_port_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    port = free_port()
    first_env = _env(tmp_path / "a", port)
    first = subprocess.Popen([*MURMUR, "serve"], env=first_env, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_api(first, first_env)
        second_env = _env(tmp_path / "b", port)
        second = subprocess.run(
            [*MURMUR, "serve"], env=second_env, capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 1
        refusal = [line for line in second.stderr.splitlines() if "Cannot host the store" in line]
        assert len(refusal) == 1, second.stderr
        assert f"127.0.0.1:{port} is already in use" in second.stderr.replace("\n", "")
        assert "Traceback" not in second.stderr
        assert not (tmp_path / "b" / "store.host.json").exists()
        # The first store still serves, alone, on its port.
        host = json.loads((tmp_path / "a" / "store.host.json").read_text())
        assert host["uri"] == f"quack:127.0.0.1:{port}"
        _wait_for_api(first, first_env)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    assert first.returncode == 0


STALE_INDEX = textwrap.dedent("""
    import os, sys, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("SET checkpoint_threshold = '1GB'")
    con.execute("CREATE INDEX stale_dest_post ON post_destinations (post_id)")
    con.execute("CHECKPOINT")
    for i in range(20):
        con.execute(
            "INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform,"
            " status, created_at, updated_at) VALUES (?, ?, 'ws', 'acc', 'x', 'pending',"
            " TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01')",
            [f"dst_{i}", f"post_{i}"],
        )
    os._exit(0)
""")


def test_doctor_reports_and_repairs_loose_files_and_a_dead_host_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = _env(data_dir, 0)
    init = subprocess.run([*MURMUR, "init"], env=env, capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    loose = data_dir / "media" / "left-by-hand.bin"
    loose.write_bytes(b"x")
    loose.chmod(0o644)
    (data_dir / "store.host.json").write_text(
        json.dumps({"uri": "quack:127.0.0.1:1", "pid": 2**22 + 12345, "store_path": "x"})
    )
    check = subprocess.run(
        [*MURMUR, "doctor", "--no-repair"], env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 1, check.stdout + check.stderr
    assert "left-by-hand.bin" in check.stdout
    assert "Not healthy." in check.stdout
    fixed = subprocess.run(
        [*MURMUR, "doctor"], env=env, capture_output=True, text=True, timeout=120
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Healthy." in fixed.stdout
    assert (loose.stat().st_mode & 0o077) == 0
    assert not (data_dir / "store.host.json").exists()


def test_an_index_left_stale_by_another_engine_is_rebuilt_when_murmur_opens_the_store(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = _env(data_dir, 0)
    init = subprocess.run([*MURMUR, "init"], env=env, capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    store = str(data_dir / "murmur.duckdb")
    for code in (STALE_INDEX, "import sys, duckdb; duckdb.connect(sys.argv[1]).close()"):
        done = subprocess.run([sys.executable, "-c", code, store], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    doctor = subprocess.run(
        [*MURMUR, "doctor"], env=env, capture_output=True, text=True, timeout=120
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    # Opening the store found the index disagreeing with its table and rebuilt it.
    assert "store.index_stale" in doctor.stderr
    assert "store.index_rebuilt" in doctor.stderr
    assert "Healthy." in doctor.stdout


def test_a_request_the_http_parser_refuses_is_answered_in_the_envelope(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", quack_port=0)
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
