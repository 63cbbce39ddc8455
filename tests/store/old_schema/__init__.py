"""The schema of the store before ADR 0002: one DuckDB file, as Murmur's migrations made it.

Today's Murmur no longer makes this store; ``murmur migrate`` moves one into the publishing
database and the lake. The tests build old stores from these files (the last version of
``warehouse/migrations``, each applied once in order, with the lake's runner) to check
that copy, and that the new schema keeps every old table's columns.
"""

from __future__ import annotations

import duckdb

from warehouse.lake import migrations
from warehouse.lake.migrations import Migration

PACKAGE = __name__


def available() -> list[Migration]:
    """The old store's migrations, oldest first."""
    return migrations.available(PACKAGE)


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Bring an old store's schema up to its last version; returns the versions applied now."""
    return migrations.migrate(con, PACKAGE, keyed=True)
