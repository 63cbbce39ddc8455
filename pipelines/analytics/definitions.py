"""The analytics domain: staging, marts, insights (checks beside them), jobs, schedules, sensor."""

from dagster import Definitions

from pipelines.analytics.assets import DAILY_ASSETS, INSIGHT_ASSETS
from pipelines.analytics.schedules import hourly_insights, hourly_marts, insights_job, marts_job
from pipelines.analytics.sensors import import_batches

defs = Definitions(
    assets=[*DAILY_ASSETS, *INSIGHT_ASSETS],
    jobs=[marts_job, insights_job],
    schedules=[hourly_marts, hourly_insights],
    sensors=[import_batches],
)
