"""Jobs and schedules: ingest every hour, then today's marts and the insights."""

from datetime import timedelta

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

ingest_job = define_asset_job(
    "ingest_hourly",
    selection=AssetSelection.groups("ingest"),
    description="Capture every platform's accounts, posts and engagement for one hour.",
)
marts_job = define_asset_job(
    "marts_daily",
    selection=AssetSelection.groups("staging", "marts"),
    description="Rebuild one UTC day of staging and unified marts.",
)
insights_job = define_asset_job(
    "insights",
    selection=AssetSelection.groups("insights"),
    description="Recompute best times, anomalies, trends, rankings and insights.",
)


@schedule(
    job=ingest_job,
    cron_schedule="5 * * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
)
def hourly_ingest(context: ScheduleEvaluationContext) -> RunRequest:
    """At :05 each hour, ingest the hour that just started."""
    key = context.scheduled_execution_time.strftime("%Y-%m-%d-%H:00")
    return RunRequest(run_key=key, partition_key=key)


@schedule(
    job=marts_job,
    cron_schedule="20 * * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
)
def hourly_marts(context: ScheduleEvaluationContext) -> list[RunRequest]:
    """At :20 each hour, rebuild today's day (and yesterday's in the first hour of a day)."""
    now = context.scheduled_execution_time
    keys = [now.strftime("%Y-%m-%d")]
    if now.hour == 0:
        keys.append((now - timedelta(days=1)).strftime("%Y-%m-%d"))
    tag = now.strftime("%Y-%m-%dT%H")
    return [RunRequest(run_key=f"{k}@{tag}", partition_key=k) for k in dict.fromkeys(keys)]


@schedule(
    job=insights_job,
    cron_schedule="40 * * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
)
def hourly_insights(context: ScheduleEvaluationContext) -> RunRequest:
    """At :40 each hour, recompute the insights from the refreshed marts."""
    return RunRequest(run_key=context.scheduled_execution_time.strftime("%Y-%m-%dT%H"))


SCHEDULES = [hourly_ingest, hourly_marts, hourly_insights]
JOBS = [ingest_job, marts_job, insights_job]
