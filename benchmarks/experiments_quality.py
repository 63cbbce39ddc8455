"""Posting-time experiments' interval quality (issue 52, point 2), measured in process; nothing is
timed against a target.

The simulator plants a known time-of-day effect: ``World(seed, hour_effect={19: m})``
multiplies every counter of the posts published through its write API at 19:00 UTC by ``m``.
Each seeded repeat runs one experiment in its own world, with the product's own pieces:

- **design**: three arms of one daily UTC slot each: the control at 09:00, ``afternoon`` at
  14:00 (no effect planted: the null) and ``evening`` at 19:00 (the planted ``m``); ``POSTS``
  posts, each to the own account of every platform of ``PLATFORMS`` (one post to five
  accounts is five measured posts, as the product counts them); the ``n``-th post's arm is
  ``domain.experiments.service.draw_arm(seed, n, arms)`` and it is published
  (``World.publish``) at its arm's next free slot (``domain.slots.slot_times`` of the arm's
  slots, ``service._weekly``) after ``START``: ~30 posts per arm per account, ~150 per arm;
- **readings**: each post read on the hourly ingest's grid (``pipelines/ingest/schedules.py``:
  cron ``5 * * * *``, so at HH:05) from publication to 49 h; a reading's engagements are likes
  + comments + shares + saves + clicks (the world's counters only rise, so each is at its
  running peak), with its impressions and views (``metrics.Reading``);
- **metric**: ``domain.experiments.metrics.measure`` (interpolated at 24 h / 48 h), its ``z``
  in cells keyed by account; **lift**: ``domain.experiments.stats.compare(arm, control)``.

Only the captures ``measure`` reads are taken from the world by default (the last before and
the first at or after 24 h and 48 h, a pure function of the grid: ``captures``); every other
hourly capture is left out, as it cannot change the figure (``--all-captures`` reads all 49
of them, and the bench's test checks both give the same measurements).

A repeat's interval *holds* when ``low <= truth <= high``: ``truth`` is ``m - 1`` for the
evening arm's engagements at 24 h and 48 h, and 0 for its engagement rate (the effect scales
impressions and engagements alike) and for every metric of the afternoon arm (there, 1 -
coverage is the false-positive rate). Coverage is the share of repeats whose interval holds,
with its Wilson 95 % interval over the repeats; a row PASSes when that interval reaches 95 %
(coverage not significantly below the 95 % the interval claims). ``z = ln(1 + metric)``
moves by slightly less than ``ln m`` (the + 1, the counters' rounding down): the figure
"effective" is exp(mean over the evening posts of z - z without the effect) - 1, each post's
z without the effect read off the same post with its curve divided by ``m``.

``python -m benchmarks.experiments_quality [--quick] [--write-docs]`` prints the table;
``murmur bench`` measures the same rows in a child process ("Experiments (issue 52)").
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from benchmarks.quality import parse_args
from benchmarks.quality import table as table  # re-exported: its callers read it here
from domain.experiments import metrics, stats
from domain.experiments.schemas import Arm, ArmSlot
from domain.experiments.service import LEAD, _weekly, draw_arm
from domain.slots import slot_times, zone
from simulator.world import Account, Post, World

REPEATS = 1000
QUICK_REPEATS = 200
FIRST_SEED = 1000  # repeat r: World(FIRST_SEED + r), the experiment's seed the same
MULTIPLIER = 1.3  # planted at EFFECT_HOUR
PLATFORMS = ("x", "instagram", "linkedin", "bluesky", "facebook")  # their own accounts
MEDIA = {"x": "text", "instagram": "image", "linkedin": "text", "bluesky": "text"}
POSTS = 90  # draws: each post to every account of PLATFORMS; ~30 per arm and account
START = datetime(2026, 10, 5, tzinfo=UTC)  # the experiment is created (its posts drawn) then
CONTROL_HOUR, NULL_HOUR, EFFECT_HOUR = 9, 14, 19
CAPTURE_MINUTE = 5  # the hourly ingest's minute
READ_HOURS = 49.0  # each post read from publication to this age
COVERAGE_TARGET = 0.95
_Z95 = 1.959963984540054

CONTROL, NULL, EFFECT = "control", "afternoon", "evening"
ARMS = (
    Arm(name=CONTROL, control=True, slots=[ArmSlot(time=f"{CONTROL_HOUR:02d}:00")]),
    Arm(name=NULL, control=False, slots=[ArmSlot(time=f"{NULL_HOUR:02d}:00")]),
    Arm(name=EFFECT, control=False, slots=[ArmSlot(time=f"{EFFECT_HOUR:02d}:00")]),
)
METRICS = (
    metrics.Metric.ENGAGEMENTS_24H,
    metrics.Metric.ENGAGEMENTS_48H,
    metrics.Metric.ENGAGEMENT_RATE,
)


# -- one repeat ---------------------------------------------------------------------------------


def captures(published_at: datetime, every_one: bool = False) -> list[datetime]:
    """The hourly grid's captures (HH:05 UTC) of a post from its publication to READ_HOURS;
    unless ``every_one``, only those ``metrics.measure`` reads: for each metric's age, the last
    capture before it and the first at or after it."""
    offset = published_at - published_at.replace(minute=0, second=0, microsecond=0)
    return [published_at + age for age in _capture_ages(offset, every_one)]


@lru_cache(maxsize=64)
def _capture_ages(offset: timedelta, every_one: bool) -> tuple[timedelta, ...]:
    """``captures``' ages for a post published ``offset`` past the hour (a function of it alone)."""
    first = timedelta(minutes=CAPTURE_MINUTE) - offset
    if first <= timedelta(0):
        first += timedelta(hours=1)
    grid: list[timedelta] = []
    age = first
    while age <= timedelta(hours=READ_HOURS):
        grid.append(age)
        age += timedelta(hours=1)
    if every_one:
        return tuple(grid)
    wanted: set[int] = set()
    for hours in sorted(set(metrics.AGE_HOURS.values())):
        after = next((i for i, a in enumerate(grid) if a >= timedelta(hours=hours)), None)
        if after is None:
            continue
        wanted.add(after)
        if after > 0:
            wanted.add(after - 1)
    return tuple(grid[i] for i in sorted(wanted))


def readings(post: Post, at: Sequence[datetime]) -> list[metrics.Reading]:
    """The post's counters at each capture, as the experiment reads them."""
    out = []
    for captured in at:
        c = post.counters(captured)
        out.append(
            metrics.Reading(
                captured_at=captured,
                engagements=float(c.likes + c.comments + c.shares + c.saves + c.clicks),
                impressions=float(c.impressions),
                views=float(c.views),
            )
        )
    return out


def arm_slots(arm: Arm, after: datetime) -> Iterator[datetime]:
    """The arm's slots after ``after`` (UTC), in order: each post drawn takes the next free one."""
    tz = zone("UTC")
    assert tz is not None
    return (s.at for s in slot_times(_weekly(arm.slots), tz, after))


@dataclass
class Repeat:
    """One seeded experiment: per metric and arm, the ``z`` of its measured posts by account."""

    seed: int
    cells: dict[metrics.Metric, dict[str, dict[str, list[float]]]]
    slots: dict[str, list[datetime]]  # per arm, its posts' publication (each to every account)
    # the evening posts' z less their z without the effect, per metric
    shifts: dict[metrics.Metric, list[float]] = field(default_factory=dict)
    unmeasured: int = 0


def run_repeat(
    seed: int, multiplier: float = MULTIPLIER, posts: int = POSTS, every_capture: bool = False
) -> Repeat:
    """One world with the effect planted at EFFECT_HOUR, one experiment over it."""
    world = World(seed, hour_effect={EFFECT_HOUR: multiplier})
    accounts: list[Account] = [
        next(a for a in world.accounts(p) if a.kind == "own") for p in PLATFORMS
    ]
    slots = {arm.name: arm_slots(arm, START + LEAD) for arm in ARMS}
    out = Repeat(
        seed,
        {m: {arm.name: {} for arm in ARMS} for m in METRICS},
        {arm.name: [] for arm in ARMS},
        {m: [] for m in METRICS},
    )
    for n in range(posts):
        arm = draw_arm(seed, n, ARMS)
        at = next(slots[arm.name])
        out.slots[arm.name].append(at)
        for account in accounts:
            post = world.publish(
                account,
                f"Posting-time experiment, post {n}",
                MEDIA.get(account.platform, "text"),
                at,
            )
            grid = captures(post.published_at, every_capture)
            seen = readings(post, grid)
            plain: list[metrics.Reading] | None = None
            if arm.name == EFFECT and multiplier != 1.0:
                # the same post without the effect: what its z would have been
                unplanted = replace(
                    post, size=post.size / multiplier, surge=post.surge / multiplier
                )
                plain = readings(unplanted, grid)
            for metric in METRICS:
                got = metrics.measure(metric, seen, post.published_at)
                if got is None:
                    out.unmeasured += 1
                    continue
                out.cells[metric][arm.name].setdefault(account.external_id, []).append(got.z)
                if plain is not None:
                    base = metrics.measure(metric, plain, post.published_at)
                    if base is not None:
                        out.shifts[metric].append(got.z - base.z)
    return out


# -- coverage over repeats --------------------------------------------------------------------


def wilson(successes: int, n: int, z: float = _Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion (95 % by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Case:
    """One arm against the control on one metric, and the lift the world planted there."""

    arm: str
    metric: metrics.Metric
    truth: float
    label: str


def cases(multiplier: float = MULTIPLIER) -> list[Case]:
    m = multiplier
    planted = f"{EFFECT_HOUR:02d}:00 (every counter times {m:g}) vs {CONTROL_HOUR:02d}:00"
    null = f"{NULL_HOUR:02d}:00 vs {CONTROL_HOUR:02d}:00, nothing planted (null)"
    return [
        Case(EFFECT, metrics.Metric.ENGAGEMENTS_24H, m - 1, planted),
        Case(EFFECT, metrics.Metric.ENGAGEMENTS_48H, m - 1, planted),
        Case(EFFECT, metrics.Metric.ENGAGEMENT_RATE, 0.0, planted + " (rate: true lift 0)"),
        Case(NULL, metrics.Metric.ENGAGEMENTS_24H, 0.0, null),
        Case(NULL, metrics.Metric.ENGAGEMENTS_48H, 0.0, null),
        Case(NULL, metrics.Metric.ENGAGEMENT_RATE, 0.0, null),
    ]


@dataclass
class Coverage:
    """One case over the repeats."""

    case: Case
    repeats: int = 0
    held: int = 0
    excluded_zero: int = 0  # intervals not holding 0: "significant"
    no_interval: int = 0  # compare gave None (no account with both arms measured)
    widths: list[float] = field(default_factory=list)
    differences: list[float] = field(default_factory=list)  # d, on the log scale
    posts_arm: list[int] = field(default_factory=list)  # measured posts of the arm
    posts_control: list[int] = field(default_factory=list)
    posts_needed: list[int] = field(default_factory=list)  # stats.posts_per_arm at the truth
    shifts: list[float] = field(default_factory=list)

    def add(self, repeat: Repeat) -> None:
        cells = repeat.cells[self.case.metric]
        arm, control = cells[self.case.arm], cells[CONTROL]
        self.repeats += 1
        self.posts_arm.append(sum(map(len, arm.values())))
        self.posts_control.append(sum(map(len, control.values())))
        comparison = stats.compare(arm, control)
        if comparison is None:
            self.no_interval += 1
            return
        self.held += comparison.low <= self.case.truth <= comparison.high
        self.excluded_zero += not comparison.low <= 0.0 <= comparison.high
        self.widths.append(comparison.high - comparison.low)
        self.differences.append(comparison.difference)
        variance = stats.pooled_variance([arm, control])
        if variance is not None and self.case.truth > 0:
            self.posts_needed.append(stats.posts_per_arm(variance, self.case.truth))
        if self.case.arm == EFFECT:
            self.shifts.extend(repeat.shifts[self.case.metric])

    @property
    def typical_lift(self) -> float | None:
        """exp(mean d) - 1 over the repeats: the estimates' centre on the lift's own scale."""
        return math.expm1(statistics.fmean(self.differences)) if self.differences else None

    @property
    def coverage(self) -> float:
        return self.held / self.repeats if self.repeats else 0.0

    @property
    def wilson(self) -> tuple[float, float]:
        return wilson(self.held, self.repeats)

    @property
    def ok(self) -> bool:
        return self.repeats > 0 and self.wilson[1] >= COVERAGE_TARGET


@dataclass(frozen=True)
class Measured:
    coverages: list[Coverage]
    repeats: int
    seeds: tuple[int, int]  # first and last
    cpu_seconds: float
    multiplier: float
    posts: int
    every_capture: bool


def measure(
    repeats: int = REPEATS,
    multiplier: float = MULTIPLIER,
    posts: int = POSTS,
    first_seed: int = FIRST_SEED,
    every_capture: bool = False,
) -> Measured:
    """``repeats`` seeded experiments, each case's coverage over them."""
    started = time.process_time()
    coverages = [Coverage(c) for c in cases(multiplier)]
    for r in range(repeats):
        repeat = run_repeat(first_seed + r, multiplier, posts, every_capture)
        for coverage in coverages:
            coverage.add(repeat)
    return Measured(
        coverages,
        repeats,
        (first_seed, first_seed + repeats - 1),
        time.process_time() - started,
        multiplier,
        posts,
        every_capture,
    )


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:+.{digits}f} %" if x else "0 %"


def row(c: Coverage, result: Measured) -> dict[str, Any]:
    """A bench row (``benchmarks.bench._row_from``'s shape) of one case."""
    low, high = c.wilson
    width = statistics.median(c.widths) if c.widths else float("nan")
    per_arm = statistics.fmean(c.posts_arm) if c.posts_arm else 0.0
    per_control = statistics.fmean(c.posts_control) if c.posts_control else 0.0
    metric = c.case.metric.value
    is_null = c.case.truth == 0.0
    truth = "0" if is_null else _pct(c.case.truth, 0)
    measured = (
        f"coverage {100 * c.coverage:.1f} % ({c.held} of {c.repeats} intervals hold {truth};"
        f" Wilson 95 % {100 * low:.1f}-{100 * high:.1f} %);"
    )
    if is_null:
        measured += f" false positives {100 * (1 - c.coverage):.1f} %;"
    else:
        measured += f" power {100 * c.excluded_zero / c.repeats:.1f} % (interval excludes 0);"
    measured += (
        f" median width {100 * width:.1f} points; lift at the mean d {_pct(c.typical_lift or 0)}"
        if c.differences
        else " no interval"
    )
    notes = [
        f"mean measured posts per arm {per_arm:.1f} (control {per_control:.1f})",
        f"{len(PLATFORMS)} accounts",
    ]
    effective = math.expm1(statistics.fmean(c.shifts)) if c.shifts else None
    if effective is not None and not is_null:
        notes.append(f"effective planted lift on the log scale {_pct(effective, 2)}")
    elif effective is not None:
        notes.append(f"effective planted rate lift {_pct(effective, 2)}")
    if c.posts_needed:
        notes.append(f"posts_per_arm for {truth} (median) {statistics.median(c.posts_needed):.0f}")
    if c.no_interval:
        notes.append(f"{c.no_interval} repeats without an interval")
    return {
        "what": f"experiment interval, {metric}, {c.case.label}",
        "measured": measured,
        "reference": "—",
        "target": f"holds the planted lift ({truth}) in ≥ 95 % of seeded repeats",
        "ok": c.ok,
        "notes": "; ".join(notes),
        "figures": {
            "metric": metric,
            "arm": c.case.arm,
            "truth": c.case.truth,
            "repeats": c.repeats,
            "held": c.held,
            "coverage": c.coverage,
            "wilson_95": [round(low, 4), round(high, 4)],
            "excluded_zero": c.excluded_zero,
            "no_interval": c.no_interval,
            "median_width": width,
            "lift_at_mean_difference": c.typical_lift,
            "mean_posts_per_arm": round(per_arm, 2),
            "mean_posts_control": round(per_control, 2),
            "effective_lift": effective,
            "median_posts_per_arm_needed": (
                statistics.median(c.posts_needed) if c.posts_needed else None
            ),
            "seeds": list(result.seeds),
            "multiplier": result.multiplier,
            "posts_drawn": result.posts,
            "accounts": list(PLATFORMS),
            "cpu_seconds": round(result.cpu_seconds, 2),
            "every_capture": result.every_capture,
        },
    }


def design() -> str:
    """The design, one sentence (the docs' block states it above its table)."""
    return (
        f"{POSTS} posts drawn by `draw_arm` over three daily UTC slots ({CONTROL_HOUR:02d}:00"
        f" control, {NULL_HOUR:02d}:00, {EFFECT_HOUR:02d}:00), each published at its arm's next"
        f" slot from {START:%Y-%m-%d} to the own account on {', '.join(PLATFORMS)}"
        f" (~{POSTS // len(ARMS)} per arm and account), read hourly at HH:{CAPTURE_MINUTE:02d}"
        f" to {READ_HOURS:g} h"
    )


def run_rows(quick: bool = False, every_capture: bool = False) -> list[dict[str, Any]]:
    """Every case's row over the default repeats (QUICK_REPEATS with ``quick``)."""
    result = measure(QUICK_REPEATS if quick else REPEATS, every_capture=every_capture)
    rows = [row(c, result) for c in result.coverages]
    seeds = f"seeds {result.seeds[0]}-{result.seeds[1]}"
    for r in rows:
        r["notes"] = (
            f"{r['notes']}; {result.repeats} repeats ({seeds}), {result.cpu_seconds:.0f} CPU-s"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    all_captures = ("--all-captures", "read every hourly capture to 49 h")
    args = parse_args(argv, __doc__, f"{QUICK_REPEATS} repeats", all_captures)
    started = time.monotonic()
    rows = run_rows(args.quick, args.all_captures)
    print(f"{design()}\n\n{table(rows)}")
    if args.write_docs:
        from benchmarks import bench

        command = "python -m benchmarks.experiments_quality" + " --quick" * args.quick
        command += " --all-captures" * args.all_captures
        bench.write_experiments_docs(rows, command, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
