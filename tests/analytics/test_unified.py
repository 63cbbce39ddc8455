"""GET /analytics/unified over seeded marts: totals against SQL, rates by hand, paging, limits."""

from __future__ import annotations

import time as time_module
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from tests.analytics.seed import PLATFORMS, direct_sums, seed_unified, today
from tests.support import LiveServer, Tenant, assert_error, start_server

COUNTERS = (
    "impressions",
    "reach",
    "views",
    "likes",
    "comments",
    "shares",
    "saves",
    "clicks",
    "engagements",
)


def iso(day: date, hour: int = 0) -> str:
    return datetime.combine(day, time(hour), tzinfo=UTC).isoformat().replace("+00:00", "Z")


def test_totals_equal_sql_sums_and_rate_is_recomputed(server: LiveServer, tenant: Tenant) -> None:
    seeded = seed_unified(server, tenant)
    first, last = today() - timedelta(days=29), today()
    params = {"from": iso(first), "to": iso(last + timedelta(days=1))}
    data = tenant.api.ok(tenant.api.get("/analytics/unified", params=params))

    expected = direct_sums(server, tenant.workspace_id, first, last)
    totals = data["totals"]
    for name in COUNTERS:
        assert totals[name] == expected[name], name
    # By hand: engagements over impressions of the sums, never a mean of daily ratios.
    assert totals["engagement_rate"] == expected["engagements"] / expected["impressions"]
    assert totals["engagement_rate_basis"] == "impressions"
    assert totals["active_posts"] == 6
    # Followers: the last day's count per account, summed; growth: 10 a day for 30 days.
    last_offset = len(seeded.days) - 1
    assert totals["followers"] == sum(1000 * (k + 1) + 10 * last_offset for k in range(3))
    assert totals["follower_growth"] == 3 * 30 * 10
    published = sum(1 for i, d in enumerate(seeded.days) if d >= first and i % 3 == 0)
    assert totals["posts"] == 3 * published

    by_platform = {row["platform"]: row for row in data["by_platform"]}
    assert sorted(by_platform) == sorted(PLATFORMS)
    for name in COUNTERS:
        assert sum(row[name] for row in by_platform.values()) == totals[name]
    youtube = by_platform["youtube"]
    assert youtube["impressions"] == 0
    assert youtube["engagement_rate_basis"] == "views"
    assert youtube["engagement_rate"] == youtube["engagements"] / youtube["views"]

    assert data["range"] == {
        "from": params["from"].replace("Z", ".000Z"),
        "to": params["to"].replace("Z", ".000Z"),
        "first_bucket": iso(first).replace("Z", ".000Z"),
        "last_bucket": iso(last).replace("Z", ".000Z"),
    }
    assert data["granularity"] == "day"
    snap = data["snapshot"]
    assert snap["computed_at"] is not None
    assert snap["data_through"] is not None
    assert snap["freshness_seconds"] >= 3600
    assert snap["partitions"] >= 30


def test_series_pages_without_duplicates_and_totals_ignore_the_page(
    server: LiveServer, tenant: Tenant
) -> None:
    seed_unified(server, tenant)
    first = today() - timedelta(days=9)
    params: dict[str, Any] = {"from": iso(first), "to": iso(today() + timedelta(days=1))}
    seen: list[tuple[str, str, str]] = []
    totals = None
    cursor = None
    pages = 0
    summed = dict.fromkeys(COUNTERS, 0)
    while True:
        query = dict(params, limit=7, **({"cursor": cursor} if cursor else {}))
        data = tenant.api.ok(tenant.api.get("/analytics/unified", params=query))
        pages += 1
        totals = totals or data["totals"]
        assert data["totals"] == totals
        for item in data["series"]["items"]:
            seen.append((item["bucket"], item["platform"], item["account_external_id"]))
            assert item["account_id"] == tenant.accounts[item["platform"]]
            for name in COUNTERS:
                summed[name] += item[name]
        cursor = data["series"]["pagination"]["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 10 * 3
    assert pages == 5
    assert seen == sorted(seen)
    assert totals is not None
    for name in COUNTERS:
        assert summed[name] == totals[name]


def test_filters_by_platform_and_account(server: LiveServer, tenant: Tenant) -> None:
    seed_unified(server, tenant)
    everything = tenant.api.ok(tenant.api.get("/analytics/unified"))
    x = tenant.api.ok(tenant.api.get("/analytics/unified", params={"platform": "x"}))
    assert [row["platform"] for row in x["by_platform"]] == ["x"]
    x_all = next(r for r in everything["by_platform"] if r["platform"] == "x")
    assert x["totals"]["engagements"] == x_all["engagements"]
    by_account = tenant.api.ok(
        tenant.api.get("/analytics/unified", params={"account_id": tenant.accounts["instagram"]})
    )
    assert [row["platform"] for row in by_account["by_platform"]] == ["instagram"]
    # The default range is the last 28 days: 28 or 29 day buckets, by the hour of day.
    assert {item["platform"] for item in everything["series"]["items"]} <= set(PLATFORMS)


def test_hourly_reads_the_hourly_mart(server: LiveServer, tenant: Tenant) -> None:
    seed_unified(server, tenant)
    first = today() - timedelta(days=2)
    params = {"from": iso(first), "to": iso(today() + timedelta(days=1)), "granularity": "hour"}
    data = tenant.api.ok(tenant.api.get("/analytics/unified", params={**params, "limit": 100}))
    expected = direct_sums(server, tenant.workspace_id, first, today(), "mart_post_hourly")
    for name in COUNTERS:
        assert data["totals"][name] == expected[name]
    items = data["series"]["items"]
    assert len(items) == 3 * 8 * 3
    assert all(item["bucket"].endswith(":00:00.000Z") for item in items)
    assert all(item["followers"] is None for item in items)
    # A range that starts mid-hour covers that whole hour; one that ends mid-hour stops there.
    narrow = tenant.api.ok(
        tenant.api.get(
            "/analytics/unified",
            params={
                "from": iso(first, 3).replace(":00:00Z", ":30:00Z"),
                "to": iso(first, 6).replace(":00:00Z", ":00:01Z"),
                "granularity": "hour",
            },
        )
    )
    assert {i["bucket"] for i in narrow["series"]["items"]} == {
        iso(first, 3).replace("Z", ".000Z"),
        iso(first, 6).replace("Z", ".000Z"),
    }


def test_validation(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    naive = assert_error(
        api.get("/analytics/unified", params={"from": "2026-01-01T00:00:00"}),
        400,
        "VALIDATION_ERROR",
    )
    assert naive["details"][0]["field"] == "from"
    assert naive["details"][0]["issue"] == "offset_required"

    backwards = assert_error(
        api.get(
            "/analytics/unified",
            params={"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"},
        ),
        400,
        "VALIDATION_ERROR",
    )
    assert backwards["details"][0] == {
        "field": "from",
        "issue": "invalid_range",
        "message": backwards["details"][0]["message"],
    }
    same = assert_error(
        api.get(
            "/analytics/unified",
            params={"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:00:00+00:00"},
        ),
        400,
        "VALIDATION_ERROR",
    )
    assert same["details"][0]["issue"] == "invalid_range"

    hourly = assert_error(
        api.get(
            "/analytics/unified",
            params={
                "from": "2026-01-01T00:00:00Z",
                "to": "2026-01-31T00:00:00Z",
                "granularity": "hour",
            },
        ),
        400,
        "VALIDATION_ERROR",
    )
    assert hourly["details"][0]["field"] == "granularity"
    assert hourly["details"][0]["issue"] == "range_too_long"

    long = assert_error(
        api.get(
            "/analytics/unified",
            params={"from": "2024-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"},
        ),
        400,
        "VALIDATION_ERROR",
    )
    assert long["details"][0]["issue"] == "range_too_long"

    bad = assert_error(
        api.get("/analytics/unified", params={"granularity": "week"}), 400, "VALIDATION_ERROR"
    )
    assert bad["details"][0]["field"] == "granularity"
    tampered = assert_error(
        api.get("/analytics/unified", params={"cursor": "bm90LWEtY3Vyc29y"}),
        400,
        "VALIDATION_ERROR",
    )
    assert tampered["details"][0]["field"] == "cursor"


def test_empty_marts_give_zeros_and_a_null_snapshot(tmp_path: Any) -> None:
    from murmur.settings import Settings
    from tests.support import new_tenant

    live = start_server(Settings(data_dir=tmp_path))
    try:
        tenant = new_tenant(live)
        data = tenant.api.ok(tenant.api.get("/analytics/unified"))
        assert all(data["totals"][name] == 0 for name in COUNTERS)
        assert data["totals"]["engagement_rate"] is None
        assert data["totals"]["followers"] is None
        assert data["by_platform"] == []
        assert data["series"]["items"] == []
        assert data["snapshot"] == {
            "computed_at": None,
            "data_through": None,
            "freshness_seconds": None,
            "partitions": 0,
            "marts": ["mart_post_daily", "mart_account_daily"],
        }
        for path in ("/viral-trends", "/insights", "/creators", "/competitors"):
            body = tenant.api.ok(tenant.api.get(path))
            assert body["items"] == []
            assert body["snapshot"]["computed_at"] is None
        grid = tenant.api.ok(
            tenant.api.get("/insights/best-times", params={"account_id": tenant.accounts["x"]})
        )
        assert len(grid["grid"]) == 168
        assert grid["best"] == []
        tenant.api.close()
    finally:
        live.stop()


def test_a_polling_dashboard_gets_304_while_only_freshness_moves(
    server: LiveServer, tenant: Tenant
) -> None:
    seed_unified(server, tenant)
    first = tenant.api.get("/analytics/unified")
    etag = first.headers["ETag"]
    # freshness_seconds is measured from now; a second later the data is still the same.
    time_module.sleep(1.1)
    later = tenant.api.get("/analytics/unified")
    was, now = first.json()["data"], later.json()["data"]
    moved = datetime.fromisoformat(now["range"]["to"]) - datetime.fromisoformat(was["range"]["to"])
    assert moved >= timedelta(seconds=1)  # the default range ends now, redrawn each second
    assert moved == datetime.fromisoformat(now["range"]["from"]) - datetime.fromisoformat(
        was["range"]["from"]
    )
    # Redrawn from one clock reading: the range ends where the freshness is measured.
    through = datetime.fromisoformat(now["snapshot"]["data_through"])
    age = (datetime.fromisoformat(now["range"]["to"]) - through).total_seconds()
    assert abs(now["snapshot"]["freshness_seconds"] - age) < 0.001
    for body in (was, now):
        del body["snapshot"]["freshness_seconds"], body["range"]["from"], body["range"]["to"]
    assert now == was
    assert later.headers["ETag"] == etag
    assert tenant.api.get("/analytics/unified", headers={"If-None-Match": etag}).status_code == 304

    # A pipeline run rewrites a day of the mart and its snapshot row: a new answer, a new tag.
    def rerun(cur: Any) -> None:
        cur.execute(
            "UPDATE mart_post_daily SET impressions = impressions + 7"
            " WHERE workspace_id = ? AND day = ?",
            [tenant.workspace_id, today()],
        )
        cur.execute("UPDATE mart_snapshots SET computed_at = now()::TIMESTAMP")

    server.lake.run(rerun)
    changed = tenant.api.get("/analytics/unified", headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["ETag"] != etag
