"""The analytics domain: staging, marts, insights (checks beside them), the lake's upkeep,
jobs, schedules, sensor."""

from dagster import Definitions

from pipelines.analytics.assets import DAILY_ASSETS, INSIGHT_ASSETS
from pipelines.analytics.maintenance import daily_lake_maintenance, lake_maintenance
from pipelines.analytics.schedules import (
    hourly_insights,
    hourly_marts,
    import_job,
    insights_job,
    marts_job,
)
from pipelines.analytics.sensors import import_batches

defs = Definitions(
    assets=[*DAILY_ASSETS, *INSIGHT_ASSETS],
    jobs=[marts_job, insights_job, import_job, lake_maintenance],
    schedules=[hourly_marts, hourly_insights, daily_lake_maintenance],
    sensors=[import_batches],
)
