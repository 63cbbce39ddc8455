"""Every table of a new lake has statistics, so planning a statement asks its catalog nothing.

DuckLake caches a table's statistics only once it has some (warehouse/lake/statistics.py):
without them, each planning of a statement over a never-written table asked the catalog once
per column it names.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests.servers import StoreSettings
from warehouse.lake.statistics import without_statistics

PLANNED = (
    "EXPLAIN SELECT p.platform, count(*), sum(s.likes) FROM raw_posts p"
    " JOIN raw_engagement_snapshots s USING (workspace_id, platform, external_id)"
    " WHERE s.captured_at >= TIMESTAMP '2026-01-01' GROUP BY ALL"
)


def test_a_new_lake_plans_without_asking_its_catalog(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    with store_settings(tmp_path / "data").open_lakehouse() as lake, lake.cursor() as cur:
        con = cur.raw
        assert isinstance(con, duckdb.DuckDBPyConnection)
        assert without_statistics(con) == []
        tables = [
            str(row[0])
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_catalog = 'lake' AND table_type = 'BASE TABLE'"
                " AND table_name <> 'schema_migrations'"
            ).fetchall()
        ]
        assert len(tables) >= 15
        # The placeholders are gone, and left no file behind (inlined into the catalog).
        for table in tables:
            counted = con.execute(f'SELECT count(*) FROM lake."{table}"')  # noqa: S608
            assert counted.fetchone() == (0,), table
        files = con.execute(
            "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_data_file"
        ).fetchone()
        assert files == (0,)

        con.execute(PLANNED).fetchall()  # the first planning may fill DuckLake's caches
        con.execute("CALL enable_logging('DuckLakeMetadata')")
        con.execute(PLANNED).fetchall()
        asked = [
            str(row[0])
            for row in con.execute(
                "SELECT query FROM duckdb_logs_parsed('DuckLakeMetadata')"
            ).fetchall()
        ]
        con.execute("CALL disable_logging()")
        # The latest snapshot is looked up once per transaction; statistics not at all
        # (without them: 29 catalog queries for this one statement).
        assert not [q for q in asked if "stats" in q], asked
        assert len(asked) <= 1, asked
