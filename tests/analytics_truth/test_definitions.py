"""Definitions docs/api/analytics.md states, each pinned on a small export through the pipeline."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.settings import Settings
from pipelines.importers import run_import
from pipelines.run import run_all
from warehouse.rows import fetch_all

US_HEADER = "video_id,trending_date,title,category_id,views,likes,dislikes,comment_count"
FR_HEADER = (
    "video_id,trending_date,title,channel_title,category_id,publish_time,tags,views,likes,"
    "dislikes,comment_count,thumbnail_link,comments_disabled,ratings_disabled,"
    "video_error_or_removed,description"
)
# The FR file's one trending day, 2018-03-01: read at 00:00 UTC, so the data ends at 01:00
# and the 28-day top-content window is [2018-02-01 01:00, 2018-03-01 01:00).
DAY = "18.01.03"
PUBLISHED = {
    "vfirst00000": ("2018-03-01T00:00:00.000Z", 30),  # at the instant of its first reading
    "vgrace00000": ("2018-02-28T23:30:00.000Z", 20),  # half an hour before it
    "vedgein0000": ("2018-02-01T01:00:00.000Z", 40),  # the window's first instant
    "vedgeout000": ("2018-02-01T00:59:59.000Z", 90),  # a second before it
}


def _query(settings: Settings, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    with settings.open_lakehouse() as lake:
        return lake.run(lambda cur: fetch_all(cur, sql, params or []))


def test_first_reading_at_publication_top_content_window_and_no_channel_creators(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    fr = [FR_HEADER] + [
        f"{video},{DAY},T {video},Chan,24,{published},a|b,1000,{likes},0,0,,False,False,False,d"
        for video, (published, likes) in PUBLISHED.items()
    ]
    (tmp_path / "fr.csv").write_text("\n".join(fr) + "\n", encoding="utf-8")
    # a US-style file has no channel_title: its videos belong to no known account
    us = [US_HEADER, f"nochannel00,{DAY},V,22,5000,300,0,20", f"nochannel01,{DAY},W,22,900,9,0,1"]
    (tmp_path / "us.csv").write_text("\n".join(us) + "\n", encoding="utf-8")
    for name, kind in (("fr.csv", "own"), ("us.csv", "creator")):
        run_import(
            tmp_path / name,
            "youtube-trending",
            settings=settings,
            workspace_id=None,
            kind=kind,
            progress=False,
        )
    summary = run_all(settings, now=datetime(2026, 1, 1, tzinfo=UTC), ingest=False)
    assert summary.success, summary

    # A post published at the instant of its first reading: a first-seen total (it was not
    # published before the reading); half an hour before it: growth (the grace hour).
    first_seen = {
        r["external_id"] for r in _query(settings, "SELECT external_id FROM mart_post_first_seen")
    }
    growth = {
        r["external_id"]
        for r in _query(settings, "SELECT DISTINCT external_id FROM mart_post_hourly")
    }
    assert "vfirst00000" in first_seen
    assert "vfirst00000" not in growth
    assert "vgrace00000" in growth
    assert "vgrace00000" not in first_seen

    # The 28-day top-content window includes its first instant, not the second before it.
    top = {
        json.loads(r["evidence"])["external_id"]
        for r in _query(settings, "SELECT evidence FROM mart_insights WHERE kind = 'top_content'")
    }
    assert top == {"vfirst00000", "vgrace00000", "vedgein0000"}

    # A file without channels gives no creators to rank.
    assert _query(settings, "SELECT * FROM mart_creator_rankings") == []


def test_the_docs_state_these_definitions() -> None:
    # what the tests above and tests/pipelines/test_algorithms.py pin, said where users read
    text = " ".join(
        (Path(__file__).resolve().parents[2] / "docs" / "api" / "analytics.md")
        .read_text(encoding="utf-8")
        .split()
    )
    for said in (
        "unweighted mean of the members' own rates",
        "**population** standard deviation",
        "A post published at the very instant of its first reading",
        "that reading is a first-seen total, not growth",
        "It includes its first instant",
        "a file without channels (the US trending file) names none, so it gives no creators",
    ):
        assert said in text, said
