"""Test helpers: a live server on loopback, tenants with their own keys, a thin API client."""

from __future__ import annotations

import atexit
import csv
import functools
import itertools
import json
import multiprocessing
import os
import random
import re
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn

from api.app import BASE_PATH, create_app

# How long a test waits for something before it fails (one figure with the servers' waits).
from benchmarks.servers import HANG_SECONDS as HANG_SECONDS
from benchmarks.servers import settings_env, ssl_context
from connectors.platforms import PLATFORMS
from core.settings import Settings
from domain.workspaces.keys import ALL_SCOPES, mint_key
from domain.workspaces.service import bootstrap_test_workspace
from warehouse import workspaces as ws_repo
from warehouse.store import Lakehouse, Store

# A step's line as `murmur pipeline run` prints it: name, partitions, seconds, ok or failed,
# then the checks that failed and warned.
PIPELINE_STEP = re.compile(
    r"^  (history|ingest|marts|insights)\s+(\S+)\s+(\d+\.\d) s  (ok|failed)"
    r"(; checks failed: [^;]*)?(; checks warned: .*)?$"
)


def embedded_settings(data_dir: Path, **options: Any) -> Settings:
    """Settings of an embedded store at ``data_dir``; a new one starts as a copy of an empty one.

    Creating a store (its two schemas, the lake's statistics) costs ~0.5 CPU-s, ~150 times a
    run of the suite; a copy of this process's empty store costs milliseconds. Each copy
    mints its own secrets on first open. Tests of a store's creation (tests/store) make
    theirs with ``Settings`` directly, as every `murmur` command a test starts does.
    """
    settings = Settings(data_dir=data_dir, **options)
    own_files = settings.publishing_url is None and settings.lake_catalog is None
    if own_files and settings.lake_data is None and not data_dir.exists():
        shutil.copytree(_empty_store(), data_dir, ignore=shutil.ignore_patterns(".secret*"))
    return settings


@functools.cache
def _empty_store() -> Path:
    """A store made once per process, migrated and closed: what every new store starts as."""
    folder = Path(tempfile.mkdtemp(prefix="murmur-empty-store-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    # Named outright: a test's environment may point the store elsewhere (the scale profile).
    made = Settings(
        data_dir=folder / "data", publishing_url=None, lake_catalog=None, lake_data=None
    )
    with made.open_store():
        pass
    return folder / "data"


# Ports for servers a test starts in another process, which binds them later. Each xdist
# worker draws from its own block below the kernel's ephemeral range (32768+ here), so
# neither the other worker nor an outgoing connection can take a port between our check
# and the child's bind (the race that port 0 has).
_PORT_BLOCK = 1_500
_PORT_BASE = 20_000
_ports = itertools.count(random.randrange(_PORT_BLOCK))


def free_port() -> int:
    """A loopback port that is free now and that no other test worker will hand out."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    block = _PORT_BASE + (int(worker.removeprefix("gw") or 0) % 8) * _PORT_BLOCK
    for _ in range(_PORT_BLOCK):
        port = block + next(_ports) % _PORT_BLOCK
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # held by a server of an earlier test, or by something else
        return port
    raise RuntimeError(f"no free port in {block}..{block + _PORT_BLOCK - 1}")


@dataclass
class ThreadServer:
    """An ASGI app served by uvicorn in a daemon thread on a free loopback port."""

    root: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_in_thread(app: Any, **options: Any) -> ThreadServer:
    """Start ``app`` on 127.0.0.1 and return once it accepts connections."""
    # The socket is bound here and handed to uvicorn: a port picked now and bound later could
    # be taken meanwhile by another test process (pytest -n 2).
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # A call still open at stop (a platform's answer a test held back for minutes) is cut
    # after a second, not waited for: uvicorn waits for it without a bound otherwise.
    options.setdefault("timeout_graceful_shutdown", 1)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, access_log=False, **options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + HANG_SECONDS
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    return ThreadServer(f"http://127.0.0.1:{port}", server, thread)


_Server = TypeVar("_Server", bound=socketserver.BaseServer)


@contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """``server`` (a stdlib HTTP server of a test's own) answering in a thread for the block."""
    # shutdown() returns at the loop's next poll: 0.5 s by default, paid at every exit.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def start_simulator(seed: int) -> ThreadServer:
    """The bundled platform simulator; it writes its own Date header (the world's clock)."""
    from simulator.app import create_app as create_simulator

    return serve_in_thread(create_simulator(seed), date_header=False)


@dataclass
class LiveServer:
    """The real API on a loopback port, over a real store in a temporary directory."""

    base_url: str
    settings: Settings
    store: Store
    running: ThreadServer
    _lake: Lakehouse | None = None

    @property
    def lake(self) -> Lakehouse:
        """A pipeline's session on the server's store: what tests write marts through."""
        if self._lake is None:
            self._lake = Lakehouse(self.store)
        else:
            self._lake.refresh_publishing()  # accounts of tenants made since
        return self._lake

    def stop(self) -> None:
        self.running.stop()
        if self._lake is not None:
            self._lake.close()


def start_server(settings: Settings) -> LiveServer:
    app = create_app(settings)
    running = serve_in_thread(app)
    return LiveServer(running.root, settings, app.state.store, running)


class Api:
    """An httpx client bound to one key; writes get a fresh Idempotency-Key unless given one."""

    def __init__(self, base_url: str, key: str | None, workspace_id: str | None = None) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if workspace_id:
            headers["X-Workspace-Id"] = workspace_id
        self.http = httpx.Client(
            base_url=base_url + BASE_PATH, headers=headers, timeout=30, verify=ssl_context()
        )

    def close(self) -> None:
        self.http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        idempotency_key: str | None = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        headers = dict(headers or {})
        if method in {"POST", "PUT", "PATCH", "DELETE"} and "Idempotency-Key" not in headers:
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        return self.http.request(method, path, headers=headers, **kwargs)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", path, **kwargs)

    def ok(self, response: httpx.Response, status: int = 200) -> Any:
        """The ``data`` of a successful envelope, after checking the envelope itself."""
        assert response.status_code == status, response.text
        body = response.json()
        assert body["success"] is True, body
        assert body["request_id"] == response.headers["X-Request-Id"]
        return body["data"]

    def list_all(self, path: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of a list endpoint, following cursors."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = dict(params, limit=100)
            if cursor:
                query["cursor"] = cursor
            page = self.ok(self.get(path, params=query))
            items.extend(page["items"])
            cursor = page["pagination"]["next_cursor"]
            if not cursor:
                return items


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 now (a server's start, polled)."""
    try:
        return httpx.get(url, timeout=5, verify=ssl_context()).status_code == 200
    except httpx.HTTPError:
        return False


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Check an error envelope and return its ``error`` object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["details"], list)
    assert body["request_id"] == response.headers["X-Request-Id"]
    assert "data" not in body
    return body["error"]  # type: ignore[no-any-return]


@dataclass
class Tenant:
    """A workspace of its own, with a full-scope key and the test accounts of every platform."""

    workspace_id: str
    organization_id: str
    key: str
    api: Api
    accounts: dict[str, str]  # platform -> account id

    def key_with(self, server: LiveServer, **options: Any) -> Api:
        """Another key on this workspace (scopes, expiry…), as a client."""

        def work(cur: Any) -> str:
            minted = mint_key(
                cur,
                organization_id=self.organization_id,
                workspace_ids=options.pop("workspace_ids", [self.workspace_id]),
                **options,
            )
            return minted.key

        key = server.store.run(work)
        return Api(server.base_url, key)


def new_tenant(server: LiveServer, *, approval_required: bool = False) -> Tenant:
    def work(cur: Any) -> tuple[str, str, str, dict[str, str]]:
        org_id = ws_repo.create_organization(cur, f"org-{uuid.uuid4().hex[:6]}")
        ws_id = ws_repo.create_workspace(
            cur, org_id, "Tenant workspace", approval_required=approval_required
        )
        accounts = {}
        for platform in PLATFORMS:
            accounts[platform] = ws_repo.insert_account(
                cur, ws_id, platform, f"{platform}_handle", f"{platform} account", f"ext-{platform}"
            )
        minted = mint_key(
            cur, organization_id=org_id, workspace_ids=[ws_id], scopes=list(ALL_SCOPES)
        )
        return ws_id, org_id, minted.key, accounts

    ws_id, org_id, key, accounts = server.store.run(work)
    return Tenant(ws_id, org_id, key, Api(server.base_url, key), accounts)


def bootstrap_workspace_id(server: LiveServer) -> str:
    return server.store.run(bootstrap_test_workspace)


def iter_pages(api: Api, path: str, limit: int) -> Iterator[dict[str, Any]]:
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        page = api.ok(api.get(path, params=params))
        yield page
        cursor = page["pagination"]["next_cursor"]
        if not cursor:
            return


# An analyst's session runs in a process of its own: a test process holding the API's
# publishing database through Python's sqlite3 must not also open it through DuckDB's
# sqlite extension (ADR 0002: the two copies of SQLite do not see each other's locks).
_ANALYST = """
import json, sys
import duckdb
from warehouse.extensions import load_extension
attach, sql, params = json.load(sys.stdin)
con = duckdb.connect()
for name in ("sqlite", "postgres", "ducklake", "httpfs"):
    load_extension(con, name)
con.execute(attach)
cur = con.execute(sql, params)
json.dump([list(row) for row in cur.fetchall()], sys.stdout, default=str)
"""


def grant_analysts(settings: Settings) -> None:
    """What ``murmur analysts grant`` does for ``settings``' store (nothing on the embedded
    profile): the analysts' role reads its tables as they are now."""
    from warehouse.analysts import (
        catalog_conninfo,
        grant_lake_catalog,
        grant_publishing,
        publishing_conninfo,
    )

    login = settings.analyst_login
    if login is None:
        return
    publishing = publishing_conninfo(settings.pub_url)
    if publishing is not None:
        grant_publishing(publishing, login)
    if settings.lake.kind == "postgres":
        grant_lake_catalog(catalog_conninfo(settings.lake), login)


def attach_sql(settings: Settings) -> str:
    """What ``murmur attach`` prints for ``settings``, without its INSTALL/LOAD lines."""
    grant_analysts(settings)  # the tables a test made since are readable too
    printed = subprocess.run(
        [sys.executable, "-m", "murmur", "attach", "--data-dir", str(settings.data_dir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_SECONDS,
        env={**os.environ, **settings_env(settings)},
    ).stdout
    # The extensions ship as wheels: INSTALL would reach the network.
    return re.sub(r"(INSTALL|LOAD) \w+;", "", printed)


def analyst_rows(settings: Settings, sql: str, params: list[Any] | None = None) -> list[list[Any]]:
    """Rows of ``sql`` in an analyst's DuckDB session (its own process), as ``murmur attach``
    opens the store; values come back through JSON (times as text)."""
    done = subprocess.run(
        [sys.executable, "-c", _ANALYST],
        input=json.dumps([attach_sql(settings), sql, params or []]),
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    if done.returncode:
        raise RuntimeError(f"the analyst's session failed: {done.stderr[-2000:]}")
    rows: list[list[Any]] = json.loads(done.stdout)
    return rows


def corrupt_lake_catalog(settings: Settings) -> Path:
    """Overwrite the embedded lake catalog's table pages (its schema left readable)."""
    catalog = settings.data_dir / "lake.sqlite"
    assert catalog.stat().st_size > 5 * 4096
    with catalog.open("r+b") as file:
        file.seek(3 * 4096)  # the pages after the schema's: the catalog's tables
        file.write(b"\xde\xad\xbe\xef" * 2048)
    return catalog


def run_murmur(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    """``murmur ARGS --data-dir …`` in a process of its own, on these settings' store."""
    return subprocess.run(
        [sys.executable, "-m", "murmur", *args, "--data-dir", str(settings.data_dir)],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        env={**os.environ, **settings_env(settings), "COLUMNS": "400"},
    )


def clear_sim_faults(request: Any) -> Any:
    """The ``sim`` fixture (a test's simulator) with its pending faults cleared, when the test
    (``request``, its ``pytest.FixtureRequest``) uses it; None when it does not."""
    if "sim" not in request.fixturenames:
        return None
    live = request.getfixturevalue("sim")
    live.admin.delete("/_sim/faults").raise_for_status()
    return live


def register_sim_accounts(admin: httpx.Client, platforms: tuple[str, ...]) -> None:
    """Make a tenant's accounts of ``platforms`` exist on the simulator behind ``admin`` (their
    ids are ext-<platform>, their handles <platform>_handle, as ``new_tenant`` makes them)."""
    for platform in platforms:
        admin.post(
            "/_sim/accounts",
            json={
                "platform": platform,
                "external_id": f"ext-{platform}",
                "handle": f"{platform}_handle",
            },
        ).raise_for_status()


def assert_each_needs_a_key_and_the_scope(
    server: LiveServer,
    tenant: Tenant,
    endpoints: list[tuple[str, str, Any]],
    *,
    read_scopes: list[str],
    other_scopes: list[str],
) -> None:
    """Each of ``endpoints`` (method, path, JSON body) refuses a call without a key (401), and
    with a key of ``other_scopes`` only (403); one of ``read_scopes`` reads (GET) but writes
    nothing (403), and a write with the full key but no Idempotency-Key is refused (400)."""
    anonymous = Api(server.base_url, None)
    read_only = tenant.key_with(server, scopes=read_scopes)
    no_scope = tenant.key_with(server, scopes=other_scopes)
    for method, path, body in endpoints:
        assert_error(anonymous.request(method, path, json=body), 401, "AUTH_REQUIRED")
        assert_error(no_scope.request(method, path, json=body), 403, "SCOPE_FORBIDDEN")
        if method == "GET":
            read_only.ok(read_only.request(method, path))
        else:
            assert_error(read_only.request(method, path, json=body), 403, "SCOPE_FORBIDDEN")
            response = tenant.api.http.request(method, path, json=body)
            assert_error(response, 400, "IDEMPOTENCY_KEY_REQUIRED")


def run_checked(
    args: list[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    returncode: int = 0,
    **options: Any,
) -> subprocess.CompletedProcess[str]:
    """``args`` run to the end in a process of its own (``options``: more of ``subprocess.run``'s),
    its output captured as text; a test fails, with the end of that output, when the process
    exits other than with ``returncode``."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **options
    )
    assert done.returncode == returncode, (done.stdout + done.stderr)[-4000:]
    return done


def killed_after(module: str, function: str, args: list[str], lines: int) -> list[str]:
    """``function(*args)`` of ``module`` in a process of its own, killed (SIGKILL) once it has
    printed ``lines`` lines: those lines, stripped."""
    code = f"import sys; from {module} import {function}; {function}(*sys.argv[1:])"
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    try:
        printed = [child.stdout.readline().strip() for _ in range(lines)]
    finally:
        child.kill()
        child.wait(HANG_SECONDS)
        child.stdout.close()
    return printed


def wait_until_answers(
    process: subprocess.Popen[Any], url: str, what: str, log: Path | None = None
) -> None:
    """Poll ``url`` until it answers 200. The test fails if ``process`` (``what``, which serves
    it) exits first, with the end of its ``log`` when given, or if it does not answer within
    ``HANG_SECONDS``."""
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        assert process.poll() is None, log.read_text()[-3000:] if log else f"{what} exited"
        assert time.monotonic() < deadline, f"{what} did not answer"
        if answers(url):
            return
        time.sleep(0.1)


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    """``path`` written as a CSV file of ``header`` then ``rows`` (UTF-8, the csv module's
    quoting and line ends): an export as a platform would give one."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def all_exit_0_at_once(target: Any, each: list[tuple[Any, ...]]) -> None:
    """``target(*args, barrier, HANG_SECONDS)`` for each ``args`` of ``each``, in spawned
    processes of their own that wait for each other at ``barrier`` (one of them all) to start
    together; the test fails unless every one exits 0 within ``HANG_SECONDS``."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(len(each))
    processes = [ctx.Process(target=target, args=(*args, barrier, HANG_SECONDS)) for args in each]
    for process in processes:
        process.start()
    for process in processes:
        process.join(HANG_SECONDS)
    assert [process.exitcode for process in processes] == [0] * len(each)


@contextmanager
def tenant_of(server: LiveServer, *, approval_required: bool = False) -> Iterator[Tenant]:
    """A new tenant of ``server`` for the block; its client is closed after, however it ends."""
    made = new_tenant(server, approval_required=approval_required)
    try:
        yield made
    finally:
        made.api.close()
