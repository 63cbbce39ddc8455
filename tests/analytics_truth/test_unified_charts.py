"""Unified analytics for charts over the shared exports, against our own reading of the CSV.

Weekly and monthly buckets in other zones than UTC, and the published basis, computed here
with polars and zoneinfo straight from the files, by the definitions of
docs/api/analytics.md ("GET /analytics/unified"), without Murmur's SQL, importers or
calendar; the actual figures are what the API serves for the same range. A table of both is
printed (``-s``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from tests.analytics_truth.world import DATASETS, GROUP, World
from tests.support import Tenant

# Every test here reads the one imported world: on one worker, it is built once.
pytestmark = pytest.mark.xdist_group(GROUP)
if not DATASETS.is_dir():  # pragma: no cover - the check itself
    raise RuntimeError(f"the shared data sets are missing: {DATASETS}")

GRACE = timedelta(hours=1)  # a first reading within this of publication is growth
TABLE: list[tuple[str, str, Any, Any]] = []


@pytest.fixture(scope="module")
def world(exports_world: World) -> Iterator[World]:
    yield exports_world
    if TABLE:
        print("\n| export | bucket | independent | Murmur |\n|---|---|---|---|")
        for row in TABLE:
            print("| " + " | ".join(str(v) for v in row) + " |")


# -- our own reading of the files -----------------------------------------------------------------


def _csv(name: str) -> pl.DataFrame:
    return pl.read_csv(io.StringIO((DATASETS / name).read_text("utf-8")), infer_schema=False)


def _fr() -> pl.DataFrame:
    """One row per (video, day) reading: key, reading time (the day), publication, counters."""
    df = _csv("youtube_trending_fr.csv")
    key = (
        pl.when(pl.col("video_id") == "#NAME?")
        .then(pl.lit("title:") + pl.col("title"))
        .otherwise(pl.col("video_id"))
    )
    return df.select(
        key.alias("key"),
        pl.col("trending_date").str.strptime(pl.Datetime("us"), "%y.%d.%m").alias("at"),
        pl.col("publish_time")
        .str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S%.fZ")
        .alias("published"),
        pl.col("views").cast(pl.Int64),
        pl.col("likes").cast(pl.Int64),
        pl.col("comment_count").cast(pl.Int64).alias("comments"),
    )


def _tweets() -> pl.DataFrame:
    """One reading per tweet, at the export (its newest tweet's time)."""
    df = _csv("vaccination_tweets.csv")
    published = pl.col("date").str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S")
    return df.select(
        pl.col("id").alias("key"),
        published.max().alias("at"),
        published.alias("published"),
        pl.col("favorites").cast(pl.Int64).alias("likes"),
        pl.col("retweets").cast(pl.Int64).alias("shares"),
    )


def _instagram() -> pl.DataFrame:
    """One reading per post, at the end of the newest post's day (the export)."""
    df = _csv("instagram_posts.csv")
    published = pl.col("Date").str.strptime(pl.Datetime("us"), "%Y-%m-%d")
    return df.select(
        pl.int_range(pl.len()).cast(pl.String).alias("key"),
        (published.max() + pl.duration(days=1)).alias("at"),
        published.alias("published"),
        pl.col("Impressions").cast(pl.Int64).alias("impressions"),
        pl.col("Likes").cast(pl.Int64).alias("likes"),
        pl.col("Comments").cast(pl.Int64).alias("comments"),
        pl.col("Shares").cast(pl.Int64).alias("shares"),
        pl.col("Saves").cast(pl.Int64).alias("saves"),
    )


def _readings(frame: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    """Each reading's growth above the running peak, and whether it is a first-seen total."""
    frame = frame.sort("key", "at").with_columns(
        (pl.int_range(pl.len()).over("key") == 0).alias("first")
    )
    seen_growing = (pl.col("published") < pl.col("at")) & (
        (pl.col("published").dt.date() == pl.col("at").dt.date())
        | (pl.col("at") - pl.col("published") <= GRACE)
    )
    frame = frame.with_columns((pl.col("first") & ~seen_growing).alias("first_seen"))
    gains = [
        pl.when(pl.col("first"))
        .then(pl.max_horizontal(pl.col(m), pl.lit(0)))
        .otherwise(pl.max_horizontal(pl.col(m) - pl.col(m).cum_max().shift(1).over("key"), 0))
        .alias(f"g_{m}")
        for m in metrics
    ]
    return frame.with_columns(gains)


def _local_day(column: str, tz: str) -> pl.Expr:
    """The day a UTC instant falls on in ``tz``."""
    return (
        pl.col(column).dt.replace_time_zone("UTC").dt.convert_time_zone(tz).dt.date().alias("day")
    )


def _bucket_day(day: date, granularity: str) -> date:
    """The local day a week (Monday) or month (the 1st) holding ``day`` starts on."""
    if granularity == "week":
        return day - timedelta(days=day.weekday())
    return day.replace(day=1)


def _local(instant: str | datetime, tz: str) -> date:
    """The local day an instant (the API's ``…Z``, or naive UTC) falls on in ``tz``."""
    if isinstance(instant, str):
        instant = datetime.fromisoformat(instant.replace("Z", "+00:00"))
    return instant.replace(tzinfo=instant.tzinfo or UTC).astimezone(ZoneInfo(tz)).date()


def _edge(series: pl.Series, newest: bool) -> datetime:
    """The newest (or the oldest) instant of a column."""
    value = series.max() if newest else series.min()
    assert isinstance(value, datetime)
    return value


def _sums(
    frame: pl.DataFrame, tz: str, granularity: str, values: dict[str, pl.Expr]
) -> dict[date, dict[str, int]]:
    """``values`` summed per local bucket of the frame's ``t`` (a UTC instant)."""
    grouped = (
        frame.with_columns(_local_day("t", tz))
        .with_columns(
            pl.col("day")
            .map_elements(lambda d: _bucket_day(d, granularity), return_dtype=pl.Date)
            .alias("bucket")
        )
        .group_by("bucket")
        .agg(**values)
    )
    return {row.pop("bucket"): row for row in grouped.iter_rows(named=True)}


# -- the API --------------------------------------------------------------------------------------


def _series(tenant: Tenant, **params: Any) -> dict[str, Any]:
    data: dict[str, Any] = tenant.api.ok(
        tenant.api.get("/analytics/unified", params={"group_by": "total", "limit": 100, **params})
    )
    assert data["series"]["pagination"]["has_more"] is False
    return data


def _compare(
    export: str,
    data: dict[str, Any],
    tz: str,
    expected: dict[date, dict[str, int]],
    covered: tuple[date, date],
    names: list[str],
) -> None:
    """Every bucket of the series: ours where covered (0 where we have none), else null."""
    items = data["series"]["items"]
    assert items, export
    for item in items:
        day = _local(item["bucket"], tz)
        got = {name: item[name] for name in names}
        want: dict[str, int | None] = dict.fromkeys(names)
        if covered[0] <= day <= covered[1]:
            want = {name: expected.get(day, {}).get(name, 0) for name in names}
        TABLE.append((export, f"{day} {names[0]}", want[names[0]], got[names[0]]))
        assert got == want, (export, day)


def test_fr_weekly_growth_in_new_york(world: World) -> None:
    # Daily readings at 00:00 UTC are the evening before in New York: a Monday's reading
    # belongs to the week before. Growth only (first-seen readings are apart).
    metrics = ["views", "likes", "comments"]
    g = _readings(_fr(), metrics)
    growth = g.filter(~pl.col("first_seen")).rename({"at": "t"})
    expected = _sums(
        growth,
        "America/New_York",
        "week",
        {m: pl.col(f"g_{m}").sum() for m in metrics}
        | {
            "engagements": (pl.col("g_likes") + pl.col("g_comments")).sum(),
            "active_posts": pl.col("key").n_unique(),
        },
    )
    published = g.group_by("key").agg(pl.col("published").first()).rename({"published": "t"})
    for week, row in _sums(published, "America/New_York", "week", {"posts": pl.len()}).items():
        expected.setdefault(week, {})["posts"] = row["posts"]
    data = _series(
        world.tenants["fr_own"],
        **{"from": "2017-10-30T00:00:00-04:00", "to": "2017-12-11T00:00:00-05:00"},
        granularity="week",
        tz="America/New_York",
    )
    first_read = _local(_edge(g["at"], newest=False), "America/New_York")
    newest = _local(_edge(g["at"], newest=True), "America/New_York")
    assert [_local(i["bucket"], "America/New_York") for i in data["series"]["items"]] == [
        date(2017, 10, 30) + timedelta(weeks=w) for w in range(6)
    ]
    _compare(
        "youtube_trending_fr",
        data,
        "America/New_York",
        expected,
        (_bucket_day(first_read, "week"), _bucket_day(newest, "week")),
        [*metrics, "engagements", "active_posts", "posts"],
    )


def test_fr_monthly_lifetimes_by_publication_in_kolkata(world: World) -> None:
    # Each video's lifetime (its peak: first-seen total + all growth) in the month it was
    # published, in Kolkata's calendar.
    metrics = ["views", "likes", "comments"]
    g = _readings(_fr(), metrics)
    start = datetime(2017, 1, 1, tzinfo=ZoneInfo("Asia/Kolkata"))
    end = datetime(2018, 1, 1, tzinfo=ZoneInfo("Asia/Kolkata"))
    videos = (
        g.group_by("key")
        .agg(
            pl.col("published").first().alias("t"),
            *[pl.col(f"g_{m}").sum().alias(m) for m in metrics],
            (~pl.col("first_seen")).any().alias("grew"),
            pl.col("first_seen").any().alias("seen_first"),
        )
        .filter(
            (pl.col("t") >= start.astimezone(UTC).replace(tzinfo=None))
            & (pl.col("t") < end.astimezone(UTC).replace(tzinfo=None))
        )
    )
    expected = _sums(
        videos,
        "Asia/Kolkata",
        "month",
        {m: pl.col(m).sum() for m in metrics}
        | {
            "engagements": (pl.col("likes") + pl.col("comments")).sum(),
            "posts": pl.len(),
            "active_posts": pl.col("grew").sum(),
        },
    )
    data = _series(
        world.tenants["fr_own"],
        **{"from": start.isoformat(), "to": end.isoformat()},
        granularity="month",
        tz="Asia/Kolkata",
        basis="published",
    )
    newest = _local(_edge(g["at"], newest=True), "Asia/Kolkata")
    _compare(
        "youtube_trending_fr",
        data,
        "Asia/Kolkata",
        expected,
        (date(2017, 1, 1), _bucket_day(newest, "month")),
        [*metrics, "engagements", "posts", "active_posts"],
    )
    # December (local) starts after the newest reading: unknown, not zero
    assert data["series"]["items"][-1]["views"] is None
    first_seen = data["totals"]["first_seen"]
    firsts = g.filter(pl.col("first_seen")).join(videos.select("key"), on="key")
    assert first_seen["posts"] == firsts.height
    assert first_seen["views"] == firsts["g_views"].sum()
    assert data["totals"]["views"] == videos["views"].sum()


def test_tweets_weekly_lifetimes_by_publication_in_new_york(world: World) -> None:
    metrics = ["likes", "shares"]
    g = _readings(_tweets(), metrics).rename({"published": "t"})
    expected = _sums(
        g,
        "America/New_York",
        "week",
        {m: pl.col(f"g_{m}").sum() for m in metrics}
        | {
            "engagements": (pl.col("g_likes") + pl.col("g_shares")).sum(),
            "posts": pl.len(),
            "active_posts": (~pl.col("first_seen")).sum(),
        },
    )
    data = _series(
        world.tenants["tweets_own"],
        **{"from": "2020-11-30T00:00:00-05:00", "to": "2021-05-03T00:00:00-04:00"},
        granularity="week",
        tz="America/New_York",
        basis="published",
    )
    first = _bucket_day(_local(_edge(g["t"], newest=False), "America/New_York"), "week")
    export = _local(_edge(g["at"], newest=True), "America/New_York")
    _compare(
        "vaccination_tweets",
        data,
        "America/New_York",
        expected,
        (first, _bucket_day(export, "week")),
        [*metrics, "engagements", "posts", "active_posts"],
    )
    items = data["series"]["items"]
    assert items[0]["likes"] is None  # the week before the first tweet
    assert items[-1]["likes"] is None  # the week after the export
    assert data["totals"]["first_seen"]["posts"] == g.filter(pl.col("first_seen")).height


def test_instagram_export_charts_by_month_of_publication(world: World) -> None:
    # One reading per post, at the export: by activity there is no growth to show and
    # nothing before the export is known; by publication every month of posts has its totals.
    metrics = ["impressions", "likes", "comments", "shares", "saves"]
    g = _readings(_instagram(), metrics).rename({"published": "t"})
    expected = _sums(
        g,
        "UTC",
        "month",
        {m: pl.col(f"g_{m}").sum() for m in metrics}
        | {
            "engagements": pl.sum_horizontal("g_likes", "g_comments", "g_shares", "g_saves").sum(),
            "posts": pl.len(),
            "active_posts": (~pl.col("first_seen")).sum(),
        },
    )
    window = {"from": "2021-11-01T00:00:00Z", "to": "2022-08-01T00:00:00Z"}
    tenant = world.tenants["instagram_own"]
    data = _series(tenant, **window, granularity="month", basis="published")
    export = _edge(g["at"], newest=True).date()
    _compare(
        "instagram_posts",
        data,
        "UTC",
        expected,
        (date(2021, 12, 1), _bucket_day(export, "month")),
        [*metrics, "engagements", "posts", "active_posts"],
    )
    assert data["totals"]["first_seen"]["posts"] == g.height
    # By activity: the export's month is read (no growth: 0), every other month unknown.
    activity = _series(tenant, **window, granularity="month")
    likes = {_local(i["bucket"], "UTC"): i["likes"] for i in activity["series"]["items"]}
    month = _bucket_day(export, "month")
    assert likes == {d: (0 if d == month else None) for d in likes}
    assert activity["totals"]["first_seen"]["likes"] == g["likes"].sum()
