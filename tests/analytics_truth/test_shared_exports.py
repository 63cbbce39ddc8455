"""The shared exports through import, the pipeline and the API, against our own reading.

The expected figures are computed here with polars straight from the CSV files, by the
definitions of docs/api/analytics.md, without Murmur's SQL or importers; the actual ones
are what the API serves. A table of both is printed (``-s``) for the closing note.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pytest

from tests.analytics_truth.world import (
    BESIDE_TWEETS,
    CAPTURES,
    DATASETS,
    FRESH,
    GROUP,
    STALE,
    World,
)
from tests.support import Tenant, analyst_rows
from warehouse.extensions import connect

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
    blocks: dict[tuple[bool, int], list[float]] = {}
    for published, rate in rates:
        cells.setdefault((published.weekday(), published.hour), []).append(rate / mean)
        blocks.setdefault((published.weekday() >= 5, published.hour // 4), []).append(rate / mean)

    def shrunk(values: list[float], prior: float) -> tuple[float, float]:
        n = len(values)
        return (n * statistics.fmean(values) + 5 * prior) / (n + 5), n / (n + 5)

    # a block shrinks toward the platform's pattern (every account's posts there: here the
    # file's, (n·raw + 5) / (n + 5)), a cell toward its block
    block_index = {key: shrunk(v, shrunk(v, 1.0)[0])[0] for key, v in blocks.items()}
    body = tenant.api.ok(
        tenant.api.get("/insights/best-times", params={"account_id": tenant.accounts["youtube"]})
    )
    grid = {(c["weekday"], c["hour"]): c for c in body["grid"]}
    for (weekday, hour), values in cells.items():
        n = len(values)
        prior = block_index[(weekday >= 5, hour // 4)]
        index, w = shrunk(values, prior)
        half = 1.96 * w * sd / math.sqrt(n)
        cell = grid[(weekday, hour)]
        assert cell["posts"] == n
        assert cell["raw_index"] == pytest.approx(statistics.fmean(values))
        assert cell["prior"] == pytest.approx(prior)
        assert cell["shrunk_index"] == pytest.approx(index)
        assert cell["ci_low"] == pytest.approx(max(0.0, index - half))
    assert {
        (b["day_type"] == "weekend", b["start_hour"] // 4): b["posts"] for b in body["blocks"]
    } == {key: len(v) for key, v in blocks.items()}
    _record(
        "youtube_trending_fr",
        "best-times cells with posts",
        len(cells),
        sum(1 for c in body["grid"] if c["posts"]),
    )
    best = max(
        cells.items(), key=lambda kv: shrunk(kv[1], block_index[(kv[0][0] >= 5, kv[0][1] // 4)])
    )
    _record("youtube_trending_fr", "best-times highest shrunk cell", best[0], None)


@dataclass(frozen=True)
class Trend:
    score: float
    status: str
    velocity: float
    previous: float
    baseline: float
    source: str


DAILY = timedelta(hours=24)  # daily readings: day-long windows
SPAN = 7  # windows a judgment reads back (7 days of day-long windows)
HISTORY = 28  # judged ends: one a day over the last 28


def _daily_windows(g: pl.DataFrame) -> tuple[datetime, dict[str, dict[int, float]], dict[str, Any]]:
    """The data end and each video's velocity per day-long window (0 ending at the end).

    Growth over 24 h; a first-seen reading of a video at most a week old, in its window, its
    lifetime likes and comments over its age then. A video without a publication time is
    filed at its first reading (age 0 there: no window).
    """
    end = _newest(g["at"]) + timedelta(hours=1)  # the end of the newest hour read
    g = g.with_columns(
        pl.coalesce(pl.col("pub"), pl.col("at").min().over("key")).alias("pub"),
        pl.col("channel").str.strip_chars().drop_nulls().first().over("key").alias("channel"),
    )
    velocity: dict[str, dict[int, float]] = {}
    meta: dict[str, Any] = {}
    for r in g.iter_rows(named=True):
        key = _video_id(r["key"])
        win = int((end - r["at"] - timedelta(hours=1)) // DAILY)
        eng = r["g_likes"] + r["g_comments"]
        meta[key] = (r["pub"], r["channel"])
        age = (r["at"] - r["pub"]) / timedelta(hours=1)
        if not r["first_seen"]:
            vel = eng / 24
        elif 0 < age <= 7 * 24:  # a week old at most
            vel = eng / age
        else:
            continue
        velocity.setdefault(key, {})[win] = vel
    return end, velocity, meta


def _video_id(key: str) -> str:
    """A video's id as a trend names it: a '#NAME?' row's (Excel's) by its title's MD5."""
    if key.startswith("title:"):
        return "title-" + hashlib.md5(key.removeprefix("title:").encode()).hexdigest()[:16]
    return key


def _viral_truth(g: pl.DataFrame) -> dict[datetime, dict[str, Trend]]:
    """Per judged window end, the posts trending there, by the definitions (not Murmur's)."""
    end, velocity, meta = _daily_windows(g)

    def age(key: str, win: int) -> int:
        return int((end - (win + 1) * DAILY - meta[key][0]) // DAILY)

    # every video's windows by age and window: the peers
    by_age: dict[tuple[int, int], list[tuple[str, str, float]]] = {}
    for key, vel in velocity.items():
        for w, v in vel.items():
            by_age.setdefault((age(key, w), w), []).append((key, meta[key][1], v))

    judged: dict[datetime, dict[str, Trend]] = {}
    for j in range(HISTORY):
        at = end - j * DAILY
        found: dict[str, Trend] = {}
        for key, vel in velocity.items():
            if j not in vel or j + 1 not in vel or max(vel[j], vel[j + 1]) < 1:
                continue
            pub, channel = meta[key]
            own = [vel[j + i] for i in range(2, 6) if j + i in vel and at - (i + 1) * DAILY >= pub]
            if len(own) >= 2:
                baseline, source = statistics.median(own), "own"
            else:
                # others' windows at the age of this one's W0, ending by the judged end
                peers = [
                    (c, v)
                    for w in range(j, j + SPAN)
                    for other, c, v in by_age.get((age(key, j), w), [])
                    if other != key
                ]
                mine = [v for c, v in peers if c == channel]
                if len(mine) >= 3:
                    baseline, source = statistics.median(mine), "account_same_age"
                elif len(peers) >= 3:
                    baseline, source = statistics.median(v for _, v in peers), "platform_same_age"
                else:
                    continue
            v0, v1 = vel[j], vel[j + 1]
            score = math.log2((v0 + 1) / (baseline + 1))
            prev = math.log2((v1 + 1) / (baseline + 1))
            rising, falling = v0 > v1 * 1.1, v0 < v1 * 0.9
            if score >= 1 and rising:
                status = "emerging"
            elif score >= 1 and not falling:
                status = "peaking"
            elif (score >= 1 or prev >= 1) and falling:
                status = "declining"
            else:
                continue
            found[key] = Trend(score, status, v0, v1, baseline, source)
        # the list's order, rising first; its first 50
        ranked = sorted(found.items(), key=lambda kv: _order(kv[1].status, kv[1].score, kv[0]))
        judged[at] = dict(ranked[:50])
    return judged


def _order(status: str, score: float, entity: str) -> tuple[bool, float, str]:
    return (status == "declining", -score, entity)


def _mart_trends(world: World, tenant: Tenant) -> dict[datetime, dict[str, dict[str, Any]]]:
    """Every judged window's post trends of the workspace, read from the lake read-only."""
    con = connect()
    try:
        world.server.settings.lake.attach(con, read_only=True)
        rows = con.execute(
            "SELECT window_end, entity, score, status, velocity, baseline, evidence"
            " FROM lake.mart_viral_trends WHERE workspace_id = ? AND entity_type = 'post'",
            [tenant.workspace_id],
        ).fetchall()
    finally:
        con.close()
    out: dict[datetime, dict[str, dict[str, Any]]] = {}
    for at, entity, score, status, v0, baseline, evidence in rows:
        out.setdefault(at, {})[entity] = {
            "score": score,
            "status": status,
            "velocity": v0,
            "baseline": baseline,
            **json.loads(evidence),
        }
    return out


def _compare_viral(export: str, truth: dict[datetime, dict[str, Trend]], got: Any) -> None:
    """Murmur's post trends of every judged window equal the independent ones."""
    listed = {at: trends for at, trends in got.items() if trends}
    assert set(listed) == {at for at, trends in truth.items() if trends}
    for at, expected in truth.items():
        mine = got.get(at, {})
        assert set(mine) == set(expected), at
        for entity, t in expected.items():
            m = mine[entity]
            assert (m["status"], m["baseline_source"]) == (t.status, t.source), (at, entity)
            assert (m["score"], m["velocity"], m["previous_velocity"], m["baseline"]) == (
                pytest.approx((t.score, t.velocity, t.previous, t.baseline))
            ), (at, entity)
            assert m["window_hours"] == 24
    sources = [t.source for trends in truth.values() for t in trends.values()]
    _record(export, "days with post trends (of 28 judged)", len(listed), len(listed))
    _record(export, "post trends, all judged days", len(sources), sum(map(len, got.values())))
    for source in ("own", "account_same_age", "platform_same_age"):
        _record(export, f"  of them {source}", sources.count(source), None)


def test_youtube_fr_viral_trends(world: World) -> None:
    readings = _youtube("youtube_trending_fr.csv", "utf-8")
    truth = _viral_truth(_growth(readings, YT))
    tenant = world.tenants["fr_creator"]
    _compare_viral("youtube_trending_fr", truth, _mart_trends(world, tenant))

    # The default list is the newest judged window, in the list's order: rising first.
    last_end = max(truth)
    items = tenant.api.list_all("/viral-trends", entity_type="post")
    expected = truth[last_end]
    assert [t["entity"] for t in items] == list(expected)
    # the last day: 45 videos read on both last days; before, 0 post trends (each had a
    # first sighting the day before, which was no window)
    last, before = readings["at"].max(), readings["at"].max() - DAILY  # type: ignore[operator]
    both = readings.filter(pl.col("at") == last).join(
        readings.filter(pl.col("at") == before), on="key"
    )
    _record("youtube_trending_fr", "videos read on both last days", both.height, None)
    _record("youtube_trending_fr", "post trends on the last day", len(expected), len(items))
    assert both.height == 45
    assert len(items) > 0

    # The three largest day-over-day gainers (views on day d minus day d-1, a video read on
    # both): each listed on the day it surged, asked for by that day.
    gains = (
        readings.sort("key", "at")
        .with_columns(
            (pl.col("views") - pl.col("views").shift(1).over("key")).alias("gain"),
            (pl.col("at") - pl.col("at").shift(1).over("key")).alias("gap"),
        )
        .filter(pl.col("gap") == DAILY)
        .sort("gain", descending=True)
        .unique("key", keep="first", maintain_order=True)
        .head(3)
    )
    for key, at, gain in gains.select("key", "at", "gain").iter_rows():
        day = at.date().isoformat()
        listed = tenant.api.list_all("/viral-trends", entity_type="post", day=day)
        mine = [t for t in listed if t["entity"] == key]
        t = truth[at + timedelta(hours=1)][key]
        _record(
            "youtube_trending_fr", f"gainer {key} +{gain:,} views on {day}", t.status, len(mine)
        )
        assert len(mine) == 1, (key, day)
        assert (mine[0]["status"], mine[0]["score"]) == (t.status, pytest.approx(t.score))
        assert datetime.fromisoformat(mine[0]["window_end"]).date() == at.date()


def test_youtube_us_viral_trends(world: World) -> None:
    # 75 daily readings with a gap of two days and no publication times (filed at their
    # first reading, whose first sighting is no window: age 0)
    truth = _viral_truth(_growth(_youtube("youtube_trending_us.csv", "cp1252"), YT))
    _compare_viral("youtube_trending_us", truth, _mart_trends(world, world.tenants["us_own"]))


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
    # The estimate, apart from the measured rate: shrunk toward the unweighted mean of the
    # channels' rates with a prior of 10 posts, saying its prior and weight.
    prior = statistics.fmean(r["eng"] / r["views"] for r in per_channel.iter_rows(named=True))
    for r in per_channel.iter_rows(named=True):
        mine = got[r["channel"]]
        rate, weight = r["eng"] / r["views"], r["posts"] / (r["posts"] + 10)
        assert mine["posts"] == r["posts"]
        assert (mine["engagement_rate"], mine["engagement_rate_basis"]) == (
            pytest.approx(rate),
            "views",
        )
        assert mine["engagement_rate_coverage"]["denominator"] == r["views"]
        assert mine["engagement_rate_estimate"] == {
            "value": pytest.approx(weight * rate + (1 - weight) * prior),
            "prior": pytest.approx(prior),
            "weight": pytest.approx(weight),
            "posts": r["posts"],
            "prior_posts": 10.0,
            "method": "shrunk_toward_group_mean",
        }
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


def test_tweets_beside_newer_captures_stay_creators(world: World) -> None:
    # The export (2020-12 to 2021-04) is ranked over its own last 28 days, however much newer
    # the workspace's X captures are; a creator the captures last read a year before their
    # newest reading is not ranked.
    per_user = (
        _tweets()
        .tail(BESIDE_TWEETS)
        .group_by("user_name")
        .agg(pl.len().alias("n"), (pl.col("likes") + pl.col("shares")).sum().alias("eng"))
        .with_columns((pl.col("eng") / pl.col("n")).alias("pp"))
    )
    prior = per_user["pp"].mean()
    assert isinstance(prior, float)
    mine = (
        per_user.with_columns(
            ((pl.col("n") * pl.col("pp") + 10 * prior) / (pl.col("n") + 10)).alias("shrunk")
        )
        .sort(["shrunk", "user_name"], descending=[True, False])["user_name"]
        .head(20)
        .to_list()
    )
    tenant = world.tenants["tweets_beside_captures"]
    # All of the ranking from the lake (a page of /creators costs a fifth of a second, and
    # there are 54); the API's first page for the order it serves.
    got = {r["account_external_id"]: r for r in _rankings(world, tenant, "x")}
    authors = set(per_user["user_name"])
    _record(
        "tweets beside captures",
        "X creators: the export's authors",
        len(authors),
        len(authors & set(got)),
    )
    assert set(got) == authors | {FRESH}
    assert STALE not in got
    for r in per_user.iter_rows(named=True):
        rate = json.loads(got[r["user_name"]]["parts"])["engagement_rate"]
        assert (got[r["user_name"]]["posts"], rate["basis"]) == (r["n"], "posts")
        assert rate["engagements_per_post"] == pytest.approx(r["pp"])
    page = tenant.api.ok(tenant.api.get("/creators", params={"platform": "x", "limit": 100}))
    served = [c["account_external_id"] for c in page["items"] if c["account_external_id"] != FRESH]
    assert served[:20] == mine
    # newsdesk: its newest reading is its lifetime (3,000 impressions, 100 likes); followers
    # 1,000 then 1,100 within the captures' window
    (_, _, first_followers, _, _), (_, _, followers, impressions, likes) = CAPTURES[:2]
    fresh = got[FRESH]
    assert fresh["posts"] == 1
    assert fresh["engagement_rate"] == pytest.approx(likes / impressions)
    assert fresh["growth_rate"] == pytest.approx(followers / first_followers - 1)


def _rankings(world: World, tenant: Tenant, platform: str) -> list[dict[str, Any]]:
    """The workspace's creator rankings on ``platform``, read from the lake read-only."""
    con = connect()
    try:
        world.server.settings.lake.attach(con, read_only=True)
        cur = con.execute(
            "SELECT * FROM lake.mart_creator_rankings"
            " WHERE workspace_id = ? AND platform = ? AND kind = 'creator'",
            [tenant.workspace_id, platform],
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


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

    def shrunk(values: list[float], prior: float) -> float:
        return (len(values) * statistics.fmean(values) + 5 * prior) / (len(values) + 5)

    def confidence(values: list[float], index: float) -> str:
        n = len(values)
        half = 1.96 * n / (n + 5) * sd / math.sqrt(n)
        return (
            "high"
            if n >= 20 and (index - half > 1 or index + half < 1)
            else "medium"
            if n >= 8
            else "low"
        )

    # weekdays or weekends (a whole day: no hour), toward the platform's pattern (the file's
    # posts, toward 1.0); a weekday toward its day type
    day_types: dict[bool, list[float]] = {}
    for p, r in rates:
        day_types.setdefault(p.weekday() >= 5, []).append(r / mean)
    typed = {k: shrunk(v, shrunk(v, 1.0)) for k, v in day_types.items()}
    slots: list[tuple[bool, bool, float, int, int | bool]] = []  # supported, cell, index, n, key
    for weekday in range(7):
        values = [r / mean for p, r in rates if p.weekday() == weekday]
        if values:
            index = shrunk(values, typed[weekday >= 5])
            if len(values) >= 3 and confidence(values, index) != "low":
                slots.append((True, True, index, len(values), weekday))
    for weekend, values in day_types.items():
        if len(values) >= 3:
            slots.append(
                (
                    confidence(values, typed[weekend]) != "low",
                    False,
                    typed[weekend],
                    len(values),
                    weekend,
                )
            )
    slots = [x for x in slots if x[2] > 1]
    best = max(slots, key=lambda x: (x[0], x[1], x[2])) if slots else None
    grid = tenant.api.ok(
        tenant.api.get("/insights/best-times", params={"account_id": tenant.accounts["instagram"]})
    )["grid"]
    assert not any(c["posts"] for c in grid)
    found = tenant.api.list_all("/insights", kind="best_time")
    _record(
        "instagram_posts",
        "best-time recommendation (day or day type, shrunk)",
        None if best is None else (best[4], round(best[2], 4)),
        None
        if not found
        else (
            found[0]["evidence"]["weekday"]
            if found[0]["evidence"]["resolution"] == "day"
            else found[0]["evidence"]["day_type"] == "weekend",
            round(found[0]["score"], 4),
        ),
    )
    if best is None:
        assert found == []
    else:
        (rec,) = [f["evidence"] for f in found]
        assert rec["resolution"] == ("day" if best[1] else "day_type")
        assert rec["posts"] == best[3]
        assert found[0]["score"] == pytest.approx(best[2])
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
