"""The Dagster definitions: ``dagster dev -m pipelines.definitions`` loads ``defs``.

Each domain (``ingest``, ``analytics``) defines its own assets, checks, jobs, schedules and
sensors in ``pipelines/<domain>/definitions.py``; here they are merged with the resources.
"""

from __future__ import annotations

from dagster import Definitions, multiprocess_executor

from murmur.settings import Settings
from pipelines.analytics import definitions as analytics
from pipelines.ingest import definitions as ingest
from pipelines.resources import DEFAULT_SIMULATOR_URL, PlatformsResource, StoreResource

_settings = Settings()  # MURMUR_DATA_DIR, MURMUR_PLATFORMS_URL…: what `murmur up` passes


def resources(data_dir: str, platforms_url: str = DEFAULT_SIMULATOR_URL) -> dict[str, object]:
    """The resources every asset uses, for one data directory."""
    return {
        "store": StoreResource(data_dir=data_dir),
        "platforms": PlatformsResource(platforms_url=platforms_url),
    }


# Dagster's multiprocess executor: every step process opens the store itself (no owner),
# and partitions of one mart commit into the lake side by side (docs/pipeline.md).
defs = Definitions.merge(
    ingest.defs,
    analytics.defs,
    Definitions(
        resources=resources(str(_settings.data_dir), _settings.platforms_url),
        executor=multiprocess_executor,
    ),
)
