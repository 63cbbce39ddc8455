"""Fixtures: one live API server per test session over a store of the session's profile.

``--store-profile`` picks where the stores of the tests live (ADR 0002): ``embedded`` (the
default) is files in a temporary directory; ``scale`` is PostgreSQL and S3, on servers this
session starts on loopback, each store with two databases and a bucket of its own. Every test
that makes its store through ``store_settings`` runs on either.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.servers import ScaleServers, start_servers
from murmur.logs import configure_logging
from tests.servers import StoreSettings
from tests.support import (
    LiveServer,
    Tenant,
    embedded_settings,
    free_port,
    grant_analysts,
    new_tenant,
    start_server,
)
from warehouse.store import Store


@pytest.fixture(scope="session")
def scale_servers() -> Iterator[ScaleServers]:
    # Ports of this test worker's own block: the other worker cannot take them meanwhile.
    with start_servers(free_port(), free_port()) as servers:
        yield servers


@pytest.fixture(scope="session")
def store_settings(request: pytest.FixtureRequest) -> StoreSettings:
    if request.config.getoption("--store-profile") == "scale":
        servers: ScaleServers = request.getfixturevalue("scale_servers")
        return servers.settings

    return embedded_settings


@pytest.fixture(scope="session")
def server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[LiveServer]:
    configure_logging()
    live = start_server(store_settings(tmp_path_factory.mktemp("murmur-data")))
    # The notebooks attach as `murmur attach` prints: at scale, as the analysts' role.
    grant_analysts(live.settings)
    yield live
    live.stop()


@pytest.fixture
def tenant(server: LiveServer) -> Iterator[Tenant]:
    """A fresh workspace per test, so tests never see each other's rows."""
    made = new_tenant(server)
    yield made
    made.api.close()


@pytest.fixture
def fresh_store(tmp_path: Path, store_settings: StoreSettings) -> Iterator[Store]:
    """A store of the test's own."""
    with store_settings(tmp_path / "data").open_store() as opened:
        yield opened


@pytest.fixture
def other_tenant(server: LiveServer) -> Iterator[Tenant]:
    made = new_tenant(server)
    yield made
    made.api.close()


# SIGTERM's handler as this process started: before any in-process Dagster run.
SIGTERM_AT_START = signal.getsignal(signal.SIGTERM)


@pytest.fixture(autouse=True)
def _sigterm_as_at_start() -> Iterator[None]:
    """SIGTERM's handler as the process started, around each test: what it spawns inherits it."""
    # An in-process Dagster run (``materialize``, in tests and in module fixtures) leaves
    # SIGTERM on SIGINT's handler; under a shell's background job that is SIG_IGN, and a child
    # spawned later (a `murmur worker` of the crash test) ignored a SIGTERM sent before its own
    # handler. Set before the test (module fixtures ran before it) and after it.
    _restore_sigterm()
    yield
    _restore_sigterm()


def _restore_sigterm() -> None:
    if SIGTERM_AT_START is not None and signal.getsignal(signal.SIGTERM) != SIGTERM_AT_START:
        signal.signal(signal.SIGTERM, SIGTERM_AT_START)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cycles",
        type=int,
        default=3,
        help="Cycles of the crash-and-handoff torture test (a soak: 200).",
    )
    parser.addoption(
        "--store-profile",
        choices=("embedded", "scale"),
        default="embedded",
        help="Where the tests' stores live: files (embedded) or PostgreSQL + S3 (scale).",
    )
