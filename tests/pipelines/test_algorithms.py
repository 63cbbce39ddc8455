"""Each algorithm against values worked out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from core.settings import Settings
from domain.analytics.best_times import recommendation
from pipelines.analytics import algorithms as alg
from warehouse.cursor import StoreCursor
from warehouse.store import Lakehouse


def test_engagement_rate_prefers_impressions_then_views() -> None:
    # 30 / 600 = 0.05; no impressions: 30 / 1200 = 0.025; neither: unknown
    assert alg.engagement_rate(30, 600, 1200) == pytest.approx(0.05)
    assert alg.engagement_rate(30, 0, 1200) == pytest.approx(0.025)
    assert alg.engagement_rate(30, None, None) is None


def test_shrinkage_toward_the_prior() -> None:
    # n = 5, k = 5: weight 5/10 = 0.5 → 0.5·2.0 + 0.5·1.0 = 1.5
    assert alg.shrink(2.0, 5, 1.0, 5) == pytest.approx(1.5)
    # n = 20, k = 5: weight 20/25 = 0.8 → 0.8·1.5 + 0.2·1.0 = 1.4
    assert alg.shrink(1.5, 20, 1.0, 5) == pytest.approx(1.4)
    # n = 0: all prior
    assert alg.shrink(9.0, 0, 1.0, 5) == pytest.approx(1.0)


def test_robust_z_with_median_and_mad() -> None:
    # baseline 10, 12, 11, 13, 9, 10, 12: sorted 9 10 10 11 12 12 13 → median 11
    # |dev| = 1 1 0 2 2 1 1 → sorted 0 1 1 1 1 2 2 → MAD 1
    # x = 20: z = 0.6745 · (20 - 11) / 1 = 6.0705 → spike
    z, med, mad = alg.robust_z(20, [10, 12, 11, 13, 9, 10, 12]) or (0, 0, 0)
    assert (med, mad) == (11, 1)
    assert z == pytest.approx(6.0705)
    assert alg.anomaly_direction(z) == "spike"
    # x = 8: z = 0.6745 · (8 - 11) = -2.0235 → not flagged
    assert alg.anomaly_direction(alg.robust_z(8, [10, 12, 11, 13, 9, 10, 12])[0]) is None  # type: ignore[index]


def test_robust_z_when_mad_is_zero() -> None:
    # baseline 5 5 5 5 9: median 5, MAD 0; mean |dev| = (0+0+0+0+4)/5 = 0.8
    # z = (13 - 5) / (1.253314 · 0.8) = 8 / 1.0026512 = 7.97885
    z, med, mad = alg.robust_z(13, [5, 5, 5, 5, 9]) or (0, 0, 0)
    assert (med, mad) == (5, 0)
    assert z == pytest.approx(7.97885, abs=1e-5)
    # a constant baseline has no spread: not scored
    assert alg.robust_z(7, [5, 5, 5]) is None
    # -3.5 exactly is a drop
    assert alg.anomaly_direction(-3.5) == "drop"


def test_velocity_score_and_trend_status() -> None:
    # v 31/h vs baseline 3/h: log2(32 / 4) = 3
    assert alg.velocity_score(31, 3) == pytest.approx(3.0)
    # v 3 vs baseline 3: log2(4/4) = 0
    assert alg.velocity_score(3, 3) == pytest.approx(0.0)
    # high now (3 ≥ 1) and rising (31 > 20 · 1.1 = 22): emerging
    assert alg.trend_status(3.0, 2.4, 31, 20) == "emerging"
    # high now and 31 vs 30 (within ±10 %): peaking; 31 vs 33 (slowing, > 29.7): peaking
    assert alg.trend_status(3.0, 3.0, 31, 30) == "peaking"
    assert alg.trend_status(3.0, 3.1, 31, 33) == "peaking"
    # high now but 31 < 40 · 0.9 = 36: declining; was high (2.0), now low and falling: declining
    assert alg.trend_status(3.0, 3.4, 31, 40) == "declining"
    assert alg.trend_status(0.5, 2.0, 4, 12) == "declining"
    # never high: nothing
    assert alg.trend_status(0.5, 0.4, 4, 3) is None


def test_zscores_and_composite() -> None:
    # 1, 2, 3: mean 2, population sd √(2/3) = 0.816497 → z = -1.224745, 0, 1.224745
    zs = alg.zscores([1, 2, 3])
    assert zs == pytest.approx([-1.224745, 0.0, 1.224745], abs=1e-6)
    assert alg.zscores([4, 4]) == [0.0, 0.0]
    # 0.5·1.2 + 0.25·(-0.4) + 0.25·2.0 = 0.6 - 0.1 + 0.5 = 1.0
    score = alg.composite({"engagement_rate": 1.2, "growth_rate": -0.4, "reach": 2.0})
    assert score == pytest.approx(1.0)


def test_bayesian_average_for_rankings() -> None:
    # 2 posts at 10 % vs population 4 %, m = 10: (2·0.10 + 10·0.04) / 12 = 0.6/12 = 0.05
    assert alg.shrink(0.10, 2, 0.04, alg.RANKING_PRIOR_POSTS) == pytest.approx(0.05)
    # 40 posts at 10 %: (40·0.10 + 10·0.04) / 50 = 4.4/50 = 0.088
    assert alg.shrink(0.10, 40, 0.04, alg.RANKING_PRIOR_POSTS) == pytest.approx(0.088)


def test_hashtag_family() -> None:
    assert alg.hashtag_family("#WorldCup2026") == "worldcup"
    assert alg.hashtag_family("world_cup") == "worldcup"
    assert alg.hashtag_family("2026") == "2026"
    assert not math.isnan(alg.velocity_score(0, 0))


def test_best_times_by_hand(tmp_path: Path) -> None:
    """The worked example of docs/api/analytics.md ("GET /insights/best-times"), in SQL."""
    from warehouse.best_times import best_times

    # 2025-06-02 is a Monday. The account's indices: 1.2 (Mon 13h), 1.3 (Tue 13h), 1.4 (Wed
    # 14h), 0.7 x 3 (Saturdays 09h); 17 posts of others in weekdays 12-16 sum 18.1, so the
    # platform's 20 there average (3.9 + 18.1) / 20 = 1.1
    mine = [(datetime(2025, 6, 2, 13), 1.2), (datetime(2025, 6, 3, 13), 1.3)]
    mine += [(datetime(2025, 6, 4, 14), 1.4)]
    mine += [(datetime(2025, 6, d, 9), 0.7) for d in (7, 14, 21)]
    others = [(datetime(2025, 6, 5, 15), 1.0)] * 16 + [(datetime(2025, 6, 6, 12), 2.1)]
    rows = [("me", f"m{i}", at, index) for i, (at, index) in enumerate(mine)]
    rows += [("them", f"o{i}", at, index) for i, (at, index) in enumerate(others)]
    with Settings(data_dir=tmp_path / "data").open_lakehouse() as s:

        def seed(cur: StoreCursor) -> None:
            cur.executemany(
                "INSERT INTO mart_best_times (workspace_id, platform, account_external_id,"
                " kind, external_id, published_at, engagement_rate, rate_index, dates_only,"
                " computed_at) VALUES ('ws', 'x', ?, 'own', ?, ?, 0.01, ?, false, ?)",
                [[*r, datetime(2025, 7, 1)] for r in rows],
            )

        s.run(seed)
        found = s.run(lambda cur: best_times(cur, "ws", "x", ["me"], "UTC"))
    # s = stdev(1.2, 1.3, 1.4, 0.7, 0.7, 0.7) = sqrt(0.56 / 5) = 0.334664
    # pattern (20 · 1.1 + 5) / 25 = 1.08; block raw 1.3, w 3/8:
    # 0.375 · 1.3 + 0.625 · 1.08 = 1.1625 ± 1.96 · 0.375 · 0.334664 / √3 = ± 0.142016
    block = {(b["weekend"], b["block"]): b for b in found.blocks}[(False, 3)]
    assert block["prior"] == pytest.approx(1.08)
    assert block["shrunk"] == pytest.approx(1.1625)
    assert (block["ci_low"], block["ci_high"]) == pytest.approx((1.020484, 1.304516), abs=1e-6)
    assert block["confidence"] == "low"
    # Mon 13h: raw 1.2, w 1/6, toward its block's 1.1625: 1.1625 + 0.0375 / 6 = 1.16875
    cell = {(c["weekday"], c["hour"]): c for c in found.cells}[(0, 13)]
    assert cell["shrunk"] == pytest.approx(1.16875)
    # No cell has 8 posts: the block is recommended. With 20 posts as these, w 0.8: 0.8 · 0.22
    # + 1.08 = 1.256, half 1.96 · 0.8 · 0.334664 / √20 = 0.117335: low 1.1387 > 1, so 17 more.
    rec = found.recommendation
    assert rec is not None
    assert (rec["level"], rec["weekend"], rec["block"]) == ("block", False, 3)
    assert (rec["more_for_medium"], rec["more_for_high"]) == (5, 17)
    text = recommendation(rec, "UTC").text
    assert text == (
        "Post on weekdays 12:00-16:00 UTC: 1.16x your average engagement rate (95 % interval"
        " 1.02-1.30), 3 posts, low confidence; 5 more posts there would make it medium"
        " confidence; about 17 more would make it high confidence."
    )


@pytest.fixture(scope="module")
def trend_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lakehouse]:
    """One lake for the trend tests, each in a workspace of its own (a new lake costs more
    than a test)."""
    with Settings(data_dir=tmp_path_factory.mktemp("trends") / "data").open_lakehouse() as s:
        yield s


def test_viral_trend_of_a_post_by_hand(trend_lake: Lakehouse) -> None:
    from pipelines.analytics.insights import TREND_WIDTH, trend_reach, viral_trends
    from warehouse.marts.insights import Window, trend_windows

    end = datetime(2025, 6, 15, 12)
    published = end - timedelta(hours=48)
    # hourly engagements: 1/h in the baseline windows (12 h-36 h ago), 2/h in the previous
    # window (6 h-12 h ago), 31/h in the latest (0-6 h ago); summed by the store. Three
    # posts read alike: p tagged #WorldCup2026, q #Coffee, r #coffee2 in the category Coffee.
    hours = [
        (end - timedelta(hours=h), 31 if h <= 6 else 2 if h <= 12 else 1) for h in range(1, 37)
    ]
    posts = [("p", ["#WorldCup2026"], None), ("q", ["#Coffee"], None), ("r", ["coffee2"], "Coffee")]

    def seed(cur: StoreCursor) -> None:
        cur.executemany(
            "INSERT INTO dim_posts (workspace_id, platform, external_id, account_external_id,"
            " kind, hashtags, category, published_at, captured_at)"
            " VALUES ('ws', 'x', ?, 'a', 'own', ?, ?, ?, ?)",
            [[post, tags, category, published, published] for post, tags, category in posts],
        )
        cur.executemany(
            "INSERT INTO mart_post_hourly VALUES ('ws', CAST(? AS DATE), ?, 'x', 'a', NULL,"
            " ?, NULL, 'own', 0, 0, 0, ?, 0, 0, 0, 0, ?)",
            [[hour, hour, post, eng, eng] for hour, eng in hours for post, _, _ in posts],
        )

    trend_lake.run(seed)
    read = trend_windows(trend_lake, Window("ws", end, end), TREND_WIDTH, trend_reach(TREND_WIDTH))
    # Baseline windows W2..W5: 1/h each → median 1.
    # score = log2((31 + 1) / (1 + 1)) = log2(16) = 4; previous log2(3/2) = 0.585;
    # rising (31 > 2 · 1.1) → emerging
    assert read[0]["wins"] == [0, 1, 2, 3, 4, 5]
    assert read[0]["engagements"] == [186, 12, 6, 6, 6, 6]
    trends = {(t["entity_type"], t["entity"]): t for t in viral_trends("ws", read, end, end)}
    # #Coffee is the hashtag coffee; r's topics (the family of coffee2 and its category)
    # are the same word: one row, q's and r's windows summed; no topic "coffee"
    assert set(trends) == {
        ("post", "p"),
        ("post", "q"),
        ("post", "r"),
        ("hashtag", "worldcup2026"),
        ("topic", "worldcup"),
        ("hashtag", "coffee"),
        ("hashtag", "coffee2"),
    }
    for (_, entity), trend in trends.items():
        posts_in = 2 if entity == "coffee" else 1
        assert trend["baseline"] == pytest.approx(posts_in * 1.0)
        assert trend["velocity"] == pytest.approx(posts_in * 31.0)
        assert trend["score"] == pytest.approx(math.log2((31 * posts_in + 1) / (posts_in + 1)))
        assert trend["status"] == "emerging"
        assert trend["window_end"] == end


def test_a_first_sighting_is_a_window_judged_against_same_age_posts(
    trend_lake: Lakehouse,
) -> None:
    import json

    from pipelines.analytics.insights import trend_reach, viral_trends
    from warehouse.marts.insights import Window, trend_windows

    # A daily export read at 00:00 UTC; its data end at 01:00 on 2018-01-03, day-long windows
    # W0 [01-02 01:00, 01-03 01:00), W1 the day before. Video v, published 2018-01-01 12:00,
    # is first read on 01-02 with 1,200 lifetime engagements at 12 h old: W1 = 100/h; read
    # again on 01-03, +4,800: W0 = 200/h. Its own baseline windows start before it was
    # published: its baseline is its peers' at the same age, W0 starting 13 h after
    # publication (age 0): a, b, c published 2017-12-29 12:00, gaining 40, 50, 60/h in their
    # window from 12-30 01:00. Baseline median 50/h; score log2(201 / 51) = 1.979; previous
    # log2(101 / 51) = 0.986; 200 > 1.1 x 100 → emerging.
    day = timedelta(days=1)
    end = datetime(2018, 1, 3, 1)
    width = 24 * timedelta(hours=1)
    published = {"v": datetime(2018, 1, 1, 12), **dict.fromkeys("abc", datetime(2017, 12, 29, 12))}
    growth = [
        ("v", datetime(2018, 1, 3), 4800),
        *(
            (peer, datetime(2017, 12, 31), 24 * rate)
            for peer, rate in (("a", 40), ("b", 50), ("c", 60))
        ),
    ]

    def seed(cur: StoreCursor) -> None:
        cur.executemany(
            "INSERT INTO dim_posts (workspace_id, platform, external_id, account_external_id,"
            " kind, hashtags, published_at, captured_at)"
            " VALUES ('daily', 'youtube', ?, ?, 'creator', [], ?, ?)",
            [[post, f"channel-{post}", pub, pub] for post, pub in published.items()],
        )
        cur.executemany(
            "INSERT INTO mart_post_hourly VALUES ('daily', CAST(? AS DATE), ?, 'youtube', ?,"
            " NULL, ?, NULL, 'creator', 0, 0, 0, ?, 0, 0, 0, 0, ?)",
            [[at, at, f"channel-{post}", post, eng, eng] for post, at, eng in growth],
        )
        cur.execute(
            "INSERT INTO mart_post_first_seen BY NAME SELECT 'daily' AS workspace_id,"
            " DATE '2018-01-02' AS day, TIMESTAMP '2018-01-02 00:00' AS captured_at,"
            " 'youtube' AS platform, 'channel-v' AS account_external_id, 'v' AS external_id,"
            " 'creator' AS kind, ? AS published_at, 0 AS impressions, 0 AS reach,"
            " 0 AS views, 1200 AS likes, 0 AS comments, 0 AS shares, 0 AS saves,"
            " 0 AS clicks, 1200 AS engagements",
            [published["v"]],
        )

    trend_lake.run(seed)
    read = trend_windows(trend_lake, Window("daily", end, end), width, trend_reach(width))
    found = viral_trends("daily", read, end, end, width)
    (v,) = [t for t in found if t["entity"] == "v"]
    assert v["window_end"] == end
    assert (v["velocity"], v["baseline"]) == (pytest.approx(200.0), pytest.approx(50.0))
    assert v["score"] == pytest.approx(math.log2(201 / 51))
    assert v["status"] == "emerging"
    evidence = json.loads(v["evidence"])
    assert evidence["previous_velocity"] == pytest.approx(100.0)
    assert evidence["first_sightings"] == [1]
    assert (evidence["baseline_source"], evidence["age_windows"]) == ("platform_same_age", 0)
    assert evidence["baseline_peers"] == 3
    # a day earlier, v's only reading is its first sighting (W0), with nothing before it:
    # insufficient data, not listed on 01-02
    assert [t["entity"] for t in found if t["window_end"] == end - day] == []


def test_creator_ranking_shrinks_toward_the_unweighted_mean_and_uses_population_z() -> None:
    import json
    import statistics

    from pipelines.analytics.insights import creator_rankings

    def account(name: str) -> dict[str, object]:
        return {
            "kind": "creator",
            "platform": "x",
            "account_external_id": name,
            "handle": name,
            "category": None,
            "followers_first": None,
            "followers_last": None,
            "span_days": None,
        }

    def posts(name: str, n: int, eng: int) -> list[dict[str, object]]:
        one = {"platform": "x", "account_external_id": name, "engagements": eng}
        return [{**one, "impressions": 100, "views": 0, "reach": None} for _ in range(n)]

    # a: 1 post at 10 % · b: 9 posts at 1 % · c: 2 posts at 3 %. The prior is the mean of
    # the three rates, (0.10 + 0.01 + 0.03) / 3 = 0.046667, not the pooled 25 / 1200.
    rows = creator_rankings(
        "ws",
        [account("a"), account("b"), account("c")],
        [*posts("a", 1, 10), *posts("b", 9, 1), *posts("c", 2, 3)],
        datetime(2025, 7, 1),
    )
    by = {r["account_external_id"]: r for r in rows}
    parts = {name: json.loads(str(r["parts"]))["engagement_rate"] for name, r in by.items()}
    assert [p["prior"] for p in parts.values()] == pytest.approx([0.14 / 3] * 3)
    # m = 10: a (0.10 + 10·0.046667) / 11 = 0.051515; b (0.09 + 0.46667) / 19 = 0.029298;
    # c (0.06 + 0.46667) / 12 = 0.043889
    shrunk = {"a": 0.051515, "b": 0.029298, "c": 0.043889}
    assert {n: r["engagement_rate_shrunk"] for n, r in by.items()} == pytest.approx(
        shrunk, abs=1e-6
    )
    # z over the population sd (÷ n); the sample sd (÷ n - 1) would give smaller z-scores
    mean, sd = statistics.fmean(shrunk.values()), statistics.pstdev(shrunk.values())
    assert {n: p["z"] for n, p in parts.items()} == pytest.approx(
        {n: (v - mean) / sd for n, v in shrunk.items()}, abs=1e-4
    )
    assert statistics.stdev(shrunk.values()) != pytest.approx(sd, rel=0.05)
