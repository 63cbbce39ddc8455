"""The order exports arrive in changes no figure (issue 51, point 9).

Three of the FR trending export's daily lists, two days apart (a video on two of them was
off the list between), one file each, are imported into workspaces of one store: (a) as one
file, (b) oldest first and (c) newest first, a pipeline run after each import. Every daily
figure, the first-seen rows of each post and the viral trends must be the same in the
three, and the headline figures those computed here with polars from the CSV (by the
definitions of docs/api/analytics.md), never read from Murmur's marts. The runs after (c)'s
older lists rebuild the later days for those lists' videos alone.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines.importers import run_import
from pipelines.run import RunSummary, run_all
from tests.analytics_truth.world import DATASETS
from tests.support import embedded_settings
from warehouse import workspaces as ws_repo
from warehouse.extensions import connect

# One worker builds the module's store: its three orders share it (xdist would build it on
# each worker that runs one of the tests).
pytestmark = pytest.mark.xdist_group(__name__)

FILE = "youtube_trending_fr.csv"
# The export's 1st, 3rd and 5th days (14, 16 and 18 November 2017): 599 readings.
PICKED = (0, 2, 4)
NOW = datetime(2026, 11, 22, tzinfo=UTC)
GRACE = timedelta(hours=1)  # a first reading within this of publication is growth
METRICS = ["views", "likes", "comments"]
# Each mart's rows, the workspace (each order has its own) and the run's stamps left out.
TABLES = {
    "stg_engagement_deltas": "* EXCLUDE (workspace_id)",
    "mart_post_hourly": "* EXCLUDE (workspace_id)",
    "mart_post_daily": "* EXCLUDE (workspace_id)",
    "mart_post_first_seen": "* EXCLUDE (workspace_id)",
    "mart_account_daily": "* EXCLUDE (workspace_id)",
    "unified_daily": "* EXCLUDE (workspace_id)",
    "mart_viral_trends": "* EXCLUDE (workspace_id, computed_at)",
}
# The imports before each pipeline run: 7 imports, 5 runs. A run rebuilds every
# workspace's due days, so imports share a run only where that hides nothing: (b)'s lists
# come before (c)'s second and third, whose later days (b)'s whole days would rebuild.
ROUNDS: list[dict[str, str]] = [
    {"whole": "fr", "oldest_first": "fr0", "newest_first": "fr2"},
    {"oldest_first": "fr1"},
    {"oldest_first": "fr2"},
    {"newest_first": "fr1"},
    {"newest_first": "fr0"},
]


def _day(trending_date: str) -> date:
    return datetime.strptime(trending_date, "%y.%d.%m").date()


@functools.cache
def _picked_days() -> list[date]:
    every = pl.read_csv(DATASETS / FILE, infer_schema=False, columns=["trending_date"])
    days = sorted({_day(d) for d in every["trending_date"]})
    return [days[n] for n in PICKED]


def _read(name: str) -> tuple[list[str], list[list[str]]]:
    with (DATASETS / name).open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        return next(reader), list(reader)


def _write(path: Path, header: list[str], records: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(header)
        out.writerows(records)
    return path


def _files(folder: Path) -> dict[str, Path]:
    """The picked days' records as one file ("fr"), and as a file each ("fr0".."fr2")."""
    header, records = _read(FILE)
    at = header.index("trending_date")
    days = _picked_days()
    files = {"fr": _write(folder / "fr.csv", header, [r for r in records if _day(r[at]) in days])}
    for n, day in enumerate(days):
        files[f"fr{n}"] = _write(
            folder / f"fr{n}.csv", header, [r for r in records if _day(r[at]) == day]
        )
    return files


@dataclass
class Imported:
    runs: list[RunSummary]  # the pipeline run after each round, in order
    figures: dict[str, dict[tuple[str, ...], Any]]  # per order
    rows: dict[str, dict[str, list[tuple[Any, ...]]]]


def _imported(root: Path) -> Imported:
    """One store, a workspace (nothing connected) per order, its own posts imported in rounds."""
    settings = embedded_settings(root / "data")
    files = _files(root)

    def workspaces(cur: Any) -> dict[str, str]:
        org = ws_repo.create_organization(cur, "import order")
        return {order: ws_repo.create_workspace(cur, org, order) for order in ROUNDS[0]}

    with settings.open_store() as store:
        workspace = store.run(workspaces)
    runs = []
    for imports in ROUNDS:
        for order, name in imports.items():
            run_import(
                files[name],
                "youtube-trending",
                settings=settings,
                workspace_id=workspace[order],
                kind="own",
                progress=False,
            )
        summary = run_all(settings, now=NOW, ingest=False)
        assert summary.success, summary
        assert not summary.checks_failed, summary
        runs.append(summary)
    con = connect()
    settings.lake.attach(con, read_only=True)
    con.execute("USE lake")
    try:
        return Imported(
            runs,
            {order: _figures(con, ws) for order, ws in workspace.items()},
            {order: _rows(con, ws) for order, ws in workspace.items()},
        )
    finally:
        con.close()


def _rows(con: duckdb.DuckDBPyConnection, ws: str) -> dict[str, list[tuple[Any, ...]]]:
    return {
        table: con.execute(
            f"SELECT {cols} FROM {table} WHERE workspace_id = ? ORDER BY ALL",  # noqa: S608
            [ws],
        ).fetchall()
        for table, cols in TABLES.items()
    }


def _figures(con: duckdb.DuckDBPyConnection, ws: str) -> dict[tuple[str, ...], Any]:
    """Every figure a reader is given: per day, per post's first sightings, per trend."""
    out: dict[tuple[str, ...], Any] = {}
    daily = {
        "unified": (
            ["views", "likes", "comments", "engagements", "posts", "accounts"],
            "SELECT day, sum(views), sum(likes), sum(comments), sum(engagements),"
            " sum(active_posts), count(*) FROM unified_daily WHERE workspace_id = ? GROUP BY day",
        ),
        "first_seen": (
            ["views", "likes", "comments", "engagements", "posts", "rows"],
            "SELECT day, sum(views), sum(likes), sum(comments), sum(engagements),"
            " count(DISTINCT external_id), count(*) FROM unified_first_seen"
            " WHERE workspace_id = ? GROUP BY day",
        ),
        "accounts": (
            ["impressions", "engagements", "rows"],
            "SELECT day, sum(impressions), sum(engagements), count(*)"
            " FROM mart_account_daily WHERE workspace_id = ? GROUP BY day",
        ),
    }
    for mart, (names, sql) in daily.items():
        for day, *values in con.execute(sql, [ws]).fetchall():
            for name, value in zip(names, values, strict=True):
                out[(mart, str(day), name)] = value
    singles = {
        "first_seen_rows": "SELECT external_id, count(*) FROM mart_post_first_seen"
        " WHERE workspace_id = ? GROUP BY ALL",
        "trend": "SELECT window_end, entity_type, entity, {'status': status,"
        " 'score': round(score, 9)} FROM mart_viral_trends WHERE workspace_id = ?",
    }
    for name, sql in singles.items():
        for *key, value in con.execute(sql, [ws]).fetchall():
            out[(name, *map(str, key))] = value
    return out


# -- the independent reading ----------------------------------------------------------------------


def _truth() -> pl.DataFrame:
    """Per (video, day) reading: its growth above the running peak; whether it is first seen."""
    # first seen: a video's first reading, unless published that UTC day or within the hour
    df = pl.read_csv(DATASETS / FILE, infer_schema=False)
    picked = [d.strftime("%y.%d.%m") for d in _picked_days()]
    frame = (
        df.filter(pl.col("trending_date").is_in(picked))
        .select(
            pl.col("video_id").alias("key"),
            pl.col("trending_date").str.strptime(pl.Datetime("us"), "%y.%d.%m").alias("at"),
            pl.col("publish_time")
            .str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S%.fZ")
            .alias("published"),
            pl.col("views").cast(pl.Int64),
            pl.col("likes").cast(pl.Int64),
            pl.col("comment_count").cast(pl.Int64).alias("comments"),
        )
        .sort("key", "at")
    )
    first = pl.int_range(pl.len()).over("key") == 0
    pub = pl.col("published").min().over("key")
    seen_growing = (pub < pl.col("at")) & (
        (pub.dt.date() == pl.col("at").dt.date()) | (pl.col("at") - pub <= GRACE)
    )
    gains = [
        pl.when(first)
        .then(pl.col(m))
        .otherwise(pl.max_horizontal(pl.col(m) - pl.col(m).cum_max().shift(1).over("key"), 0))
        .alias(f"g_{m}")
        for m in METRICS
    ]
    return frame.with_columns(*gains, (first & ~seen_growing).alias("first_seen"))


def _headline(truth: pl.DataFrame) -> dict[tuple[str, ...], Any]:
    """Per day: the growth of views, likes and comments, and the first-seen rows and views."""
    out: dict[tuple[str, ...], Any] = {}
    day = pl.col("at").dt.date().cast(pl.String).alias("day")
    growth = (
        truth.filter(~pl.col("first_seen"))
        .group_by(day)
        .agg(*(pl.col(f"g_{m}").sum().alias(m) for m in METRICS))
    )
    for row in growth.iter_rows(named=True):
        for m in METRICS:
            out[("unified", row["day"], m)] = row[m]
    firsts = (
        truth.filter(pl.col("first_seen"))
        .group_by(day)
        .agg(pl.len().alias("rows"), pl.col("g_views").sum().alias("views"))
    )
    for row in firsts.iter_rows(named=True):
        out[("first_seen", row["day"], "rows")] = row["rows"]
        out[("first_seen", row["day"], "views")] = row["views"]
    return out


def _readings() -> pl.DataFrame:
    """The picked days' (video, day) readings."""
    df = pl.read_csv(DATASETS / FILE, infer_schema=False, columns=["video_id", "trending_date"])
    frame = df.select(
        pl.col("video_id"),
        pl.col("trending_date").str.strptime(pl.Date, "%y.%d.%m").alias("day"),
    )
    return frame.filter(pl.col("day").is_in(_picked_days()))


# -- the store -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Imported:
    return _imported(tmp_path_factory.mktemp("import-order"))


def _differ(a: dict[Any, Any], b: dict[Any, Any]) -> list[Any]:
    return sorted((k for k in a.keys() | b.keys() if a.get(k) != b.get(k)), key=str)


def test_every_figure_is_the_same_whatever_the_order(imported: Imported) -> None:
    want = imported.figures["whole"]
    for order in ("oldest_first", "newest_first"):
        got = imported.figures[order]
        wrong = _differ(want, got)
        firsts = sum(v for k, v in got.items() if k[0] == "first_seen_rows")
        posts = sum(1 for k in got if k[0] == "first_seen_rows")
        assert not wrong, (
            f"{order}: {len(wrong)} of {len(want.keys() | got.keys())} figures differ,"
            f" {firsts} first-seen rows for {posts} posts; first: {wrong[:8]}"
        )
        for table in TABLES:
            assert imported.rows[order][table] == imported.rows["whole"][table], (order, table)


def test_the_headline_figures_are_the_csvs(imported: Imported) -> None:
    truth = _truth()
    expected = _headline(truth)
    posts = truth.filter(pl.col("first_seen"))["key"].n_unique()
    for order, got in imported.figures.items():
        assert {k: got.get(k) for k in expected} == expected, order
        first_seen = {k[1]: v for k, v in got.items() if k[0] == "first_seen_rows"}
        assert len(first_seen) == posts, order
        assert set(first_seen.values()) == {1}, order


def test_an_older_import_rebuilds_later_days_for_its_posts_alone(imported: Imported) -> None:
    readings = _readings()
    days = _picked_days()
    # Imports in day order change no later day.
    assert [run.later for run in imported.runs[:3]] == [[], [], []]
    # (c)'s second and third lists, each alone in its run: its day and the day after whole
    # (its first deltas depend on it), then the later days its videos were read on, for
    # those videos alone, though the store holds three orders' readings there.
    for run, day in zip(imported.runs[3:], (days[1], days[0]), strict=True):
        assert run.days == [(day, day + timedelta(days=1))]
        videos = readings.filter(pl.col("day") == day)["video_id"].implode()
        later = readings.filter(pl.col("day") > day)
        theirs = later.filter(pl.col("video_id").is_in(videos))
        assert theirs.height > 0
        assert run.later == [(d, d) for d in sorted(theirs["day"].unique())]
        rewritten = sum(s.later_rows for s in run.steps)
        assert rewritten == theirs.height
        assert sum(s.later_posts for s in run.steps) == theirs["video_id"].n_unique()
        held = 3 * later.filter(pl.col("day").is_in(theirs["day"].unique().implode())).height
        assert rewritten * 10 < held, (rewritten, held)
        # one marts step: the later days follow the whole ones closely
        marts = [s.partitions for s in run.steps if s.name == "marts"]
        assert marts == [f"{day}..{run.later[-1][1]}"]
