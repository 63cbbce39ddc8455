"""The smoke sizing of every quick run here, and a quick run of the import group, shared by
the tests that check different things about it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from benchmarks import SMOKE_ENV
from benchmarks.bench import Row, child_rows


@pytest.fixture(scope="session", autouse=True)
def smoke_sizing() -> Iterator[None]:
    """``SMOKE_ENV`` for this process and its children: these tests prove rows run, not figures."""
    before = os.environ.get(SMOKE_ENV)
    os.environ[SMOKE_ENV] = "1"
    yield
    if before is None:
        os.environ.pop(SMOKE_ENV, None)
    else:
        os.environ[SMOKE_ENV] = before


@pytest.fixture(scope="session")
def quick_import_rows(smoke_sizing: None) -> list[Row]:
    """``child_rows("import", quick=True)``: the import row, then the isolated days' row.

    Its tests are in one xdist group ("bench-import", ``--dist loadgroup``), so the group's
    child runs once: the import row alone reads a generated 100,000-row CSV twice (DuckDB's
    read_csv, then ``murmur import``), ~10 s.
    """
    return child_rows("import", quick=True, timeout=300)
