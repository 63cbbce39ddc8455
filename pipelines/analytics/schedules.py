"""The analytics jobs and their schedules: today's marts at :20, the insights at :40."""

from datetime import timedelta

from dagster import (
    AssetSelection,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    in_process_executor,
)

from pipelines.logs import QUIET_CONSOLE
from pipelines.schedules import hourly

# Runs that rewrite the marts carry this tag: `murmur up`'s run queue runs one at a time.
WRITES_TAG = "murmur/writes"

marts_job = define_asset_job(
    "marts_daily",
    selection=AssetSelection.groups("staging", "marts"),
    description="Rebuild one UTC day of staging and unified marts.",
    tags={WRITES_TAG: "marts"},
    config=QUIET_CONSOLE,
)
import_job = define_asset_job(
    "import_refresh",
    selection=AssetSelection.groups("staging", "marts", "insights", "breakouts"),
    description="Rebuild an import's days of staging and unified marts, then the insights"
    " and breakouts.",
    tags={WRITES_TAG: "marts"},
    config=QUIET_CONSOLE,
    # Its steps run one after another anyway (each mart reads the one before): a process
    # per step would only add ~5 s of start-up to each of its ten steps.
    executor_def=in_process_executor,
)
insights_job = define_asset_job(
    "insights",
    selection=AssetSelection.groups("insights"),
    description="Recompute best times, anomalies, trends, rankings and insights.",
    tags={WRITES_TAG: "marts"},
    config=QUIET_CONSOLE,
)


@hourly(marts_job, 20)
def hourly_marts(context: ScheduleEvaluationContext) -> list[RunRequest]:
    """At :20 each hour, rebuild today's day (and yesterday's in the first hour of a day)."""
    now = context.scheduled_execution_time
    keys = [now.strftime("%Y-%m-%d")]
    if now.hour == 0:
        keys.append((now - timedelta(days=1)).strftime("%Y-%m-%d"))
    tag = now.strftime("%Y-%m-%dT%H")
    return [
        RunRequest(run_key=f"{k}@{tag}", partition_key=k, run_config=QUIET_CONSOLE)
        for k in dict.fromkeys(keys)
    ]


@hourly(insights_job, 40)
def hourly_insights(context: ScheduleEvaluationContext) -> RunRequest:
    """At :40 each hour, recompute the insights from the refreshed marts."""
    return RunRequest(
        run_key=context.scheduled_execution_time.strftime("%Y-%m-%dT%H"), run_config=QUIET_CONSOLE
    )
