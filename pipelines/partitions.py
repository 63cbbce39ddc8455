"""Time partitions: ingest per UTC hour, staging and marts per UTC day."""

from __future__ import annotations

import warnings
from datetime import date

from dagster import (
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
    TimeWindowPartitionMapping,
)

# Ingest captures "now", so its history starts with the product, not with the data.
# end_offset=1: the hour (and the day) in progress is a partition too, since ingest captures
# "now" and dashboards want today's numbers before the day is over.
HOURLY = HourlyPartitionsDefinition(start_date="2025-01-01-00:00", timezone="UTC", end_offset=1)
# Imports carry old data (the shared data sets reach back to 2006): days start early.
DAILY = DailyPartitionsDefinition(start_date="2005-01-01", timezone="UTC", end_offset=1)
# A day depends on its 24 hours; a day before ingest existed has no hours, which is fine.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the parameter is marked beta; its behaviour is what we need
    HOURS_OF_DAY = TimeWindowPartitionMapping(allow_nonexistent_upstream_partitions=True)


def day_ranges(days: list[date]) -> list[tuple[date, date]]:
    """Sorted days grouped into contiguous inclusive ranges: one run per range, not per day."""
    out: list[tuple[date, date]] = []
    for day in sorted(set(days)):
        if out and (day - out[-1][1]).days == 1:
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


def range_tags(first: date, last: date) -> dict[str, str]:
    """Run tags that make one run cover the days first..last of every daily asset."""
    return {
        "dagster/asset_partition_range_start": first.isoformat(),
        "dagster/asset_partition_range_end": last.isoformat(),
    }
