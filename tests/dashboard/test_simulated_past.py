"""`murmur up` on a new data directory: the simulated past, read from the dashboard's seed.

The seed is what `up` does (tests/dashboard/conftest.py): `murmur pipeline run --history`
against the bundled simulator, then the next run. Read here rather than captured again: the
capture is the suite's most expensive step, and the dashboard's tests need it anyway.
"""

from __future__ import annotations

import itertools
import math
import statistics
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from connectors.registry import SUPPORTED
from pipelines.run import HISTORY_DAYS, history_moments
from tests.dashboard.conftest import SEED_TIMEOUT, Seeded
from tests.support import PIPELINE_STEP
from warehouse.rows import fetch_value

# The same worker as the browser tests: the seed is made once, by whichever asks first.
pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group("dashboard-browser")]


def _steps(output: str) -> list[tuple[str, str]]:
    """(step, partition) of each step a `murmur pipeline run` printed, all of them ok."""
    steps = [m.groups() for m in map(PIPELINE_STEP.match, output.splitlines()) if m]
    assert steps, output
    assert {step[3] for step in steps} == {"ok"}, output
    return [(step[0], step[1]) for step in steps]


def test_a_new_store_starts_with_the_simulated_past(seeded: Seeded) -> None:
    """The first run captures the past, moment by moment; the dashboards have it at once."""
    runs = seeded.seed.pipeline_runs
    assert len(runs) == 2, "a seed kept from an older suite (MURMUR_DASHBOARD_STORE): seed again"
    first, second = (_steps(output) for output in runs)
    workspace_id = seeded.seed.workspace_id
    # Each capture is stamped with the moment it was asked for (the simulator's Date), and
    # a post's counters never fall from one capture to the next: the past as it was.
    captured, falls = seeded.server.lake.run(
        lambda cur: (
            [
                r[0]
                for r in cur.execute(
                    "SELECT DISTINCT captured_at FROM raw_engagement_snapshots"
                    " WHERE workspace_id = ? ORDER BY 1",
                    [workspace_id],
                ).fetchall()
            ],
            fetch_value(
                cur,
                "SELECT count(*) FROM (SELECT likes < lag(likes) OVER w AS fell"
                " FROM raw_engagement_snapshots WHERE workspace_id = ?"
                " WINDOW w AS (PARTITION BY platform, external_id ORDER BY captured_at))"
                " WHERE fell",
                [workspace_id],
            ),
        )
    )
    # The run's moment is the oldest capture's plus the history's length (Dates are whole
    # seconds); the live captures follow the past (each platform's stamped with its own Date).
    moments = history_moments(captured[0] + timedelta(days=HISTORY_DAYS))
    assert captured[: len(moments)] == moments
    assert [name for name, _ in first] == ["history"] * len(moments) + [
        "ingest",
        "marts",
        "insights",
    ]
    assert [p for name, p in first if name == "history"] == [
        m.strftime("%Y-%m-%d-%H:00") for m in moments
    ]
    live = captured[len(moments) :]
    assert live, captured
    assert live[0] > moments[-1]
    assert falls == 0

    end = max(live).replace(tzinfo=UTC) + timedelta(hours=1)  # captured_at is naive UTC
    params = {"from": (end - timedelta(days=14)).isoformat(), "to": end.isoformat()}
    api = seeded.api
    unified = api.ok(api.get("/analytics/unified", params=params))
    assert unified["totals"]["engagements"] > 0  # growth between captures, not only first sightings
    # Every platform the test workspace connects is read, Facebook, Threads and Pinterest too.
    grew = {p["platform"] for p in unified["by_platform"] if p["engagements"] > 0}
    assert grew == set(SUPPORTED)
    trends = api.ok(api.get("/viral-trends", params={"limit": 100}))
    assert trends["items"]
    # Windows as long as each post's own reading interval (docs/api/analytics.md): 6 hours
    # where the 6-hourly past read a post each time; longer for a post the simulator lists
    # only now and then (a trending list's videos), as that interval is at the moment. Which
    # of them lead the list depends on the day the suite runs: each is checked on its own.
    readings = seeded.server.lake.run(
        lambda cur: {
            (platform, external_id): hours
            for platform, external_id, hours in cur.execute(
                "SELECT platform, external_id, list(DISTINCT date_trunc('hour', captured_at))"
                " FROM raw_engagement_snapshots WHERE workspace_id = ? GROUP BY ALL",
                [workspace_id],
            ).fetchall()
        }
    )
    checked = 0
    for item in trends["items"]:
        last = sorted(readings.get((item["platform"], item["entity"]), []))[-4:]
        # a post's readings near the trends' 7-day edge may fall either side of it
        if item["entity_type"] != "post" or last[0] < max(live) - timedelta(days=6):
            continue
        gap = statistics.median((b - a) / timedelta(hours=1) for a, b in itertools.pairwise(last))
        assert item["evidence"]["window_hours"] == max(6, math.ceil(gap)), (item, last)
        checked += 1
    assert checked, trends["items"]
    competitors = api.ok(api.get("/competitors"))
    assert {c["handle"] for c in competitors["items"]} == {
        "chirply",
        "buzzhive",
        "postpilot.bsky.social",
    }
    # Every account of every capture was read: no failure recorded for any of them.
    failed = seeded.server.lake.run(
        lambda cur: cur.execute(
            "SELECT err FROM ingest_batches, unnest(CAST(errors AS JSON[])) AS e(err)"
            " WHERE workspace_id = ? AND json_extract_string(err, '$.stage') IS NOT NULL",
            [workspace_id],
        ).fetchall()
    )
    assert failed == []

    # The past is captured once: the next run reads only the current hour.
    assert [name for name, _ in second if name == "history"] == []
    assert second[0][0] == "ingest"


def _raw(seeded: Seeded, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """Rows of a query on the store's raw tables (never a mart)."""
    return seeded.server.lake.run(lambda cur: cur.execute(sql, params).fetchall())


def test_an_hourly_chart_of_the_six_hourly_past_is_null_between_readings(seeded: Seeded) -> None:
    """The past's last two days were read every 6 hours: only those hours have figures."""
    workspace_id = seeded.seed.workspace_id
    read_hours = sorted(
        h.replace(tzinfo=UTC)
        for (h,) in _raw(
            seeded,
            "SELECT DISTINCT date_trunc('hour', s.captured_at) FROM raw_engagement_snapshots s"
            " SEMI JOIN (SELECT platform, external_id FROM raw_posts WHERE workspace_id = ?"
            "   AND kind = 'own' AND platform = 'x') USING (platform, external_id)"
            " WHERE s.workspace_id = ? AND s.platform = 'x'",
            [workspace_id, workspace_id],
        )
    )
    # 36 hours of the 6-hourly past: six readings, one every 6 hours
    end = read_hours[-2] + timedelta(hours=1)  # before the live capture's hour
    start = end - timedelta(hours=36)
    api = seeded.api
    data = api.ok(
        api.get(
            "/analytics/unified",
            params={
                "from": start.isoformat(),
                "to": end.isoformat(),
                "granularity": "hour",
                "platform": "x",
                "group_by": "platform",
                "limit": 100,
            },
        )
    )
    items = data["series"]["items"]
    assert len(items) == 36
    read = [h for h in read_hours if start <= h < end]
    assert len(read) == 6
    for item in items:
        bucket = datetime.fromisoformat(item["bucket"].replace("Z", "+00:00"))
        if bucket in read:
            assert item["engagements"] is not None, item
            before = max(h for h in read_hours if h < bucket)
            # its growth accrued since the previous reading: 6 hours
            assert item["covers_hours"] == (bucket - before) / timedelta(hours=1) == 6
        else:
            # not read: nothing is known of that hour (never a 0 between readings)
            assert item["engagements"] is None, item
            assert item["covers_hours"] is None, item
    assert data["totals"]["engagements"] == sum(i["engagements"] or 0 for i in items)


# The best-times definitions (docs/api/analytics.md, "GET /insights/best-times").
K, Z, MEDIUM, HIGH = 5, 1.96, 8, 20


def _shrunk(n: int, raw: float, prior: float) -> tuple[float, float]:
    w = n / (n + K)
    return w * raw + (1 - w) * prior, w


def test_best_times_recommend_with_an_interval_after_the_simulated_past(seeded: Seeded) -> None:
    """14 days of simulator history give each account with enough posts a recommendation at
    the resolution its posts support, computed here from the raw readings."""
    workspace_id = seeded.seed.workspace_id
    # each post's lifetime totals: its counters' peaks (the simulator's never fall), its
    # newest description's account, kind and publication
    posts = _raw(
        seeded,
        "WITH r AS (SELECT platform, external_id, coalesce(max(likes), 0)"
        "   + coalesce(max(comments), 0) + coalesce(max(shares), 0) + coalesce(max(saves), 0)"
        "   + coalesce(max(clicks), 0) AS eng, max(impressions) AS imp, max(views) AS views"
        "   FROM raw_engagement_snapshots WHERE workspace_id = ? GROUP BY ALL),"
        " d AS (SELECT platform, external_id, arg_max(account_external_id, captured_at) AS a,"
        "   arg_max(kind, captured_at) AS kind, arg_max(published_at, captured_at) AS pub"
        "   FROM raw_posts WHERE workspace_id = ? GROUP BY ALL)"
        " SELECT d.platform, d.a, d.kind, d.pub, r.eng, r.imp, r.views FROM r JOIN d"
        " USING (platform, external_id)",
        [workspace_id, workspace_id],
    )
    rated: dict[tuple[str, str], list[tuple[str, datetime, float]]] = {}
    for platform, account, kind, published, eng, imp, views in posts:
        rate = eng / imp if imp else eng / views if views else None
        if rate is not None:
            rated.setdefault((platform, account), []).append((kind, published, rate))
    # per post: its rate over its account's mean; per platform and block: every account's
    indexed: dict[str, list[tuple[str, str, datetime, float]]] = {}
    for (platform, account), found in rated.items():
        mean = statistics.fmean(r for _, _, r in found)
        if len(found) >= 2 and mean > 0:
            indexed.setdefault(platform, []).extend((account, k, p, r / mean) for k, p, r in found)

    def block(at: datetime) -> tuple[bool, int]:
        return at.weekday() >= 5, at.hour // 4

    recommended = 0
    said: dict[tuple[str, str], list[str]] = {}
    for insight in seeded.api.list_all("/insights", kind="best_time"):
        key = (insight["platform"], insight["account_external_id"])
        said.setdefault(key, []).append(insight["body"])
    # the connected accounts and the platform's ids of them (the publishing store's)
    external = dict(
        seeded.server.store.run(
            lambda cur: cur.execute(
                "SELECT id, external_id FROM accounts WHERE workspace_id = ?", [workspace_id]
            ).fetchall()
        )
    )
    api_accounts = [
        {**a, "external_id": external[a["id"]]} for a in seeded.api.list_all("/accounts")
    ]
    assert api_accounts
    for acc in api_accounts:
        body = seeded.api.ok(
            seeded.api.get("/insights/best-times", params={"account_id": acc["id"]})
        )
        mine = [
            (p, i) for a, k, p, i in indexed.get(acc["platform"], []) if a == acc["external_id"]
        ]
        if not mine:
            assert body["recommendation"] is None
            assert body["blocks"] == []
            continue
        s = statistics.stdev(i for _, i in mine)
        pattern: dict[tuple[bool, int], list[float]] = {}
        for _, _, p, i in indexed[acc["platform"]]:
            pattern.setdefault(block(p), []).append(i)
        slots: list[dict[str, Any]] = []
        blocks: dict[tuple[bool, int], float] = {}
        for key in sorted({block(p) for p, _ in mine}):
            values = [i for p, i in mine if block(p) == key]
            every = pattern[key]
            prior = (sum(every) + K) / (len(every) + K)
            est, w = _shrunk(len(values), statistics.fmean(values), prior)
            blocks[key] = est
            slots.append({"level": "block", "key": key, "n": len(values), "est": est, "w": w})
        for cell in sorted({(p.weekday(), p.hour) for p, _ in mine}):
            values = [i for p, i in mine if (p.weekday(), p.hour) == cell]
            at = next(p for p, _ in mine if (p.weekday(), p.hour) == cell)
            est, w = _shrunk(len(values), statistics.fmean(values), blocks[block(at)])
            slots.append({"level": "cell", "key": cell, "n": len(values), "est": est, "w": w})
        for slot in slots:
            half = Z * slot["w"] * s / math.sqrt(slot["n"])
            slot["low"], slot["high"] = max(0.0, slot["est"] - half), slot["est"] + half
            excludes = slot["low"] > 1 or slot["high"] < 1
            slot["confidence"] = (
                "high"
                if slot["n"] >= HIGH and excludes
                else "medium"
                if slot["n"] >= MEDIUM
                else "low"
            )
        got = {
            ("block", (b["day_type"] == "weekend", b["start_hour"] // 4)): b for b in body["blocks"]
        }
        assert len(got) == sum(1 for x in slots if x["level"] == "block")
        for slot in slots:
            if slot["level"] != "block":
                continue
            b = got[("block", slot["key"])]
            assert (b["posts"], b["confidence"]) == (slot["n"], slot["confidence"])
            assert b["shrunk_index"] == pytest.approx(slot["est"])
            assert (b["ci_low"], b["ci_high"]) == pytest.approx((slot["low"], slot["high"]))
        # the recommendation: medium confidence or more first, a cell before a block, then
        # the highest estimate; never below average, never on fewer than 3 posts
        candidates = [
            x
            for x in slots
            if x["est"] > 1 and x["n"] >= 3 and (x["level"] == "block" or x["confidence"] != "low")
        ]
        candidates.sort(key=lambda x: (x["confidence"] == "low", x["level"] != "cell", -x["est"]))
        rec = body["recommendation"]
        if not candidates:
            assert rec is None
            assert (acc["platform"], acc["external_id"]) not in said
            continue
        best = candidates[0]
        assert rec["resolution"] == ("hour" if best["level"] == "cell" else "block")
        assert rec["posts"] == best["n"]
        assert rec["shrunk_index"] == pytest.approx(best["est"])
        assert (rec["ci_low"], rec["ci_high"]) == pytest.approx((best["low"], best["high"]))
        assert rec["ci_low"] < rec["shrunk_index"] < rec["ci_high"]
        assert rec["posts_needed"]["medium"] == max(0, MEDIUM - best["n"])
        # the same words in /insights, for UTC: one fact, one number
        assert said[(acc["platform"], acc["external_id"])] == [rec["text"]]
        recommended += 1
    # before: no account got one (no weekday x hour cell had 3 posts and an interval above 1)
    assert recommended >= 1

    # the zone moves every post's weekday and hour (the blocks follow New York's clock)
    x = next(a for a in api_accounts if a["platform"] == "x")
    local = seeded.api.ok(
        seeded.api.get(
            "/insights/best-times", params={"account_id": x["id"], "tz": "america/new_york"}
        )
    )
    assert local["tz"] == "America/New_York"
    zone = ZoneInfo("America/New_York")
    moved = [
        p.replace(tzinfo=UTC).astimezone(zone)
        for a, _, p, _ in indexed["x"]
        if a == x["external_id"]
    ]
    assert {(b["day_type"] == "weekend", b["start_hour"], b["posts"]) for b in local["blocks"]} == {
        (key[0], key[1] * 4, sum(1 for p in moved if block(p) == key))
        for key in {block(p) for p in moved}
    }
    assert sum(c["posts"] for c in local["grid"]) == len(moved)
    bad = seeded.api.get("/insights/best-times", params={"account_id": x["id"], "tz": "Mars/Base"})
    assert bad.status_code == 400
    assert bad.json()["error"]["details"][0]["field"] == "tz"


# -- anomalies: every day judged (issue 51, point 4) -----------------------------------------------

ENGAGEMENT_COUNTERS = ("likes", "comments", "shares", "saves", "clicks")


def _own_daily_engagements(seeded: Seeded) -> dict[tuple[str, str], dict[Any, int]]:
    """Per own account, each UTC day's engagement growth, from the raw readings alone.

    Growth is each counter above its running peak; a post's first reading counts only when
    it was published that UTC day or within the hour before (else it is a first-seen total).
    """
    ws = seeded.seed.workspace_id
    posts = {
        (platform, post): (account, published)
        for platform, post, account, published in _raw(
            seeded,
            "SELECT platform, external_id, arg_max(account_external_id, captured_at),"
            " arg_max(published_at, captured_at) FROM raw_posts"
            " WHERE workspace_id = ? AND kind = 'own' GROUP BY ALL",
            [ws],
        )
    }
    readings = _raw(
        seeded,
        "SELECT platform, external_id, captured_at, likes, comments, shares, saves, clicks"
        " FROM raw_engagement_snapshots WHERE workspace_id = ?"
        " QUALIFY row_number() OVER (PARTITION BY platform, external_id, captured_at"
        "   ORDER BY ingested_at DESC) = 1"
        " ORDER BY platform, external_id, captured_at",
        [ws],
    )
    days: dict[tuple[str, str], dict[Any, int]] = {}
    for (platform, post), rows in itertools.groupby(readings, key=lambda r: (r[0], r[1])):
        if (platform, post) not in posts:
            continue
        account, published = posts[(platform, post)]
        per_day = days.setdefault((platform, account), {})
        peak: list[int] | None = None
        for _, _, at, *counters in rows:
            values = [c or 0 for c in counters]
            if peak is None:
                grew = published < at and (
                    published.date() == at.date() or at - published <= timedelta(hours=1)
                )
                gain = sum(values) if grew else 0
                peak = values
            else:
                gain = sum(max(v - p, 0) for v, p in zip(values, peak, strict=True))
                peak = [max(v, p) for v, p in zip(values, peak, strict=True)]
            per_day[at.date()] = per_day.get(at.date(), 0) + gain
    return days


def _robust_z(value: float, baseline: list[float]) -> tuple[float, float, float] | None:
    """The robust z of docs/api/analytics.md (MAD, else the mean absolute deviation)."""
    med = statistics.median(baseline)
    mad = statistics.median(abs(v - med) for v in baseline)
    if mad > 0:
        return 0.6745 * (value - med) / mad, med, mad
    mean_ad = statistics.fmean(abs(v - med) for v in baseline)
    return ((value - med) / (1.253314 * mean_ad), med, mad) if mean_ad > 0 else None


def test_every_day_is_judged_and_a_spike_named_with_its_day(seeded: Seeded) -> None:
    """A day's spike is an anomaly whatever followed it, with its figure, median, multiple."""
    days = _own_daily_engagements(seeded)
    (newest,) = _raw(
        seeded,
        "SELECT max(captured_at) FROM raw_engagement_snapshots WHERE workspace_id = ?",
        [seeded.seed.workspace_id],
    )[0]
    last = newest.date()
    expected = {}
    for (platform, account), per_day in days.items():
        for day, value in per_day.items():
            if not 0 <= (last - day).days < 28:
                continue
            baseline = [float(v) for d, v in per_day.items() if 0 < (day - d).days <= 28]
            judged = _robust_z(float(value), baseline) if len(baseline) >= 7 else None
            if judged is not None and abs(judged[0]) >= 3.5:
                expected[(platform, account, day.isoformat())] = (float(value), *judged)
    # the own accounts' (competitors' days are judged too, against their own readings)
    found = {
        (i["platform"], i["account_external_id"], i["evidence"]["day"]): i
        for i in seeded.api.list_all("/insights", kind="anomaly")
        if i["evidence"]["metric"] == "engagements"
        and (i["platform"], i["account_external_id"]) in days
    }
    assert set(found) == set(expected)
    for key, (figure, z, med, mad) in expected.items():
        evidence = found[key]["evidence"]
        assert (evidence["value"], evidence["baseline_median"]) == (figure, med)
        assert (evidence["baseline_mad"], evidence["robust_z"]) == pytest.approx((mad, z))
        # no multiple of a median day of 0 (a quiet account's baseline): null, not infinite
        assert evidence["multiple"] == (None if med == 0 else pytest.approx(figure / med))
        assert key[2] in found[key]["title"]
        assert key[2] in found[key]["body"]
    # A spike days before the newest is flagged (before, only the newest day was judged).
    # Which account's day it is depends on the day the suite runs; the world has one in
    # every 28 days (its viral posts).
    earlier = [
        found[key]
        for key, (_, z, _, _) in expected.items()
        if key[2] < last.isoformat() and z >= 3.5
    ]
    assert earlier, expected
    spike = max(earlier, key=lambda i: i["evidence"]["robust_z"])
    assert spike["evidence"]["direction"] == "spike"
    said = spike["evidence"]
    print(
        f"{spike['platform']} {said['day']}: {said['value']:,.0f} (robust z {said['robust_z']:.1f})"
    )


# -- rates of the same posts, one number per fact (docs/api/analytics.md, "engagement_rate") ----

_EXPOSURE = ("impressions", "views")
_ENGAGING = ("likes", "comments", "shares", "saves", "clicks")


def _post_growth(seeded: Seeded) -> list[dict[str, Any]]:
    """Each post's growth and lifetime totals over all its raw readings."""
    # growth: each counter's peak, less its first reading where that was a first-seen total
    # (docs: *First sighting*); lifetime: the peaks
    counters = (*_EXPOSURE, *_ENGAGING)
    peaks = ", ".join(
        f"max(coalesce({c}, 0)) AS peak_{c}, arg_min(coalesce({c}, 0), captured_at) AS first_{c}"
        for c in counters
    )
    found = _raw(
        seeded,
        f"WITH r AS (SELECT platform, external_id, min(captured_at) AS first_at, {peaks}"  # noqa: S608
        "   FROM raw_engagement_snapshots WHERE workspace_id = ? GROUP BY ALL),"
        " d AS (SELECT platform, external_id, arg_max(account_external_id, captured_at) AS a,"
        "   arg_max(kind, captured_at) AS kind, arg_max(published_at, captured_at) AS pub"
        "   FROM raw_posts WHERE workspace_id = ? GROUP BY ALL)"
        " SELECT d.platform, d.a, d.kind, d.pub, r.* EXCLUDE (platform, external_id)"
        " FROM r JOIN d USING (platform, external_id)",
        [seeded.seed.workspace_id, seeded.seed.workspace_id],
    )
    posts = []
    for platform, account, kind, published, first_at, *values in found:
        # growth from its first reading when published that UTC day, or the hour before
        grew = published < first_at and (
            published.date() == first_at.date() or first_at - published <= timedelta(hours=1)
        )
        by = dict(zip(counters, zip(values[::2], values[1::2], strict=True), strict=True))
        growth = {c: peak - (0 if grew else first) for c, (peak, first) in by.items()}
        lifetime = {c: peak for c, (peak, _) in by.items()}
        posts.append(
            {
                "platform": platform,
                "account": account,
                "kind": kind,
                "growth": {**growth, "engagements": sum(growth[c] for c in _ENGAGING)},
                "lifetime": {**lifetime, "engagements": sum(lifetime[c] for c in _ENGAGING)},
            }
        )
    return posts


def _same_posts_rate(posts: list[dict[str, int]]) -> tuple[float | None, str | None, float]:
    """The rate of the posts with impressions (else views), its basis and the share left out."""
    for basis in _EXPOSURE:
        denominator = sum(p[basis] for p in posts)
        if denominator:
            covered = sum(p["engagements"] for p in posts if p[basis] > 0)
            engagements = sum(p["engagements"] for p in posts)
            return covered / denominator, basis, (engagements - covered) / engagements
    return None, None, 0.0


def test_the_headline_rate_divides_the_engagements_of_the_posts_it_counts(seeded: Seeded) -> None:
    """`make up`'s overview: a rate of the posts with impressions, saying what it leaves out."""
    workspace_id = seeded.seed.workspace_id
    ((first, last),) = _raw(
        seeded,
        "SELECT min(captured_at), max(captured_at) FROM raw_engagement_snapshots"
        " WHERE workspace_id = ?",
        [workspace_id],
    )
    start = first.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
    end = last.replace(minute=0, second=0, microsecond=0, tzinfo=UTC) + timedelta(hours=1)
    answer = seeded.api.ok(
        seeded.api.get(
            "/analytics/unified",
            params={"from": start.isoformat(), "to": end.isoformat(), "group_by": "total"},
        )
    )
    own = [p for p in _post_growth(seeded) if p["kind"] == "own"]
    growth = [{"platform": p["platform"], **p["growth"]} for p in own]
    totals = answer["totals"]
    assert (totals["engagements"], totals["impressions"]) == (
        sum(p["engagements"] for p in growth),
        sum(p["impressions"] for p in growth),
    )
    rate, basis, left_out = _same_posts_rate(growth)
    covered = sorted({p["platform"] for p in growth if p["impressions"] > 0})
    excluded = sorted({p["platform"] for p in growth if p["engagements"]} - set(covered))
    assert (totals["engagement_rate"], totals["engagement_rate_basis"]) == (
        pytest.approx(rate),
        basis,
    )
    coverage = totals["engagement_rate_coverage"]
    assert coverage["excluded_engagements_share"] == pytest.approx(left_out)
    assert (coverage["platforms"], coverage["excluded_platforms"]) == (covered, excluded)
    # Views-only and unmeasured platforms are left out; their rows say their own basis.
    assert {"bluesky", "threads", "tiktok", "youtube"} <= set(excluded)
    for row in answer["by_platform"]:
        mine = [p for p in growth if p["platform"] == row["platform"]]
        expected = _same_posts_rate(mine)
        assert (row["engagement_rate"], row["engagement_rate_basis"]) == (
            pytest.approx(expected[0]) if expected[0] is not None else None,
            expected[1],
        ), row["platform"]
    everything = sum(p["engagements"] for p in growth) / sum(p["impressions"] for p in growth)
    print(
        f"headline {rate:.2%} of {basis} (all engagements / those impressions: {everything:.2%});"
        f" {len(covered)} of {len(covered) + len(excluded)} platforms, {left_out:.1%} left out"
    )


def test_a_competitor_and_our_rate_are_one_number_wherever_shown(seeded: Seeded) -> None:
    """A measured rate is one number in /competitors, its insight and the unified answer."""
    # estimates are said as such, an unmeasured rate is null, competitors come in rank order
    api = seeded.api
    posts = _post_growth(seeded)
    handles = dict(
        _raw(
            seeded,
            "SELECT lower(ltrim(arg_max(handle, captured_at), '@')), external_id"
            " FROM raw_account_snapshots"
            " WHERE workspace_id = ? GROUP BY external_id",
            [seeded.seed.workspace_id],
        )
    )
    competitors = api.ok(api.get("/competitors", params={"limit": 50}))["items"]
    ranks = [c["ranking"]["rank"] for c in competitors if c["ranking"]]
    assert ranks == sorted(ranks)
    assert len(ranks) == len(competitors) == 3
    insights = {i["account_external_id"]: i for i in api.list_all("/insights", kind="benchmark")}
    assert insights
    for c in competitors:
        ranking, bench = c["ranking"], c["benchmark"]
        theirs = [
            p["lifetime"]
            for p in posts
            if p["kind"] == "competitor"
            and p["account"] == handles[c["handle"].lower().lstrip("@")]
        ]
        # every reading is inside its 28-day window: its lifetime totals
        rate, basis, _ = _same_posts_rate(theirs)
        assert ranking["engagement_rate"] == (None if rate is None else pytest.approx(rate))
        assert bench["their_engagement_rate"] == ranking["engagement_rate"]
        assert (ranking["engagement_rate_basis"], bench["their_engagement_rate_basis"]) == (
            basis,
            basis,
        )
        estimate = ranking["engagement_rate_estimate"]
        if rate is None:
            assert (estimate, ranking["engagement_rate_shrunk"]) == (None, None)
        else:
            n = ranking["engagement_rate_coverage"]["posts"]
            assert estimate["weight"] == pytest.approx(n / (n + 10))
            assert estimate["value"] == pytest.approx(
                estimate["weight"] * rate + (1 - estimate["weight"]) * estimate["prior"]
            )
        # ours: the unified answer for the platform over the window it names
        window = bench["our_window"]
        unified = api.ok(
            api.get("/analytics/unified", params={**window, "platform": c["platform"]})
        )["totals"]
        assert bench["our_engagement_rate"] == unified["engagement_rate"]
        assert bench["our_engagement_rate_coverage"] == unified["engagement_rate_coverage"]
        insight = insights.get(ranking["account_external_id"])
        if insight is None:
            assert rate is None or bench["ratio"] is None
            continue
        evidence = insight["evidence"]
        assert evidence["competitor_rate"] == bench["their_engagement_rate"]
        assert evidence["competitor_rate_estimate"] == estimate
        assert evidence["your_rate"] == bench["our_engagement_rate"]
        assert evidence["window"] == window
        assert f"{bench['their_engagement_rate']:.2%}" in insight["body"]
        assert f"{bench['our_engagement_rate']:.2%}" in insight["body"]
        print(
            f"{c['handle']}: theirs {rate:.2%} (estimate {estimate['value']:.2%}),"
            f" ours {bench['our_engagement_rate']:.2%}, rank {ranking['rank']}"
        )
    # Bluesky reports neither impressions nor views: its creators' rates are not measured,
    # and no prior stands in for them.
    bluesky = api.ok(api.get("/creators", params={"platform": "bluesky", "limit": 100}))["items"]
    assert bluesky
    assert not any(p["lifetime"][b] for p in posts if p["platform"] == "bluesky" for b in _EXPOSURE)
    assert {
        (c["engagement_rate"], c["engagement_rate_estimate"], c["engagement_rate_shrunk"])
        for c in bluesky
    } == {(None, None, None)}


def test_captures_are_named_by_the_platform_api_they_read(seeded: Seeded) -> None:
    """Provenance of `make up`'s overview: one capture stream per platform, its readings."""
    workspace_id = seeded.seed.workspace_id
    ((last,),) = _raw(
        seeded,
        "SELECT max(captured_at) FROM raw_engagement_snapshots WHERE workspace_id = ?",
        [workspace_id],
    )
    end = last.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    start = end - timedelta(days=7)
    answer = seeded.api.ok(
        seeded.api.get(
            "/analytics/unified",
            params={
                "from": f"{start.isoformat()}Z",
                "to": f"{end.isoformat()}Z",
                "granularity": "hour",  # whole hours: the range is the window, not widened
                "limit": 1,
            },
        )
    )
    window = answer["provenance"]["window"]
    assert (window["from"], window["to"]) == (
        f"{start.isoformat(timespec='milliseconds')}Z",
        f"{end.isoformat(timespec='milliseconds')}Z",
    )
    # the store's raw readings of own posts in the range, per platform (posts as read)
    expected = {
        platform: (n, first, newest)
        for platform, n, first, newest in _raw(
            seeded,
            "SELECT s.platform, count(*), min(s.captured_at), max(s.captured_at)"
            " FROM raw_engagement_snapshots s"
            " SEMI JOIN (SELECT platform, external_id FROM raw_posts"
            "            WHERE workspace_id = ? AND kind = 'own') p"
            "   ON p.platform = s.platform AND p.external_id = s.external_id"
            " WHERE s.workspace_id = ? AND s.captured_at >= ? AND s.captured_at < ?"
            " GROUP BY ALL",
            [workspace_id, workspace_id, start, end],
        )
    }
    sources = answer["provenance"]["sources"]
    assert {s["platform"] for s in sources} == set(SUPPORTED) == set(expected)
    for s in sources:
        n, first, newest = expected[s["platform"]]
        assert s["kind"] == "capture"
        assert s["import_id"] is None
        # the platform API the connector read: the simulator's, on loopback, no credentials
        assert s["origin"].startswith("http://127.0.0.1:")
        assert s["origin"].endswith(f"/{s['platform']}")
        assert (s["readings"], s["first_read_at"], s["last_read_at"]) == (
            n,
            f"{first.isoformat(timespec='milliseconds')}Z",
            f"{newest.isoformat(timespec='milliseconds')}Z",
        )
    assert answer["provenance"]["snapshot_id"] > 0
