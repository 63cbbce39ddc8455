"""Names several of the marts modules share: the counters, the file-written marts, a day's start."""

from __future__ import annotations

from datetime import date, datetime

# The cumulative counters a platform reports; staging turns them into deltas.
METRICS = ("impressions", "reach", "views", "likes", "comments", "shares", "saves", "clicks")
# What counts as an engagement (docs/pipeline.md): impressions, reach and views do not.
ENGAGEMENT_METRICS = ("likes", "comments", "shares", "saves", "clicks")

# The non-partitioned marts, written whole from a computed file: the only tables that
# replace_from_parquet_script (scripts.py) and mart_rows (insights.py) accept, since a
# table name cannot be bound.
FILE_MARTS = frozenset(
    {
        "mart_best_times",
        "mart_anomalies",
        "mart_insights",
        "mart_viral_trends",
        "mart_creator_rankings",
    }
)


def day_start(day: date) -> datetime:
    """A UTC day's first instant, naive (the lake's timestamps are naive UTC)."""
    return datetime(day.year, day.month, day.day)
