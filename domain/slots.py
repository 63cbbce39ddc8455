"""Wall-clock schedules in UTC: weekly slots (queues, experiments) and 5-field cron expressions.

Both work in an IANA time zone through :mod:`zoneinfo`, one local wall-clock time at a time:

* a wall-clock time that does not exist (the spring-forward gap) is, for queue slots, moved
  forward to the first valid minute after the gap (09:30 in a 02:00→03:00 gap becomes 03:00),
  and for cron schedules skipped (cron fires only at times the clock actually shows);
* a wall-clock time that happens twice (the fall-back overlap) counts once, at its first
  occurrence (the earlier UTC instant, ``fold=0``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from core.errors import MurmurError

_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def zone(name: str) -> ZoneInfo | None:
    """The IANA zone called ``name``, or None when there is no such zone."""
    if name not in _zone_names():
        return None
    return ZoneInfo(name)


def parse_hhmm(text: str) -> tuple[int, int] | None:
    """``"09:30"`` as (9, 30); None unless it is a 24-hour ``HH:MM``."""
    match = _TIME.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def resolve_wall(wall: datetime, tz: ZoneInfo) -> datetime | None:
    """The UTC instant of the naive wall-clock time ``wall`` in ``tz``.

    None when the time does not exist (a spring-forward gap); the first occurrence when it
    happens twice (fall-back).
    """
    utc = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if utc.astimezone(tz).replace(tzinfo=None) != wall:
        return None
    return utc


def resolve_wall_forward(wall: datetime, tz: ZoneInfo) -> datetime:
    """Like :func:`resolve_wall`, but a time in a gap moves to the first valid minute after it."""
    probe = wall
    for _ in range(48 * 60):
        found = resolve_wall(probe, tz)
        if found is not None:
            return found
        probe += timedelta(minutes=1)
    raise ValueError(f"no valid wall-clock time after {wall} in {tz.key}")


# -- weekly queue slots ------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class WeeklySlot:
    """A weekly wall-clock time: weekday 0-6 (Monday 0) at hour:minute."""

    weekday: int
    hour: int
    minute: int

    @property
    def time(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


@dataclass(frozen=True)
class SlotTime:
    """One concrete occurrence of a weekly slot."""

    at: datetime  # aware, UTC
    local: datetime  # aware, in the queue's zone (after any gap shift)
    slot: WeeklySlot


def slot_times(
    slots: Iterable[WeeklySlot],
    tz: ZoneInfo,
    after: datetime,
    until: datetime | None = None,
) -> Iterator[SlotTime]:
    """Occurrences of ``slots`` strictly after ``after`` (and before ``until``), ascending.

    Two slots that land on the same instant (both shifted out of one gap) count once.
    Without ``until`` the iterator is endless, unless ``slots`` is empty.
    """
    by_day: dict[int, list[WeeklySlot]] = {}
    for slot in sorted(set(slots)):
        by_day.setdefault(slot.weekday, []).append(slot)
    if not by_day:
        return
    day: date = after.astimezone(tz).date() - timedelta(days=1)
    last_day = until.astimezone(tz).date() + timedelta(days=1) if until is not None else None
    seen: set[datetime] = set()
    while last_day is None or day <= last_day:
        found = []
        for slot in by_day.get(day.weekday(), []):
            at = resolve_wall_forward(datetime.combine(day, time(slot.hour, slot.minute)), tz)
            found.append(SlotTime(at=at, local=at.astimezone(tz), slot=slot))
        for occurrence in sorted(found, key=lambda s: s.at):
            if occurrence.at <= after or occurrence.at in seen:
                continue
            if until is not None and occurrence.at >= until:
                continue
            seen.add(occurrence.at)
            yield occurrence
        day += timedelta(days=1)


def next_slots(
    slots: Iterable[WeeklySlot], tz: ZoneInfo, after: datetime, count: int
) -> list[SlotTime]:
    """The first ``count`` occurrences after ``after`` (fewer only when there are no slots)."""
    out: list[SlotTime] = []
    if count <= 0:
        return out
    for occurrence in slot_times(slots, tz, after):
        out.append(occurrence)
        if len(out) == count:
            break
    return out


# -- cron --------------------------------------------------------------------------------------

_CRON_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day_of_month", 1, 31),
    ("month", 1, 12),
    ("day_of_week", 0, 7),
)
_NUMBER = re.compile(r"^\d{1,2}$")


class CronError(MurmurError, ValueError):
    """A cron expression that does not parse; ``field`` names the offending part."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Cron:
    """A parsed 5-field cron expression (Vixie semantics)."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # cron numbering: Sunday 0 (7 folded into 0)
    day_star: bool
    weekday_star: bool

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = day.isoweekday() % 7 in self.weekdays
        if self.day_star or self.weekday_star:
            return dom and dow
        return dom or dow  # both restricted: either one matches (as cron does)


def _number(text: str, name: str, low: int, high: int) -> int:
    if not _NUMBER.match(text):
        raise CronError(name, f"{name}: {text!r} is not a number.")
    value = int(text)
    if not low <= value <= high:
        raise CronError(name, f"{name}: {value} is outside {low}-{high}.")
    return value


def _parse_field(text: str, name: str, low: int, high: int) -> set[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, slash, step_text = part.partition("/")
        step = _number(step_text, name, 1, high - low + 1) if slash else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            first, _, last = base.partition("-")
            start, end = _number(first, name, low, high), _number(last, name, low, high)
            if start > end:
                raise CronError(name, f"{name}: the range {base!r} runs backwards.")
        else:
            start = _number(base, name, low, high)
            end = high if slash else start
        values.update(range(start, end + 1, step))
    return values


def parse_cron(expression: str) -> Cron:
    """Parse ``minute hour day-of-month month day-of-week``: numbers, ``*``, lists, ranges, steps.

    Numbers only (no month or weekday names, no ``@daily``); weekday 0 or 7 is Sunday.
    """
    parts = expression.split()
    if len(parts) != 5:
        raise CronError("cron", "A cron expression has 5 fields: minute hour day month weekday.")
    parsed = [
        _parse_field(p, n, lo, hi) for p, (n, lo, hi) in zip(parts, _CRON_FIELDS, strict=True)
    ]
    weekdays = frozenset(d % 7 for d in parsed[4])
    return Cron(
        minutes=tuple(sorted(parsed[0])),
        hours=tuple(sorted(parsed[1])),
        days=frozenset(parsed[2]),
        months=frozenset(parsed[3]),
        weekdays=weekdays,
        day_star=parts[2].startswith("*"),
        weekday_star=parts[4].startswith("*"),
    )


def next_run(
    cron: Cron, tz: ZoneInfo, after: datetime, horizon_days: int = 366 * 8
) -> datetime | None:
    """The first instant strictly after ``after`` whose wall-clock time in ``tz`` matches ``cron``.

    Walks local days, and the matching minutes of each matching day, in wall-clock order;
    nonexistent local times are skipped and an ambiguous one fires at its first occurrence.
    None when nothing matches within ``horizon_days`` (e.g. ``0 0 30 2 *``).
    """
    day = after.astimezone(tz).date()
    for _ in range(horizon_days):
        if cron.matches_day(day):
            for hour in cron.hours:
                for minute in cron.minutes:
                    at = resolve_wall(datetime.combine(day, time(hour, minute)), tz)
                    if at is not None and at > after:
                        return at
        day += timedelta(days=1)
    return None
