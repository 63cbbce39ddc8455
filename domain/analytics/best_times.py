"""Best times in words: the labels of cells and blocks, and the recommendation.

The figures come from warehouse/best_times.py (the API's read and the pipeline's insight
alike), so that ``/insights`` and ``/insights/best-times`` say the same for the same zone.
"""

from __future__ import annotations

from typing import Any

from domain.analytics.schemas import BestTimeRecommendation, PostsNeeded
from warehouse import best_times as repo

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
WEEKDAYS = ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays")
DATES_ONLY = "(the data gives dates only)"


def day_type(weekend: bool) -> str:
    return "weekend" if weekend else "weekday"


def hours(block: int) -> tuple[int | None, int | None]:
    """A block's first and end hour (None: the whole day of a date-only export)."""
    if block == repo.DATES_ONLY:
        return None, None
    return block * repo.BLOCK_HOURS, (block + 1) * repo.BLOCK_HOURS


def cell_label(weekday: int, hour: int, tz: str) -> str:
    """e.g. ``Tue 09:00 UTC``; a weekday of a date-only export: ``Tuesdays (dates only)``."""
    if hour == repo.DATES_ONLY:
        return f"{WEEKDAYS[weekday]} (dates only)"
    return f"{DAYS[weekday]} {hour:02d}:00 {tz}"


def block_label(weekend: bool, block: int, tz: str) -> str:
    """e.g. ``Weekdays 12:00-16:00 UTC``; a date-only export's: ``Weekends (dates only)``."""
    days = "Weekends" if weekend else "Weekdays"
    first, end = hours(block)
    if first is None:
        return f"{days} (dates only)"
    return f"{days} {first:02d}:00-{end:02d}:00 {tz}"


def estimate(row: Any) -> dict[str, Any]:
    """A slot's figures as every model of it names them (a cell, a block, a recommendation)."""
    return {
        "posts": int(row["n"]),
        "raw_index": row["raw"],
        "shrunk_index": row["shrunk"],
        "prior": row["prior"],
        "weight": row["w"],
        "ci_low": row["ci_low"],
        "ci_high": row["ci_high"],
        "confidence": row["confidence"],
    }


def _when(row: Any, tz: str) -> tuple[str, str]:
    """The recommendation's resolution and how a sentence names its slot."""
    if row["level"] == "cell":
        if row["hour"] == repo.DATES_ONLY:
            return "day", f"{WEEKDAYS[row['weekday']]} {DATES_ONLY}"
        return "hour", f"{WEEKDAYS[row['weekday']]} at {row['hour']:02d}:00 {tz}"
    days = "weekends" if row["weekend"] else "weekdays"
    first, end = hours(row["block"])
    if first is None:
        return "day_type", f"{days} {DATES_ONLY}"
    return "block", f"{days} {first:02d}:00-{end:02d}:00 {tz}"


def recommendation(row: Any, tz: str) -> BestTimeRecommendation:
    """The recommended slot's figures and sentence (``row``: warehouse.best_times's)."""
    resolution, when = _when(row, tz)
    needed = PostsNeeded(
        medium=int(row["more_for_medium"]),
        high=None if row["more_for_high"] is None else max(0, int(row["more_for_high"])),
    )
    told = bool(row["ci_low"] > 1.0)
    parts = [
        f"Post on {when}: {row['shrunk']:.2f}x your average engagement rate (95 % interval "
        f"{row['ci_low']:.2f}-{row['ci_high']:.2f}), {row['n']} posts, "
        f"{row['confidence']} confidence"
    ]
    if not told:
        parts.append("not yet told apart from your average")
    if needed.medium:
        parts.append(f"{needed.medium} more posts there would make it medium confidence")
    if needed.high:
        parts.append(f"about {needed.high} more would make it high confidence")
    elif needed.high is None:
        parts.append("no number of posts would make it high confidence this close to average")
    cell = row["level"] == "cell"
    first, end = (None, None) if cell else hours(row["block"])
    return BestTimeRecommendation(
        resolution=resolution,
        label=(
            cell_label(row["weekday"], row["hour"], tz)
            if cell
            else block_label(row["weekend"], row["block"], tz)
        ),
        weekday=row["weekday"] if cell else None,
        hour=row["hour"] if cell and row["hour"] != repo.DATES_ONLY else None,
        day_type=None if cell else day_type(row["weekend"]),
        start_hour=first,
        end_hour=end,
        **estimate(row),
        told_apart=told,
        posts_needed=needed,
        text="; ".join(parts) + ".",
    )
