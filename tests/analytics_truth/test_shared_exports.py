"""The shared exports through import, the pipeline and the API, against our own reading.

The expected figures are computed here with polars straight from the CSV files, by the
definitions of docs/api/analytics.md, without Murmur's SQL or importers; the actual ones
are what the API serves. A table of both is printed (``-s``) for the closing note.
"""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest

from tests.analytics_truth.world import DATASETS, GROUP, World
from tests.support import Tenant, analyst_rows

# Every test here reads the one imported world: on one worker, it is built once.
pytestmark = pytest.mark.xdist_group(GROUP)
if not DATASETS.is_dir():  # pragma: no cover - the check itself
    raise RuntimeError(f"the shared data sets are missing: {DATASETS}")

DAY = timedelta(days=1)
GRACE = timedelta(hours=1)  # a first reading within this of publication is growth
TABLE: list[tuple[str, str, Any, Any]] = []


def _record(export: str, metric: str, independent: Any, murmur: Any) -> None:
    TABLE.append((export, metric, independent, murmur))


# -- the independent reading ----------------------------------------------------------------------


def _newest(series: pl.Series) -> datetime:
    value = series.max()
    assert isinstance(value, datetime)
    return value


def _csv(name: str, encoding: str = "utf-8") -> pl.DataFrame:
    text = (DATASETS / name).read_bytes().decode(encoding)
    return pl.read_csv(io.StringIO(text), infer_schema=False)


def _youtube(name: str, encoding: str) -> pl.DataFrame:
    """One row per (video, day) reading: key, day, publication (or null), counters."""
    df = _csv(name, encoding)
    key = (
        pl.when(pl.col("video_id") == "#NAME?")
        .then(pl.lit("title:") + pl.col("title"))
        .otherwise(pl.col("video_id"))
    )
    publish = (
        pl.col("publish_time").str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S%.fZ")
        if "publish_time" in df.columns
        else pl.lit(None, dtype=pl.Datetime("us"))
    )
    channel = pl.col("channel_title") if "channel_title" in df.columns else pl.lit(None)
    return df.select(
        key.alias("key"),
        pl.col("trending_date").str.strptime(pl.Datetime("us"), "%y.%d.%m").alias("at"),
        publish.alias("published"),
        channel.cast(pl.String).alias("channel"),
        pl.col("views").cast(pl.Int64),
        pl.col("likes").cast(pl.Int64),
        pl.col("comment_count").cast(pl.Int64).alias("comments"),
    )


def _growth(readings: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    """Per reading: growth above the running peak, and whether it is a first-seen total."""
    frame = readings.sort("key", "at").with_columns(
        (pl.int_range(pl.len()).over("key") == 0).alias("first"),
        pl.col("published").min().over("key").alias("pub"),
    )
    seen_growing = (
        pl.col("pub").is_not_null()
        & (pl.col("pub") < pl.col("at"))
        & (
            (pl.col("pub").dt.date() == pl.col("at").dt.date())
            | (pl.col("at") - pl.col("pub") <= GRACE)
        )
    )
    frame = frame.with_columns((pl.col("first") & ~seen_growing).alias("first_seen"))
    gains = []
    for m in metrics:
        previous_peak = pl.col(m).cum_max().shift(1).over("key")
        gains.append(
            pl.when(pl.col("first"))
            .then(pl.col(m))
            .otherwise(pl.max_horizontal(pl.col(m) - previous_peak, pl.lit(0)))
            .alias(f"g_{m}")
        )
    return frame.with_columns(gains)


@dataclass
class Expected:
    growth: dict[str, int]
    first_seen: dict[str, int]
    first_seen_posts: int
    active_posts: int


def _unified_truth(g: pl.DataFrame, metrics: list[str], engagement: list[str]) -> Expected:
    growth_rows = g.filter(~pl.col("first_seen"))
    firsts = g.filter(pl.col("first_seen"))
    growth = {m: int(growth_rows[f"g_{m}"].sum()) for m in metrics}
    first_seen = {m: int(firsts[f"g_{m}"].sum()) for m in metrics}
    growth["engagements"] = sum(growth[m] for m in engagement)
    first_seen["engagements"] = sum(first_seen[m] for m in engagement)
    return Expected(growth, first_seen, firsts.height, growth_rows["key"].n_unique())


# -- Murmur: imports, one pipeline run, the API ---------------------------------------------------


@pytest.fixture(scope="module")
def world(exports_world: World) -> Iterator[World]:
    yield exports_world
    if TABLE:
        print("\n| export | metric | independent | Murmur |\n|---|---|---|---|")
        for row in TABLE:
            print("| " + " | ".join(str(v) for v in row) + " |")


def _unified(tenant: Tenant, platform: str, start: str, end: str) -> dict[str, Any]:
    body = tenant.api.ok(
        tenant.api.get(
            "/analytics/unified",
            params={"from": start, "to": end, "platform": platform, "limit": 1},
        )
    )
    totals: dict[str, Any] = body["totals"]
    return totals


def _compare_unified(export: str, expected: Expected, got: dict[str, Any]) -> None:
    for metric, value in expected.growth.items():
        _record(export, f"unified {metric} (growth)", value, got[metric])
    for metric, value in expected.first_seen.items():
        _record(export, f"unified first_seen.{metric}", value, got["first_seen"][metric])
    _record(
        export, "unified first_seen.posts", expected.first_seen_posts, got["first_seen"]["posts"]
    )
    _record(export, "unified active_posts", expected.active_posts, got["active_posts"])
    assert {m: got[m] for m in expected.growth} == expected.growth
    assert {m: got["first_seen"][m] for m in expected.first_seen} == expected.first_seen
    assert got["first_seen"]["posts"] == expected.first_seen_posts
    assert got["active_posts"] == expected.active_posts


YT = ["views", "likes", "comments"]
YT_ENG = ["likes", "comments"]


def test_youtube_us_unified(world: World) -> None:
    g = _growth(_youtube("youtube_trending_us.csv", "cp1252"), YT)
    got = _unified(
        world.tenants["us_own"], "youtube", "2017-11-01T00:00:00Z", "2018-03-01T00:00:00Z"
    )
    _compare_unified("youtube_trending_us", _unified_truth(g, YT, YT_ENG), got)
    # the newest reading of each video, summed: what growth + first-seen must not exceed
    # except where a counter fell and stays below its peak
    newest = g.sort("at").group_by("key").agg(pl.col("comments").last())["comments"].sum()
    peak = g.group_by("key").agg(pl.col("comments").max())["comments"].sum()
    _record("youtube_trending_us", "comments: newest readings / peaks", newest, peak)
    assert got["comments"] + got["first_seen"]["comments"] == peak


def test_youtube_fr_unified_and_best_times(world: World) -> None:
    readings = _youtube("youtube_trending_fr.csv", "utf-8")
    g = _growth(readings, YT)
    tenant = world.tenants["fr_own"]
    got = _unified(tenant, "youtube", "2017-11-01T00:00:00Z", "2018-01-01T00:00:00Z")
    _compare_unified("youtube_trending_fr", _unified_truth(g, YT, YT_ENG), got)

    # Best times: each video's lifetime rate (peaks: (likes + comments) / views) over the
    # account's mean, by UTC weekday and hour of publication, in the 90 days before the end.
    # (a video published exactly when first read is taken as of unknown publication: the
    # rule that keeps date-less exports out of best times, docs/api/analytics.md)
    per_video = g.group_by("key").agg(
        pl.col("published").min(),
        pl.col("at").min().alias("first_read"),
        (pl.col("likes").max() + pl.col("comments").max()).alias("eng"),
        pl.col("views").max(),
    )
    since = _newest(g["at"]) + timedelta(hours=1) - timedelta(days=90)  # 90 days before the end
    rates = [
        (r["published"], r["eng"] / r["views"])
        for r in per_video.iter_rows(named=True)
        if r["views"]
        and r["published"] is not None
        and r["published"] != r["first_read"]
        and since <= r["published"] < since + timedelta(days=90)
    ]
    mean = statistics.fmean(rate for _, rate in rates)
    sd = statistics.stdev(rate / mean for _, rate in rates)
    cells: dict[tuple[int, int], list[float]] = {}
    for published, rate in rates:
        cells.setdefault((published.weekday(), published.hour), []).append(rate / mean)
    body = tenant.api.ok(
        tenant.api.get("/insights/best-times", params={"account_id": tenant.accounts["youtube"]})
    )
    grid = {(c["weekday"], c["hour"]): c for c in body["grid"]}
    for (weekday, hour), values in cells.items():
        n = len(values)
        raw = statistics.fmean(values)
        shrunk = (n * raw + 5 * 1.0) / (n + 5)
        half = 1.96 * (n / (n + 5)) * sd / math.sqrt(n)
        cell = grid[(weekday, hour)]
        assert cell["posts"] == n
        assert cell["raw_index"] == pytest.approx(raw)
        assert cell["shrunk_index"] == pytest.approx(shrunk)
        assert cell["ci_low"] == pytest.approx(max(0.0, shrunk - half))
    _record(
        "youtube_trending_fr",
        "best-times cells with posts",
        len(cells),
        sum(1 for c in body["grid"] if c["posts"]),
    )
    best = max(
        cells.items(),
        key=lambda kv: (n := len(kv[1]), (n * statistics.fmean(kv[1]) + 5) / (n + 5))[1],
    )
    _record("youtube_trending_fr", "best-times highest shrunk cell", best[0], None)


@dataclass
class Viral:
    trending: dict[str, tuple[float, float, float]]  # entity: score, velocity, baseline
    scored: int  # posts with W0, W1 and two baseline windows read
    highest: float | None  # the highest score among them, trending or not


def _viral_truth(g: pl.DataFrame) -> Viral:
    """Posts trending against their own baseline, by the definitions, from daily readings."""
    end = _newest(g["at"]) + timedelta(hours=1)  # the end of the newest hour read
    width = timedelta(hours=24)  # daily readings: day-long windows
    mine: dict[str, tuple[float, float, float]] = {}
    scores: list[float] = []
    for key, rows in g.group_by("key"):
        pub = rows["pub"][0]
        per_window: dict[int, float] = {}
        for r in rows.iter_rows(named=True):
            win = int((end - r["at"] - timedelta(hours=1)) // width)
            if 0 <= win < 6:
                per_window[win] = per_window.get(win, 0.0) + r["g_likes"] + r["g_comments"]
        if 0 not in per_window or 1 not in per_window:
            continue  # insufficient data
        base = [
            per_window[i] / 24
            for i in range(2, 6)
            if i in per_window and (pub is None or end - (i + 1) * width >= pub)
        ]
        v0, v1 = per_window[0] / 24, per_window[1] / 24
        if len(base) < 2:
            continue
        b = statistics.median(base)
        score, prev = math.log2((v0 + 1) / (b + 1)), math.log2((v1 + 1) / (b + 1))
        scores.append(score)
        if max(v0, v1) < 1:
            continue
        rising, falling = v0 > v1 * 1.1, v0 < v1 * 0.9
        high = score >= 1.0
        if (high and rising) or (high and not falling) or ((high or prev >= 1.0) and falling):
            mine[str(key[0])] = (score, v0, b)
    return Viral(mine, len(scores), max(scores, default=None))


def _compare_viral(export: str, truth: Viral, items: list[Any]) -> None:
    own = {
        t["entity"]: (t["score"], t["velocity"], t["baseline"])
        for t in items
        if t["evidence"]["baseline_source"] == "own"
    }
    # Murmur lists the top 50 (own baselines and same-age ones): ours down to its lowest
    scores = [float(t["score"]) for t in items]
    floor = min(scores) if len(items) >= 50 else -math.inf
    expected = {k: v for k, v in truth.trending.items() if v[0] >= floor}
    _record(export, "posts with W0, W1 and 2 baseline windows read", truth.scored, None)
    highest = None if truth.highest is None else round(truth.highest, 3)
    _record(export, "highest own-baseline score (abnormal at >= 1)", highest, None)
    _record(export, "trending posts (own baseline)", len(expected), len(own))
    assert set(own) == set(expected)
    for entity, (score, v0, b) in expected.items():
        assert own[entity] == pytest.approx((score, v0, b))
    assert all(t["evidence"]["window_hours"] == 24 for t in items)


def test_youtube_fr_viral_trends(world: World) -> None:
    g = _growth(_youtube("youtube_trending_fr.csv", "utf-8"), YT).filter(~pl.col("first_seen"))
    tenant = world.tenants["fr_creator"]
    items = tenant.api.list_all("/viral-trends", entity_type="post")
    _compare_viral("youtube_trending_fr", _viral_truth(g), items)
    # The day-over-day gainers (a reading today and yesterday): Murmur lists one only with
    # a baseline (own windows, or 3 same-age posts of its channel); most FR videos trend
    # for a few days, so most have insufficient data and are not called "emerging".
    gainers = g.filter(pl.col("at") == g["at"].max()).sort(
        pl.col("g_likes") + pl.col("g_comments"), descending=True
    )
    top = gainers["key"].head(10).to_list()
    listed = {t["entity"] for t in items}
    _record("youtube_trending_fr", "post trends listed (any baseline)", None, len(items))
    _record(
        "youtube_trending_fr", "top-10 gainers of the last day listed", 10, len(listed & set(top))
    )


def test_youtube_us_viral_trends(world: World) -> None:
    # 75 daily readings with a gap of two days and no publication times: every baseline
    # window a video was read in counts (no publication to stop at).
    g = _growth(_youtube("youtube_trending_us.csv", "cp1252"), YT).filter(~pl.col("first_seen"))
    items = world.tenants["us_own"].api.list_all("/viral-trends", entity_type="post")
    _compare_viral("youtube_trending_us", _viral_truth(g), items)


def test_single_readings_never_trend(world: World) -> None:
    # A tweet or an Instagram post read once (at the export) has no W1: insufficient data.
    read_twice = {
        "vaccination_tweets": _tweets().group_by("key").len().filter(pl.col("len") > 1).height,
        "instagram_posts": 0,  # one row per post, no ids repeated: read once each
    }
    for export, tenant in (
        ("vaccination_tweets", "tweets_own"),
        ("vaccination_tweets", "tweets_creator"),
        ("instagram_posts", "instagram_own"),
    ):
        items = world.tenants[tenant].api.list_all("/viral-trends")
        _record(export, f"viral trends listed ({tenant})", read_twice[export], len(items))
        assert read_twice[export] == 0
        assert items == []


def test_youtube_fr_creators(world: World) -> None:
    readings = _youtube("youtube_trending_fr.csv", "utf-8")
    per_video = readings.group_by("key").agg(
        pl.col("channel").first(),
        pl.col("views").max(),
        (pl.col("likes").max() + pl.col("comments").max()).alias("eng"),
    )
    per_channel = per_video.group_by("channel").agg(
        pl.len().alias("posts"),
        pl.col("eng").sum(),
        pl.col("views").sum(),
        pl.col("views").mean().alias("reach"),
    )
    tenant = world.tenants["fr_creator"]
    got = {c["handle"]: c for c in tenant.api.list_all("/creators")}
    _record("youtube_trending_fr", "creators ranked", per_channel.height, len(got))
    assert set(got) == set(per_channel["channel"])
    for r in per_channel.iter_rows(named=True):
        mine = got[r["channel"]]
        assert mine["posts"] == r["posts"]
        assert mine["engagement_rate"] == pytest.approx(r["eng"] / r["views"])
        assert mine["avg_reach"] == pytest.approx(r["reach"])
    sample = per_channel.sort("posts", "channel", descending=[True, False]).row(0, named=True)
    _record(
        "youtube_trending_fr",
        f"creator {sample['channel']}: posts / rate",
        f"{sample['posts']} / {sample['eng'] / sample['views']:.5f}",
        f"{got[sample['channel']]['posts']} / {got[sample['channel']]['engagement_rate']:.5f}",
    )


def _tweets() -> pl.DataFrame:
    df = _csv("vaccination_tweets.csv")
    at = df["date"].str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S")
    return df.select(
        pl.col("id").alias("key"),
        pl.col("user_name"),
        pl.lit(at.max()).alias("at"),  # one reading of every counter, at the export
        pl.col("date").str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S").alias("published"),
        pl.col("favorites").cast(pl.Int64).alias("likes"),
        pl.col("retweets").cast(pl.Int64).alias("shares"),
    )


def test_tweets_unified_and_creators(world: World) -> None:
    tweets = _tweets()
    g = _growth(tweets, ["likes", "shares"])
    got = _unified(world.tenants["tweets_own"], "x", "2020-12-01T00:00:00Z", "2021-05-01T00:00:00Z")
    _compare_unified(
        "vaccination_tweets", _unified_truth(g, ["likes", "shares"], ["likes", "shares"]), got
    )

    # Rankings: no impressions or views, one follower reading: engagements per post, shrunk
    # toward the authors' mean with a prior of 10 posts, is the whole score.
    per_user = (
        tweets.group_by("user_name")
        .agg(pl.len().alias("n"), (pl.col("likes") + pl.col("shares")).sum().alias("eng"))
        .with_columns((pl.col("eng") / pl.col("n")).alias("pp"))
    )
    prior = per_user["pp"].mean()
    assert isinstance(prior, float)
    ranked = per_user.with_columns(
        ((pl.col("n") * pl.col("pp") + 10 * prior) / (pl.col("n") + 10)).alias("shrunk")
    ).sort(["shrunk", "user_name"], descending=[True, False])
    mine = ranked["user_name"].head(20).to_list()
    tenant = world.tenants["tweets_creator"]
    page = tenant.api.ok(tenant.api.get("/creators", params={"limit": 20}))["items"]
    theirs = [c["account_external_id"] for c in page]
    _record("vaccination_tweets", "creators top 3", mine[:3], theirs[:3])
    assert theirs == mine
    first = page[0]["parts"]["engagement_rate"]
    assert first["basis"] == "posts"
    assert first["weight"] == 1.0


def test_tweets_best_times(world: World) -> None:
    # A post's rate is its engagements over impressions, else views: the tweet export has
    # neither, so no post has a rate, no cell of the grid has posts and nothing is said.
    tweets = _csv("vaccination_tweets.csv")
    exposure = [c for c in tweets.columns if c.lower() in {"impressions", "views", "reach"}]
    tenant = world.tenants["tweets_own"]
    grid = tenant.api.ok(
        tenant.api.get("/insights/best-times", params={"account_id": tenant.accounts["x"]})
    )["grid"]
    with_posts = sum(1 for c in grid if c["posts"])
    found = tenant.api.list_all("/insights", kind="best_time")
    _record("vaccination_tweets", "best-times cells with posts (no exposure column)", 0, with_posts)
    assert exposure == []
    assert with_posts == 0
    assert found == []


def test_instagram_unified_and_best_times(world: World) -> None:
    df = _csv("instagram_posts.csv")
    counters = ["Impressions", "Likes", "Comments", "Shares", "Saves"]
    posts = df.select(
        pl.col("Date").str.strptime(pl.Datetime("us"), "%Y-%m-%d").alias("published"),
        *[pl.col(c).cast(pl.Int64) for c in counters],
    )
    exported = _newest(posts["published"]) + DAY
    # Every post is read once, at the export, after the day it was published: first-seen.
    tenant = world.tenants["instagram_own"]
    got = _unified(tenant, "instagram", "2021-12-01T00:00:00Z", "2022-06-10T00:00:00Z")
    totals = {c.lower(): int(posts[c].sum()) for c in counters}
    expected = Expected(
        growth={"impressions": 0, "likes": 0, "engagements": 0},
        first_seen={
            **totals,
            "engagements": totals["likes"]
            + totals["comments"]
            + totals["shares"]
            + totals["saves"],
        },
        first_seen_posts=posts.height,
        active_posts=0,
    )
    _compare_unified("instagram_posts", expected, got)

    # Best times: dates only, so no hour of day: no cell of the grid has posts, and a
    # recommendation (if any) names a weekday only. Per weekday, in the 90 days before the
    # data's end (the first hour after the export moment).
    end = exported + timedelta(hours=1)
    window = posts.filter(pl.col("published") >= end - timedelta(days=90))
    rates = [
        (r["published"], (r["Likes"] + r["Comments"] + r["Shares"] + r["Saves"]) / r["Impressions"])
        for r in window.iter_rows(named=True)
    ]
    mean = statistics.fmean(r for _, r in rates)
    sd = statistics.stdev(r / mean for _, r in rates)
    best: tuple[float, int, int] | None = None
    for weekday in range(7):
        values = [r / mean for p, r in rates if p.weekday() == weekday]
        n = len(values)
        if n < 3:
            continue
        raw = statistics.fmean(values)
        shrunk = (n * raw + 5) / (n + 5)
        low = shrunk - 1.96 * (n / (n + 5)) * sd / math.sqrt(n)
        if low > 1.0 and (best is None or shrunk > best[0]):
            best = (shrunk, weekday, n)
    grid = tenant.api.ok(
        tenant.api.get("/insights/best-times", params={"account_id": tenant.accounts["instagram"]})
    )["grid"]
    assert not any(c["posts"] for c in grid)
    found = tenant.api.list_all("/insights", kind="best_time")
    _record(
        "instagram_posts",
        "best-time recommendation (weekday, shrunk)",
        None if best is None else (best[1], round(best[0], 4)),
        None if not found else (found[0]["evidence"]["weekday"], round(found[0]["score"], 4)),
    )
    if best is None:
        assert found == []
    else:
        assert [(f["evidence"]["weekday"], f["evidence"]["posts"]) for f in found] == [
            (best[1], best[2])
        ]
        assert found[0]["score"] == pytest.approx(best[0])
        assert ":00 UTC" not in found[0]["body"]


@pytest.mark.parametrize(
    ("tenant", "platform", "start", "end"),
    [
        ("us_own", "youtube", "2017-11-01", "2018-03-01"),
        ("fr_own", "youtube", "2017-11-01", "2018-01-01"),
        ("tweets_own", "x", "2020-12-01", "2021-05-01"),
        ("instagram_own", "instagram", "2021-12-01", "2022-06-10"),
    ],
)
def test_analyst_views_give_what_the_api_gives(
    world: World, tenant: str, platform: str, start: str, end: str
) -> None:
    got = _unified(world.tenants[tenant], platform, f"{start}T00:00:00Z", f"{end}T00:00:00Z")
    workspace = world.tenants[tenant].workspace_id
    metrics = ["impressions", "reach", "views", "likes", "comments", "shares", "saves"]
    sums = ", ".join(f"sum({m})::BIGINT" for m in [*metrics, "clicks", "engagements"])
    settings = world.server.settings
    (growth,) = analyst_rows(
        settings,
        f"SELECT {sums} FROM unified_daily WHERE workspace_id = ? AND platform = ?"  # noqa: S608
        " AND day >= CAST(? AS DATE) AND day < CAST(? AS DATE)",
        [workspace, platform, start, end],
    )
    (first_seen,) = analyst_rows(
        settings,
        f"SELECT {sums}, count(*) FROM unified_first_seen"  # noqa: S608
        " WHERE workspace_id = ? AND platform = ?"
        " AND captured_at >= CAST(? AS TIMESTAMP) AND captured_at < CAST(? AS TIMESTAMP)",
        [workspace, platform, start, end],
    )
    names = [*metrics, "clicks", "engagements"]
    assert growth is not None
    assert first_seen is not None
    assert dict(zip(names, [v or 0 for v in growth], strict=True)) == {n: got[n] for n in names}
    assert dict(zip([*names, "posts"], [v or 0 for v in first_seen], strict=True)) == {
        n: got["first_seen"][n] for n in [*names, "posts"]
    }
