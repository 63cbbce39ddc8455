"""Names the marts modules share: the counters, the file-written marts, a day's start, new rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from warehouse.sql import literal

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
        "mart_breakouts",
    }
)


def day_start(day: date) -> datetime:
    """A UTC day's first instant, naive (the lake's timestamps are naive UTC)."""
    return datetime(day.year, day.month, day.day)


@dataclass(frozen=True)
class NewRows:
    """The raw rows a rebuild is planned for: those ingested after a watermark, or one batch's."""

    since: datetime | None = None
    batch: str | None = None

    def __post_init__(self) -> None:
        if (self.since is None) == (self.batch is None):
            raise ValueError("NewRows needs a watermark or a batch, not both")

    def bound(self) -> tuple[str, list[Any]]:
        """The rows' condition, its value bound."""
        if self.batch is not None:
            return "ingest_batch = ?", [self.batch]
        return "ingested_at > ?", [self.since]

    def rendered(self) -> str:
        """The rows' condition, its value rendered (a script binds nothing)."""
        if self.batch is not None:
            return f"ingest_batch = {literal(self.batch)}"
        assert self.since is not None
        return f"ingested_at > {literal(self.since)}"

    def tag(self) -> str:
        """As a run tag's value: ``since=<timestamp>`` or ``batch=<id>``."""
        if self.batch is not None:
            return f"batch={self.batch}"
        assert self.since is not None
        return f"since={self.since.isoformat()}"

    @classmethod
    def from_tag(cls, value: str) -> NewRows:
        """The rows a run tag names (:meth:`tag`)."""
        kind, _, rest = value.partition("=")
        if kind == "batch":
            return cls(batch=rest)
        if kind == "since":
            return cls(since=datetime.fromisoformat(rest))
        raise ValueError(f"not a NewRows tag: {value!r}")
