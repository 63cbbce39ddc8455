"""Fixtures of the truth tests: the shared exports' world, built once per worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.analytics_truth.world import World, imported_world


@pytest.fixture(scope="session")
def exports_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with imported_world(tmp_path_factory.mktemp("exports")) as world:
        yield world
