"""A youtube-trending file's ``thumbnail_link``: each video's picture, the same on both paths."""

from __future__ import annotations

from pathlib import Path

from core.settings import Settings
from pipelines.importers import run_import
from tests.importers.test_direct_path import TABLES, dump
from tests.support import embedded_settings
from warehouse.extensions import connect

HEADER = "video_id,trending_date,title,channel_title,category_id,views,likes,comment_count,"
HEADER += "thumbnail_link\n"
YT = "https://i.ytimg.com/vi"
ROWS = [
    # a video whose picture changed: the newest trending day's is kept
    f"aaaaaaaaaa1,18.01.01,First,Chan A,22,1,0,0,{YT}/aaaaaaaaaa1/old.jpg",
    f"aaaaaaaaaa1,18.02.01,Second,Chan A,22,5,1,0,{YT}/aaaaaaaaaa1/default.jpg",
    # one without a picture (blank)
    "bbbbbbbbbb2,18.01.01,B,Chan A,23,3,0,0,",
    f"cccccccccc3,18.01.01,C,Chan B,24,7,1,0,{YT}/cccccccccc3/default.jpg",
]
PICTURES = {
    "aaaaaaaaaa1": f"{YT}/aaaaaaaaaa1/default.jpg",
    "bbbbbbbbbb2": None,
    "cccccccccc3": f"{YT}/cccccccccc3/default.jpg",
}


def _import(tmp_path: Path, name: str, rows: list[str], encoding: str | None) -> Settings:
    # one file name for both paths: the batch records it (its origin), the rest must agree
    path = tmp_path / "files" / name / "videos.csv"
    path.parent.mkdir(parents=True)
    path.write_text(HEADER + "".join(r + "\n" for r in rows), encoding="utf-8")
    settings = embedded_settings(tmp_path / name)
    result = run_import(
        path,
        "youtube-trending",
        settings=settings,
        workspace_id=None,
        progress=False,
        encoding=encoding,  # given: the careful path
    )
    assert result.direct is (encoding is None)
    return settings


def _pictures(settings: Settings) -> dict[str, str | None]:
    """Each imported video's picture, as raw_posts holds it."""
    con = connect()
    settings.lake.attach(con, read_only=True)
    try:
        rows = con.execute("SELECT external_id, thumbnail_url FROM lake.raw_posts").fetchall()
    finally:
        con.close()
    return {str(external_id): thumbnail for external_id, thumbnail in rows}


def test_both_paths_keep_each_videos_newest_thumbnail(tmp_path: Path) -> None:
    direct = _import(tmp_path, "direct", ROWS, None)
    careful = _import(tmp_path, "careful", ROWS, "utf-8")
    assert _pictures(direct) == _pictures(careful) == PICTURES
    got, want = dump(direct), dump(careful)
    for table in TABLES:
        assert got[table] == want[table], table


def test_a_padded_thumbnail_takes_the_careful_path_which_trims_it(tmp_path: Path) -> None:
    padded = [*ROWS[:-1], ROWS[-1] + " "]
    path = tmp_path / "padded.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in padded), encoding="utf-8")
    settings = embedded_settings(tmp_path / "padded")
    result = run_import(
        path, "youtube-trending", settings=settings, workspace_id=None, progress=False
    )
    assert not result.direct
    assert _pictures(settings) == PICTURES
