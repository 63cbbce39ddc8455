"""The shared data sets, imported as published, then through the pipeline: marts match the files."""

from __future__ import annotations

import csv
from collections import defaultdict
from datetime import date, datetime
from functools import partial
from pathlib import Path

from core.settings import Settings
from pipelines.importers import run_import
from pipelines.run import run_all
from warehouse.rows import fetch_all

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
FILES = [
    ("youtube_trending_us.csv", "youtube-trending"),
    ("youtube_trending_fr.csv", "youtube-trending"),
    ("vaccination_tweets.csv", "tweets"),
    ("instagram_posts.csv", "instagram-insights"),
]

if not DATASETS.is_dir():
    raise RuntimeError(f"the shared data sets are missing: {DATASETS}")


def _trending_day(text: str) -> date:
    yy, dd, mm = text.split(".")  # the files' own YY.DD.MM
    return date(2000 + int(yy), int(mm), int(dd))


def test_imported_files_flow_into_the_marts(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    for name, fmt in FILES:
        run_import(DATASETS / name, fmt, settings=settings, workspace_id=None)
    summary = run_all(settings, now=datetime(2026, 11, 22), ingest=False)
    assert summary.success, summary

    # The video that trended on most days, read from the file with the csv module.
    views: dict[str, dict[date, int]] = defaultdict(dict)
    with (DATASETS / "youtube_trending_us.csv").open(encoding="cp1252", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["video_id"] != "#NAME?":
                views[row["video_id"]][_trending_day(row["trending_date"])] = int(row["views"])
    video, by_day = max(views.items(), key=lambda kv: (len(kv[1]), kv[0]))
    expected = {}
    previous = 0
    for day in sorted(by_day):
        expected[day] = max(by_day[day] - previous, 0)
        previous = max(previous, by_day[day])

    with settings.open_lakehouse() as store:
        rows = store.run(
            lambda cur: fetch_all(
                cur,
                "SELECT day, sum(views) AS views FROM mart_post_daily"
                " WHERE platform = 'youtube' AND external_id = ? GROUP BY day ORDER BY day",
                [video],
            )
        )
        got = {r["day"]: r["views"] for r in rows}
        # the first reading is a first-seen total (the file has no publication time), kept
        # apart from the days' growth; growth counts against the running peak
        first_day = min(by_day)
        assert got == {d: v for d, v in expected.items() if d != first_day}
        seen = store.run(
            lambda cur: fetch_all(
                cur,
                "SELECT day, views FROM mart_post_first_seen"
                " WHERE platform = 'youtube' AND external_id = ?",
                [video],
            )
        )
        assert seen == [{"day": first_day, "views": by_day[first_day]}]
        assert sum(got.values()) + by_day[first_day] == max(by_day.values())

        # Every tweet's likes (favorites) reach the marts once.
        with (DATASETS / "vaccination_tweets.csv").open(encoding="utf-8", newline="") as fh:
            favorites = sum(int(r["favorites"] or 0) for r in csv.DictReader(fh))
        # growth (tweets published on the export's day) plus first-seen totals (the rest)
        x_likes = 0
        for table in ("mart_post_daily", "mart_post_first_seen"):
            sql = f"SELECT coalesce(sum(likes), 0) AS likes FROM {table} WHERE platform = 'x'"  # noqa: S608
            x_likes += store.run(partial(fetch_all, sql=sql))[0]["likes"]
        assert x_likes == favorites

        # The Instagram export: impressions per post day, as the file says.
        with (DATASETS / "instagram_posts.csv").open(encoding="utf-8", newline="") as fh:
            impressions = sum(int(r["Impressions"]) for r in csv.DictReader(fh))
        ig = store.run(
            lambda cur: fetch_all(
                cur,
                # read once at the export, after each post's day: all first-seen totals
                "SELECT sum(impressions) AS impressions FROM mart_post_first_seen"
                " WHERE platform = 'instagram'",
            )
        )[0]["impressions"]
        assert ig == impressions
