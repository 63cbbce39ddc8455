"""The ingest job and its schedule: every hour, capture the hour that just started."""

from dagster import (
    AssetSelection,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
)

from pipelines.logs import QUIET_CONSOLE
from pipelines.schedules import hourly

ingest_job = define_asset_job(
    "ingest_hourly",
    # The analytics domain's breakouts judge each capture at once, in its run: their events
    # go out minutes after the capture, not at :40 (loaded alone, the domain has no such group).
    selection=AssetSelection.groups("ingest", "breakouts"),
    description="Capture every platform's accounts, posts and engagement for one hour, then"
    " judge the own posts' breakouts.",
    config=QUIET_CONSOLE,
)


@hourly(ingest_job, 5)
def hourly_ingest(context: ScheduleEvaluationContext) -> RunRequest:
    """At :05 each hour, ingest the hour that just started."""
    key = context.scheduled_execution_time.strftime("%Y-%m-%d-%H:00")
    return RunRequest(run_key=key, partition_key=key, run_config=QUIET_CONSOLE)
