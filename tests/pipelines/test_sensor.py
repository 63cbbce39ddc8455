"""The import sensor: each new import batch starts one run over the days it touched."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from dagster import RunRequest, SkipReason, build_sensor_context

from pipelines.analytics.sensors import import_batches
from pipelines.definitions import resources
from pipelines.partitions import RANGES_TAG
from tests.servers import StoreSettings

NOW = datetime(2026, 1, 1)


def _import(cur: object, batch: str, days: list[str], finished: datetime) -> None:
    for day in days:
        cur.execute(  # type: ignore[attr-defined]
            "INSERT INTO raw_engagement_snapshots VALUES"
            " ('ws', 'youtube', ?, ?, NULL, NULL, 10, 1, 0, 0, NULL, NULL,"
            " 'import:youtube-trending', ?, ?)",
            [f"v-{batch}", f"{day} 00:00", batch, finished],
        )
    cur.execute(  # type: ignore[attr-defined]
        "INSERT INTO ingest_batches VALUES (?, 'ws', 'import:youtube-trending',"
        " NULL, 0, ?, 0, '[]', ?, ?, NULL)",
        [batch, len(days), finished, finished],
    )


def _span(request: RunRequest) -> tuple[str, str]:
    return (
        request.tags["dagster/asset_partition_range_start"],
        request.tags["dagster/asset_partition_range_end"],
    )


def test_each_import_batch_is_one_run_over_its_days_then_insights(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    settings = store_settings(tmp_path / "data")
    res = resources(settings)
    with settings.open_lakehouse() as store, store.cursor() as cur:
        # isolated days whose gaps hold no rows: one range, the day after each included
        _import(cur, "imp1", ["2017-11-14", "2017-11-15", "2017-12-01"], NOW)
        _import(cur, "imp2", ["2019-05-05"], NOW + timedelta(minutes=1))
    with build_sensor_context(resources=res) as context:
        found = import_batches(context)
        assert isinstance(found, list)
        assert [r.job_name for r in found] == ["import_refresh", "import_refresh"]
        assert [_span(r) for r in found] == [
            ("2017-11-14", "2017-12-02"),
            ("2019-05-05", "2019-05-06"),
        ]
        assert all(RANGES_TAG not in r.tags for r in found)
        assert len({r.run_key for r in found}) == 2
        cursor = context.cursor
    with build_sensor_context(resources=res, cursor=cursor) as context:
        assert isinstance(import_batches(context), SkipReason)
    # a batch imported again (same id, later) is new: its days run again
    with settings.open_lakehouse() as store, store.cursor() as cur:
        cur.execute("DELETE FROM ingest_batches WHERE id = 'imp1'")
        cur.execute("DELETE FROM raw_engagement_snapshots WHERE ingest_batch = 'imp1'")
        _import(cur, "imp1", ["2017-11-14"], NOW + timedelta(minutes=2))
    with build_sensor_context(resources=res, cursor=cursor) as context:
        again = import_batches(context)
        assert isinstance(again, list)
        assert [_span(r) for r in again] == [("2017-11-14", "2017-11-15")]
