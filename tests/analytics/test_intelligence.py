"""Viral trends, insights, best times, creators, competitors and a post's analytics."""

from __future__ import annotations

import math
import statistics
from datetime import UTC, datetime, time, timedelta

import pytest

from domain.schemas import iso_z
from tests.analytics.seed import (
    RANKING_PRIOR,
    RANKING_PRIOR_POSTS,
    seed_insights,
    seed_post_rows,
    seed_rankings,
    seed_trends,
    seed_unified,
    today,
)
from tests.support import Api, LiveServer, Tenant, assert_error, iter_pages

READS = [
    "/analytics/unified",
    "/viral-trends",
    "/insights",
    "/creators",
    "/competitors",
]


def test_viral_trends_order_filters_and_pages(server: LiveServer, tenant: Tenant) -> None:
    seed_trends(server, tenant)
    api = tenant.api
    data = api.ok(api.get("/viral-trends"))
    entities = [(t["score"], t["entity"]) for t in data["items"]]
    # The newest judged window: emerging and peaking by score (ties by entity), then what
    # is declining, however high its score; the older windows are not listed.
    assert entities == [
        (9.5, "#launch"),
        (7.0, "#alpha"),
        (7.0, "#beta"),
        (5.5, "product launch"),
        (2.0, "ig-post-9"),
        (3.2, "x-post-0"),
    ]
    assert [t["status"] for t in data["items"]][-1] == "declining"
    assert data["items"][0]["evidence"] == {"robust_z": 9.5, "window_hours": 6}
    # Each names what trends: a tag or topic as itself; a post the pipeline never described
    # by its platform id (tests/analytics/test_labels.py: described ones).
    assert [(t["label"], t["url"], t["thumbnail_url"]) for t in data["items"]] == [
        ("#launch", None, None),
        ("#alpha", None, None),
        ("#beta", None, None),
        ("product launch", None, None),
        ("ig-post-9", None, None),
        ("x-post-0", None, None),
    ]
    assert data["snapshot"]["computed_at"] is not None

    paged = [t["entity"] for page in iter_pages(api, "/viral-trends", 2) for t in page["items"]]
    assert paged == [e for _, e in entities]

    hashtags = api.ok(api.get("/viral-trends", params={"entity_type": "hashtag"}))
    assert [t["entity"] for t in hashtags["items"]] == ["#launch", "#alpha", "#beta"]
    emerging = api.ok(api.get("/viral-trends", params={"status": "emerging", "platform": "x"}))
    assert [t["entity"] for t in emerging["items"]] == ["#alpha"]
    strong = api.ok(api.get("/viral-trends", params={"min_score": 6}))
    assert len(strong["items"]) == 3
    bad = assert_error(api.get("/viral-trends", params={"status": "hot"}), 400, "VALIDATION_ERROR")
    assert bad["details"][0]["field"] == "status"

    # The day before's judged window, asked for by its UTC day (its end's last instant)
    newest = datetime.fromisoformat(data["items"][0]["window_end"])
    before = (newest - timedelta(days=1, microseconds=1)).date().isoformat()
    then = api.ok(api.get("/viral-trends", params={"day": before}))
    assert [(t["entity"], t["status"]) for t in then["items"]] == [
        ("x-post-0", "emerging"),
        ("#alpha", "declining"),
    ]
    assert {datetime.fromisoformat(t["window_end"]) for t in then["items"]} == {
        newest - timedelta(days=1)
    }
    assert api.ok(api.get("/viral-trends", params={"day": "2001-01-01"}))["items"] == []
    bad = assert_error(api.get("/viral-trends", params={"day": "May 1"}), 400, "VALIDATION_ERROR")
    assert bad["details"][0]["field"] == "day"


def test_insights_and_best_times(server: LiveServer, tenant: Tenant, other_tenant: Tenant) -> None:
    seed_insights(server, tenant)
    api = tenant.api
    data = api.ok(api.get("/insights"))
    assert [i["score"] for i in data["items"]] == [0.9, 0.8, 0.7, 0.6, 0.6]
    assert len({i["id"] for i in data["items"]}) == 5
    assert data["snapshot"]["partitions"] >= 1
    pages = [i["id"] for p in iter_pages(api, "/insights", 2) for i in p["items"]]
    assert pages == [i["id"] for i in data["items"]]

    anomalies = api.ok(api.get("/insights", params={"kind": "anomaly"}))
    assert [i["title"] for i in anomalies["items"]] == ["Impressions spiked"]
    # An insight about an account names it (here by its id: no description of it yet); one
    # about neither a post nor an account names nothing.
    labels = {i["kind"]: i["label"] for i in data["items"]}
    assert labels["anomaly"] == "ext-x"
    assert labels["recommendation"] is None
    mine = api.ok(api.get("/insights", params={"account_id": tenant.accounts["x"]}))
    assert {i["kind"] for i in mine["items"]} == {"best_time", "anomaly", "benchmark"}
    assert_error(
        api.get("/insights", params={"account_id": other_tenant.accounts["x"]}), 404, "NOT_FOUND"
    )

    grid = api.ok(api.get("/insights/best-times", params={"account_id": tenant.accounts["x"]}))
    assert (grid["platform"], grid["tz"]) == ("x", "UTC")
    assert len(grid["grid"]) == 168
    # The seeded indices: 12 x 1.5 on Tuesdays 09h, 8 x 0.5 on Mondays 12h (no one else's on
    # the platform: its pattern is the account's own, shrunk toward 1.0)
    indices = [1.5] * 12 + [0.5] * 8
    s = statistics.stdev(indices)
    pattern = (12 * 1.5 + 5) / 17
    block = 12 / 17 * 1.5 + 5 / 17 * pattern  # weekdays 08-12, toward the pattern
    shrunk = 12 / 17 * 1.5 + 5 / 17 * block  # Tue 09h, toward its block
    half = 1.96 * 12 / 17 * s / math.sqrt(12)
    tuesday_nine = grid["grid"][1 * 24 + 9]
    assert tuesday_nine == {
        "weekday": 1,
        "hour": 9,
        "label": "Tue 09:00 UTC",
        "posts": 12,
        "raw_index": 1.5,
        "shrunk_index": pytest.approx(shrunk),
        "prior": pytest.approx(block),
        "weight": pytest.approx(12 / 17),
        "ci_low": pytest.approx(shrunk - half),
        "ci_high": pytest.approx(shrunk + half),
        "confidence": "medium",
    }
    assert grid["grid"][0]["confidence"] == "none"
    assert grid["grid"][0]["posts"] == 0
    assert [(c["weekday"], c["hour"]) for c in grid["best"]] == [(1, 9), (0, 12)]
    assert [(b["label"], b["posts"], b["prior_posts"]) for b in grid["blocks"]] == [
        ("Weekdays 08:00-12:00 UTC", 12, 12),
        ("Weekdays 12:00-16:00 UTC", 8, 8),
    ]
    # 12 posts support an hour: the cell is recommended, told apart from the average
    rec = grid["recommendation"]
    assert (rec["resolution"], rec["label"], rec["posts"]) == ("hour", "Tue 09:00 UTC", 12)
    assert rec["told_apart"] is True
    assert rec["posts_needed"]["medium"] == 0
    assert rec["text"].startswith("Post on Tuesdays at 09:00 UTC: 1.49x your average")
    # In Paris (UTC+1 in winter) the same posts are on Tuesdays at 10:00
    paris = api.ok(
        api.get(
            "/insights/best-times",
            params={"account_id": tenant.accounts["x"], "tz": "europe/paris"},
        )
    )
    assert paris["tz"] == "Europe/Paris"
    assert paris["grid"][1 * 24 + 10]["posts"] == 12
    assert paris["grid"][1 * 24 + 10]["label"] == "Tue 10:00 Europe/Paris"
    assert paris["recommendation"]["label"] == "Tue 10:00 Europe/Paris"
    bad = assert_error(
        api.get("/insights/best-times", params={"account_id": tenant.accounts["x"], "tz": "UTC+5"}),
        400,
        "VALIDATION_ERROR",
    )
    assert bad["details"][0] == {**bad["details"][0], "field": "tz", "issue": "unknown_time_zone"}
    assert_error(api.get("/insights/best-times"), 400, "VALIDATION_ERROR")
    assert_error(
        api.get("/insights/best-times", params={"account_id": other_tenant.accounts["x"]}),
        404,
        "NOT_FOUND",
    )


def test_creators_ranked_with_parts(server: LiveServer, tenant: Tenant) -> None:
    seed_rankings(server, tenant)
    api = tenant.api
    data = api.ok(api.get("/creators"))
    assert [c["handle"] for c in data["items"]] == ["alice", "bob", "carol", "dan", "erin"]
    # Not described by the pipeline: named by their handles, without link or picture.
    assert [c["label"] for c in data["items"]] == ["@alice", "@bob", "@carol", "@dan", "@erin"]
    assert {(c["url"], c["thumbnail_url"]) for c in data["items"]} == {(None, None)}
    alice, dan = data["items"][0], data["items"][3]
    assert {k: alice["parts"][k] for k in ("engagement", "growth", "reach")} == {
        "engagement": 0.055,
        "growth": 0.1,
        "reach": 900.0,
    }
    # Measured, and apart from it the estimate shrunk toward the group's mean, named so.
    assert (alice["engagement_rate"], alice["engagement_rate_basis"]) == (0.06, "impressions")
    assert alice["engagement_rate_estimate"] == {
        "value": 0.055,
        "prior": RANKING_PRIOR,
        "weight": 40 / (40 + RANKING_PRIOR_POSTS),
        "posts": 40,
        "prior_posts": RANKING_PRIOR_POSTS,
        "method": "shrunk_toward_group_mean",
    }
    # Not measured: no rate, and no estimate either (the mart's prior is not one of it).
    assert dan["engagement_rate"] is None
    assert dan["engagement_rate_estimate"] is None
    assert dan["engagement_rate_shrunk"] is None
    assert all(c["kind"] == "creator" for c in data["items"])
    paged = [c["handle"] for p in iter_pages(api, "/creators", 2) for c in p["items"]]
    assert paged == ["alice", "bob", "carol", "dan", "erin"]
    x = api.ok(api.get("/creators", params={"platform": "x"}))
    assert [c["rank"] for c in x["items"]] == [1, 3, 5]
    tech = api.ok(api.get("/creators", params={"category": "tech"}))
    assert [c["handle"] for c in tech["items"]] == ["alice", "carol"]


def test_competitors_track_list_benchmark_untrack(server: LiveServer, tenant: Tenant) -> None:
    seed_unified(server, tenant)
    seed_rankings(server, tenant)
    api = tenant.api
    created = api.ok(api.post("/competitors", json={"platform": "x", "handle": "@RivalCo"}), 201)
    assert created["id"].startswith("cmp_")
    assert created["handle"] == "RivalCo"
    assert created["ranking"]["rank"] == 1
    assert created["ranking"]["kind"] == "competitor"

    dup = assert_error(
        api.post("/competitors", json={"platform": "x", "handle": "rivalco"}), 409, "INVALID_STATE"
    )
    assert created["id"] in dup["message"]
    # The same handle on another platform is another account.
    other = api.ok(api.post("/competitors", json={"platform": "tiktok", "handle": "rivalco"}), 201)
    assert other["ranking"] is None
    assert (other["label"], other["url"]) == ("@rivalco", "https://www.tiktok.com/@rivalco")

    # The same Idempotency-Key replays the first outcome instead of tracking twice.
    key = "track-nobody-once"
    first = api.post(
        "/competitors", json={"platform": "x", "handle": "nobody"}, idempotency_key=key
    )
    again = api.post(
        "/competitors", json={"platform": "x", "handle": "nobody"}, idempotency_key=key
    )
    assert first.status_code == again.status_code == 201
    assert first.json()["data"] == again.json()["data"]

    # In rank order (RivalCo ranked 1), then the ones not ranked yet, newest first; paged.
    listed = api.ok(api.get("/competitors"))
    assert [c["handle"] for c in listed["items"]] == ["RivalCo", "nobody", "rivalco"]
    paged = [c["handle"] for p in iter_pages(api, "/competitors", 1) for c in p["items"]]
    assert paged == ["RivalCo", "nobody", "rivalco"]
    rival = listed["items"][0]
    bench = rival["benchmark"]
    # Ours: X's own rows of the 28 days to our newest day (today), by hand, and what the
    # unified answer gives for X over that window.
    ours = _own_rate(server, tenant.workspace_id, "x")
    assert bench["our_engagement_rate"] == pytest.approx(ours)
    window = bench["our_window"]
    assert window == {
        "from": iso_z(datetime.combine(today() - timedelta(days=27), time(), tzinfo=UTC)),
        "to": iso_z(datetime.combine(today() + timedelta(days=1), time(), tzinfo=UTC)),
    }
    unified = api.ok(api.get("/analytics/unified", params={**window, "platform": "x"}))
    assert bench["our_engagement_rate"] == unified["totals"]["engagement_rate"]
    assert bench["our_engagement_rate_coverage"] == unified["totals"]["engagement_rate_coverage"]
    # Theirs: the ranking's measured rate, never its estimate.
    assert bench["their_engagement_rate"] == 0.04
    assert bench["their_engagement_rate"] == rival["ranking"]["engagement_rate"]
    assert rival["ranking"]["engagement_rate_estimate"]["value"] == 0.039
    assert bench["ratio"] == pytest.approx(0.04 / ours)
    assert bench["their_followers"] == 20000
    assert bench["our_followers"] is not None

    removed = api.ok(api.delete(f"/competitors/{created['id']}"))
    assert removed == {"id": created["id"], "deleted": True}
    assert_error(api.delete(f"/competitors/{created['id']}"), 404, "NOT_FOUND")
    listed = api.ok(api.get("/competitors"))
    assert [c["handle"] for c in listed["items"]] == ["nobody", "rivalco"]
    assert listed["items"][1]["benchmark"]["their_engagement_rate"] is None
    # Untracked, it may be tracked again.
    api.ok(api.post("/competitors", json={"platform": "x", "handle": "RivalCo"}), 201)

    bad = assert_error(
        api.post("/competitors", json={"platform": "myspace", "handle": "x"}),
        400,
        "VALIDATION_ERROR",
    )
    assert bad["details"][0]["field"] == "platform"
    empty = assert_error(
        api.post("/competitors", json={"platform": "x", "handle": "@"}), 400, "VALIDATION_ERROR"
    )
    assert empty["details"][0]["field"] == "handle"


def test_post_analytics(server: LiveServer, tenant: Tenant, other_tenant: Tenant) -> None:
    api = tenant.api
    post = api.ok(
        api.post("/posts", json={"text": "Hello", "platforms": ["x", "linkedin"], "draft": True}),
        201,
    )
    post_id = post["post_id"]
    days = [today() - timedelta(days=i) for i in (2, 1, 0)]
    x_days = seed_post_rows(server, tenant, post_id, "x", days)

    data = api.ok(api.get(f"/posts/{post_id}/analytics"))
    assert data["post_id"] == post_id
    by_platform = {d["platform"]: d for d in data["destinations"]}
    assert set(by_platform) == {"x", "linkedin"}
    x = by_platform["x"]
    assert x["account_id"] == tenant.accounts["x"]
    assert [p["impressions"] for p in x["series"]] == [d["impressions"] for d in x_days]
    assert x["totals"]["engagements"] == sum(d["engagements"] for d in x_days)
    assert x["totals"]["engagement_rate"] == sum(d["engagements"] for d in x_days) / sum(
        d["impressions"] for d in x_days
    )
    assert by_platform["linkedin"]["series"] == []
    # Neither read from a platform yet: named by our own text.
    assert {d["label"] for d in data["destinations"]} == {"Hello"}
    assert by_platform["linkedin"]["totals"]["engagement_rate"] is None
    assert data["totals"] == x["totals"]
    assert set(data["snapshot"]) == {
        "computed_at",
        "data_through",
        "freshness_seconds",
        "partitions",
        "marts",
    }

    assert_error(other_tenant.api.get(f"/posts/{post_id}/analytics"), 404, "NOT_FOUND")
    assert_error(api.get("/posts/post_nope/analytics"), 404, "NOT_FOUND")


def test_auth_and_scopes(server: LiveServer, tenant: Tenant) -> None:
    anonymous = Api(server.base_url, None)
    wrong = tenant.key_with(server, scopes=["posts:read"])
    reader = tenant.key_with(server, scopes=["analytics:read"])
    try:
        paths = [*READS, "/posts/post_x/analytics"]
        best = f"/insights/best-times?account_id={tenant.accounts['x']}"
        for path in [*paths, best]:
            assert_error(anonymous.get(path), 401, "AUTH_REQUIRED")
            assert_error(wrong.get(path), 403, "SCOPE_FORBIDDEN")
        for path in READS:
            reader.ok(reader.get(path))
        body = {"platform": "x", "handle": "someone"}
        assert_error(anonymous.post("/competitors", json=body), 401, "AUTH_REQUIRED")
        # Tracking changes the workspace's configuration: it takes workspaces:write.
        assert_error(reader.post("/competitors", json=body), 403, "SCOPE_FORBIDDEN")
        assert_error(reader.delete("/competitors/cmp_x"), 403, "SCOPE_FORBIDDEN")
        assert_error(
            tenant.api.post("/competitors", json=body, headers={"Idempotency-Key": ""}),
            400,
            "IDEMPOTENCY_KEY_REQUIRED",
        )
    finally:
        for client in (anonymous, wrong, reader):
            client.close()


def _own_rate(server: LiveServer, workspace_id: str, platform: str) -> float:
    since = today() - timedelta(days=27)  # 28 days, today's included

    def work(cur: object) -> float:
        cur.execute(  # type: ignore[attr-defined]
            "SELECT sum(engagements) / sum(impressions) FROM mart_post_daily"
            " WHERE workspace_id = ? AND platform = ? AND kind = 'own' AND day >= ?",
            [workspace_id, platform, since],
        )
        return float(cur.fetchone()[0])  # type: ignore[attr-defined]

    result: float = server.lake.run(work)
    return result
