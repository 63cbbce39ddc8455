"""Fixtures: a real API and store, the simulator on the real clock, and workers to run."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.servers import StoreSettings
from tests.support import (
    LiveServer,
    Tenant,
    clear_sim_faults,
    new_tenant,
    register_sim_accounts,
    start_server,
    start_simulator,
)
from warehouse import publishing as repo
from warehouse.posts import DestinationRow
from warehouse.store import Store
from workers.publishing.policy import RetryPolicy
from workers.publishing.worker import Worker

# Platforms the tests publish to: text-only posts are accepted by all three.
TEXT_PLATFORMS = ("x", "linkedin", "bluesky")


@dataclass
class Sim:
    """The simulator on a loopback port, on the real clock, with an admin client."""

    root: str
    admin: httpx.Client

    def fault(self, platform: str, kind: str, **options: Any) -> None:
        response = self.admin.post(
            "/_sim/faults", json={"platform": platform, "kind": kind, **options}
        )
        assert response.status_code == 201, response.text

    def count(self, platform: str, text: str) -> int:
        """How many times ``text`` was published on ``platform``."""
        body = self.admin.get("/_sim/posts", params={"platform": platform}).json()
        return int(body["count_by_text"].get(text, 0))

    def posts(self, platform: str, text: str) -> list[dict[str, Any]]:
        body = self.admin.get("/_sim/posts", params={"platform": platform}).json()
        return [p for p in body["posts"] if p["text"] == text]


@pytest.fixture(scope="session")
def sim() -> Iterator[Sim]:
    running = start_simulator(23)
    live = Sim(running.root, httpx.Client(base_url=running.root, timeout=30))
    yield live
    live.admin.close()
    running.stop()


@pytest.fixture(scope="session")
def pub_server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings, sim: Sim
) -> Iterator[LiveServer]:
    """An API server of its own, so no other test's due posts reach these workers."""
    settings = store_settings(tmp_path_factory.mktemp("publishing-data"), platforms_url=sim.root)
    live = start_server(settings)
    yield live
    live.stop()


@pytest.fixture(autouse=True)
def no_faults(request: pytest.FixtureRequest) -> None:
    clear_sim_faults(request)


@pytest.fixture
def pub_tenant(pub_server: LiveServer, sim: Sim) -> Iterator[Tenant]:
    made = new_tenant(pub_server)
    register_sim_accounts(sim.admin, TEXT_PLATFORMS)
    yield made
    made.api.close()


@pytest.fixture
def review_tenant(pub_server: LiveServer, sim: Sim) -> Iterator[Tenant]:
    """A workspace that requires approval."""
    made = new_tenant(pub_server, approval_required=True)
    register_sim_accounts(sim.admin, TEXT_PLATFORMS)
    yield made
    made.api.close()


@dataclass
class RunningWorker:
    worker: Worker
    store: Store
    thread: threading.Thread
    stop: threading.Event = field(default_factory=threading.Event)

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        self.store.close()


StartWorker = Callable[..., RunningWorker]

# Fast retries, so a 429 or a reclaimed lease resolves within a test.
FAST = RetryPolicy(max_attempts=4, base_delay=0.2, max_delay=1.0, lease_seconds=6, http_timeout=5)


@pytest.fixture
def start_worker(pub_server: LiveServer) -> Iterator[StartWorker]:
    """Start in-process workers (each with its own store connection); stopped after the test."""
    running: list[RunningWorker] = []

    def start(**options: Any) -> RunningWorker:
        store = pub_server.settings.open_store()
        options.setdefault("policy", FAST)
        options.setdefault("poll_interval", 0.05)
        worker = Worker(pub_server.settings, store, **options)
        live = RunningWorker(worker, store, threading.Thread(target=lambda: None))
        live.thread = threading.Thread(target=worker.run, args=(live.stop,), daemon=True)
        live.thread.start()
        running.append(live)
        return live

    yield start
    for live in running:
        live.halt()


def unique_text(label: str) -> str:
    return f"{label} {uuid.uuid4().hex[:10]}"


def create_post(
    tenant: Tenant, text: str, platforms: list[str], *, in_seconds: float = 1.5
) -> dict[str, Any]:
    """Create a post through the API, scheduled shortly ahead."""
    when = datetime.now(UTC) + timedelta(seconds=in_seconds)
    data: dict[str, Any] = tenant.api.ok(
        tenant.api.post(
            "/posts",
            json={"text": text, "platforms": platforms, "scheduled_at": when.isoformat()},
        ),
        201,
    )
    return data


def wait_for(
    condition: Callable[[], bool], what: str, timeout: float = 240.0, interval: float = 0.1
) -> None:
    """Poll until ``condition`` holds (bounded, so a hang fails instead of blocking)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def post_row(server: LiveServer, post_id: str) -> repo.PostState:
    row = server.store.run(lambda cur: repo.post_status(cur, post_id))
    assert row is not None
    return row


def destination_rows(server: LiveServer, post: dict[str, Any]) -> list[DestinationRow]:
    ids = [str(d["id"]) for d in post["destinations"]]
    found = server.store.run(lambda cur: [repo.destination(cur, i) for i in ids])
    rows = [row for row in found if row is not None]
    assert len(rows) == len(ids)
    return rows


def settled(server: LiveServer, post_id: str) -> bool:
    return post_row(server, post_id).status not in ("scheduled", "publishing")
