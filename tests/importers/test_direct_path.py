"""The direct youtube-trending path writes exactly what the careful path writes, or declines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from pipelines.importers import ImportResult, run_import
from tests.support import embedded_settings
from warehouse.extensions import connect

HEADER = (
    "video_id,trending_date,title,channel_title,category_id,publish_time,tags,views,likes,"
    "dislikes,comment_count,video_error_or_removed\n"
)
# Rows out of day order; titles and tags change on a video's newest day; one video moves
# category (and its channel has videos in several); a channel missing on some rows; tags
# with quotes, repeats, [none] and tabs; the three publish_time formats; empty counters; a
# removal; unknown and shared category names (23 and 34 are both Comedy); quoted commas.
ROWS = [
    'aaaaaaaaaa1,18.02.01,"Old, title",Chan A,22,2018-01-01T10:00:00.000Z,'
    '"""x""|""y""",5,1,0,1,False',
    'aaaaaaaaaa1,18.01.01,First,Chan A,22,2018-01-01T10:00:00.000Z,"""x""",1,0,0,0,False',
    'aaaaaaaaaa1,18.03.01,"New ""quoted"" title",Chan A,24,2018-01-01T10:00:00.000Z,'
    '"""z""|""z""|[none]|\t w ",9,2,0,,False',
    "bbbbbbbbbb2,18.01.01,B,Chan A,23,2018-01-02T11:00:00Z,[none],3,,0,0,False",
    "bbbbbbbbbb2,18.02.01,B,,23,2018-01-02T11:00:00Z,[none],4,1,0,1,TRUE",
    "cccccccccc3,18.05.01,C,Chan B,34,2018-01-03 12:00:00,,7,1,0,0,False",
    "cccccccccc3,18.06.01,C,Chan B,99,2018-01-03 12:00:00,a|b|a,8,1,0,0,False",
    "dddddddddd-,18.01.01,D,,10,,,0,0,0,0,",
    "e_eeeeeeee5,18.31.12,E,Chan B,1,,only,1,1,1,1,false",
]
# Each store bootstraps its own workspace: its id (also inside the batch id) is left out.
TABLES = {
    "raw_posts": "* EXCLUDE (workspace_id, ingest_batch, ingested_at)",
    "raw_engagement_snapshots": "* EXCLUDE (workspace_id, ingest_batch, ingested_at)",
    "raw_account_snapshots": "* EXCLUDE (workspace_id, ingest_batch, ingested_at)",
    "ingest_batches": "* EXCLUDE (id, workspace_id, errors, started_at, finished_at)",
}


def dump(settings: Settings) -> dict[str, list[tuple[Any, ...]]]:
    con = connect()
    settings.lake.attach(con, read_only=True)
    con.execute("USE lake")
    try:
        return {
            table: con.execute(f"SELECT {cols} FROM {table} ORDER BY ALL").fetchall()  # noqa: S608
            for table, cols in TABLES.items()
        }
    finally:
        con.close()


def imported(path: Path, settings: Settings, **options: Any) -> ImportResult:
    """``path`` imported as YouTube trending records into ``settings``' store."""
    return run_import(
        path, "youtube-trending", settings=settings, workspace_id=None, progress=False, **options
    )


def both_paths_of(
    path: Path, tmp_path: Path
) -> tuple[ImportResult, ImportResult, Settings, Settings]:
    """``path`` imported into a store at tmp_path/fast and again into one at tmp_path/careful."""
    fast = embedded_settings(tmp_path / "fast")
    careful = embedded_settings(tmp_path / "careful")
    a = imported(path, fast)
    # Forcing the encoding takes the careful path (polars, every check with its line).
    b = imported(path, careful, encoding="utf-8")
    return a, b, fast, careful


def both_paths(
    tmp_path: Path, rows: list[str]
) -> tuple[ImportResult, ImportResult, Settings, Settings]:
    path = tmp_path / "trending.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows), encoding="utf-8")
    return both_paths_of(path, tmp_path)


def test_direct_and_careful_paths_write_identical_rows(tmp_path: Path) -> None:
    fast, careful, fast_settings, careful_settings = both_paths(tmp_path, ROWS)
    assert (fast.direct, careful.direct) == (True, False)
    assert fast.batch_id.replace(fast.workspace_id, "") == careful.batch_id.replace(
        careful.workspace_id, ""
    )
    assert (
        (fast.rows_read, fast.posts, fast.snapshots, fast.accounts)
        == (
            careful.rows_read,
            careful.posts,
            careful.snapshots,
            careful.accounts,
        )
        == (9, 5, 9, 2)
    )
    got, want = dump(fast_settings), dump(careful_settings)
    for table in TABLES:
        assert got[table] == want[table], table


def test_direct_path_reimport_replaces_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "trending.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in ROWS), encoding="utf-8")
    settings = embedded_settings(tmp_path / "data")
    first = imported(path, settings)
    again = imported(path, settings)
    assert first.direct
    assert again.direct
    assert first.batch_id == again.batch_id
    before = dump(settings)
    path.write_text(HEADER + "".join(r + "\n" for r in ROWS[:-1]), encoding="utf-8")
    other = imported(path, settings)
    assert other.direct
    assert other.batch_id != first.batch_id
    after = dump(settings)
    assert len(after["raw_engagement_snapshots"]) == len(before["raw_engagement_snapshots"]) + 8
    assert len(after["ingest_batches"]) == 2


@pytest.mark.parametrize(
    ("why", "rows"),
    [
        ("repeated video and day", [*ROWS, ROWS[0]]),
        ("days 64 or more apart", [*ROWS, "e_eeeeeeee5,18.01.01,E,Chan B,1,,only,1,1,1,1,false"]),
        (
            "two publish times",
            [*ROWS, "cccccccccc3,18.07.01,C,Chan B,34,2018-01-04 12:00:00,,9,1,0,0,"],
        ),
        ("two channels", [*ROWS, "cccccccccc3,18.07.01,C,Chan Z,34,2018-01-03 12:00:00,,9,1,0,0,"]),
        ("padded category", [*ROWS, "ffffffffff6,18.01.01,F,Chan B, 22,,,1,1,1,1,"]),
        # the padded value is neither the video's smallest nor largest category id
        (
            "padded category between two others",
            [
                *ROWS,
                "ffffffffff6,18.01.01,F,Chan B,1,,,1,1,1,1,",
                "ffffffffff6,18.02.01,F,Chan B,5 ,,,1,1,1,1,",
                "ffffffffff6,18.03.01,F,Chan B,9,,,1,1,1,1,",
            ],
        ),
        ("padded channel", [*ROWS, "ffffffffff6,18.01.01,F,Chan B ,22,,,1,1,1,1,"]),
        ("id Excel mangled", [*ROWS, "#NAME?,18.01.01,F,Chan B,22,,,1,1,1,1,"]),
        ("signed number", [*ROWS, "ffffffffff6,18.01.01,F,Chan B,22,,,+1,1,1,1,"]),
        ("padded number", [*ROWS, "ffffffffff6,18.01.01,F,Chan B,22,,,1 ,1,1,1,"]),
        ("date with one digit", [*ROWS, "ffffffffff6,18.1.01,F,Chan B,22,,,1,1,1,1,"]),
    ],
)
def test_direct_path_declines_what_needs_the_careful_path(
    tmp_path: Path, why: str, rows: list[str]
) -> None:
    fast, _, fast_settings, careful_settings = both_paths(tmp_path, rows)
    assert not fast.direct, why
    assert dump(fast_settings) == dump(careful_settings), why


def test_direct_path_without_the_optional_columns(tmp_path: Path) -> None:
    """The US shape: no channel, publish time, tags or removal flag."""
    us = "video_id,trending_date,title,category_id,views,likes,dislikes,comment_count\n"
    path = tmp_path / "us.csv"
    body = "aaaaaaaaaa1,18.01.01,A,22,1,0,0,0\naaaaaaaaaa1,18.02.01,A2,24,5,,0,1\n"
    path.write_text(us + body + "bbbbbbbbbb2,18.01.01,B,99,3,1,0,0\n", encoding="utf-8")
    fast, careful, _, _ = both_paths_of(path, tmp_path)
    assert (fast.direct, careful.direct) == (True, False)
    assert (fast.posts, fast.snapshots, fast.accounts) == (2, 3, 0)
    assert dump(Settings(data_dir=tmp_path / "fast")) == dump(
        Settings(data_dir=tmp_path / "careful")
    )


def test_direct_path_counts_a_moved_videos_records_per_category(tmp_path: Path) -> None:
    """A channel's category counts each record of a video that moved (or lost its category)."""
    rows = [
        # Chan M: 2 records under 10 (a video that moved 24 -> 10 -> 24), 3 under 24, 1 with
        # no category; its newest video is filed under 10.
        "mmmmmmmmmm1,18.01.01,M,Chan M,24,,,1,1,1,1,",
        "mmmmmmmmmm1,18.02.01,M,Chan M,10,,,2,1,1,1,",
        "mmmmmmmmmm1,18.03.01,M,Chan M,24,,,3,1,1,1,",
        "mmmmmmmmmm1,18.04.01,M,Chan M,,,,4,1,1,1,",
        "nnnnnnnnnn2,18.01.01,N,Chan M,10,,,1,1,1,1,",
        "nnnnnnnnnn2,18.05.01,N,,24,,,1,1,1,1,",
        "oooooooooo3,18.01.01,O,Chan O,,,,1,1,1,1,",
        "oooooooooo3,18.02.01,O,Chan O,,,,1,1,1,1,",
    ]
    fast, careful, fast_settings, careful_settings = both_paths(tmp_path, rows)
    assert (fast.direct, careful.direct) == (True, False)
    got, want = dump(fast_settings), dump(careful_settings)
    for table in TABLES:
        assert got[table] == want[table], table
