"""The Dagster definitions: ``dagster dev -m pipelines.definitions`` loads ``defs``.

Each domain (``ingest``, ``analytics``) defines its own assets, checks, jobs, schedules and
sensors in ``pipelines/<domain>/definitions.py``; here they are merged with the resources.
"""

from __future__ import annotations

from dagster import Definitions

from core.settings import Settings
from pipelines.analytics import definitions as analytics
from pipelines.executors import executor
from pipelines.ingest import definitions as ingest
from pipelines.resources import PlatformsResource, StoreResource

_settings = Settings()  # MURMUR_DATA_DIR, MURMUR_PLATFORMS_URL…: what `murmur up` passes


def resources(settings: Settings) -> dict[str, object]:
    """The resources every asset uses, on the store of ``settings``."""
    return {
        "store": StoreResource.of(settings),
        "platforms": PlatformsResource(platforms_url=settings.platforms_url),
    }


# Dagster's multiprocess executor, or Celery's workers (MURMUR_PIPELINE_EXECUTOR,
# pipelines/executors.py): every step process opens the store itself (no owner), and
# partitions of one mart commit into the lake side by side (docs/pipeline.md).
defs = Definitions.merge(
    ingest.defs,
    analytics.defs,
    Definitions(
        # Only the data directory in the config Dagster shows: the store's other fields
        # (a database URL's password, the S3 secret) come from each step process's MURMUR_*.
        resources={
            "store": StoreResource(data_dir=str(_settings.data_dir)),
            "platforms": PlatformsResource(platforms_url=_settings.platforms_url),
        },
        executor=executor(_settings),
    ),
)
