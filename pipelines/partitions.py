"""Time partitions: ingest per UTC hour, staging and marts per UTC day; how due days become runs."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from datetime import date, timedelta

from dagster import (
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
    TimeWindowPartitionMapping,
)

from warehouse.marts.runs import raw_rows_by_day
from warehouse.store import Lakehouse

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

# The day ranges one run rebuilds, when its partition range (their hull) holds days it
# leaves alone: "2013-01-02..2013-01-05,2021-03-01..2021-03-01".
RANGES_TAG = "murmur/day_ranges"
# Rebuilding a day that is not due is harmless (every rebuild is idempotent) and costs its
# rows, and Dagster's events for its partition (~28 ms for the four daily assets, on two
# cores); a separate pass costs about as much as this many rows, or this many empty days.
GAP_ROWS = 200_000
GAP_DAYS = 30

DayRange = tuple[date, date]  # inclusive


def day_ranges(days: list[date]) -> list[DayRange]:
    """Sorted days grouped into contiguous inclusive ranges."""
    out: list[DayRange] = []
    for day in sorted(set(days)):
        if out and (day - out[-1][1]).days == 1:
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    return out


def plan_ranges(
    days: list[date],
    rows_by_day: Mapping[date, int],
    gap_rows: int = GAP_ROWS,
    gap_days: int = GAP_DAYS,
) -> list[DayRange]:
    """The ranges to rebuild: the due days, joined across every gap of at most ``gap_days``
    days holding fewer than ``gap_rows`` raw rows, so that a file of isolated days costs its
    rows, not a pass per day."""
    out: list[DayRange] = []
    for first, last in day_ranges(days):
        if out:
            gap = (out[-1][1] + timedelta(days=1), first - timedelta(days=1))
            in_gap = sum(n for d, n in rows_by_day.items() if gap[0] <= d <= gap[1])
            if in_gap < gap_rows and (first - out[-1][1]).days - 1 <= gap_days:
                out[-1] = (out[-1][0], last)
                continue
        out.append((first, last))
    return out


def due_days(captured: list[date], today: date) -> set[date]:
    """Days to rebuild for new raw rows on ``captured`` days: those and the day after each
    (its first delta depends on them); never after ``today``. A post's publication day is
    not due: no mart counts posts published (the read API counts ``dim_posts``)."""
    due = {d for d in captured if d <= today}
    due |= {d + timedelta(days=1) for d in due if d < today}
    return due


def plan(store: Lakehouse, due: set[date]) -> list[DayRange]:
    """The due days as planned ranges: joined across the gaps that are cheap to rebuild."""
    ranges = day_ranges(list(due))
    if len(ranges) <= 1:
        return ranges
    first, last = ranges[0][0], ranges[-1][1]
    return plan_ranges(sorted(due), store.run(lambda cur: raw_rows_by_day(cur, first, last)))


def range_tags(ranges: list[DayRange]) -> dict[str, str]:
    """Run tags that make one run rebuild these ranges of every daily asset, and only them."""
    tags = {
        "dagster/asset_partition_range_start": ranges[0][0].isoformat(),
        "dagster/asset_partition_range_end": ranges[-1][1].isoformat(),
    }
    if len(ranges) > 1:
        tags[RANGES_TAG] = ",".join(f"{a.isoformat()}..{b.isoformat()}" for a, b in ranges)
    return tags


def tagged_ranges(tags: Mapping[str, str], start: date, end: date) -> list[tuple[date, date]]:
    """The half-open ranges a run rebuilds within its partition window [start, end)."""
    spec = tags.get(RANGES_TAG)
    if not spec:
        return [(start, end)]
    out = []
    for part in spec.split(","):
        first, last = (date.fromisoformat(d) for d in part.split(".."))
        lo, hi = max(first, start), min(last + timedelta(days=1), end)
        if lo < hi:
            out.append((lo, hi))
    return out
