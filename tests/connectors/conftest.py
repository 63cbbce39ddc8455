"""Fixtures: the bundled simulator on a loopback port, and connectors pointed at it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import uvicorn

from connectors.base import AccountRef
from connectors.http import HttpConnector, PlatformHttp
from connectors.registry import build_connector, simulator_base_url, simulator_token
from simulator.world import OWN_ACCOUNTS
from tests.support import clear_sim_faults, start_simulator

SEED = 11
T0 = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


@dataclass
class SimServer:
    """The simulator running for real, and an admin client for its clock and faults."""

    root: str
    server: uvicorn.Server
    thread: threading.Thread
    admin: httpx.Client

    def set_clock(self, now: datetime) -> None:
        self.admin.post("/_sim/clock", json={"now": now.isoformat()}).raise_for_status()

    def advance(self, seconds: float) -> None:
        self.admin.post("/_sim/clock", json={"advance_seconds": seconds}).raise_for_status()

    def fault(self, platform: str, kind: str, **options: Any) -> None:
        response = self.admin.post(
            "/_sim/faults", json={"platform": platform, "kind": kind, **options}
        )
        assert response.status_code == 201, response.text


@pytest.fixture(scope="session")
def sim() -> Iterator[SimServer]:
    running = start_simulator(SEED)
    live = SimServer(
        running.root,
        running.server,
        running.thread,
        httpx.Client(base_url=running.root, timeout=30),
    )
    yield live
    live.admin.close()
    running.stop()


@pytest.fixture(autouse=True)
def fresh_sim(request: pytest.FixtureRequest) -> None:
    """Every simulator test starts at T0 with no faults pending."""
    live: SimServer | None = clear_sim_faults(request)
    if live is not None:
        live.set_clock(T0)


class Sleeps:
    """A sleep that records the delays it was asked for instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def own_account(platform: str) -> AccountRef:
    handle, _ = OWN_ACCOUNTS[platform]
    external_id = f"test-{platform}-{handle}"
    return AccountRef(
        platform,
        external_id,
        handle,
        kind="own",
        access_token=simulator_token(platform, external_id),
    )


ConnectorFactory = Callable[..., HttpConnector]


@pytest.fixture
def connect(sim: SimServer, sleeps: Sleeps) -> ConnectorFactory:
    """A connector for a platform over the simulator, sleeping into ``sleeps``."""

    def make(platform: str, as_of: datetime | None = None, **http_options: Any) -> HttpConnector:
        options: dict[str, Any] = {"sleep": sleeps, "jitter": lambda ceiling: ceiling}
        options.update(http_options)
        http = PlatformHttp(**options)
        connector = build_connector(
            platform,
            base_url=simulator_base_url(sim.root, platform),
            http=http,
            token=simulator_token(platform, "client"),
            as_of=as_of,
        )
        assert isinstance(connector, HttpConnector)
        return connector

    return make
