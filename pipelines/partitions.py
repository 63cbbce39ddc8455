"""Time partitions: ingest per UTC hour, staging and marts per UTC day; how due days become runs."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta

from dagster import (
    DailyPartitionsDefinition,
    HourlyPartitionsDefinition,
    LastPartitionMapping,
    TimeWindowPartitionMapping,
)

from warehouse.marts.definitions import NewRows
from warehouse.marts.runs import batch_days, later_days, raw_rows_by_day
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
# An unpartitioned asset judged after each capture (the breakouts: over their look-back, from
# the newest hour's readings). With Dagster's default for it, all partitions, each run listed
# every hour since HOURLY's start for each of its inputs to version them, then dropped the
# list as too long (over 100 keys): 1.3 of an hourly run's 2.1 CPU-s on a small store.
NEWEST_HOUR = LastPartitionMapping()

# The day ranges one run rebuilds, when its partition range (their hull) holds days it
# leaves alone: "2013-01-02..2013-01-05,2021-03-01..2021-03-01".
RANGES_TAG = "murmur/day_ranges"
# Later days an import of older days changes, rebuilt for its posts alone ("a..b,c..d"), and
# the new rows whose posts they are rebuilt for (NewRows.tag: "since=…" or "batch=…").
LATER_TAG = "murmur/later_days"
NEW_ROWS_TAG = "murmur/new_rows"
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


def later_ranges(
    store: Lakehouse, new: NewRows | None, whole: list[DayRange], today: date
) -> list[DayRange]:
    """The days new rows change after theirs that no range rebuilds whole, as ranges."""
    if new is None:
        return []
    found = store.run(lambda cur: later_days(cur, new))
    return day_ranges([d for d in found if d <= today and not any(a <= d <= b for a, b in whole)])


@dataclass(frozen=True)
class Rebuild:
    """One run's days: ranges rebuilt whole, and later ranges rebuilt for the new rows' posts."""

    whole: list[DayRange]
    later: list[DayRange] = field(default_factory=list)

    @property
    def label(self) -> str:
        """Its partitions as a step line names them: ``first..last``."""
        days = [d for r in (*self.whole, *self.later) for d in r]
        return f"{min(days)}..{max(days)}"


def rebuilds(
    whole: list[DayRange], later: list[DayRange], gap_days: int = GAP_DAYS
) -> list[Rebuild]:
    """Runs in day order: one per whole range, with the later ranges ``gap_days`` after it."""
    # Day order matters: a day's deltas start from the peaks staged on the days before it.
    # A later range further from the run before gets a run of its own (a run pays Dagster's
    # events for every day of its hull).
    out: list[Rebuild] = []
    segments = sorted([(r, True) for r in whole] + [(r, False) for r in later])
    for (first, last), is_whole in segments:
        if is_whole:
            out.append(Rebuild([(first, last)]))
            continue
        if out:
            ends = [b for _, b in (*out[-1].whole, *out[-1].later)]
            if (first - max(ends)).days - 1 <= gap_days:
                out[-1].later.append((first, last))
                continue
        out.append(Rebuild([], [(first, last)]))
    return out


def rebuild_tags(rebuild: Rebuild, new: NewRows | None) -> dict[str, str]:
    """Run tags that make one run rebuild these whole ranges, then these later ones."""
    if not rebuild.later or new is None:
        return range_tags(rebuild.whole)
    days = [d for r in (*rebuild.whole, *rebuild.later) for d in r]
    tags = {
        "dagster/asset_partition_range_start": min(days).isoformat(),
        "dagster/asset_partition_range_end": max(days).isoformat(),
        LATER_TAG: _spec(rebuild.later),
        NEW_ROWS_TAG: new.tag(),
    }
    if rebuild.whole:
        tags[RANGES_TAG] = _spec(rebuild.whole)
    return tags


def import_tags(store: Lakehouse, batch_id: str, today: date) -> dict[str, str]:
    """The tags of the one run an import batch starts: its due days whole, then its later days."""
    captured = store.run(lambda cur: batch_days(cur, batch_id))
    ranges = plan(store, due_days(captured, today))
    if not ranges:
        return {}
    new = NewRows(batch=batch_id)
    return rebuild_tags(Rebuild(ranges, later_ranges(store, new, ranges, today)), new)


def _spec(ranges: list[DayRange]) -> str:
    return ",".join(f"{a.isoformat()}..{b.isoformat()}" for a, b in ranges)


def range_tags(ranges: list[DayRange]) -> dict[str, str]:
    """Run tags that make one run rebuild these ranges of every daily asset, and only them."""
    tags = {
        "dagster/asset_partition_range_start": ranges[0][0].isoformat(),
        "dagster/asset_partition_range_end": ranges[-1][1].isoformat(),
    }
    if len(ranges) > 1:
        tags[RANGES_TAG] = _spec(ranges)
    return tags


def tagged_ranges(tags: Mapping[str, str], start: date, end: date) -> list[tuple[date, date]]:
    """The half-open ranges a run rebuilds whole within its partition window [start, end)."""
    spec = tags.get(RANGES_TAG)
    if not spec:
        # a run of later days alone names no whole range
        return [] if LATER_TAG in tags else [(start, end)]
    return _parse(spec, start, end)


def tagged_later(
    tags: Mapping[str, str], start: date, end: date
) -> tuple[list[tuple[date, date]], NewRows | None]:
    """The half-open later ranges a run rebuilds for new rows' posts, and those rows."""
    spec, new = tags.get(LATER_TAG), tags.get(NEW_ROWS_TAG)
    if not spec or not new:
        return [], None
    return _parse(spec, start, end), NewRows.from_tag(new)


def _parse(spec: str, start: date, end: date) -> list[tuple[date, date]]:
    out = []
    for part in spec.split(","):
        first, last = (date.fromisoformat(d) for d in part.split(".."))
        lo, hi = max(first, start), min(last + timedelta(days=1), end)
        if lo < hi:
            out.append((lo, hi))
    return out
