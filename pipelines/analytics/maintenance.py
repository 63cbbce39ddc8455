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

from pipelines.analytics.schedules import WRITES_TAG
from pipelines.logs import QUIET_CONSOLE
from pipelines.resources import StoreResource


class LakeUpkeepConfig(Config):
    """How far back the lake keeps its history."""

    keep_hours: float = Field(
        default=24 * 7,
        ge=0,
        description="Snapshots older than this are expired and the files only they read"
        " deleted: time travel reaches this far back, and it must outlast the longest"
        " transaction on the lake.",
    )


@op
def maintain_lake(
    context: OpExecutionContext, config: LakeUpkeepConfig, store: StoreResource
) -> dict[str, list[int]]:
    """Merge small adjacent files, rewrite mostly deleted ones, expire old snapshots."""
    with store.open() as lake:
        upkeep = lake.maintain(timedelta(hours=config.keep_hours))
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
    description="Every day at 03:50 UTC, the lake's upkeep with a week of history kept.",
)
