"""Fixtures: one live API server per test session over a store in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from murmur.logs import configure_logging
from murmur.settings import Settings
from tests.support import LiveServer, Tenant, new_tenant, start_server
from warehouse.store import Store


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    configure_logging()
    data_dir: Path = tmp_path_factory.mktemp("murmur-data")
    settings = Settings(data_dir=data_dir)
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
    """A store of the test's own in a temporary directory."""
    with Settings(data_dir=tmp_path / "data").open_store() as opened:
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
