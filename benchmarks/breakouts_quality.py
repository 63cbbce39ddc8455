"""Breakouts' detection quality (issue 52, point 1), measured in process; nothing is timed
against a target.

**On the simulator.** ``simulator.world`` plants late surges in ~3 % of posts and knows
which posts and when (``Post.surge_at``, ``Post.surge_tau_hours``). For each seed, every post
of the world's own, competitor and creator accounts published in the 7 days ending at
``SIMULATOR_END`` (and not deleted by then) is read on one capture grid (``SIMULATOR_END``,
``SIMULATOR_END - every``, …: hourly, then 6-hourly), from the first capture after its
publication to the end; a reading's engagements are likes + comments + shares + saves +
clicks, the counters ``warehouse.breakouts`` sums. All of a seed's posts are one workspace's,
judged in one pass of ``posts_of`` / ``breakouts`` at the end (``data_end`` = the last capture).

- *planted*: the surges with ``surge_at + 2 * every <= end`` (two captures after each start);
- *detected*: a planted surge with an episode of its post whose ``started_at`` is after
  ``surge_at`` and at or before the second capture after it;
- *false alarm*: an episode on a post without a surge, or outside
  ``(surge_at, surge_at + 3 * surge_tau_hours + 2 * every]`` (the surge's own rise);
- *false alarms per 100 posts a week*: 100 * false alarms / posts, the posts being those
  published in the 7-day span, each observed from publication to the span's end (up to a
  week, 3.5 days on average); the same count over post-weeks actually observed (each post's
  days observed / 7, summed) is given beside it.

**On the real exports** (``../shared/datasets``, held out: not tuned against): each YouTube
trending video's daily readings (``trending_date``, midnight UTC; engagements = likes +
comment_count, each counter at its running peak as ``warehouse.breakouts`` takes it), published
at ``publish_time`` / ``publishedAt`` where the file has it, else at its first trending day (as
the importer does); one workspace per file, its data ending at the file's last day. Built here
with polars, independently of ``pipelines.importers``. The tweets and Instagram exports hold
each post's counters once (read at the export), so they have nothing to judge.

``python -m benchmarks.breakouts_quality [--quick] [--write-docs]`` prints the table;
``murmur bench`` measures the same rows in a child process ("Breakouts (issue 52)").
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from benchmarks.quality import parse_args
from benchmarks.quality import table as table  # re-exported: its callers read it here
from pipelines.analytics.breakouts import breakouts, posts_of
from simulator.world import PLATFORMS, World

REPO = Path(__file__).resolve().parent.parent
DATASETS = REPO.parent / "shared" / "datasets"

SIMULATOR_END = datetime(2026, 11, 20, 12, 5)  # naive UTC: the last capture of every grid
SPAN = timedelta(days=7)
WEEK = timedelta(days=7)
SEEDS = (4, 5, 6, 7, 8)
QUICK_SEEDS = (4,)
CADENCES = (timedelta(hours=1), timedelta(hours=6))
KINDS = ("own", "competitor", "creator")
CAPTURES_TO_DETECT = 2  # a surge is detected at or before the second capture after it starts
RISE_TAUS = 3  # a surge's own rise: its episodes up to 3 time constants (+ 2 captures) after
RECALL_TARGET = 0.9
FALSE_ALARMS_TARGET = 1.0  # per 100 posts a week
TARGET = "recall ≥ 90 % within two captures; ≤ 1 false alarm per 100 posts a week"

YOUTUBE_FILES = ("youtube_trending_us.csv", "youtube_trending_fr.csv")
# each post's key in an export that reads it once (tweets: the id; Instagram: day and caption)
SINGLE_READING_FILES: dict[str, tuple[str, ...]] = {
    "vaccination_tweets.csv": ("id",),
    "instagram_posts.csv": ("Date", "Caption"),
}
_VIDEO_ID = r"^[A-Za-z0-9_-]{11}$"
_TRENDING_FORMATS = ("%y.%d.%m", "%Y-%m-%dT%H:%M:%S%.fZ", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")
_PUBLISH_FORMATS = ("%Y-%m-%dT%H:%M:%S%.fZ", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d %H:%M:%S")
UNKNOWN_CHANNEL = "(unknown channel)"


# -- matching detections to planted surges ----------------------------------------------------


@dataclass(frozen=True)
class PostTruth:
    """What the world knows of one observed post: its key, and its surge if one is planted."""

    platform: str
    external_id: str
    published_at: datetime  # naive UTC
    surge_at: datetime | None = None  # naive UTC; None: no surge planted
    surge_tau_hours: float = 0.0


@dataclass(frozen=True)
class Score:
    """Detections against the planted surges of one world."""

    posts: int
    post_weeks: float  # each post's time observed (publication to the end, ≤ SPAN) / 7 days
    planted: int
    detected: int
    episodes: int
    false_alarms: int
    missed: tuple[str, ...] = ()  # "platform/external_id" of the planted surges not detected

    @property
    def recall(self) -> float | None:
        return self.detected / self.planted if self.planted else None

    @property
    def false_alarms_per_100_posts(self) -> float:
        """False alarms per 100 posts of the span, each observed up to a week."""
        return 100 * self.false_alarms / self.posts if self.posts else 0.0

    @property
    def false_alarms_per_100_post_weeks(self) -> float:
        """False alarms per 100 weeks of a post observed."""
        return 100 * self.false_alarms / self.post_weeks if self.post_weeks else 0.0

    def __add__(self, other: Score) -> Score:
        return Score(
            self.posts + other.posts,
            self.post_weeks + other.post_weeks,
            self.planted + other.planted,
            self.detected + other.detected,
            self.episodes + other.episodes,
            self.false_alarms + other.false_alarms,
            self.missed + other.missed,
        )


def capture_after(moment: datetime, end: datetime, every: timedelta) -> datetime:
    """The first instant of the capture grid ``end, end - every, …`` strictly after ``moment``
    (past ``end`` when ``moment`` is at or after it)."""
    steps = (end - moment) // every  # floor, negative past the end
    first = end - steps * every
    return first if first > moment else first + every


def captures(published_at: datetime, end: datetime, every: timedelta) -> list[datetime]:
    """A post's captures: the grid's instants after its publication, up to ``end``."""
    out = []
    at = capture_after(published_at, end, every)
    while at <= end:
        out.append(at)
        at += every
    return out


def score(
    truths: Sequence[PostTruth],
    found: Iterable[Mapping[str, Any]],
    end: datetime,
    every: timedelta,
    span: timedelta = SPAN,
) -> Score:
    """``found`` (``breakouts``' episodes) matched to the surges ``truths`` plant.

    A planted surge (two captures after its start by ``end``) is detected by an episode of its
    post starting after ``surge_at``, at or before the second capture after it; an episode is a
    false alarm on a post without a surge, or outside ``(surge_at, surge_at + 3 tau + 2 every]``.
    """
    by_key = {(t.platform, t.external_id): t for t in truths}
    starts: dict[tuple[str, str], list[datetime]] = defaultdict(list)
    episodes = false_alarms = 0
    for episode in found:
        key = (str(episode["platform"]), str(episode["external_id"]))
        truth = by_key[key]  # an episode on a post the world did not show is a bug: KeyError
        started: datetime = episode["started_at"]
        starts[key].append(started)
        episodes += 1
        if truth.surge_at is None:
            false_alarms += 1
            continue
        rise = timedelta(hours=RISE_TAUS * truth.surge_tau_hours) + CAPTURES_TO_DETECT * every
        if not truth.surge_at < started <= truth.surge_at + rise:
            false_alarms += 1
    planted = detected = 0
    missed: list[str] = []
    for t in truths:
        if t.surge_at is None or t.surge_at + CAPTURES_TO_DETECT * every > end:
            continue
        planted += 1
        deadline = capture_after(t.surge_at, end, every) + (CAPTURES_TO_DETECT - 1) * every
        if any(t.surge_at < s <= deadline for s in starts[(t.platform, t.external_id)]):
            detected += 1
        else:
            missed.append(f"{t.platform}/{t.external_id}")
    observed = sum(min(max(end - t.published_at, timedelta(0)), span) / WEEK for t in truths)
    return Score(
        len(truths), observed, planted, detected, episodes, false_alarms, tuple(sorted(missed))
    )


# -- the simulator ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SimulatedWorld:
    """One seed's readings (``posts_of``' rows, each post's oldest first) and its truths."""

    workspace_id: str
    rows: list[dict[str, Any]]
    truths: list[PostTruth]


def simulated(
    seed: int,
    every: timedelta,
    end: datetime = SIMULATOR_END,
    span: timedelta = SPAN,
    kinds: Sequence[str] = KINDS,
    platforms: Sequence[str] = PLATFORMS,
) -> SimulatedWorld:
    """The posts of ``kinds`` on ``platforms`` published in ``(end - span, end]`` and still up
    at ``end``, each read at every capture after its publication."""
    world = World(seed)
    workspace = f"ws_sim_{seed}"
    at_end = end.replace(tzinfo=UTC)
    rows: list[dict[str, Any]] = []
    truths: list[PostTruth] = []
    for platform in platforms:
        for account in world.accounts(platform):
            if account.kind not in kinds:
                continue
            for post in world.posts(account, at_end):
                published = post.published_at.astimezone(UTC).replace(tzinfo=None)
                if published <= end - span:
                    continue
                surge_at = (
                    post.surge_at.astimezone(UTC).replace(tzinfo=None)
                    if post.surge and post.surge_at is not None
                    else None
                )
                truths.append(
                    PostTruth(platform, post.external_id, published, surge_at, post.surge_tau_hours)
                )
                for captured in captures(published, end, every):
                    c = post.counters(captured.replace(tzinfo=UTC))
                    rows.append(
                        {
                            "workspace_id": workspace,
                            "platform": platform,
                            "external_id": post.external_id,
                            "account_external_id": account.external_id,
                            "post_id": None,
                            "published_at": published,
                            "captured_at": captured,
                            "engagements": c.likes + c.comments + c.shares + c.saves + c.clicks,
                        }
                    )
    return SimulatedWorld(workspace, rows, truths)


@dataclass(frozen=True)
class Detected:
    """``breakouts``' episodes over some readings, and the detector's CPU seconds."""

    posts: int  # posts ``posts_of`` made of the readings
    episodes: list[dict[str, Any]]
    cpu_seconds: float


def detect(rows: Sequence[Mapping[str, Any]], data_end: Mapping[str, datetime]) -> Detected:
    """``posts_of`` then ``breakouts`` over ``rows``, timed on this process's CPU clock."""
    started = time.process_time()
    posts = posts_of(dict(r) for r in rows)
    found = breakouts(posts, dict(data_end))
    return Detected(len(posts), found, time.process_time() - started)


@dataclass(frozen=True)
class SimulatorResult:
    every: timedelta
    seeds: tuple[int, ...]
    score: Score
    cpu_seconds: float  # the detector's (posts_of + breakouts), all seeds
    readings: int


def measure_simulator(
    seeds: Sequence[int],
    every: timedelta,
    end: datetime = SIMULATOR_END,
    kinds: Sequence[str] = KINDS,
    platforms: Sequence[str] = PLATFORMS,
) -> SimulatorResult:
    """Each seed's world read on the ``every`` grid, judged, and matched to its surges."""
    total = Score(0, 0.0, 0, 0, 0, 0)
    cpu = 0.0
    readings = 0
    for seed in seeds:
        world = simulated(seed, every, end, SPAN, kinds, platforms)
        found = detect(world.rows, {world.workspace_id: end})
        total += score(world.truths, found.episodes, end, every)
        cpu += found.cpu_seconds
        readings += len(world.rows)
    return SimulatorResult(every, tuple(seeds), total, cpu, readings)


def _hours(every: timedelta) -> str:
    h = every / timedelta(hours=1)
    return "hourly" if h == 1 else f"{h:g}-hourly"


def simulator_row(result: SimulatorResult) -> dict[str, Any]:
    """A bench row (``benchmarks.bench._row_from``'s shape) of one cadence's figures."""
    s = result.score
    recall = s.recall
    seeds = ("seed " if len(result.seeds) == 1 else "seeds ") + ", ".join(map(str, result.seeds))
    ok = (
        recall is not None
        and recall >= RECALL_TARGET
        and s.false_alarms_per_100_posts <= FALSE_ALARMS_TARGET
    )
    shown = "—" if recall is None else f"{100 * recall:.1f} %"
    return {
        "what": f"breakouts on the simulator, {_hours(result.every)} captures, 7 days, {seeds}",
        "measured": f"recall {shown} ({s.detected} of {s.planted} planted surges within two"
        f" captures); {s.false_alarms} false alarms in {s.posts:,} posts ="
        f" {s.false_alarms_per_100_posts:.2f} per 100 posts a week"
        f" ({s.false_alarms_per_100_post_weeks:.2f} per 100 post-weeks observed);"
        f" detector {result.cpu_seconds:.1f} CPU-s",
        "reference": "—",
        "target": TARGET,
        "ok": ok,
        "notes": f"{s.episodes} episodes over {result.readings:,} readings; posts of own,"
        " competitor and creator accounts published in the 7 days to"
        f" {SIMULATOR_END:%Y-%m-%d %H:%M} UTC, each read from its publication to then",
        "figures": {
            "cadence_hours": result.every / timedelta(hours=1),
            "seeds": list(result.seeds),
            "posts": s.posts,
            "post_weeks": round(s.post_weeks, 1),
            "readings": result.readings,
            "planted": s.planted,
            "detected": s.detected,
            "recall": recall,
            "episodes": s.episodes,
            "false_alarms": s.false_alarms,
            "false_alarms_per_100_posts_a_week": round(s.false_alarms_per_100_posts, 3),
            "false_alarms_per_100_post_weeks": round(s.false_alarms_per_100_post_weeks, 3),
            "detector_cpu_seconds": round(result.cpu_seconds, 2),
            "missed": list(s.missed),
        },
    }


# -- the real exports -------------------------------------------------------------------------


def _read(path: Path) -> pl.DataFrame:
    # Every column as text (the US file is cp1252: only its titles hold non-ASCII bytes).
    return pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")


def _parsed(column: str, formats: Sequence[str]) -> pl.Expr:
    text = pl.col(column).str.strip_chars()
    tried = [text.str.strptime(pl.Datetime("us"), f, strict=False, exact=True) for f in formats]
    return pl.coalesce(tried)


def _count(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().cast(pl.Int64, strict=False).fill_null(0)


def youtube_readings(path: Path, workspace_id: str) -> list[dict[str, Any]]:
    """A YouTube trending export's videos as ``posts_of`` rows: one per video and trending day."""
    frame = _read(path)
    published = next((c for c in ("publish_time", "publishedAt") if c in frame.columns), None)
    channel = next((c for c in ("channel_title", "channelTitle") if c in frame.columns), None)
    views = next((c for c in ("views", "view_count") if c in frame.columns), None)
    video_id = pl.col("video_id").str.strip_chars()
    typed = frame.select(
        # Excel's '#NAME?' ids: the video is told apart by its title.
        pl.when(video_id.str.contains(_VIDEO_ID))
        .then(video_id)
        .otherwise(pl.lit("title:") + pl.col("title"))
        .alias("external_id"),
        _parsed("trending_date", _TRENDING_FORMATS).alias("captured_at"),
        (
            _parsed(published, _PUBLISH_FORMATS) if published else pl.lit(None, pl.Datetime("us"))
        ).alias("publish_time"),
        (pl.col(channel).str.strip_chars() if channel else pl.lit(None, pl.String)).alias(
            "channel"
        ),
        (_count(views) if views else pl.lit(0)).alias("views"),
        _count("likes").alias("likes"),
        _count("comment_count").alias("comments"),
    ).filter(pl.col("captured_at").is_not_null())
    # One reading per video and day: the one with the most views (as the importer keeps).
    typed = typed.sort("views", descending=True).unique(
        ["external_id", "captured_at"], keep="first"
    )
    typed = (
        typed.sort("external_id", "captured_at")
        .with_columns(
            pl.col("publish_time").min().over("external_id"),
            pl.col("captured_at").min().over("external_id").alias("first_day"),
            pl.col("channel")
            .filter(pl.col("channel") != "")
            .first()
            .over("external_id")
            .alias("account"),
            # each counter at its running peak, then summed (warehouse.breakouts)
            (
                pl.col("likes").cum_max().over("external_id")
                + pl.col("comments").cum_max().over("external_id")
            ).alias("engagements"),
        )
        .select(
            pl.lit(workspace_id).alias("workspace_id"),
            pl.lit("youtube").alias("platform"),
            "external_id",
            pl.coalesce("account", pl.lit(UNKNOWN_CHANNEL)).alias("account_external_id"),
            pl.lit(None, pl.String).alias("post_id"),
            pl.coalesce("publish_time", "first_day").alias("published_at"),
            "captured_at",
            "engagements",
        )
    )
    return typed.to_dicts()


def youtube_row(path: Path) -> dict[str, Any]:
    """A bench row of one trending export's breakouts per 100 videos."""
    workspace = f"ws_{path.stem}"
    rows = youtube_readings(path, workspace)
    per_video: dict[str, int] = defaultdict(int)
    for r in rows:
        per_video[r["external_id"]] += 1
    days = sorted({r["captured_at"] for r in rows})
    found = detect(rows, {workspace: days[-1]})
    videos = len(per_video)
    judged = sum(1 for n in per_video.values() if n >= 2)
    breakouts_found = len(found.episodes)
    with_one = len({e["external_id"] for e in found.episodes})
    return {
        "what": f"breakouts in {path.name} (real export, held out), daily readings",
        "measured": f"{breakouts_found} breakouts on {with_one} videos:"
        f" {100 * breakouts_found / videos:.2f} per 100 videos"
        f" ({100 * breakouts_found / judged:.2f} per 100 videos with ≥ 2 readings);"
        f" {videos:,} videos, {judged:,} with ≥ 2 readings;"
        f" detector {found.cpu_seconds:.2f} CPU-s",
        "reference": "—",
        "target": "reported (no planted truth)",
        "status": "reported",
        "notes": f"{len(rows):,} readings on {len(days)} trending days,"
        f" {days[0]:%Y-%m-%d} to {days[-1]:%Y-%m-%d}",
        "figures": {
            "videos": videos,
            "videos_with_2_readings": judged,
            "readings": len(rows),
            "days": len(days),
            "breakouts": breakouts_found,
            "videos_with_a_breakout": with_one,
            "breakouts_per_100_posts": round(100 * breakouts_found / videos, 3),
            "breakouts_per_100_judged_posts": round(100 * breakouts_found / judged, 3),
            "detector_cpu_seconds": round(found.cpu_seconds, 3),
        },
    }


def single_reading_row(path: Path, keys: Sequence[str]) -> dict[str, Any]:
    """A row for an export that reads each post once (at the export): nothing to judge."""
    frame = _read(path)
    posts = frame.select(keys).unique().height
    # no capture time per row: each post's counters are what the export read, once
    return {
        "what": f"breakouts in {path.name} (real export, held out)",
        "measured": f"one reading per post: nothing to judge ({posts:,} posts, {frame.height:,}"
        " rows, every counter read once at the export)",
        "reference": "—",
        "target": "reported (no planted truth)",
        "status": "nothing to judge",
        "figures": {"posts": posts, "rows": frame.height, "readings_per_post": 1},
    }


def real_rows(datasets: Path = DATASETS) -> list[dict[str, Any]]:
    """The held-out exports' rows; a file that is absent says so."""
    out: list[dict[str, Any]] = []
    wanted: list[tuple[str, tuple[str, ...] | None]] = [
        *((name, None) for name in YOUTUBE_FILES),
        *SINGLE_READING_FILES.items(),
    ]
    for name, key in wanted:
        path = datasets / name
        if not path.exists():
            out.append(
                {
                    "what": f"breakouts in {name} (real export, held out)",
                    "measured": "—",
                    "target": "reported (no planted truth)",
                    "status": "not measured",
                    "notes": f"{path} is absent",
                }
            )
        elif key is None:
            out.append(youtube_row(path))
        else:
            out.append(single_reading_row(path, key))
    return out


# -- the rows ---------------------------------------------------------------------------------


def run_rows(quick: bool = False) -> list[dict[str, Any]]:
    """Every row: the simulator at each cadence, then the real exports."""
    seeds = QUICK_SEEDS if quick else SEEDS
    rows = [simulator_row(measure_simulator(seeds, every)) for every in CADENCES]
    return rows + real_rows()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv, __doc__, f"seeds {QUICK_SEEDS} only")
    started = time.monotonic()
    rows = run_rows(args.quick)
    print(table(rows))
    if args.write_docs:
        from benchmarks import bench

        command = "python -m benchmarks.breakouts_quality" + " --quick" * args.quick
        bench.write_breakouts_docs(rows, command, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
