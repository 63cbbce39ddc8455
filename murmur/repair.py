"""``murmur doctor``'s repair of a damaged lake: files out, raw ones aside, derived days rebuilt.

A damaged file of a derived table is taken out of the current snapshot without being read
(warehouse/lake/repair.py) and the days it held are rebuilt from the raw tables by the
pipeline's own steps (``pipelines.run.rebuild_days``). A damaged raw file cannot be rebuilt:
it is moved to ``<data dir>/quarantine/<table>/`` (an object on S3 stays in its bucket),
taken out the same way (the table reads again), its loss reported with its days, ingest
times and rows, and the derived days it fed are rebuilt without it.

Killed at any moment (kill -9), a later ``murmur doctor`` finishes the job; the steps are
ordered so that every state in between is one it resumes from:

1. The plan (the lines to report, the days to rebuild) is written to ``quarantine/repair.json``
   (a new file, fsynced, renamed into place) before anything changes. Killed before it,
   nothing changed and the next doctor finds the same damage.
2. Damaged raw files are renamed into the quarantine folder (same file system: atomic),
   which is fsynced. The catalog may still name them; their table did not read before
   either, and the next doctor sees them as missing and takes them out, the plan at hand.
3. One catalog transaction ends every damaged file: all or nothing.
4. The planned days are rebuilt: each step a transaction that deletes its days and inserts
   them again, so a step killed half-way is run again whole. Until the rebuild is done the
   plan stays; the next doctor, finding it, rebuilds its days even when no damage is left.
5. The plan is removed.

Nothing healthy is lost: only files the check found damaged are ended, and a raw one is
moved, never deleted.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from core.settings import Settings
from warehouse.files import sync_dir
from warehouse.lake.integrity import Damage
from warehouse.lake.repair import (
    KNOWN_FORMATS,
    RAW_TABLES,
    LakeFile,
    catalog_format,
    current_files,
    take_out,
)
from warehouse.marts.definitions import FILE_MARTS

QUARANTINE = "quarantine"
PLAN = "repair.json"
# The raw tables the marts are computed from (ingest_batches is the ingest's own record).
_FEEDS_MARTS = frozenset({"raw_posts", "raw_engagement_snapshots", "raw_account_snapshots"})


@dataclass
class Outcome:
    """What a repair did (lines to print) and what it could not do."""

    repaired: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class _Plan:
    lines: list[str] = field(default_factory=list)
    days: set[date] = field(default_factory=set)
    every_day: bool = False  # a table whose days the catalog cannot say: rebuild all
    insights: bool = False

    @property
    def rebuild(self) -> bool:
        return bool(self.days) or self.every_day or self.insights

    def merge(self, other: _Plan) -> None:
        self.lines += [line for line in other.lines if line not in self.lines]
        self.days |= other.days
        self.every_day |= other.every_day
        self.insights |= other.insights

    def dump(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "days": sorted(d.isoformat() for d in self.days),
            "every_day": self.every_day,
            "insights": self.insights,
        }

    @classmethod
    def load(cls, data: dict[str, Any]) -> _Plan:
        return cls(
            lines=[str(line) for line in data.get("lines", [])],
            days={date.fromisoformat(d) for d in data.get("days", [])},
            every_day=bool(data.get("every_day")),
            insights=bool(data.get("insights")),
        )


def pending(settings: Settings) -> bool:
    """Whether a repair was left unfinished (its plan is still there)."""
    return (settings.data_dir / QUARANTINE / PLAN).exists()


def repair_lake(settings: Settings, damaged: list[Damage]) -> Outcome:
    """Take ``damaged`` out of the lake (raw files moved aside), then rebuild the derived
    days they held or fed, and finish a repair a killed doctor left."""
    outcome = Outcome()
    folder = settings.data_dir / QUARANTINE
    plan_file = folder / PLAN
    plan = _Plan.load(json.loads(plan_file.read_text())) if plan_file.exists() else _Plan()
    if damaged:
        _take_out(settings, damaged, plan, outcome, folder)
    if not plan.rebuild and not plan.lines:
        return outcome
    if plan.rebuild:
        from pipelines.run import rebuild_days  # Dagster: loaded only when there is work

        began = time.perf_counter()
        summary = rebuild_days(settings, None if plan.every_day else plan.days)
        if not summary.success:
            failed = ", ".join(
                f"{s.name} {s.partitions}: {s.error}" for s in summary.steps if not s.success
            )
            outcome.problems.append(
                f"the rebuild of the derived tables failed ({failed}); `murmur doctor` again"
                " runs it again"
            )
            outcome.repaired += plan.lines
            return outcome
        spans = "every day" if plan.every_day else _spans(plan.days)
        plan.lines.append(
            f"rebuilt the derived tables of {spans} from the raw tables, then the insights"
            f" ({time.perf_counter() - began:.1f} s)"
        )
    outcome.repaired += plan.lines
    plan_file.unlink(missing_ok=True)
    sync_dir(folder)
    return outcome


def _take_out(
    settings: Settings, damaged: list[Damage], plan: _Plan, outcome: Outcome, folder: Path
) -> None:
    local = settings.lake.local_data
    today = datetime.now(UTC).date()
    new = _Plan()
    ending: list[LakeFile] = []
    moves: list[tuple[str, Path]] = []
    with settings.open_lakehouse() as lake, lake.cursor() as cur:
        con = cur.raw
        found = catalog_format(con)  # type: ignore[arg-type]
        if found not in KNOWN_FORMATS:
            outcome.problems.append(
                f"the lake's catalog is DuckLake format {found or '?'}, which this Murmur does"
                " not repair: restore a backup (`murmur restore`)"
            )
            return
        files: dict[str, dict[str, LakeFile]] = {}
        for damage in damaged:
            table = damage.table
            if table not in files:
                files[table] = current_files(con, table)  # type: ignore[arg-type]
            file = files[table].get(os.path.basename(damage.path))
            if file is None or file in ending:
                continue
            name = os.path.basename(file.path)
            if table in RAW_TABLES:
                if local is None:
                    # An object is not moved: the bucket keeps it (and its versions, where
                    # versioning is on) until the upkeep deletes what no kept snapshot reads.
                    where = "left in the bucket until the upkeep deletes it"
                    done = f"took out {name} ({damage.problem}), {where}"
                else:
                    aside = folder / table / name
                    moves += [
                        (path, folder / table / os.path.basename(path))
                        for path in (file.path, *file.delete_paths)
                    ]
                    done = (
                        f"moved {name} ({damage.problem}) aside to"
                        f" {aside.relative_to(settings.data_dir)}"
                    )
                ingested = ""
                if file.ingested is not None:
                    low, high = (moment[:16] for moment in file.ingested)
                    ingested = f", ingested {low}" if low == high else f", ingested {low}..{high}"
                held = f" captured {damage.days}" if damage.days else ""
                fed = (
                    "; the derived tables of those days are rebuilt without them"
                    if table in _FEEDS_MARTS
                    else ""
                )
                new.lines.append(f"{table}: {done}: lost {file.rows:,} rows{held}{ingested}{fed}")
                if table in _FEEDS_MARTS:
                    if damage.first is None or damage.last is None:
                        new.every_day = True
                    else:
                        # The day after each too: its first delta is against the lost day.
                        new.days |= _days(damage.first, damage.last + timedelta(days=1), today)
                    new.insights = True
            else:
                held = f" holding {damage.days}" if damage.days else ""
                new.lines.append(f"{table}: took out {name} ({damage.problem}){held}")
                new.insights = True
                if table in FILE_MARTS:
                    pass  # recomputed whole by the insights
                elif table == "mart_snapshots" or damage.first is None or damage.last is None:
                    new.every_day = True  # the run marker and each mart's days: all of them
                else:
                    new.days |= _days(damage.first, damage.last, today)
            ending.append(file)
        if not ending:
            return
        plan.merge(new)
        _write_plan(folder, plan)
        for source, target in moves:
            _move_aside(source, target)
        take_out(
            con,  # type: ignore[arg-type]
            ending,
            message="murmur doctor: " + "; ".join(new.lines),
            local=local,
        )


def _days(first: date, last: date, today: date) -> set[date]:
    """The days from ``first`` to ``last``, none after ``today``."""
    days = (first + timedelta(days=n) for n in range((last - first).days + 1))
    return {day for day in days if day <= today}


def _spans(days: set[date]) -> str:
    from pipelines.partitions import day_ranges

    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in day_ranges(sorted(days)))


def _write_plan(folder: Path, plan: _Plan) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = folder / f"{PLAN}.new"
    with temporary.open("w") as file:
        json.dump(plan.dump(), file)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(folder / PLAN)
    sync_dir(folder)


def _move_aside(source: str, target: Path) -> None:
    """Rename a lake file into the quarantine folder; a file already gone stays gone."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.replace(source, target)
    except FileNotFoundError:
        return
    target.chmod(0o600)
    sync_dir(target.parent)
    sync_dir(Path(source).parent)
