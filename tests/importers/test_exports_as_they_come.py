"""Exports in the shapes people have today, made from the shared data sets (issue 51, point 10).

No such file is on this machine: each is written here from the shared exports' own records,
in the shape a newer download takes (dates with UTC offsets; the current YouTube trending
columns), and checked against those records read with the csv module.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import itertools
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from core.settings import Settings
from pipelines.importers import ImportRejectedError, ImportResult, run_import
from tests.importers.test_importers import DATASETS, query
from tests.support import embedded_settings, write_csv

pytestmark = pytest.mark.xdist_group(__name__)

TWEETS = 300  # the tweets export's first records
VIDEOS = 40  # the FR trending file's first videos, with every day each trends on
# The current public YouTube trending shape ("YouTube Trending Video Dataset", updated daily).
CURRENT = [
    "video_id", "title", "publishedAt", "channelId", "channelTitle", "categoryId", "trending_date",
    "tags", "view_count", "likes", "dislikes", "comment_count", "thumbnail_link",
    "comments_disabled", "ratings_disabled", "description",
]  # fmt: skip
NAIVE = "%Y-%m-%d %H:%M:%S"
# Every third tweet's times as a New York clock writes them (-05:00); the others in UTC.
NEW_YORK = timezone(timedelta(hours=-5))


def _with_offset(text: str, index: int) -> str:
    """A naive UTC time of the export, written with an explicit offset."""
    moment = datetime.strptime(text, NAIVE).replace(tzinfo=UTC)
    if index % 3 == 2:
        return moment.astimezone(NEW_YORK).isoformat(sep=" ")
    return moment.isoformat(sep=" ")  # 2020-12-20 06:06:44+00:00


def _tweets(records: int) -> list[dict[str, str]]:
    """The tweets export's first records, read with the csv module."""
    with (DATASETS / "vaccination_tweets.csv").open(encoding="utf-8", newline="") as fh:
        return list(itertools.islice(csv.DictReader(fh), records))


@functools.cache
def _fr_videos() -> tuple[dict[str, str], ...]:
    """Every record of the FR trending file's first VIDEOS videos, read with the csv module."""
    with (DATASETS / "youtube_trending_fr.csv").open(encoding="utf-8", newline="") as fh:
        fr = list(csv.DictReader(fh))
    videos = set(list(dict.fromkeys(r["video_id"] for r in fr))[:VIDEOS])
    return tuple(r for r in fr if r["video_id"] in videos)


def _channel_id(title: str) -> str:
    """A channel id (UC + 22 characters) standing for the FR file's channel title."""
    return "UC" + hashlib.sha256(title.encode()).hexdigest()[:22]


def _current_shape(row: dict[str, str]) -> list[str]:
    """One FR record in the current shape: ISO times, a channel id, tags without quotes."""
    yy, dd, mm = row["trending_date"].split(".")
    published = datetime.strptime(row["publish_time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    # the current shape lists tags without quotes, and none as [None]
    tags = "|".join(t.strip('"') for t in row["tags"].split("|")).replace("[none]", "[None]")
    values = {
        **{c: row[c] for c in CURRENT if c in row},
        "publishedAt": published.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "channelId": _channel_id(row["channel_title"]),
        "channelTitle": row["channel_title"],
        "categoryId": row["category_id"],
        "trending_date": f"20{yy}-{mm}-{dd}T00:00:00Z",
        "tags": tags,
        "view_count": row["views"],
    }
    return [values[c] for c in CURRENT]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("as-they-come")
    tweets = _tweets(TWEETS)
    header = list(tweets[0])
    offsets = [
        [
            _with_offset(v, i) if c in ("date", "user_created") else v
            for c, v in zip(header, r.values(), strict=True)
        ]
        for i, r in enumerate(tweets)
    ]
    return {
        "tweets": write_csv(folder / "tweets-offsets.csv", header, offsets),
        "trending": write_csv(
            folder / "trending-current.csv", CURRENT, [_current_shape(r) for r in _fr_videos()]
        ),
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """One store opened directly (no host) for the module's imports."""
    return embedded_settings(tmp_path_factory.mktemp("as-they-come-store") / "data")


def _import(settings: Settings, path: Path, fmt: str) -> ImportResult:
    return run_import(path, fmt, settings=settings, workspace_id=None, progress=False)


def test_tweet_dates_with_utc_offsets_are_read_as_their_instants(
    store: Settings, files: dict[str, Path]
) -> None:
    settings = store
    assert "+00:00" in files["tweets"].read_text(encoding="utf-8").splitlines()[1]
    result = _import(settings, files["tweets"], "tweets")
    tweets = _tweets(TWEETS)
    assert (result.posts, result.snapshots) == (TWEETS, TWEETS)
    # The instants the original export gives (naive UTC), whatever offset they were written in.
    want = sorted((r["id"], datetime.strptime(r["date"], NAIVE)) for r in tweets)
    got = query(
        settings,
        "SELECT external_id, published_at FROM raw_posts WHERE platform = 'x' ORDER BY ALL",
    )
    assert got == want
    exported = max(at for _, at in want)
    likes = sum(int(r["favorites"]) for r in tweets)
    readings = query(
        settings,
        "SELECT sum(likes), min(captured_at), max(captured_at) FROM raw_engagement_snapshots"
        " WHERE platform = 'x'",
    )
    assert readings == [(likes, exported, exported)]


def test_an_impossible_offset_is_refused_on_its_line(store: Settings, tmp_path: Path) -> None:
    settings = store
    tweets = _tweets(3)
    header = list(tweets[0])
    rows = [list(r.values()) for r in tweets]
    rows[1][header.index("date")] += "+25:00"
    path = write_csv(tmp_path / "t.csv", header, rows)
    with pytest.raises(ImportRejectedError) as err:
        _import(settings, path, "tweets")
    assert err.value.line == 3
    assert "+00:00" in err.value.problem  # the message says an offset may follow


def test_the_current_youtube_trending_shape(store: Settings, files: dict[str, Path]) -> None:
    settings = store
    rows = _fr_videos()
    result = _import(settings, files["trending"], "youtube-trending")
    assert not result.direct  # the direct path reads the 2017-18 shape only
    assert (result.rows_read, result.posts) == (len(rows), VIDEOS)
    assert len(rows) > VIDEOS  # some videos trend on several days

    def day(text: str) -> datetime:
        yy, dd, mm = text.split(".")
        return datetime(2000 + int(yy), int(mm), int(dd))

    want = sorted(
        (r["video_id"], day(r["trending_date"]), int(r["views"]), int(r["likes"]),
         int(r["comment_count"]))
        for r in rows
    )  # fmt: skip
    got = query(
        settings,
        "SELECT external_id, captured_at, views, likes, comments FROM raw_engagement_snapshots"
        " WHERE platform = 'youtube' ORDER BY ALL",
    )
    assert got == want
    # Posts under their channel's id, published when publishedAt says, tags as listed.
    newest = {r["video_id"]: r for r in sorted(rows, key=lambda r: day(r["trending_date"]))}
    posts = {
        r[0]: r[1:]
        for r in query(
            settings,
            "SELECT external_id, account_external_id, published_at, hashtags FROM raw_posts"
            " WHERE platform = 'youtube'",
        )
    }
    for video, r in newest.items():
        tags = [t.strip('" \t') for t in r["tags"].split("|")]
        tags = [t for t in tags if t and t.lower() != "[none]"]
        published = datetime.strptime(r["publish_time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        assert posts[video] == (
            _channel_id(r["channel_title"]),
            published,
            list(dict.fromkeys(tags)),
        )
    # One account per channel id: named by its title, its page from its id.
    channels = {r["channel_title"] for r in rows}
    accounts = query(
        settings,
        "SELECT external_id, handle, display_name, url FROM raw_account_snapshots"
        " WHERE platform = 'youtube' ORDER BY ALL",
    )
    assert accounts == sorted(
        (i, t, t, f"https://www.youtube.com/channel/{i}")
        for t in channels
        for i in [_channel_id(t)]
    )
