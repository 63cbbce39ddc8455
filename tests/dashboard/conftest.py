"""The dashboard's browser tests: one store seeded from the simulator, Debian's Chromium.

Seeding is what `murmur up` does on a new data directory (the test workspace, then
`murmur pipeline run --history` against the bundled simulator), then the next hourly run:
48 s alone on 2 cores, 60 to 92 s inside the suite, so it happens once per test run (the
simulated past's own test reads it too). Under pytest-xdist the first worker to get here
seeds the store while holding a lock and the others wait for it; then each worker serves
that store with an API of its own (several API processes on one data directory are
replicas, as in production).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Dialog, Page, Request, Route

from benchmarks.servers import settings_env
from core.settings import Settings
from domain.workspaces.keys import ALL_SCOPES, mint_key
from domain.workspaces.service import bootstrap_test_workspace
from tests.support import (
    HANG_SECONDS,
    Api,
    LiveServer,
    start_server,
    start_simulator,
)
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor
from workers.publishing.worker import run_worker

# Every test here may wait for the seeding (and a busy machine): more than the suite's 300 s.
SEED_TIMEOUT = 900
XSS = "<img src=x onerror=alert(1)>"
FAILING_PLATFORM = "bluesky"
REJECTION = "media type not supported"
# What `murmur up` seeds its simulator with (Settings.simulator_seed): the same world.
SIMULATOR_SEED = 42
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Debian's Chromium, never a downloaded browser. No sandbox: the suite may run as root.
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    # Belt and braces beside the routing check: no name resolves but the loopback's.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass(frozen=True)
class Seed:
    """What the seeding left in the store, for every worker's tests."""

    data_dir: Path
    workspace_id: str
    organization_id: str
    key: str
    published_post_id: str
    xss_post_id: str
    # What `murmur pipeline run --history` printed: the new store's run, then the next one.
    pipeline_runs: tuple[str, ...] = ()

    def settings(self, **options: Any) -> Settings:
        return Settings(data_dir=self.data_dir, **options)


@dataclass
class Seeded:
    """The seeded store, served by this worker's API on loopback."""

    seed: Seed
    server: LiveServer
    api: Api

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def murmur(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A `murmur` command on this store, printing links for this server's address."""
        port = urlsplit(self.base_url).port
        env = {
            **os.environ,
            **settings_env(self.server.settings),
            "MURMUR_HOST": "127.0.0.1",
            "MURMUR_PORT": str(port),
        }
        done = subprocess.run(
            [sys.executable, "-m", "murmur", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def mint(self, *workspace_ids: str, **options: Any) -> str:
        """A key of the seeded organization's workspaces (default: the seeded one), with all
        scopes unless ``scopes`` is given."""
        options.setdefault("scopes", list(ALL_SCOPES))

        def work(cur: Cursor) -> str:
            return mint_key(
                cur,
                organization_id=self.seed.organization_id,
                workspace_ids=list(workspace_ids or [self.seed.workspace_id]),
                **options,
            ).key

        return self.server.store.run(work)


def _wait_for(condition: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _seed(folder: Path) -> Seed:
    """A new store as `murmur up` makes it, with posts created through the API, then the
    simulated past captured by `murmur pipeline run --history`."""
    data_dir = folder / "data"
    shutil.rmtree(data_dir, ignore_errors=True)  # what an interrupted seeding left
    simulator = start_simulator(SIMULATOR_SEED)
    settings = Settings(data_dir=data_dir, platforms_url=simulator.root)
    server = start_server(settings)
    admin = httpx.Client(base_url=simulator.root, timeout=30)
    try:

        def setup(cur: Cursor) -> tuple[str, str, str]:
            ws_id = bootstrap_test_workspace(cur)
            ws = ws_repo.get_workspace(cur, ws_id)
            assert ws is not None
            minted = mint_key(
                cur,
                organization_id=ws.organization_id,
                workspace_ids=[ws_id],
                scopes=list(ALL_SCOPES),
            )
            return ws_id, ws.organization_id, minted.key

        ws_id, org_id, key = server.store.run(setup)
        api = Api(server.base_url, key)
        # One post published now, which the platform refuses on one destination: a failure
        # the Posts view must make loud.
        admin.post(
            "/_sim/faults",
            json={"platform": FAILING_PLATFORM, "kind": "reject", "on": "write", "count": 1},
        ).raise_for_status()
        published = api.ok(
            api.post(
                "/posts",
                json={"text": "Launch day, from the dashboard test", "platforms": ["x", "bluesky"]},
            ),
            201,
        )
        # Platform text that looks like markup: it must show as these characters.
        xss = api.ok(
            api.post(
                "/posts",
                json={
                    "text": XSS,
                    "platforms": ["x", "linkedin"],
                    "scheduled_at": (datetime.now(UTC) + timedelta(days=2)).isoformat(),
                },
            ),
            201,
        )
        stop = threading.Event()
        worker = threading.Thread(
            target=run_worker,
            args=(settings.model_copy(update={"publishing_poll_interval_seconds": 0.1}),),
            kwargs={"stop": stop},
        )
        worker.start()
        try:
            _wait_for(
                lambda: (
                    api.ok(api.get(f"/posts/{published['post_id']}"))["status"]
                    in {"partially_published", "published", "failed"}
                ),
                "the worker to publish",
            )
        finally:
            stop.set()
            worker.join(timeout=30)
        api.close()
        # The second run is what `up` starts on an existing store: it must not capture the
        # past again (tests/dashboard/test_simulated_past.py reads both).
        runs = []
        for _ in range(2):
            pipeline = subprocess.run(
                [sys.executable, "-m", "murmur", "pipeline", "run", "--history"],
                env={
                    **os.environ,
                    **settings_env(settings),
                    "MURMUR_PLATFORMS_URL": simulator.root,
                },
                capture_output=True,
                text=True,
                timeout=SEED_TIMEOUT - 60,
                check=False,
            )
            assert pipeline.returncode == 0, pipeline.stdout[-3000:] + pipeline.stderr[-3000:]
            runs.append(pipeline.stdout)
    finally:
        admin.close()
        server.stop()
        simulator.stop()
    return Seed(data_dir, ws_id, org_id, key, published["post_id"], xss["post_id"], tuple(runs))


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary root, which every xdist worker of this run shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """The seeded store; MURMUR_DASHBOARD_STORE names a folder to keep it in and reuse."""
    root = _shared_root(tmp_path_factory)
    folder = Path(os.environ.get("MURMUR_DASHBOARD_STORE") or root / "dashboard-store")
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "seed.json"
    with (folder / "seeding.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        if not record.exists():
            made = _seed(folder)
            record.write_text(json.dumps({**made.__dict__, "data_dir": str(made.data_dir)}))
    fields = json.loads(record.read_text())
    seed = Seed(
        **{
            **fields,
            "data_dir": Path(fields["data_dir"]),
            "pipeline_runs": tuple(fields.get("pipeline_runs", ())),
        }
    )
    server = start_server(seed.settings())
    api = Api(server.base_url, seed.key)
    try:
        yield Seeded(seed, server, api)
    finally:
        api.close()
        server.stop()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests save their screenshots (MURMUR_SCREENSHOTS, else the run's
    temporary root: /tmp/pytest-of-$USER/pytest-N/dashboard-screenshots)."""
    folder = Path(
        os.environ.get("MURMUR_SCREENSHOTS")
        or _shared_root(tmp_path_factory) / "dashboard-screenshots"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch, on Debian's Chromium (`make browser` installs it)."""
    path = chromium()
    if path is None:
        assert not os.environ.get("CI"), "CI runs `make test`, which installs chromium"
        pytest.skip("no chromium on this machine: `make browser` installs it")
    return {**browser_type_launch_args, "executable_path": path, "args": LAUNCH_ARGS}


@dataclass
class Tab:
    """A page of its own context: every request routed (loopback only), dialogs recorded."""

    page: Page
    base_url: str
    foreign: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def open(self, view: str = "overview") -> None:
        self.page.goto(f"{self.base_url}/dashboard/#/{view}")

    def sign_in(self, key: str, view: str = "overview") -> None:
        """Paste a key on the sign-in form."""
        self.page.goto(f"{self.base_url}/dashboard/")
        self.page.fill("#api-key", key)
        self.page.click(".signin-form button[type=submit]")
        self.page.wait_for_selector("#nav:not([hidden])")
        if view != "overview":
            self.open(view)

    def settled(self, view: str, states: str = "ready") -> str:
        """Wait until ``view`` has loaded; its state, which must be one of ``states``."""
        done = ", ".join(f".view-{view}[data-state={s}]" for s in ("ready", "empty", "error"))
        self.page.wait_for_selector(done, timeout=HANG_SECONDS * 1000)
        state: str = self.page.eval_on_selector(f".view-{view}", "e => e.dataset.state")
        if state not in states.split():
            shown = self.page.locator(f".view-{view} .state")
            said = shown.first.inner_text() if shown.count() else ""
            raise AssertionError(f"{view} is {state}, not {states}: {said}")
        return state


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    # A fixed locale, so that figures can be read back; the zone is the test's to choose.
    return {**browser_context_args, "locale": "en-US", "timezone_id": "UTC"}


@pytest.fixture
def open_tab(
    browser: Browser, browser_context_args: dict[str, Any], seeded: Seeded
) -> Iterator[Callable[..., Tab]]:
    """Tabs in contexts of their own (``open_tab(width=390)``); checked when the test ends."""
    contexts: list[BrowserContext] = []
    tabs: list[Tab] = []

    def make(width: int = 1280, height: int = 900, **options: Any) -> Tab:
        context = browser.new_context(
            **{**browser_context_args, "viewport": {"width": width, "height": height}, **options}
        )
        contexts.append(context)
        tab = Tab(context.new_page(), seeded.base_url)

        def route(route: Route, request: Request) -> None:
            host = urlsplit(request.url).hostname or ""
            if request.url.startswith(("data:", "blob:")) or host in LOOPBACK:
                route.continue_()
            else:
                tab.foreign.append(request.url)
                route.abort()

        context.route("**/*", route)

        def dialog(opened: Dialog) -> None:
            tab.dialogs.append(opened.message)
            opened.dismiss()

        tab.page.on("dialog", dialog)
        tab.page.on("pageerror", lambda error: tab.errors.append(str(error)))
        tabs.append(tab)
        return tab

    yield make
    for context in contexts:
        context.close()
    for tab in tabs:
        assert tab.foreign == [], "requests left the loopback"
        assert tab.dialogs == [], "a dialog opened"
        assert tab.errors == [], "the page threw"
