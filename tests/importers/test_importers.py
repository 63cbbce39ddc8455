"""File importers against the shared data sets as published, checked by independent means."""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from core.settings import Settings
from pipelines.importers import ImportRejectedError, ImportResult, run_import
from tests.support import LiveServer, Tenant, embedded_settings
from warehouse.cursor import StoreCursor
from warehouse.extensions import connect

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

# The shared data sets live beside the repository (../shared/datasets); a missing folder is
# a failure, not a silent skip.
DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
if not DATASETS.is_dir():
    raise RuntimeError(f"the shared data sets are missing: {DATASETS}")


def rows_of(name: str, encoding: str = "utf-8") -> list[dict[str, str]]:
    """The file read with Python's csv module: the independent reading."""
    text = (DATASETS / name).read_bytes().decode(encoding)
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _lake(settings: Settings) -> duckdb.DuckDBPyConnection:
    """A read-only session on the lake, its tables unqualified."""
    con = connect()
    settings.lake.attach(con, read_only=True)
    con.execute("USE lake")
    return con


def query(settings: Settings, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    con = _lake(settings)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def count(settings: Settings, table: str, source: str) -> int:
    sql = f"SELECT count(*) FROM {table} WHERE source = ?"  # noqa: S608 - table is a constant
    return int(query(settings, sql, [source])[0][0])


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, ImportResult]]:
    """All four files imported once into a store opened directly (no host)."""
    settings = embedded_settings(tmp_path_factory.mktemp("import-direct") / "data")
    results = {}
    for name, fmt in [
        ("youtube_trending_us.csv", "youtube-trending"),
        ("youtube_trending_fr.csv", "youtube-trending"),
        ("vaccination_tweets.csv", "tweets"),
        ("instagram_posts.csv", "instagram-insights"),
    ]:
        results[name] = run_import(
            DATASETS / name, fmt, settings=settings, workspace_id=None, progress=False
        )
    return settings, results


def test_youtube_us_as_published(imported: tuple[Settings, dict[str, ImportResult]]) -> None:
    settings, results = imported
    rows = rows_of("youtube_trending_us.csv", "cp1252")
    result = results["youtube_trending_us.csv"]
    assert result.encoding == "cp1252"
    assert result.rows_read == len(rows) == 14999
    # '#NAME?' (Excel-mangled ids) rows are told apart by title; every other id is a video.
    names = {r["title"] for r in rows if r["video_id"] == "#NAME?"}
    videos = {r["video_id"] for r in rows if r["video_id"] != "#NAME?"}
    assert result.posts == len(videos) + len(names)
    exact = sum(n - 1 for n in Counter(tuple(r.values()) for r in rows).values())
    assert result.duplicates_dropped == exact
    assert result.snapshots == len(rows) - exact - result.conflicts_resolved

    # A video's views on each of its trending days equal the raw snapshots.
    by_video: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_video[r["video_id"]].append(r)
    video = max((v for v in by_video if v != "#NAME?"), key=lambda v: len(by_video[v]))
    expected = sorted(
        (datetime.strptime(r["trending_date"], "%y.%d.%m"), int(r["views"]), int(r["likes"]))
        for r in by_video[video]
    )
    got = query(
        settings,
        "SELECT captured_at, views, likes FROM raw_engagement_snapshots"
        " WHERE platform = 'youtube' AND external_id = ? ORDER BY captured_at",
        [video],
    )
    assert got == expected
    assert len(got) >= 10


def test_youtube_fr_channels_tags_and_publish_time(
    imported: tuple[Settings, dict[str, ImportResult]],
) -> None:
    settings, results = imported
    rows = rows_of("youtube_trending_fr.csv")
    result = results["youtube_trending_fr.csv"]
    assert result.rows_read == len(rows) == 3398
    assert result.posts == len({r["video_id"] for r in rows})
    assert result.accounts == len({r["channel_title"] for r in rows if r["channel_title"]})
    assert result.duplicates_dropped == 0
    assert result.conflicts_resolved == 0
    multi = Counter(r["video_id"] for r in rows)
    assert sum(1 for n in multi.values() if n > 1) == 591  # as the data set's README says
    first = rows[0]
    got = query(
        settings,
        "SELECT account_external_id, text, hashtags, published_at FROM raw_posts"
        " WHERE platform = 'youtube' AND external_id = ?",
        [first["video_id"]],
    )
    tags = [t.strip('"') for t in first["tags"].split("|")]
    published = datetime.strptime(first["publish_time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert got == [(first["channel_title"], first["title"], tags, published)]


def test_tweets_as_published(imported: tuple[Settings, dict[str, ImportResult]]) -> None:
    settings, results = imported
    rows = rows_of("vaccination_tweets.csv")
    result = results["vaccination_tweets.csv"]
    assert (result.rows_read, result.posts, result.snapshots) == (8082, 8082, 8082)
    assert result.accounts == len({r["user_name"] for r in rows})
    exported = max(datetime.strptime(r["date"], "%Y-%m-%d %H:%M:%S") for r in rows)
    likes = sum(int(r["favorites"]) for r in rows)
    shares = sum(int(r["retweets"]) for r in rows)
    got = query(
        settings,
        "SELECT sum(likes), sum(shares), min(captured_at), max(captured_at)"
        " FROM raw_engagement_snapshots WHERE source = 'import:tweets'",
    )
    assert got == [(likes, shares, exported, exported)]
    sample = next(r for r in rows if r["hashtags"].count("'") >= 4)
    tags = query(
        settings,
        "SELECT hashtags FROM raw_posts WHERE platform = 'x' AND external_id = ?",
        [sample["id"]],
    )[0][0]
    assert tags == [t.strip(" '") for t in sample["hashtags"].strip("[]").split(",")]


def test_instagram_as_published(imported: tuple[Settings, dict[str, ImportResult]]) -> None:
    settings, results = imported
    rows = rows_of("instagram_posts.csv")
    result = results["instagram_posts.csv"]
    assert (result.posts, result.snapshots, result.accounts) == (len(rows), len(rows), 1)
    got = query(
        settings,
        "SELECT sum(impressions), sum(likes), sum(saves), count(reach), count(clicks)"
        " FROM raw_engagement_snapshots WHERE source = 'import:instagram-insights'",
    )
    expected = (
        sum(int(r["Impressions"]) for r in rows),
        sum(int(r["Likes"]) for r in rows),
        sum(int(r["Saves"]) for r in rows),
        0,
        0,
    )
    assert got == [expected]
    # Filed under the test workspace's own Instagram account.
    account = query(
        settings,
        "SELECT a.account_id IS NOT NULL, a.kind FROM raw_account_snapshots a"
        " WHERE a.source = 'import:instagram-insights'",
    )
    assert account == [(True, "own")]


def test_reimport_is_idempotent(imported: tuple[Settings, dict[str, ImportResult]]) -> None:
    settings, results = imported
    before = [
        count(settings, t, "import:youtube-trending")
        for t in ("raw_posts", "raw_engagement_snapshots", "raw_account_snapshots")
    ]
    again = run_import(
        DATASETS / "youtube_trending_us.csv",
        "youtube-trending",
        settings=settings,
        workspace_id=None,
        progress=False,
    )
    assert again.batch_id == results["youtube_trending_us.csv"].batch_id
    after = [
        count(settings, t, "import:youtube-trending")
        for t in ("raw_posts", "raw_engagement_snapshots", "raw_account_snapshots")
    ]
    assert after == before
    assert query(settings, "SELECT count(*) FROM ingest_batches")[0][0] == 4
    landing = settings.data_dir / "landing"  # frames go to the lake as Arrow, not files
    assert not landing.exists() or not any(landing.iterdir())


def test_import_beside_a_running_api_lands_in_its_lake(server: LiveServer, tenant: Tenant) -> None:
    """With the API up, an import opens the store itself (no owner) and the API reads it."""
    for _ in range(2):  # twice: a re-import replaces its batch
        result = run_import(
            DATASETS / "youtube_trending_fr.csv",
            "youtube-trending",
            settings=server.settings,
            workspace_id=tenant.workspace_id,
            progress=False,
        )
    assert result.workspace_id == tenant.workspace_id

    def counts(cur: StoreCursor) -> tuple[Any, ...] | None:
        return cur.execute(
            "SELECT (SELECT count(*) FROM raw_posts WHERE workspace_id = $1),"
            " (SELECT count(*) FROM raw_engagement_snapshots WHERE workspace_id = $1),"
            " (SELECT count(*) FROM raw_account_snapshots WHERE workspace_id = $1)",
            [tenant.workspace_id],
        ).fetchone()

    with server.store.analytics() as cur:
        assert counts(cur) == (result.posts, result.snapshots, result.accounts)
    assert (result.posts, result.snapshots) == (2602, 3398)


# -- malformed files ---------------------------------------------------------------------

US_HEADER = "video_id,trending_date,title,category_id,views,likes,dislikes,comment_count\n"
GOOD = "abcdefghijk,17.14.11,A title,22,100,10,1,5\n"


def reject(tmp_path: Path, body: bytes, fmt: str = "youtube-trending") -> ImportRejectedError:
    path = tmp_path / "bad.csv"
    path.write_bytes(body)
    settings = embedded_settings(tmp_path / "data")
    with pytest.raises(ImportRejectedError) as caught:
        run_import(path, fmt, settings=settings, workspace_id=None, progress=False)
    if (settings.data_dir / "lake.sqlite").exists():
        for table in ("raw_posts", "raw_engagement_snapshots", "ingest_batches"):
            sql = f"SELECT count(*) FROM {table}"  # noqa: S608 - table is a constant
            assert query(settings, sql) == [(0,)], table
    return caught.value


def test_bad_number_names_its_line(tmp_path: Path) -> None:
    body = US_HEADER + GOOD * 5 + "bcdefghijkl,17.14.11,B,22,12x4,10,1,5\n" + GOOD
    error = reject(tmp_path, body.encode())
    assert error.line == 7
    assert "views" in str(error)
    assert "'12x4' is not a whole number" in str(error)


def test_quoted_newlines_before_the_bad_line_are_counted(tmp_path: Path) -> None:
    multi = 'cdefghijklm,17.15.11,"two\nline\r\ntitle",22,1,1,1,1\r\n'
    body = US_HEADER + GOOD + multi + "\n" + GOOD + "defghijklmn,17.99.11,C,22,1,1,1,1\n"
    error = reject(tmp_path, body.encode())
    # header 1, GOOD 2, multi 3-5, blank 6, GOOD 7, bad date 8
    assert error.line == 8
    assert "trending_date" in str(error)


def test_missing_column_is_rejected(tmp_path: Path) -> None:
    body = "video_id,trending_date,title,category_id,views,likes\n" + "a,17.14.11,t,1,1,1\n"
    error = reject(tmp_path, body.encode())
    assert error.line == 1
    assert "comment_count" in str(error)


def test_too_many_fields_names_the_line(tmp_path: Path) -> None:
    body = US_HEADER + GOOD * 3 + GOOD.strip() + ",extra\n"
    error = reject(tmp_path, body.encode())
    assert error.line == 5
    assert "expected 8 fields, found 9" in str(error)


def test_latin1_bytes_in_a_utf8_file_are_rejected(tmp_path: Path) -> None:
    body = (US_HEADER + "abcdefghijk,17.14.11,Café,22,1,1,1,1\n").encode() + (
        "bcdefghijkl,17.14.11,Caf\xe9,22,1,1,1,1\n".encode("latin-1")
    )
    error = reject(tmp_path, body)
    assert error.line == 3
    assert "0xe9" in str(error)
    assert "mixes encodings" in str(error)


def test_a_wholly_windows_1252_file_is_read_as_such(tmp_path: Path) -> None:
    path = tmp_path / "legacy.csv"
    path.write_bytes((US_HEADER + "abcdefghijk,17.14.11,It\u2019s,22,1,1,1,1\n").encode("cp1252"))
    settings = embedded_settings(tmp_path / "data")
    result = run_import(
        path, "youtube-trending", settings=settings, workspace_id=None, progress=False
    )
    assert result.encoding == "cp1252"
    assert query(settings, "SELECT text FROM raw_posts") == [("It\u2019s",)]


def test_duplicates_and_conflicts_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "dups.csv"
    lines = [
        GOOD,
        GOOD,  # exact repeat
        "abcdefghijk,17.14.11,A title,22,150,10,1,5\n",  # same video and day, more views
        "abcdefghijk,17.15.11,A title,22,300,20,1,6\n",
    ]
    path.write_text(US_HEADER + "".join(lines))
    settings = embedded_settings(tmp_path / "data")
    result = run_import(
        path, "youtube-trending", settings=settings, workspace_id=None, progress=False
    )
    assert (result.duplicates_dropped, result.conflicts_resolved) == (1, 1)
    assert query(settings, "SELECT views FROM raw_engagement_snapshots ORDER BY captured_at") == [
        (150,),
        (300,),
    ]


def test_tweets_bad_hashtags_literal(tmp_path: Path) -> None:
    rows = rows_of("vaccination_tweets.csv")[:3]
    rows[2]["hashtags"] = "__import__('os').system('true')"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    error = reject(tmp_path, out.getvalue().encode(), fmt="tweets")
    text = out.getvalue()
    assert error.line == 1 + text[: text.index("__import__")].count("\n")
    assert "hashtags" in str(error)


TWEETS_HEADER = "id,user_name,user_followers,user_friends,date,text,hashtags,retweets,favorites\n"


def test_a_short_record_is_read_with_empty_trailing_fields(tmp_path: Path) -> None:
    """docs/importers.md: fewer fields than the header → the missing ones are empty."""
    body = (
        TWEETS_HEADER
        + "1,alice,10,5,2021-01-01 10:00:00,hello,[],1,2\n"
        + "2,bob,10,5,2021-01-02 10:00:00,hi,[],1\n"  # no favorites: NULL likes
    )
    path = tmp_path / "short.csv"
    path.write_text(body)
    settings = embedded_settings(tmp_path / "data")
    result = run_import(path, "tweets", settings=settings, workspace_id=None, progress=False)
    assert (result.rows_read, result.posts, result.snapshots) == (2, 2, 2)
    likes = query(
        settings,
        "SELECT external_id, likes FROM raw_engagement_snapshots ORDER BY external_id",
    )
    assert likes == [("1", 2), ("2", None)]


def test_a_short_record_missing_a_required_value_says_it_is_short(tmp_path: Path) -> None:
    body = TWEETS_HEADER + "1,alice,10,5,2021-01-01 10:00:00,hello,[],1,2\n" + "2,bob,10,5\n"
    error = reject(tmp_path, body.encode(), "tweets")
    assert error.line == 3
    assert "column 'date' is empty" in str(error)
    assert "the record has 4 of the header's 9 fields" in str(error)
