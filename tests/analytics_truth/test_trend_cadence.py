"""Viral trends follow each post's own reading interval: a daily export keeps its day-long
windows in a workspace where other posts are read every hour.

The FR trending file (17 daily snapshots) is imported alone and trended; then 40 posts read
every hour over its last two days join the workspace. Alone, the file's posts set the
workspace's interval (a day); with the hourly posts in the majority, one interval for all
would be 6 hours, and daily readings never fill a 6-hour window and its predecessor: the
file's trends would vanish.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from connectors.base import EngagementSnapshot, PostRecord
from core.settings import Settings
from pipelines.importers import run_import
from pipelines.run import run_all
from warehouse.ingest import IngestBatch, write_batch

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
NOW = datetime(2026, 11, 22, tzinfo=UTC)
LAST = datetime(2017, 11, 30, tzinfo=UTC)  # the file's last trending day


def _trends(settings: Settings, workspace_id: str) -> dict[tuple[str, str, str], dict[str, object]]:
    """The workspace's trends of every judged window: (type, entity, window end) → figures."""
    with settings.open_lakehouse() as lake, lake.cursor() as cur:
        rows = cur.execute(
            "SELECT entity_type, entity, window_end, score, status, evidence"
            " FROM mart_viral_trends WHERE workspace_id = ?",
            [workspace_id],
        ).fetchall()
    return {
        (etype, entity, str(end)): {"score": score, "status": status, **json.loads(evidence)}
        for etype, entity, end, score, status, evidence in rows
    }


def _hourly_posts(workspace_id: str) -> IngestBatch:
    batch = IngestBatch(
        id="test:hourly",
        workspace_id=workspace_id,
        source="test:hourly",
        partition_key=None,
        started_at=NOW,
    )
    for i in range(40):
        post = f"hourly-{i}"
        batch.posts.append(
            (
                PostRecord(
                    "x",
                    post,
                    "hourly-account",
                    f"post {i}",
                    LAST - timedelta(days=3),
                    hashtags=(f"hourlytag{i}",),
                ),
                "own",
                None,
            )
        )
        for h in range(49):
            # steady growth, with a burst in the last six hours for every fourth post
            likes = 10 * h + (200 * (h - 42) if i % 4 == 0 and h > 42 else 0)
            batch.snapshots.append(
                EngagementSnapshot(
                    "x", post, LAST - timedelta(hours=48 - h), likes=likes, comments=h
                )
            )
    return batch


def test_a_daily_export_keeps_day_long_windows_beside_hourly_posts(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    fr = run_import(
        DATASETS / "youtube_trending_fr.csv",
        "youtube-trending",
        settings=settings,
        workspace_id=None,
        progress=False,
    )
    assert run_all(settings, now=NOW, ingest=False).success
    alone = _trends(settings, fr.workspace_id)
    assert alone, "the file alone trends"
    assert {t["window_hours"] for t in alone.values()} == {24.0}

    with settings.open_lakehouse() as lake:
        write_batch(lake, _hourly_posts(fr.workspace_id))
    assert run_all(settings, now=NOW, ingest=False).success
    beside = _trends(settings, fr.workspace_id)

    # The file's trends are the same, with the same day-long windows: all its posts; of its
    # hashtags and topics (50 of each a window, the file's fill them), those the bursting
    # hourly tags do not outrank.
    theirs = {k: v for k, v in beside.items() if "hourly" not in k[1]}
    assert {k for k in theirs if k[0] == "post"} == {k for k in alone if k[0] == "post"}
    assert theirs.keys() <= alone.keys()
    for key, trend in theirs.items():
        assert trend["score"] == alone[key]["score"], key
        assert trend["window_hours"] == 24.0
    # The hourly posts trend by 6-hour windows: the bursting ones are listed.
    hourly = {k: v for k, v in beside.items() if k[0] == "post" and "hourly" in k[1]}
    assert hourly
    assert {t["window_hours"] for t in hourly.values()} == {6.0}
    assert {k[1] for k in hourly} <= {f"hourly-{i}" for i in range(0, 40, 4)}
