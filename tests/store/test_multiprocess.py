"""The store shared by separate OS processes, none of which owns it (ADR 0002).

Everything here is real: ``murmur serve`` twice on one data directory (replicas, each on its
own port), ``murmur serve --workers 2`` (two processes on one port), a pipeline process
writing the lake, and an analyst's DuckDB running exactly the SQL ``murmur attach`` prints.

The two replicas serve the module's tests in turn (each test reads only what it wrote):
starting a pair costs ~6 CPU-s.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from benchmarks.servers import settings_env, ssl_context
from core.settings import Settings
from tests.servers import StoreSettings
from tests.support import HANG_SECONDS, answers, free_port

# One worker runs the module: its replicas are started once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

MURMUR = [sys.executable, "-m", "murmur"]
BASE = "/api/public/v1"
BATCHES = 20
BATCH_ROWS = 32

WRITER = """
import sys
from core.settings import Settings

batches = int(sys.argv[1])
with Settings().open_lakehouse() as lake:
    lake.execute_script("CREATE TABLE pipeline_rows (batch INTEGER NOT NULL, i INTEGER NOT NULL);")
    for b in range(batches):
        lake.run(lambda cur: cur.execute(
            "INSERT INTO pipeline_rows SELECT ?, range FROM range(32)", [b]
        ))
print("writer ok")
"""

ANALYST = """
import json, re, sys
import duckdb
from warehouse.extensions import load_extension

sql = re.sub(r"(INSTALL|LOAD) \\w+;", "", sys.stdin.read())
con = duckdb.connect()
for name in ("sqlite", "postgres", "ducklake", "httpfs"):
    load_extension(con, name)
con.execute(sql)
tables = {row[2] for row in con.execute("SHOW ALL TABLES").fetchall()}
joined = con.execute(
    "SELECT p.id, count(*) OVER (PARTITION BY p.workspace_id ORDER BY p.id) AS running,"
    " (SELECT count(*) FROM pipeline_rows) AS lake_rows"
    " FROM posts p JOIN accounts a ON a.workspace_id = p.workspace_id"
    " WHERE a.platform = 'bluesky' AND p.text LIKE 'joined %' ORDER BY p.id"
).fetchall()
refused = {}
for name, statement in (
    ("pub", "DELETE FROM pub.posts"),
    ("lake", "INSERT INTO lake.pipeline_rows VALUES (-1, -1)"),
):
    try:
        con.execute(statement)
        refused[name] = None
    except duckdb.Error as exc:
        refused[name] = str(exc)
print(json.dumps({"tables": sorted(tables), "joined": len(joined),
                  "lake_rows": joined[0][2] if joined else None, "refused": refused}))
"""


@dataclass
class Served:
    data_dir: Path
    env: dict[str, str]
    base_urls: list[str]
    key: str
    procs: list[subprocess.Popen[bytes]]

    def client(self, replica: int, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        return httpx.Client(
            base_url=self.base_urls[replica], headers=headers, timeout=30, verify=ssl_context()
        )


def run_murmur(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [*MURMUR, *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _wait_for(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, f"{url} did not answer\n{log.read_text()[-3000:]}"
        # Ready as a load balancer sees it (docs/operations.md), not by the OpenAPI document,
        # which a new process would first build (~0.5 s of CPU) for nothing.
        if answers(f"{url.removesuffix(BASE)}/readyz"):
            return
        time.sleep(0.1)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[Served]:
    """Two ``murmur serve`` processes on one store (the session's profile), each on a port."""
    tmp_path = tmp_path_factory.mktemp("served")
    data_dir = tmp_path / "data"
    env = dict(os.environ, **settings_env(store_settings(data_dir)))
    key = run_murmur(env, "keys", "create").strip().splitlines()[-1]
    procs: list[subprocess.Popen[bytes]] = []
    urls = []
    try:
        for replica in range(2):
            port = free_port()
            log = tmp_path / f"serve{replica}.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [*MURMUR, "serve", "--port", str(port)],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            procs.append(proc)
            url = f"http://127.0.0.1:{port}{BASE}"
            _wait_for(url, proc, log)
            urls.append(url)
        yield Served(data_dir, env, urls, key, procs)
    finally:
        _stop(procs)


def _bluesky(http: httpx.Client) -> str:
    accounts = http.get("/accounts").json()["data"]["items"]
    return str(next(a["id"] for a in accounts if a["platform"] == "bluesky"))  # text only


def test_two_api_processes_each_take_writes_and_read_each_others_at_once(
    served: Served,
) -> None:
    with served.client(0) as first, served.client(1) as second:
        account = _bluesky(first)
        created: dict[str, int] = {}
        errors: list[str] = []

        def write(http: httpx.Client, replica: int) -> None:
            for i in range(25):
                body = {"text": f"replica {replica} #{i}", "platforms": [account], "draft": True}
                resp = http.post(
                    "/posts", json=body, headers={"Idempotency-Key": f"rep-{replica}-{i}"}
                )
                if resp.status_code != 201:
                    errors.append(resp.text)
                    return
                post_id = resp.json()["data"]["id"]
                created[post_id] = replica
                # The other replica reads it at once: no owner, no replication lag.
                other = second if http is first else first
                seen = other.get(f"/posts/{post_id}")
                if seen.status_code != 200:
                    errors.append(f"{post_id} written by {replica}: {seen.text}")

        threads = [
            threading.Thread(target=write, args=(http, n)) for n, http in enumerate((first, second))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(HANG_SECONDS)
        assert not errors, errors[:3]
        assert len(created) == 50
        for http in (first, second):
            listed = {p["id"] for p in _all(http, "/posts")}
            assert set(created) <= listed


def _all(http: httpx.Client, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if cursor:
            params["cursor"] = cursor
        data = http.get(path, params=params).json()["data"]
        items += data["items"]
        cursor = data["pagination"]["next_cursor"]
        if not cursor:
            return items


def test_api_pipeline_and_analyst_share_the_store(served: Served) -> None:
    with served.client(0) as http:
        account = _bluesky(http)
        for i in range(3):
            body = {"text": f"joined {i}", "platforms": [account], "draft": True}
            resp = http.post("/posts", json=body, headers={"Idempotency-Key": f"join-{i}"})
            assert resp.status_code == 201, resp.text
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(BATCHES)],
        env=served.env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert writer.returncode == 0, writer.stderr
    if "MURMUR_PUBLISHING_URL" in served.env:
        # At scale the analyst attaches as the analysts' role, which this gives its grants.
        run_murmur(served.env, "analysts", "grant")
    attach_sql = run_murmur(served.env, "attach")
    assert "READ_ONLY" in attach_sql
    analyst = subprocess.run(
        [sys.executable, "-c", ANALYST],
        input=attach_sql,
        env=served.env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert analyst.returncode == 0, analyst.stderr
    report = json.loads(analyst.stdout.strip().splitlines()[-1])
    # One catalog: the publishing tables and the lake's, joined in one statement.
    assert {"posts", "accounts", "pipeline_rows", "mart_post_daily"} <= set(report["tables"])
    assert report["joined"] == 3
    assert report["lake_rows"] == BATCHES * BATCH_ROWS
    # Read-only on both sides, refused by the engine.
    assert report["refused"]["pub"] is not None
    assert report["refused"]["lake"] is not None
    # Both APIs still answer, and neither lost a post.
    for replica in range(2):
        with served.client(replica) as http:
            assert len([p for p in _all(http, "/posts") if p["text"].startswith("joined")]) == 3


def test_a_change_from_another_process_reaches_the_api_caches_at_once(served: Served) -> None:
    """Cached keys and pages are dropped by a CLI revocation and another process's write."""
    env = served.env
    key = run_murmur(env, "keys", "create", "--name", "short-lived").strip().splitlines()[-1]
    with served.client(0, key) as http, served.client(1, key) as other:
        body = {"text": "before", "platforms": [_bluesky(http)], "draft": True}
        created = http.post("/posts", json=body, headers={"Idempotency-Key": "mp-cache-1"})
        assert created.status_code == 201, created.text
        post_id = created.json()["data"]["id"]
        for _ in range(2):  # the second answer comes from the caches
            page = http.get("/posts")
            assert page.status_code == 200
            assert page.json()["data"]["items"][0]["text"] == "before"
        edited = other.patch(
            f"/posts/{post_id}", json={"text": "after"}, headers={"Idempotency-Key": "mp-edit"}
        )
        assert edited.status_code == 200, edited.text
        assert http.get("/posts").json()["data"]["items"][0]["text"] == "after"
        listed = run_murmur(env, "keys", "list")
        key_id = next(line.split()[0] for line in listed.splitlines() if "short-lived" in line)
        run_murmur(env, "keys", "revoke", key_id)
        for client in (http, other):
            refused = client.get("/posts")
            assert refused.status_code == 401
            assert refused.json()["error"]["code"] == "API_KEY_INVALID"


def test_each_replicas_caches_hold_and_a_write_on_either_is_seen_by_the_other_at_once(
    served: Served,
) -> None:
    """On both profiles, both orders. A row changed behind Murmur's back (SQL that tells no
    one) is not seen: the replicas answer from their caches, which at scale used to trust
    nothing. A write through either replica is seen by the other's next read."""
    settings = Settings(
        data_dir=served.data_dir, publishing_url=served.env.get("MURMUR_PUBLISHING_URL")
    )
    behind = create_engine(settings.pub_url)
    with served.client(0) as first, served.client(1) as second:
        body = {"text": "v0", "platforms": [_bluesky(first)], "draft": True}
        created = first.post("/posts", json=body, headers={"Idempotency-Key": "tokens-0"})
        assert created.status_code == 201, created.text
        post_id = created.json()["data"]["id"]

        def texts() -> list[str]:
            return [
                next(
                    p["text"]
                    for p in http.get("/posts").json()["data"]["items"]
                    if p["id"] == post_id
                )
                for http in (first, second)
            ]

        assert texts() == ["v0", "v0"]  # each replica's cache now holds the page
        with behind.begin() as conn:
            conn.execute(text("UPDATE posts SET text = 'untold' WHERE id = :id"), {"id": post_id})
        assert texts() == ["v0", "v0"]  # answered from the caches: nothing told them
        for n, writer in enumerate((first, second), start=1):
            edited = writer.patch(
                f"/posts/{post_id}",
                json={"text": f"v{n}"},
                headers={"Idempotency-Key": f"tokens-{n}"},
            )
            assert edited.status_code == 200, edited.text
            assert texts() == [f"v{n}", f"v{n}"], f"written on replica {n - 1}"
    behind.dispose()


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + HANG_SECONDS
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_serve_with_workers_runs_that_many_processes_on_one_port(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = dict(os.environ, MURMUR_DATA_DIR=str(data_dir))
    key = run_murmur(env, "keys", "create").strip().splitlines()[-1]
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*MURMUR, "serve", "--port", str(port), "--workers", "3"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}{BASE}"
    try:
        _wait_for(url, proc, log)
        # The first process serves, and supervises two more sharing its port.
        assert _eventually(lambda: len(_children(proc.pid)) == 2), log.read_text()[-3000:]
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30
        ) as http:
            replies = [http.get("/accounts").status_code for _ in range(30)]
        assert replies == [200] * 30
    finally:
        _stop([proc])
    assert proc.returncode == 0, log.read_text()[-3000:]
