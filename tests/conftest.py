"""Fixtures: one live API server per test session over a store in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from murmur.logs import configure_logging
from murmur.settings import Settings
from tests.support import LiveServer, Tenant, new_tenant, start_server
from warehouse.store import Secrets, Store


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    configure_logging()
    data_dir: Path = tmp_path_factory.mktemp("murmur-data")
    settings = Settings(data_dir=data_dir, quack_port=0, store_lock_timeout_seconds=10)
    live = start_server(settings)
    yield live
    live.stop()


@pytest.fixture
def tenant(server: LiveServer) -> Iterator[Tenant]:
    """A fresh workspace per test, so tests never see each other's rows."""
    made = new_tenant(server)
    yield made
    made.api.close()


@pytest.fixture
def fresh_store(tmp_path: Path) -> Iterator[Store]:
    """A store of the test's own in a temporary directory, opened directly (no host)."""
    data = tmp_path / "data"
    with Store.connect(
        data / "murmur.duckdb",
        host_file=data / "store.host.json",
        quack_token=Secrets.load(data).quack_token,
    ) as opened:
        yield opened


@pytest.fixture
def other_tenant(server: LiveServer) -> Iterator[Tenant]:
    made = new_tenant(server)
    yield made
    made.api.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cycles",
        type=int,
        default=3,
        help="Cycles of the crash-and-handoff torture test (a soak: 200).",
    )
