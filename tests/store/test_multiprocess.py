"""The store shared by separate OS processes: the API host, a pipeline writer, an analyst.

Everything here is real: ``murmur serve`` in a subprocess, a second Python process that
reaches the store through ``Store.connect``, and a third that runs exactly the SQL
``murmur attach`` prints in a fresh DuckDB connection.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import HANG_SECONDS, free_port
from warehouse.store import Secrets, Store

MURMUR = shutil.which("murmur") or str(Path(sys.executable).with_name("murmur"))
BASE = "/api/public/v1"
BATCHES = 20
BATCH_ROWS = 32

WRITER = """
import sys
from pathlib import Path
from warehouse.store import Secrets, Store

data_dir, batches = Path(sys.argv[1]), int(sys.argv[2])
with Store.connect(
    data_dir / "murmur.duckdb",
    host_file=data_dir / "store.host.json",
    quack_token=Secrets.load(data_dir).quack_token,
    lock_timeout=20,
) as store:
    assert store.mode == "remote", store.mode
    store.execute_script(
        "CREATE TABLE pipeline_rows (batch INTEGER NOT NULL, i INTEGER NOT NULL, note VARCHAR);"
    )
    for b in range(batches):
        with store.cursor() as cur:
            cur.execute("INSERT INTO pipeline_rows SELECT ?, range, 'row' FROM range(32)", [b])
print("writer ok")
"""

ANALYST = """
import json, sys, time
import duckdb
from warehouse.store import load_extension

sql = sys.stdin.read()
con = duckdb.connect()
for ext in ("httpfs", "quack"):
    load_extension(con, ext)
con.execute(sql)
accounts = con.execute("SELECT count(*) FROM accounts").fetchone()[0]
rows = None
deadline = time.monotonic() + float(sys.argv[1])
while rows is None:
    try:
        rows = con.execute("SELECT count(*) FROM pipeline_rows").fetchone()[0]
    except duckdb.CatalogException:
        if time.monotonic() > deadline:
            raise
        con.execute("CALL quack_clear_cache()")  # the writer's table is newer than our attach
        time.sleep(0.1)
try:
    con.execute("INSERT INTO pipeline_rows VALUES (-1, -1, 'analyst')")
    refused = None
except duckdb.Error as exc:
    refused = str(exc)
print(json.dumps({"accounts": accounts, "pipeline_rows": rows, "write_refused": refused}))
"""

HOLDER = """
import sys, time
from pathlib import Path
from warehouse.store import Secrets, Store

data_dir = Path(sys.argv[1])
start = time.monotonic()
print("trying", flush=True)
with Store.connect(
    data_dir / "murmur.duckdb",
    host_file=data_dir / "store.host.json",
    quack_token=Secrets.load(data_dir).quack_token,
    lock_timeout=60,
) as store, store.cursor() as cur:
    n = cur.execute("SELECT count(*) FROM marker").fetchone()[0]
    print(store.mode, round(time.monotonic() - start, 2), n)
"""


@dataclass
class Served:
    data_dir: Path
    env: dict[str, str]
    base_url: str
    key: str
    openapi: dict[str, Any]


def remote_store(served: Served) -> Store:
    """This test process's handle on the served store (through the host, over Quack)."""
    return Store.connect(
        served.data_dir / "murmur.duckdb",
        host_file=served.data_dir / "store.host.json",
        quack_token=Secrets.load(served.data_dir).quack_token,
        lock_timeout=20,
    )


def run_murmur(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [MURMUR, *args], env=env, capture_output=True, text=True, timeout=90, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """``murmur serve`` in a subprocess over a store in a temporary data directory."""
    data_dir = tmp_path / "data"
    port = free_port()
    env = dict(
        os.environ,
        MURMUR_DATA_DIR=str(data_dir),
        MURMUR_PORT=str(port),
        MURMUR_QUACK_PORT="0",
        MURMUR_STORE_LOCK_TIMEOUT_SECONDS="20",
    )
    key = run_murmur(env, "keys", "create", "--data-dir", str(data_dir)).strip().splitlines()[-1]
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [MURMUR, "serve", "--data-dir", str(data_dir)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}{BASE}"
    try:
        deadline = time.monotonic() + HANG_SECONDS
        openapi: dict[str, Any] | None = None
        while openapi is None:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "murmur serve did not answer within 60 s"
            try:
                resp = httpx.get(f"{base_url}/openapi.json", timeout=2)
                if resp.status_code == 200:
                    openapi = resp.json()
            except httpx.HTTPError:
                time.sleep(0.2)
        assert (data_dir / "store.host.json").exists()
        yield Served(data_dir, env, base_url, key, openapi)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        log.close()


def api_traffic(served: Served, stop: threading.Event, seen: list[tuple[str, int, Any]]) -> None:
    """Reads, and writes when POST /posts exists, until told to stop (and at least a few)."""
    paths = served.openapi["paths"]  # relative to the document's server, the base path
    writes = "post" in paths.get("/posts", paths.get(f"{BASE}/posts", {}))
    headers = {"Authorization": f"Bearer {served.key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=30) as http:
        i = 0
        while i < 12 or not stop.is_set():
            i += 1
            resp = http.get("/accounts", params={"limit": 50})
            seen.append(("GET /accounts", resp.status_code, resp.json()))
            if writes:
                resp = http.post(
                    "/posts",
                    json={"text": f"hi {i}", "platforms": ["x"]},
                    headers={"Idempotency-Key": f"multiprocess-{i}"},
                )
                seen.append(("POST /posts", resp.status_code, resp.json()))
            if i > 400:
                break


def test_api_pipeline_and_analyst_share_the_store(served: Served) -> None:
    env = dict(served.env)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(served.data_dir), str(BATCHES)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    attach_sql = run_murmur(env, "attach", "--data-dir", str(served.data_dir))
    assert "(READ_ONLY)" in attach_sql
    assert "quack:" in attach_sql
    analyst = subprocess.Popen(
        [sys.executable, "-c", ANALYST, str(HANG_SECONDS)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stop = threading.Event()
    seen: list[tuple[str, int, Any]] = []
    traffic = threading.Thread(target=api_traffic, args=(served, stop, seen))
    traffic.start()
    try:
        analyst_out, analyst_err = analyst.communicate(attach_sql, timeout=120)
        writer_out, writer_err = writer.communicate(timeout=120)
    finally:
        stop.set()
        traffic.join(120)
        for proc in (writer, analyst):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)

    # (ii) the pipeline-like writer
    assert writer.returncode == 0, writer_err
    assert "writer ok" in writer_out
    # (iii) the analyst: read everything it asked for, and was refused a write
    assert analyst.returncode == 0, analyst_err
    report = json.loads(analyst_out.strip().splitlines()[-1])
    assert report["accounts"] >= 9  # the test workspace's one account per platform
    assert 0 <= report["pipeline_rows"] <= BATCHES * BATCH_ROWS
    assert report["write_refused"] is not None
    # (i) every API request succeeded
    assert not traffic.is_alive()
    assert len(seen) >= 12
    for what, status, body in seen:
        assert status in (200, 201), (what, status, body)
        assert body["success"] is True, (what, body)

    # No acknowledged write was lost: every batch and every created post is there.
    with remote_store(served) as store:
        assert store.mode == "remote"
        with store.cursor() as cur:
            got = cur.execute("SELECT batch, count(*) FROM pipeline_rows GROUP BY batch").fetchall()
        assert dict(got) == dict.fromkeys(range(BATCHES), BATCH_ROWS)
    created = [body["data"]["id"] for what, _, body in seen if what == "POST /posts"]
    headers = {"Authorization": f"Bearer {served.key}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=30) as http:
        for post_id in created:
            resp = http.get(f"/posts/{post_id}")
            assert resp.status_code == 200, resp.text


def test_without_a_host_the_file_is_opened_directly_and_waited_for(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = Store.connect(
        data_dir / "murmur.duckdb",
        host_file=data_dir / "store.host.json",
        quack_token=Secrets.load(data_dir).quack_token,
        lock_timeout=5,
    )
    try:
        assert store.mode == "direct"
        store.execute_script("CREATE TABLE marker (i INTEGER); INSERT INTO marker VALUES (1);")
        second = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert second.stdout is not None
        # It asks for the file only after this line, and cannot have it while we hold it.
        assert second.stdout.readline().strip() == "trying", second.communicate()
        assert second.poll() is None, second.communicate()
    finally:
        store.close()
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    mode, _waited, marker_rows = out.split()
    assert mode == "direct"
    assert int(marker_rows) == 1


def test_a_change_from_another_process_reaches_the_api_caches_at_once(served: Served) -> None:
    """Cached keys and pages are dropped by a CLI revocation and a remote write (the token)."""
    env, data_dir = served.env, str(served.data_dir)
    key = run_murmur(env, "keys", "create", "--data-dir", data_dir, "--name", "short-lived")
    headers = {"Authorization": f"Bearer {key.strip().splitlines()[-1]}"}
    with httpx.Client(base_url=served.base_url, headers=headers, timeout=30) as http:
        accounts = http.get("/accounts").json()["data"]["items"]
        bluesky = next(a["id"] for a in accounts if a["platform"] == "bluesky")  # text only
        body = {"text": "before", "platforms": [bluesky], "draft": True}
        created = http.post("/posts", json=body, headers={"Idempotency-Key": "mp-cache-1"})
        assert created.status_code == 201, created.text
        post_id = created.json()["data"]["id"]
        for _ in range(2):  # the second answer comes from the caches
            page = http.get("/posts")
            assert page.status_code == 200
            assert page.json()["data"]["items"][0]["text"] == "before"
        with remote_store(served) as store:
            assert store.mode == "remote"
            store.run(
                lambda cur: cur.execute("UPDATE posts SET text = 'after' WHERE id = ?", [post_id])
            )
        assert http.get("/posts").json()["data"]["items"][0]["text"] == "after"
        listed = run_murmur(env, "keys", "list", "--data-dir", data_dir)
        key_id = next(line.split()[0] for line in listed.splitlines() if "short-lived" in line)
        run_murmur(env, "keys", "revoke", key_id, "--data-dir", data_dir)
        refused = http.get("/posts")
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "API_KEY_INVALID"
