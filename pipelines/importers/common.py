"""What every format shares: the parsed result and duplicate handling."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from pipelines.importers.csvfile import ROW


@dataclass
class Parsed:
    """A format's output: frames for the raw tables and what it did to get them."""

    posts: pl.DataFrame
    snapshots: pl.DataFrame
    accounts: pl.DataFrame
    duplicates_dropped: int = 0
    conflicts_resolved: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Context:
    """What a format needs to know beyond the file: the workspace's choices."""

    kind: str | None  # override of the format's default kind
    own_account: tuple[str, str, str] | None  # (account_id, external_id, handle)
    now: datetime


def dedupe(
    frame: pl.DataFrame, key: list[str], raw: list[str], prefer: str
) -> tuple[pl.DataFrame, int, int]:
    """Drop exact repeats of a record, then keep the largest ``prefer`` among rows per key.

    Returns the frame, the exact duplicates dropped and the conflicting rows discarded.
    Only rows whose key repeats are compared in full, so a clean file costs one hash pass.
    """
    repeated = pl.struct(key).is_duplicated()
    suspects = frame.filter(repeated)
    if suspects.height == 0:
        return frame, 0, 0
    unique = suspects.unique(subset=raw, keep="first", maintain_order=True)
    exact = suspects.height - unique.height
    kept = unique.sort([prefer, ROW], descending=[True, False], nulls_last=True).unique(
        subset=key, keep="first"
    )
    conflicts = unique.height - kept.height
    return pl.concat([frame.filter(~repeated), kept]).sort(ROW), exact, conflicts
