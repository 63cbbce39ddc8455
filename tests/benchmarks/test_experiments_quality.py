"""The experiments' interval coverage (issue 52, point 2): the planted time-of-day effect of the
simulator, the experiment each repeat runs, ``stats.compare`` against scipy, and a small run
of the bench. Nothing is timed."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from benchmarks import bench
from benchmarks import experiments_quality as q
from domain.experiments import metrics, stats
from domain.experiments.service import draw_arm
from simulator.world import World

HOUR = timedelta(hours=1)


def _own(world: World, platform: str) -> Any:
    return next(a for a in world.accounts(platform) if a.kind == "own")


# -- the planted effect ----------------------------------------------------------------------


def test_the_world_scales_published_posts_of_the_planted_hours_only() -> None:
    plain, planted = World(3), World(3, hour_effect={19: 1.3})
    evening = datetime(2026, 10, 5, 19, tzinfo=UTC)
    morning = datetime(2026, 10, 6, 9, tzinfo=UTC)
    for platform in q.PLATFORMS:
        a, b = _own(plain, platform), _own(planted, platform)
        assert a == b
        for at in (evening, morning):
            p = plain.publish(a, "hello", "text", at)
            t = planted.publish(b, "hello", "text", at)
            assert p.external_id == t.external_id  # the same post, drawn from the same number
            factor = 1.3 if at == evening else 1.0
            assert t.size == pytest.approx(p.size * factor, rel=1e-12)
            assert t.surge == pytest.approx(p.surge * factor, rel=1e-12)
            assert (t.tau_hours, t.rates, t.surge_at) == (p.tau_hours, p.rates, p.surge_at)
            for hours in (1, 24, 48, 200):
                now = at + hours * HOUR
                assert t.impressions_at(now) == pytest.approx(
                    p.impressions_at(now) * factor, rel=1e-12
                )
                ct, cp = t.counters(now), p.counters(now)
                for name in ("impressions", "likes", "clicks"):
                    # each counter rounds down: within one of the scaled one
                    assert abs(getattr(ct, name) - getattr(cp, name) * factor) <= factor + 1e-9
        # the generated posts are the seed's alone
        now = datetime(2026, 10, 10, tzinfo=UTC)
        generated = [p for p in plain.posts(a, now) if p.number < 10**15]
        assert generated
        assert generated == [p for p in planted.posts(b, now) if p.number < 10**15]


def test_a_world_without_an_effect_is_the_seed_s_world() -> None:
    at = datetime(2026, 10, 5, 19, tzinfo=UTC)
    a, b = World(5), World(5, hour_effect=None)
    assert b.hour_effect == {}
    for platform in ("x", "youtube"):
        pa = a.publish(_own(a, platform), "t", "text", at)
        pb = b.publish(_own(b, platform), "t", "text", at)
        assert (pa.size, pa.surge, pa.counters(at + 5 * HOUR)) == (
            pb.size,
            pb.surge,
            pb.counters(at + 5 * HOUR),
        )
    with pytest.raises(ValueError, match="0-23"):
        World(1, hour_effect={24: 1.2})
    with pytest.raises(ValueError, match="> 0"):
        World(1, hour_effect={3: 0.0})


# -- one repeat --------------------------------------------------------------------------------


def test_the_captures_are_the_hourly_grid_and_measure_reads_no_other() -> None:
    published = datetime(2026, 10, 5, 19, tzinfo=UTC)
    every = q.captures(published, every_one=True)
    assert every[0] == published + timedelta(minutes=5)
    assert every[-1] == published + timedelta(hours=48, minutes=5)
    assert len(every) == 49
    assert all(b - a == HOUR for a, b in itertools.pairwise(every))
    ages = [(c - published) / HOUR for c in q.captures(published)]
    assert ages == pytest.approx([23 + 1 / 12, 24 + 1 / 12, 47 + 1 / 12, 48 + 1 / 12])
    # a post published at 19:07: its first capture at 20:05
    late = published + timedelta(minutes=7)
    assert q.captures(late, every_one=True)[0] == published + timedelta(minutes=65)
    # every post and metric of a small experiment measures the same from either
    a = q.run_repeat(11, posts=12, every_capture=True)
    b = q.run_repeat(11, posts=12)
    assert a.cells == b.cells
    assert a.shifts == b.shifts
    assert a.unmeasured == b.unmeasured == 0


def test_each_post_takes_the_seed_s_arm_and_the_arm_s_next_daily_slot() -> None:
    seed, posts = 2024, 30
    r = q.run_repeat(seed, posts=posts)
    drawn = Counter(draw_arm(seed, n, q.ARMS).name for n in range(posts))
    hours = {q.CONTROL: q.CONTROL_HOUR, q.NULL: q.NULL_HOUR, q.EFFECT: q.EFFECT_HOUR}
    for arm, slots in r.slots.items():
        assert len(slots) == drawn[arm]
        first = q.START.replace(hour=hours[arm])  # 2026-10-05 00:00 + LEAD: that day's slot
        assert slots == [first + timedelta(days=k) for k in range(len(slots))]
        measured = r.cells[metrics.Metric.ENGAGEMENTS_24H][arm]
        assert sorted(measured) == sorted(_own(World(seed), p).external_id for p in q.PLATFORMS)
        assert {len(v) for v in measured.values()} == {drawn[arm]}
    # the evening posts move by about ln 1.3 on the log scale (+1 and rounding down aside)
    shifts = r.shifts[metrics.Metric.ENGAGEMENTS_24H]
    assert len(shifts) == drawn[q.EFFECT] * len(q.PLATFORMS)
    assert math.expm1(float(np.mean(shifts))) == pytest.approx(0.3, abs=0.03)


# -- stats.compare against scipy -------------------------------------------------------------


def _lognormal(r: random.Random, n: int, mu: float) -> list[float]:
    return [math.log1p(r.lognormvariate(mu, 1.0)) for _ in range(n)]


def test_one_stratum_is_scipy_s_welch_interval_on_the_log_values() -> None:
    r = random.Random(8)
    for n_t, n_c, shift in ((30, 30, 0.3), (12, 41, 0.0), (2, 3, -0.5)):
        t, c = _lognormal(r, n_t, 3.0 + shift), _lognormal(r, n_c, 3.0)
        got = stats.compare({"a": t}, {"a": c})
        assert got is not None
        assert got.accounts == 1
        ref = scipy_stats.ttest_ind(t, c, equal_var=False)
        ci = ref.confidence_interval(0.95)
        assert got.difference == pytest.approx(np.mean(t) - np.mean(c), rel=1e-12)
        assert got.t == pytest.approx(ref.statistic, rel=1e-10)
        assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9)
        assert got.degrees_of_freedom == pytest.approx(ref.df, rel=1e-10)
        assert got.low == pytest.approx(math.expm1(ci.low), rel=1e-10)
        assert got.high == pytest.approx(math.expm1(ci.high), rel=1e-10)
        assert got.lift == pytest.approx(math.expm1(np.mean(t) - np.mean(c)), rel=1e-12)


def test_one_account_of_a_simulated_experiment_is_scipy_s_interval() -> None:
    r = q.run_repeat(77, posts=60)
    cells = r.cells[metrics.Metric.ENGAGEMENTS_24H]
    for account in cells[q.CONTROL]:
        t, c = cells[q.EFFECT][account], cells[q.CONTROL][account]
        got = stats.compare({account: t}, {account: c})
        ci = scipy_stats.ttest_ind(t, c, equal_var=False).confidence_interval(0.95)
        assert got is not None
        assert (got.low, got.high) == pytest.approx((math.expm1(ci.low), math.expm1(ci.high)))


def test_strata_are_weighted_by_their_posts_with_welch_satterthwaite_freedom() -> None:
    """An independent numpy computation of the stratified interval."""
    r = random.Random(9)
    arm = {"a": _lognormal(r, 25, 4.3), "b": _lognormal(r, 8, 1.2), "c": _lognormal(r, 40, 2.0)}
    control = {"a": _lognormal(r, 30, 4.0), "b": _lognormal(r, 11, 1.0), "c": _lognormal(r, 2, 2)}
    arm["d"] = _lognormal(r, 5, 1.0)  # no control posts there: left out
    control["e"] = [1.0]  # one post: left out
    got = stats.compare(arm, control)
    assert got is not None
    assert got.accounts == 3
    keys = ("a", "b", "c")
    sizes = np.array([len(arm[k]) + len(control[k]) for k in keys], dtype=float)
    w = sizes / sizes.sum()
    diff = sum(wk * (np.mean(arm[k]) - np.mean(control[k])) for wk, k in zip(w, keys, strict=True))
    parts = [
        (wk**2 * np.var(x[k], ddof=1) / len(x[k]), len(x[k]) - 1)
        for wk, k in zip(w, keys, strict=True)
        for x in (arm, control)
    ]
    var = sum(p for p, _ in parts)
    dof = var**2 / sum(p**2 / f for p, f in parts)
    half = scipy_stats.t.ppf(0.975, dof) * math.sqrt(var)
    assert got.difference == pytest.approx(diff, rel=1e-12)
    assert got.degrees_of_freedom == pytest.approx(dof, rel=1e-10)
    assert (got.low, got.high) == pytest.approx(
        (math.expm1(diff - half), math.expm1(diff + half)), rel=1e-10
    )


def test_wilson_is_scipy_s() -> None:
    for k, n in ((190, 200), (0, 25), (25, 25), (951, 1000)):
        ci = scipy_stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert q.wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


# -- the bench ---------------------------------------------------------------------------------


def test_a_small_run_s_numbers_are_well_formed_and_the_interval_mostly_holds() -> None:
    result = q.measure(repeats=25)
    assert result.seeds == (q.FIRST_SEED, q.FIRST_SEED + 24)
    rows = [q.row(c, result) for c in result.coverages]
    assert len(rows) == 6
    for c, row in zip(result.coverages, rows, strict=True):
        f = row["figures"]
        assert c.repeats == f["repeats"] == 25
        assert c.no_interval == 0
        assert 0 <= f["coverage"] <= 1
        low, high = f["wilson_95"]
        assert low <= f["coverage"] <= high
        assert 0 < f["median_width"] < 2
        # ~30 posts per arm on each of five accounts
        assert 120 < f["mean_posts_per_arm"] < 180
        assert 120 < f["mean_posts_control"] < 180
        assert f["coverage"] >= 0.8, row  # 95 % expected: 20 of 25 at the very least
        assert isinstance(row["ok"], bool)
        assert row["measured"].startswith("coverage ")
    planted = rows[0]["figures"]
    assert planted["truth"] == pytest.approx(0.3)
    assert planted["effective_lift"] == pytest.approx(0.3, abs=0.02)
    assert planted["lift_at_mean_difference"] == pytest.approx(0.3, abs=0.1)
    # the rate's interval is narrower than the engagements': impressions move with them
    assert rows[2]["figures"]["median_width"] < rows[0]["figures"]["median_width"] / 2
    text = q.table(rows)
    assert text.count("\n") == 7
    assert "| experiment interval, engagements_24h, 19:00" in text


def test_the_bench_writes_its_block_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "DOCS", tmp_path)
    (tmp_path / "performance.md").write_text(
        f"# P\n\n{bench.EXPERIMENTS_START}\nold\n{bench.EXPERIMENTS_END}\n\nmore\n"
    )
    rows: list[dict[str, Any]] = [{"what": "w", "measured": "m", "target": "t", "ok": True}]
    for _ in range(2):
        bench.write_experiments_docs(rows, "murmur bench", 1.0)
    text = (tmp_path / "performance.md").read_text()
    assert text.count(bench.EXPERIMENTS_START) == 1
    assert "old" not in text
    assert text.endswith("\n\nmore\n")
    assert "| w | m | t | PASS |" in text
    assert q.design() in text
    assert len(bench._PLACEHOLDERS[bench.EXPERIMENTS]) == len(q.cases())
