"""The ingest domain: its assets (checks beside them), its job and its schedule."""

from dagster import Definitions

from pipelines.ingest.assets import INGEST_ASSETS
from pipelines.ingest.schedules import hourly_ingest, ingest_job

defs = Definitions(assets=INGEST_ASSETS, jobs=[ingest_job], schedules=[hourly_ingest])
