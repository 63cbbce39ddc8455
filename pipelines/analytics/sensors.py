"""Sensors: each file import that lands new raw rows starts one run over its days."""

from datetime import UTC, datetime

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from core.settings import Settings
from pipelines import IMPORT_TAG
from pipelines.analytics.schedules import import_job
from pipelines.logs import QUIET_CONSOLE
from pipelines.partitions import import_tags
from pipelines.resources import StoreResource
from warehouse.marts.runs import import_batches_after


# Running from the start: `murmur up` should need no clicks in the UI.
@sensor(
    job=import_job,
    minimum_interval_seconds=Settings().import_sensor_seconds,
    default_status=DefaultSensorStatus.RUNNING,
)
def import_batches(
    context: SensorEvaluationContext, store: StoreResource
) -> list[RunRequest] | SkipReason:
    """One run per new import batch (ingest_batches.source import:*): its days, then insights."""
    after = None
    if context.cursor:
        at, batch = context.cursor.split("|", 1)
        after = (datetime.fromisoformat(at), batch)
    today = datetime.now(UTC).date()
    requests = []
    with store.open() as s:
        batches = s.run(lambda cur: import_batches_after(cur, after))
        if not batches:
            return SkipReason("no new import batch")
        for row in batches:
            batch_id: str = row["id"]
            tags = import_tags(s, batch_id, today)
            cursor = f"{row['finished_at'].isoformat()}|{batch_id}"
            if tags:
                # One run: its daily assets rebuild the planned ranges (then the later days
                # an import of older days changes, for its posts alone), then the insights.
                requests.append(
                    RunRequest(
                        run_key=cursor,
                        job_name=import_job.name,
                        tags={**tags, IMPORT_TAG: batch_id},
                        run_config=QUIET_CONSOLE,
                    )
                )
    context.update_cursor(cursor)
    return requests
