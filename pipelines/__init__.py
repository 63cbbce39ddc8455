"""Dagster assets: ingest from the platforms into the store, then staging and marts."""

import os

# Dagster's own switch: a run over a range of days logs one planned event per asset and
# check instead of one per day (an import's run over 600 days spent 3 of its 22 s on them).
# The trade: a failed run's days show as missing rather than failed in Dagster's UI; Murmur
# plans them again from its own run markers either way. `murmur up` passes it to Dagster's
# daemon, which plans the sensor's runs.
PLANNED_EVENTS_ENV = {"DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS": "true"}
for _name, _value in PLANNED_EVENTS_ENV.items():
    os.environ.setdefault(_name, _value)

# The tag of the run an import starts (pipelines/analytics/sensors.py): its batch, by which
# `murmur up`'s console names the import beside the run (murmur/runs.py).
IMPORT_TAG = "murmur/import"
