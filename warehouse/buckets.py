"""The bucket calendar of unified analytics: a zone's hours, days, ISO weeks and months in UTC.

A bucket is a half-open span of local time ``[start, next start)`` in an IANA zone, given
as UTC instants: an hour from the local ``:00`` (in a zone with a half-hour offset such as
Asia/Kolkata the local hour starts at ``:30`` UTC), a day from local midnight, an ISO week
from Monday's midnight, a month from its 1st's midnight. Across a daylight-saving change a
local day or month is 23 or 25 hours long and a repeated local hour is two buckets; a local
start that does not exist (clocks jumping over midnight) is the first instant after the
jump. Everything here is pure computation (zoneinfo, the tzdata package), so the marts'
SQL gets plain UTC boundaries and no session time zone.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Literal
from zoneinfo import ZoneInfo, available_timezones

Granularity = Literal["hour", "day", "week", "month"]

HOUR = timedelta(hours=1)
_TICK = timedelta(microseconds=1)


# Files a system's zoneinfo directory holds that are no IANA zone (the machine's own setting).
_NOT_ZONES = frozenset({"localtime", "posixrules"})


@cache
def _zone_names() -> dict[str, str]:
    """Every IANA zone name the time zone database knows, by its lower case."""
    return {name.lower(): name for name in available_timezones() if name not in _NOT_ZONES}


def zone_name(name: str) -> str | None:
    """The IANA spelling of ``name`` (any case), or None when tzdata has no such zone."""
    return _zone_names().get(name.strip().lower())


@cache
def zone(name: str) -> ZoneInfo:
    """The zone of an IANA name as :func:`zone_name` spells it."""
    return ZoneInfo(name)


def _local_start(day: date, tz: ZoneInfo) -> datetime:
    """The UTC instant of ``day``'s local midnight (a skipped midnight: the jump's end)."""
    # fold=0 reads a skipped wall time with the offset from before the jump, which lands
    # exactly on the jump's instant: the first instant of that local day.
    return datetime.combine(day, time(), tzinfo=tz).astimezone(UTC)


def _candidate(instant: datetime, granularity: Granularity, tz: ZoneInfo) -> datetime:
    """The start of the bucket the local wall clock puts ``instant`` in (UTC)."""
    local = instant.astimezone(tz)
    if granularity == "hour":
        # Keeps fold: the repeated hour of a fall-back change is its own bucket.
        return local.replace(minute=0, second=0, microsecond=0).astimezone(UTC)
    day = local.date()
    if granularity == "week":
        day -= timedelta(days=day.weekday())
    elif granularity == "month":
        day = day.replace(day=1)
    return _local_start(day, tz)


def following(start: datetime, granularity: Granularity, tz: ZoneInfo) -> datetime:
    """The start of the bucket after the one starting at ``start`` (UTC), always later."""
    if granularity == "hour":
        # One real hour on is inside the next local hour, except where a half-hour change
        # repeats part of a wall hour (Australia/Lord_Howe): that part is a bucket of its own.
        found = _candidate(start + HOUR, granularity, tz)
        return found if found > start else start + HOUR
    day = start.astimezone(tz).date()
    while True:  # a local day the zone skipped entirely (Pacific/Apia, 2011-12-30) is none
        if granularity == "day":
            day += timedelta(days=1)
        elif granularity == "week":
            day += timedelta(days=7)
        else:
            day = date(day.year + day.month // 12, day.month % 12 + 1, 1)
        found = _local_start(day, tz)
        if found > start:
            return found


def floor(instant: datetime, granularity: Granularity, tz: ZoneInfo) -> datetime:
    """The start (UTC) of the bucket holding ``instant`` (aware)."""
    start = _candidate(instant, granularity, tz)
    while start > instant:  # not expected (the wall clock starts its buckets before): back off
        start = _candidate(start - HOUR, granularity, tz)
    while (nxt := following(start, granularity, tz)) <= instant:
        start = nxt
    return start


def preceding(start: datetime, granularity: Granularity, tz: ZoneInfo) -> datetime:
    """The start of the bucket before the one starting at ``start``."""
    return floor(start - _TICK, granularity, tz)


def last_buckets(instant: datetime, count: int, granularity: Granularity, tz: ZoneInfo) -> datetime:
    """The start of the ``count``-th bucket back, counting the one holding ``instant`` as 1."""
    start = floor(instant, granularity, tz)
    for _ in range(count - 1):
        start = preceding(start, granularity, tz)
    return start


def edges(start: datetime, end: datetime, granularity: Granularity, tz: ZoneInfo) -> list[datetime]:
    """The boundaries of the buckets ``[start, end)`` touches: bucket i is [e[i], e[i+1])."""
    found = [floor(start, granularity, tz)]
    while found[-1] < end:
        found.append(following(found[-1], granularity, tz))
    return found


def bucket_of(instant: datetime, boundaries: Sequence[datetime]) -> int:
    """The index of the bucket holding ``instant`` among ``boundaries`` (it must lie inside)."""
    return bisect_right(boundaries, instant) - 1
