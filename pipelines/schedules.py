"""What every schedule of the pipeline shares: hourly, in UTC, running from the start."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dagster import DefaultScheduleStatus, ScheduleDefinition, ScheduleEvaluationContext, schedule

if TYPE_CHECKING:  # what define_asset_job returns; dagster's top level does not export it
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


def hourly(
    job: UnresolvedAssetJobDefinition, minute: int
) -> Callable[[Callable[[ScheduleEvaluationContext], Any]], ScheduleDefinition]:
    """A schedule of ``job`` at ``minute`` past each UTC hour, on as soon as Dagster loads it."""
    return schedule(
        job=job,
        cron_schedule=f"{minute} * * * *",
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.RUNNING,
    )
