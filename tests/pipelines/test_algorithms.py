"""Each algorithm against values worked out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from murmur.settings import Settings
from pipelines.analytics import algorithms as alg
from warehouse.cursor import StoreCursor


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


def test_best_time_interval_and_confidence() -> None:
    # shrunk 1.5, n 5, pooled sd 0.4, k 5: half = 1.96 · (5/10) · 0.4/√5
    # = 1.96 · 0.5 · 0.178885 = 0.175307 → (1.324693, 1.675307)
    low, high = alg.best_time_interval(1.5, 5, 0.4)
    assert low == pytest.approx(1.324693, abs=1e-6)
    assert high == pytest.approx(1.675307, abs=1e-6)
    # 24 posts, interval above 1: high; 24 posts straddling 1: medium; 3 posts: low
    assert alg.confidence_label(24, 1.2, 1.6) == "high"
    assert alg.confidence_label(24, 0.9, 1.3) == "medium"
    assert alg.confidence_label(3, 1.2, 1.6) == "low"


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


def test_best_times_by_hand() -> None:
    from datetime import datetime

    from pipelines.analytics.insights import best_times

    def post(day: int, hour: int, eng: int) -> dict[str, object]:
        return {
            "platform": "x",
            "account_external_id": "a",
            "engagements": eng,
            "impressions": 1000,
            "views": 0,
            "published_at": datetime(2025, 6, day, hour),
        }

    # 2025-06-02 is a Monday. Rates 0.02, 0.02 (Mon 09h) and 0.04, 0.04 (Tue 18h):
    # account mean 0.03 → indices 2/3 and 4/3. Mon 09h: raw 2/3, n 2, k 5:
    # shrunk = (2/7)(2/3) + (5/7)(1) = 0.190476 + 0.714286 = 0.904762
    rows = best_times(
        "ws",
        [post(2, 9, 20), post(9, 9, 20), post(3, 18, 40), post(10, 18, 40)],
        datetime(2025, 7, 1),
    )
    by_bucket = {(r["weekday"], r["hour"]): r for r in rows}
    assert by_bucket[(0, 9)]["raw_index"] == pytest.approx(2 / 3)
    assert by_bucket[(0, 9)]["shrunk_index"] == pytest.approx(0.904762, abs=1e-6)
    # Tue 18h: (2/7)(4/3) + 5/7 = 0.380952 + 0.714286 = 1.095238
    assert by_bucket[(1, 18)]["shrunk_index"] == pytest.approx(1.095238, abs=1e-6)
    assert by_bucket[(1, 18)]["confidence"] == "low"


def test_viral_trend_of_a_post_by_hand(tmp_path: Path) -> None:
    from pipelines.analytics.insights import TREND_WIDTH, TREND_WINDOWS, viral_trends
    from warehouse.marts.insights import Window, trend_ages, trend_posts

    end = datetime(2025, 6, 15, 12)
    published = end - timedelta(hours=48)
    # hourly engagements: 1/h in the baseline windows (12 h-36 h ago), 2/h in the previous
    # window (6 h-12 h ago), 31/h in the latest (0-6 h ago); summed by the store
    hours = [
        (end - timedelta(hours=h), 31 if h <= 6 else 2 if h <= 12 else 1) for h in range(1, 37)
    ]
    with Settings(data_dir=tmp_path / "data").open_lakehouse() as s:

        def seed(cur: StoreCursor) -> None:
            cur.execute(
                "INSERT INTO dim_posts (workspace_id, platform, external_id, account_external_id,"
                " kind, hashtags, published_at, captured_at)"
                " VALUES ('ws', 'x', 'p', 'a', 'own', ['#WorldCup2026'], ?, ?)",
                [published, published],
            )
            cur.executemany(
                "INSERT INTO mart_post_hourly VALUES ('ws', CAST(? AS DATE), ?, 'x', 'a', NULL,"
                " 'p', NULL, 'own', 0, 0, 0, ?, 0, 0, 0, 0, ?)",
                [[hour, hour, eng, eng] for hour, eng in hours],
            )

        s.run(seed)
        window = Window("ws", end - timedelta(days=7), end)
        posts = trend_posts(s, window, TREND_WIDTH, TREND_WINDOWS)
        ages = trend_ages(s, window, TREND_WIDTH)
    # Baseline windows W2..W5: 1/h each → median 1.
    # score = log2((31 + 1) / (1 + 1)) = log2(16) = 4; previous log2(3/2) = 0.585;
    # rising (31 > 2 · 1.1) → emerging
    assert posts[0]["engagements"] == [186, 12, 6, 6, 6, 6]
    trends = {t["entity_type"]: t for t in viral_trends("ws", posts, ages, end, end)}
    # its hashtag and the hashtag's family (a topic) carry the same sums
    assert (trends["post"]["entity"], trends["hashtag"]["entity"]) == ("p", "worldcup2026")
    assert trends["topic"]["entity"] == "worldcup"
    for trend in trends.values():
        assert trend["baseline"] == pytest.approx(1.0)
        assert trend["score"] == pytest.approx(4.0)
        assert trend["velocity"] == pytest.approx(31.0)
        assert trend["status"] == "emerging"


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
