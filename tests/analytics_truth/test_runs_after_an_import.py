"""Whichever run comes first after an import leaves every figure right.

`murmur up`'s import sensor and a `murmur pipeline run` may both start after an import. The
sensor's run upserts the post dimension as it stages; a pipeline run that starts after that
must still rebuild every publication day the import brought (they were found only through
posts the dimension did not know yet). And the two running at once end with the same
figures. Truth: our own count of the Instagram export's posts per month, from the CSV.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterInstance, materialize

from benchmarks.servers import settings_env
from core.settings import Settings
from pipelines.analytics.assets import DAILY_ASSETS, INSIGHT_ASSETS, stg_engagement_deltas
from pipelines.definitions import resources
from pipelines.importers import run_import
from pipelines.partitions import due_days, plan, range_tags
from pipelines.run import run_all
from tests.support import Tenant, new_tenant, start_server
from warehouse.marts.runs import batch_days

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
NOW = datetime(2026, 11, 22, tzinfo=UTC)


def _expected() -> dict[str, int]:
    posts = pl.read_csv(DATASETS / "instagram_posts.csv", infer_schema=False)
    months = posts.select(pl.col("Date").str.slice(0, 7).alias("month"))
    return {r["month"]: r["len"] for r in months.group_by("month").len().iter_rows(named=True)}


def _posts_by_month(tenant: Tenant) -> dict[str, int]:
    got = {}
    for month in _expected():
        first = date.fromisoformat(f"{month}-01")
        last = date(first.year + first.month // 12, first.month % 12 + 1, 1)
        body = tenant.api.ok(
            tenant.api.get(
                "/analytics/unified",
                params={
                    "from": f"{first}T00:00:00Z",
                    "to": f"{last}T00:00:00Z",
                    "platform": "instagram",
                    "limit": 1,
                },
            )
        )
        got[month] = body["totals"]["posts"]
    return got


@pytest.fixture
def imported(tmp_path: Path) -> Iterator[tuple[Settings, Tenant, str]]:
    """A store holding the Instagram export, imported into a tenant's workspace."""
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    server = start_server(settings)
    tenant = new_tenant(server)
    try:
        done = run_import(
            DATASETS / "instagram_posts.csv",
            "instagram-insights",
            settings=settings,
            workspace_id=tenant.workspace_id,
            progress=False,
        )
        yield settings, tenant, done.batch_id
    finally:
        tenant.api.close()
        server.stop()


def _sensor_tags(settings: Settings, batch_id: str) -> dict[str, str]:
    """The tags the import sensor gives this batch's run."""
    with settings.open_lakehouse() as lake:
        captured = lake.run(lambda cur: batch_days(cur, batch_id))
        ranges = plan(lake, due_days(captured, NOW.date()))
    return {"murmur/now": NOW.isoformat(), **range_tags(ranges)}


def test_a_pipeline_run_after_the_sensor_upserted_the_posts_counts_every_post(
    imported: tuple[Settings, Tenant, str],
) -> None:
    settings, tenant, batch = imported
    # The sensor's run has staged the export's capture day (the dimension now knows every
    # post) and is still working when the pipeline run starts.
    with settings.open_lakehouse() as lake:
        captured = lake.run(lambda cur: batch_days(cur, batch))
    with DagsterInstance.ephemeral() as instance:
        partial = materialize(
            [stg_engagement_deltas],
            resources=resources(settings),
            instance=instance,
            tags={"murmur/now": NOW.isoformat(), **range_tags([(captured[0], captured[-1])])},
        )
    assert partial.success
    summary = run_all(settings, now=NOW, ingest=False)
    assert summary.success
    assert _posts_by_month(tenant) == _expected()


def test_the_sensors_run_and_a_pipeline_run_at_once_end_right(
    imported: tuple[Settings, Tenant, str],
) -> None:
    settings, tenant, batch = imported
    tags = _sensor_tags(settings, batch)
    results: list[bool] = []

    def sensors_run() -> None:
        with DagsterInstance.ephemeral() as instance:
            done = materialize(
                [*DAILY_ASSETS, *INSIGHT_ASSETS],
                resources=resources(settings),
                instance=instance,
                tags=tags,
                raise_on_error=False,
            )
            results.append(done.success)

    thread = threading.Thread(target=sensors_run)
    thread.start()
    pipeline = subprocess.run(
        [sys.executable, "-m", "murmur", "pipeline", "run", "--no-ingest"],
        env={**os.environ, **settings_env(settings)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    thread.join()
    assert pipeline.returncode == 0, pipeline.stdout + pipeline.stderr[-3000:]
    assert results == [True]
    assert _posts_by_month(tenant) == _expected()
