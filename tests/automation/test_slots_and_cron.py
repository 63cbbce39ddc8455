"""Weekly slots and cron schedules across the 2026 daylight-saving changes (values by hand).

Europe/Paris: CET (UTC+1) → CEST (UTC+2) at 02:00 on 2026-03-29, back at 03:00 on 2026-10-25.
America/New_York: EST (UTC-5) → EDT (UTC-4) at 02:00 on 2026-03-08, back at 02:00 on 2026-11-01.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from domain.slots import (
    CronError,
    WeeklySlot,
    next_run,
    next_slots,
    parse_cron,
    resolve_wall,
    slot_times,
    zone,
)

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")
MON, SAT, SUN = 0, 5, 6


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def ats(found: list) -> list[datetime]:  # type: ignore[type-arg]
    return [s.at for s in found]


# -- slots ---------------------------------------------------------------------------------------


def test_paris_9am_slot_is_8z_in_winter_and_7z_in_summer() -> None:
    found = next_slots([WeeklySlot(MON, 9, 0)], PARIS, utc("2026-03-20T00:00:00"), 2)
    assert ats(found) == [utc("2026-03-23T08:00:00"), utc("2026-03-30T07:00:00")]
    assert found[0].local.isoformat() == "2026-03-23T09:00:00+01:00"
    assert found[1].local.isoformat() == "2026-03-30T09:00:00+02:00"


def test_paris_autumn_9am_moves_back_to_8z() -> None:
    found = next_slots([WeeklySlot(MON, 9, 0)], PARIS, utc("2026-10-18T00:00:00"), 2)
    assert ats(found) == [utc("2026-10-19T07:00:00"), utc("2026-10-26T08:00:00")]


def test_paris_slot_in_the_spring_gap_moves_to_3am() -> None:
    found = next_slots([WeeklySlot(SUN, 2, 30)], PARIS, utc("2026-03-21T00:00:00"), 3)
    assert ats(found) == [
        utc("2026-03-22T01:30:00"),  # 02:30 CET
        utc("2026-03-29T01:00:00"),  # 02:30 does not exist: 03:00 CEST
        utc("2026-04-05T00:30:00"),  # 02:30 CEST
    ]
    assert found[1].local.isoformat() == "2026-03-29T03:00:00+02:00"


def test_paris_ambiguous_slot_takes_the_first_occurrence() -> None:
    found = next_slots([WeeklySlot(SUN, 2, 30)], PARIS, utc("2026-10-24T00:00:00"), 2)
    assert ats(found) == [utc("2026-10-25T00:30:00"), utc("2026-11-01T01:30:00")]


def test_slots_shifted_onto_the_same_instant_count_once() -> None:
    slots = [WeeklySlot(SUN, 2, 0), WeeklySlot(SUN, 2, 30), WeeklySlot(SUN, 3, 0)]
    found = next_slots(slots, PARIS, utc("2026-03-28T00:00:00"), 2)
    assert ats(found) == [utc("2026-03-29T01:00:00"), utc("2026-04-05T00:00:00")]


def test_new_york_daily_9am_across_spring_forward() -> None:
    daily = [WeeklySlot(day, 9, 0) for day in range(7)]
    found = next_slots(daily, NEW_YORK, utc("2026-03-07T00:00:00"), 3)
    assert ats(found) == [
        utc("2026-03-07T14:00:00"),  # Saturday, EST
        utc("2026-03-08T13:00:00"),  # Sunday, EDT
        utc("2026-03-09T13:00:00"),
    ]


def test_new_york_gap_and_fall_back() -> None:
    assert ats(next_slots([WeeklySlot(SUN, 2, 15)], NEW_YORK, utc("2026-03-07T00:00:00"), 1)) == [
        utc("2026-03-08T07:00:00")  # 02:15 does not exist: 03:00 EDT
    ]
    found = next_slots([WeeklySlot(SUN, 1, 30)], NEW_YORK, utc("2026-10-31T00:00:00"), 2)
    assert ats(found) == [utc("2026-11-01T05:30:00"), utc("2026-11-08T06:30:00")]
    daily = [WeeklySlot(day, 9, 0) for day in range(7)]
    found = next_slots(daily, NEW_YORK, utc("2026-10-31T00:00:00"), 2)
    assert ats(found) == [utc("2026-10-31T13:00:00"), utc("2026-11-01T14:00:00")]


def test_slot_times_window_is_half_open_and_strictly_after() -> None:
    slots = [WeeklySlot(MON, 9, 0)]
    at = utc("2026-03-23T08:00:00")
    assert ats(list(slot_times(slots, PARIS, at, utc("2026-04-06T07:00:00")))) == [
        utc("2026-03-30T07:00:00")
    ]
    assert next_slots([], PARIS, at, 3) == []


def test_resolve_wall_reports_nonexistent_times() -> None:
    assert resolve_wall(datetime(2026, 3, 29, 2, 30), PARIS) is None
    assert resolve_wall(datetime(2026, 10, 25, 2, 30), PARIS) == utc("2026-10-25T00:30:00")


def test_zone_accepts_only_iana_names() -> None:
    assert zone("Europe/Paris") == PARIS
    assert zone("Mars/Olympus") is None
    assert zone("../etc/passwd") is None
    assert zone("") is None


# -- cron ----------------------------------------------------------------------------------------


def test_weekday_mornings_in_paris() -> None:
    cron = parse_cron("30 9 * * 1-5")
    # Friday 11:00 CET: the next match is Monday 09:30, already summer time.
    assert next_run(cron, PARIS, utc("2026-03-27T10:00:00")) == utc("2026-03-30T07:30:00")
    # Friday 09:00 CET: later that morning.
    assert next_run(cron, PARIS, utc("2026-03-27T08:00:00")) == utc("2026-03-27T08:30:00")
    # Strictly after: at the match itself, the next weekday.
    assert next_run(cron, PARIS, utc("2026-03-27T08:30:00")) == utc("2026-03-30T07:30:00")


def test_cron_skips_a_nonexistent_time() -> None:
    cron = parse_cron("30 2 * * *")
    assert next_run(cron, PARIS, utc("2026-03-28T02:00:00")) == utc("2026-03-30T00:30:00")
    every_quarter = parse_cron("*/15 * * * *")
    # 01:50 EST; 02:00-02:45 do not exist that night, so 03:00 EDT.
    assert next_run(every_quarter, NEW_YORK, utc("2026-03-08T06:50:00")) == utc(
        "2026-03-08T07:00:00"
    )


def test_cron_fires_once_on_an_ambiguous_time() -> None:
    cron = parse_cron("30 2 * * *")
    assert next_run(cron, PARIS, utc("2026-10-24T12:00:00")) == utc("2026-10-25T00:30:00")
    assert next_run(cron, PARIS, utc("2026-10-25T00:30:00")) == utc("2026-10-26T01:30:00")
    hourly = parse_cron("0 * * * *")
    # New York 01:00 EDT (05:00Z); 01:00 EST (06:00Z) is its second occurrence, skipped.
    assert next_run(hourly, NEW_YORK, utc("2026-11-01T05:00:00")) == utc("2026-11-01T07:00:00")


def test_day_of_month_or_day_of_week_when_both_restricted() -> None:
    cron = parse_cron("0 12 13 * 5")  # the 13th, or any Friday
    utc_zone = ZoneInfo("UTC")
    assert next_run(cron, utc_zone, utc("2026-02-01T00:00:00")) == utc("2026-02-06T12:00:00")
    assert next_run(cron, utc_zone, utc("2026-03-07T00:00:00")) == utc("2026-03-13T12:00:00")
    star = parse_cron("0 12 */10 * 1")  # starred day field: both must hold (11th, 21st, 31st)
    assert next_run(star, utc_zone, utc("2026-05-01T00:00:00")) == utc("2026-05-11T12:00:00")


def test_cron_fields_lists_ranges_steps() -> None:
    cron = parse_cron("5/20 10-20/5,0 * 1,6 0")
    assert cron.minutes == (5, 25, 45)
    assert cron.hours == (0, 10, 15, 20)
    assert cron.months == frozenset({1, 6})
    assert parse_cron("0 0 * * 7").weekdays == frozenset({0})
    sunday = next_run(parse_cron("0 0 * * 7"), ZoneInfo("UTC"), utc("2026-03-02T00:00:00"))
    assert sunday == utc("2026-03-08T00:00:00")


def test_cron_that_never_matches() -> None:
    assert next_run(parse_cron("0 0 30 2 *"), PARIS, utc("2026-01-01T00:00:00")) is None


@pytest.mark.parametrize(
    ("expression", "field"),
    [
        ("* * * *", "cron"),
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day_of_month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day_of_week"),
        ("5-1 * * * *", "minute"),
        ("*/0 * * * *", "minute"),
        ("a * * * *", "minute"),
        ("1,,2 * * * *", "minute"),
        ("* * * JAN *", "month"),
    ],
)
def test_invalid_cron_names_its_field(expression: str, field: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(expression)
    assert caught.value.field == field
