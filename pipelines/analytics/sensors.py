"""Sensors: a file import that lands new raw rows starts the marts for its days."""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from pipelines.analytics.schedules import insights_job, marts_job
from pipelines.partitions import day_ranges, range_tags
from pipelines.resources import StoreResource
from warehouse import marts


# Running from the start: `murmur up` should need no clicks in the UI.
@sensor(
    jobs=[marts_job, insights_job],
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
)
def import_batches(
    context: SensorEvaluationContext, store: StoreResource
) -> list[RunRequest] | SkipReason:
    """When a new import batch (ingest_batches.source import:*) lands, rebuild its days."""
    with store.open() as s:
        latest = s.run(marts.latest_import_batch)
        if latest is None:
            return SkipReason("no import batch yet")
        cursor = f"{latest['finished_at'].isoformat()}|{latest['id']}"
        if cursor == context.cursor:
            return SkipReason("no new import batch")
        since = None
        if context.cursor:
            from datetime import datetime

            since = datetime.fromisoformat(context.cursor.split("|", 1)[0])
        # Also the days a re-dated post left, so that it is counted on one day only.
        days = sorted(
            set(s.run(lambda cur: marts.days_with_new_raw(cur, since)))
            | set(marts.days_with_new_posts(s, since))
        )
    context.update_cursor(cursor)
    # One run per contiguous range of days: an import of ten years is a handful of runs.
    requests = [
        RunRequest(
            run_key=f"{a.isoformat()}..{b.isoformat()}@{cursor}",
            job_name=marts_job.name,
            tags=range_tags(a, b),
        )
        for a, b in day_ranges(days)
    ]
    requests.append(RunRequest(run_key=f"insights@{cursor}", job_name=insights_job.name))
    return requests
