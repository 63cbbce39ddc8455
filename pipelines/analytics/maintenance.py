"""The lake's daily upkeep: merge the small files the hourly runs leave, expire old snapshots."""

from datetime import timedelta

from dagster import (
    Config,
    DefaultScheduleStatus,
    OpExecutionContext,
    ScheduleDefinition,
    job,
    op,
)
from pydantic import Field

from core.settings import Settings
from pipelines.analytics.schedules import WRITES_TAG
from pipelines.logs import QUIET_CONSOLE
from pipelines.resources import StoreResource


class LakeUpkeepConfig(Config):
    """How far back the lake keeps its history."""

    keep_hours: float | None = Field(
        default=None,
        ge=0,
        description="Snapshots older than this are expired and the files only they read"
        " deleted: time travel reaches this far back, and it must outlast the longest"
        " transaction on the lake. Unset: the settings' lake_snapshot_keep_hours"
        " (MURMUR_LAKE_SNAPSHOT_KEEP_HOURS, 168 by default), the bound of the API's `as_of`.",
    )


def keep_hours(config: LakeUpkeepConfig) -> float:
    """The retention a pass keeps: the run's own, else the one the API's ``as_of`` allows."""
    # Read from the environment as the API reads it, so that what as_of refuses as too old
    # and what the upkeep expires are the same snapshots.
    if config.keep_hours is not None:
        return config.keep_hours
    return Settings().lake_snapshot_keep_hours


@op
def maintain_lake(
    context: OpExecutionContext, config: LakeUpkeepConfig, store: StoreResource
) -> dict[str, list[int]]:
    """Merge small adjacent files, rewrite mostly deleted ones, expire old snapshots."""
    with store.open() as lake:
        upkeep = lake.maintain(timedelta(hours=keep_hours(config)))
    counts = {
        "live_files": list(upkeep.live_files),
        "snapshots": list(upkeep.snapshots),
        "stored_files": list(upkeep.stored_files),
    }
    context.log.info(f"lake upkeep (before, after): {counts}")
    return counts


@job(
    description="The lake's upkeep: small files merged, old snapshots and files removed.",
    tags={WRITES_TAG: "marts"},
    config=QUIET_CONSOLE,
)
def lake_maintenance() -> None:
    maintain_lake()


daily_lake_maintenance = ScheduleDefinition(
    job=lake_maintenance,
    run_config=QUIET_CONSOLE,
    # After the :40 insights of 03:00, long before the :20 marts of 04:00.
    cron_schedule="50 3 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day at 03:50 UTC, the lake's upkeep: lake_snapshot_keep_hours of"
    " history kept (a week by default).",
)
