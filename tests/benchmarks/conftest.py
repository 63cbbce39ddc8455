"""A quick run of the import group, shared by the tests that check different things about it."""

from __future__ import annotations

import pytest

from benchmarks.bench import Row, child_rows


@pytest.fixture(scope="session")
def quick_import_rows() -> list[Row]:
    """``child_rows("import", quick=True)``: the import row, then the isolated days' row.

    Its tests are in one xdist group ("bench-import", ``--dist loadgroup``), so the group's
    child runs once: the import row alone reads a generated 100,000-row CSV twice (DuckDB's
    read_csv, then ``murmur import``), ~10 s.
    """
    return child_rows("import", quick=True, timeout=300)
