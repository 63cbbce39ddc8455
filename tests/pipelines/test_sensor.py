"""The import sensor: a new import batch starts the marts for the days it touched."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from dagster import RunRequest, SkipReason, build_sensor_context

from pipelines.analytics.sensors import import_batches
from pipelines.definitions import resources
from tests.servers import StoreSettings

NOW = datetime(2026, 1, 1)


def test_import_batch_triggers_runs_per_day_range(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    settings = store_settings(tmp_path / "data")
    with (
        settings.open_lakehouse() as store,
        store.cursor() as cur,
    ):
        # three days, two of them contiguous: two ranges
        for day in ("2017-11-14", "2017-11-15", "2017-12-01"):
            cur.execute(
                "INSERT INTO raw_engagement_snapshots VALUES"
                " ('ws', 'youtube', 'v1', ?, NULL, NULL, 10, 1, 0, 0, NULL, NULL,"
                " 'import:youtube-trending', 'imp1', ?)",
                [f"{day} 00:00", NOW],
            )
        cur.execute(
            "INSERT INTO ingest_batches VALUES ('imp1', 'ws', 'import:youtube-trending',"
            " NULL, 0, 3, 0, '[]', ?, ?)",
            [NOW, NOW],
        )
    res = resources(settings)
    with build_sensor_context(resources=res) as context:
        found = import_batches(context)
        assert isinstance(found, list)
        ranges = [
            (
                r.tags["dagster/asset_partition_range_start"],
                r.tags["dagster/asset_partition_range_end"],
            )
            for r in found
            if isinstance(r, RunRequest) and r.job_name == "marts_daily"
        ]
        assert ranges == [("2017-11-14", "2017-11-15"), ("2017-12-01", "2017-12-01")]
        assert any(r.job_name == "insights" for r in found if isinstance(r, RunRequest))
        cursor = context.cursor
    with build_sensor_context(resources=res, cursor=cursor) as context:
        assert isinstance(import_batches(context), SkipReason)
