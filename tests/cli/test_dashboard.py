"""`murmur dashboard` and `murmur up`'s one-time sign-in link, as real processes.

The link a command prints is used over the real API on loopback, as the dashboard uses it:
its token, from the fragment, to ``POST /sessions`` without a key.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest

from api.app import BASE_PATH
from core.settings import Settings
from domain.workspaces.service import bootstrap_test_workspace
from tests.cli.test_keys_and_pipeline import MURMUR, _env, _start_up, _stop_up, murmur
from tests.engagement.conftest import wait_for
from tests.support import answers, assert_error, embedded_settings, free_port, start_server

LINK = re.compile(r"http://127\.0\.0\.1:(\d+)/dashboard/#token=([\w-]+)")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A new store's directory: a copy of an empty store (what a first command would make)."""
    made = (tmp_path / "data").resolve()
    embedded_settings(made)
    return made


def _redeem(root: str, token: str) -> httpx.Response:
    return httpx.post(f"{root}{BASE_PATH}/sessions", json={"token": token}, timeout=30)


def test_murmur_dashboard_prints_a_link_whose_token_signs_in_once(data_dir: Path) -> None:
    # The test workspace as `murmur init` makes it (the function it calls), in this process.
    with Settings(data_dir=data_dir).open_store(prepare_lake=False) as store:
        test_workspace = store.run(bootstrap_test_workspace)
    done = murmur(data_dir, "dashboard", MURMUR_PORT="8123")
    assert done.returncode == 0, done.stdout + done.stderr
    # The link alone on stdout (for a script); what it is on stderr.
    link = done.stdout.strip()
    found = LINK.fullmatch(link)
    assert found, done.stdout
    assert found.group(1) == "8123"  # the settings' host and port
    assert "No Murmur API serves" in done.stderr  # and it says so: none runs
    assert test_workspace in done.stderr
    assert "10 min" in done.stderr
    token = found.group(2)

    served = start_server(Settings(data_dir=data_dir))
    try:
        session = _redeem(served.base_url, token)
        assert session.status_code == 201, session.text
        assert session.json()["data"]["workspace_id"] == test_workspace
        assert_error(_redeem(served.base_url, token), 401, "API_KEY_INVALID")
        # Each run prints a new link, for the workspace asked for.
        other = murmur(data_dir, "dashboard", "--workspace", test_workspace).stdout.strip()
        other_match = LINK.fullmatch(other)
        assert other_match
        assert other_match.group(2) != token
        assert _redeem(served.base_url, other_match.group(2)).status_code == 201
    finally:
        served.stop()


@pytest.mark.timeout(240)
def test_murmur_dashboard_links_to_the_port_a_running_api_serves(
    tmp_path: Path, data_dir: Path
) -> None:
    """Beside `murmur serve --port P`, a shell whose settings say another port gets P."""
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        served = subprocess.Popen(
            [*MURMUR, "serve", "--port", str(port)],
            env=_env(data_dir),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    root = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(f"{root}/healthz") or served.poll() is not None, what="serve")
        done = murmur(data_dir, "dashboard")  # MURMUR_PORT is another free port
        assert done.returncode == 0, done.stdout + done.stderr + log.read_text()
        found = LINK.fullmatch(done.stdout.strip())
        assert found, done.stdout
        assert found.group(1) == str(port)
        assert _redeem(root, found.group(2)).status_code == 201
    finally:
        served.terminate()
        assert served.wait(90) == 0, log.read_text()
    # Stopped, it leaves no record: a later link is the settings' again (the test above).
    assert not list((data_dir / "serving").iterdir())


def test_murmur_dashboard_for_a_missing_workspace_is_refused_in_one_line(
    data_dir: Path,
) -> None:
    done = murmur(data_dir, "dashboard", "--workspace", "ws_nope")
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    assert not done.stdout.strip()
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == ["Refused: No workspace 'ws_nope'."], done.stderr


@pytest.mark.timeout(400)
def test_up_prints_a_sign_in_link_right_after_the_key(tmp_path: Path, data_dir: Path) -> None:
    env = _env(data_dir)
    log = tmp_path / "up.log"
    proc = _start_up(data_dir, log, env)
    try:
        out = log.read_text(errors="replace")
        lines = out.splitlines()
        key_line = next(i for i, line in enumerate(lines) if "Test API key" in line)
        found = LINK.search(lines[key_line + 1])
        assert found, out
        assert found.group(1) == env["MURMUR_PORT"]
        workspace = re.search(r"Test workspace: (ws_\w+)", out)
        assert workspace, out
        assert workspace.group(1) in lines[key_line + 1]
        root = f"http://127.0.0.1:{env['MURMUR_PORT']}"
        session = _redeem(root, found.group(2))
        assert session.status_code == 201, session.text
        assert session.json()["data"]["workspace_id"] == workspace.group(1)
        assert_error(_redeem(root, found.group(2)), 401, "API_KEY_INVALID")
    finally:
        _stop_up(proc, log)
