"""Fixtures: an API server of its own, so no other test's due posts or requests show here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.servers import StoreSettings
from tests.support import LiveServer, start_server


def _serve(
    tmp_path_factory: pytest.TempPathFactory,
    store_settings: StoreSettings,
    name: str,
    **options: Any,
) -> Iterator[LiveServer]:
    """A server on a store of its own (in a new folder ``name``), stopped when done."""
    live = start_server(store_settings(tmp_path_factory.mktemp(name), **options))
    yield live
    live.stop()


@pytest.fixture(scope="module")
def ops_server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[LiveServer]:
    yield from _serve(tmp_path_factory, store_settings, "health-data")


@pytest.fixture
def doomed_server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[LiveServer]:
    """A server whose store the test may close under it."""
    yield from _serve(tmp_path_factory, store_settings, "health-doomed")


@pytest.fixture
def impatient_server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[LiveServer]:
    """A server that gives the store a microsecond: no query answers that fast."""
    yield from _serve(
        tmp_path_factory, store_settings, "health-impatient", probe_timeout_seconds=1e-6
    )


@pytest.fixture
def lasting_server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[LiveServer]:
    """A server whose scrapes may answer the store's figures read an hour before: only a
    write makes them read again (the clock never does within a test)."""
    yield from _serve(
        tmp_path_factory, store_settings, "health-lasting", metrics_store_max_age_seconds=3600
    )


@pytest.fixture
def strict_server(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[LiveServer]:
    """A server that allows three keyless requests a minute per address."""
    yield from _serve(
        tmp_path_factory, store_settings, "health-strict", unauthenticated_rate_limit=3
    )


@pytest.fixture
def root(ops_server: LiveServer) -> Iterator[httpx.Client]:
    """A client at the server's root, without a key (as a load balancer or Prometheus)."""
    with httpx.Client(base_url=ops_server.base_url, timeout=30) as client:
        yield client
