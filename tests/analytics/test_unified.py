"""GET /analytics/unified over seeded marts: totals against SQL, rates by hand, paging, limits."""

from __future__ import annotations

import time as time_module
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from api.app import BASE_PATH
from tests.analytics.seed import PLATFORMS, direct_sums, seed_unified, today
from tests.analytics.seed import UNIFIED_COUNTERS as COUNTERS
from tests.support import Api, LiveServer, Tenant, assert_error, start_server


def iso(day: date, hour: int = 0) -> str:
    return datetime.combine(day, time(hour), tzinfo=UTC).isoformat().replace("+00:00", "Z")


def iso_ms(day: date, hours: int = 0) -> str:
    """``day`` + ``hours`` as the API writes instants."""
    at = datetime.combine(day, time(), tzinfo=UTC) + timedelta(hours=hours)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_totals_equal_sql_sums_and_rate_is_recomputed(server: LiveServer, tenant: Tenant) -> None:
    seeded = seed_unified(server, tenant)
    first, last = today() - timedelta(days=29), today()
    params = {"from": iso(first), "to": iso(last + timedelta(days=1))}
    data = tenant.api.ok(tenant.api.get("/analytics/unified", params=params))

    expected = direct_sums(server, tenant.workspace_id, first, last)
    totals = data["totals"]
    for name in COUNTERS:
        assert totals[name] == expected[name], name
    # By hand: the engagements of the posts with impressions (X's and Instagram's: YouTube
    # reports views only) over their impressions, never all engagements over them, nor a
    # mean of daily ratios; the coverage says what is left out.
    ws = tenant.workspace_id
    covered = direct_sums(server, ws, first, last, platforms=("instagram", "x"))
    left_out = direct_sums(server, ws, first, last, platforms=("youtube",))
    assert totals["engagement_rate"] == covered["engagements"] / covered["impressions"]
    assert totals["engagement_rate_basis"] == "impressions"
    assert totals["engagement_rate_coverage"] == {
        "engagements": covered["engagements"],
        "denominator": covered["impressions"],
        "excluded_engagements": left_out["engagements"],
        "excluded_engagements_share": left_out["engagements"] / expected["engagements"],
        "posts": 4,
        "excluded_posts": 2,
        "platforms": ["instagram", "x"],
        "excluded_platforms": ["youtube"],
    }
    # Each bucket of the total's line divides alike: that day's covered posts.
    line = tenant.api.ok(
        tenant.api.get("/analytics/unified", params={**params, "group_by": "total", "limit": 1})
    )["series"]["items"][0]
    day = direct_sums(server, ws, first, first, platforms=("instagram", "x"))
    assert line["engagement_rate"] == day["engagements"] / day["impressions"]
    assert line["engagement_rate_coverage"]["denominator"] == day["impressions"]
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
    assert youtube["engagement_rate_coverage"]["platforms"] == ["youtube"]
    assert youtube["engagement_rate_coverage"]["excluded_engagements"] == 0

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
    assert len(items) == 100  # every hour of the range for each account: 3 x 72, paged
    assert all(item["bucket"].endswith(":00:00.000Z") for item in items)
    assert all(item["followers"] is None for item in items)
    # One series in total: every hour is there, null between the seeded readings (every
    # third hour: nothing was read there, docs/api/analytics.md), each read hour its rows'
    # sums and the 3 hours it covers.
    total = tenant.api.ok(
        tenant.api.get("/analytics/unified", params={**params, "limit": 100, "group_by": "total"})
    )["series"]["items"]
    assert [i["bucket"] for i in total] == [iso_ms(first, h) for h in range(72)]
    assert [i["bucket_end"] for i in total] == [iso_ms(first, h + 1) for h in range(72)]
    for h, item in enumerate(total[:70]):  # through 21:00 today, the newest seeded hour
        if h % 3:
            assert item["impressions"] is None
            assert item["covers_hours"] is None
        else:
            assert item["impressions"] == direct_hour(server, tenant.workspace_id, first, h)
            assert item["covers_hours"] == (3 if h else None)  # the first: none read before
    # A range that starts mid-hour covers that whole hour; one that ends mid-hour stops there.
    narrow = tenant.api.ok(
        tenant.api.get(
            "/analytics/unified",
            params={
                "from": iso(first, 3).replace(":00:00Z", ":30:00Z"),
                "to": iso(first, 6).replace(":00:00Z", ":00:01Z"),
                "granularity": "hour",
                "group_by": "total",
            },
        )
    )
    assert [i["bucket"] for i in narrow["series"]["items"]] == [
        iso(first, h).replace("Z", ".000Z") for h in (3, 4, 5, 6)
    ]


def direct_hour(server: LiveServer, workspace_id: str, day: date, hour: int) -> int:
    """The seeded own impressions of one hour, summed in SQL."""
    at = datetime.combine(day, time()) + timedelta(hours=hour)

    def work(cur: Any) -> int:
        cur.execute(
            "SELECT coalesce(sum(impressions), 0) FROM mart_post_hourly"
            " WHERE workspace_id = ? AND kind = 'own' AND hour = ?",
            [workspace_id, at],
        )
        return int(cur.fetchone()[0])

    found: int = server.lake.run(work)
    return found


def _invalid(api: Api, params: dict[str, str]) -> dict[str, Any]:
    """The first detail of the 400 VALIDATION_ERROR that /analytics/unified gives ``params``."""
    error = assert_error(api.get("/analytics/unified", params=params), 400, "VALIDATION_ERROR")
    detail: dict[str, Any] = error["details"][0]
    return detail


def test_validation(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    naive = _invalid(api, {"from": "2026-01-01T00:00:00"})
    assert naive["field"] == "from"
    assert naive["issue"] == "offset_required"

    backwards = _invalid(api, {"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"})
    assert backwards == {
        "field": "from",
        "issue": "invalid_range",
        "message": backwards["message"],
    }
    same = _invalid(api, {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:00:00+00:00"})
    assert same["issue"] == "invalid_range"

    hourly = _invalid(
        api,
        {"from": "2026-01-01T00:00:00Z", "to": "2026-01-31T00:00:00Z", "granularity": "hour"},
    )
    assert hourly["field"] == "granularity"
    assert hourly["issue"] == "range_too_long"

    long = _invalid(api, {"from": "2024-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"})
    assert long["issue"] == "range_too_long"

    bad = _invalid(api, {"granularity": "fortnight"})
    assert bad["field"] == "granularity"
    for name in ("basis", "group_by"):
        wrong = _invalid(api, {name: "nonsense"})
        assert wrong["field"] == name
    for zone in ("Mars/Olympus_Mons", "UTC+5", "localtime", "../../etc/passwd", ""):
        unknown = _invalid(api, {"tz": zone})
        assert unknown["field"] == "tz"
        assert unknown["issue"] == "unknown_time_zone"
    weeks = _invalid(
        api,
        {"from": "2020-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z", "granularity": "week"},
    )
    assert weeks["field"] == "granularity"
    # granularity=hour alone takes its own default range (48 hours), not the daily one
    hourly_default = api.ok(api.get("/analytics/unified", params={"granularity": "hour"}))
    assert hourly_default["granularity"] == "hour"
    tampered = _invalid(api, {"cursor": "bm90LWEtY3Vyc29y"})
    assert tampered["field"] == "cursor"


def test_empty_marts_give_zeros_and_a_null_snapshot(tmp_path: Any) -> None:
    from core.settings import Settings
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
    # and starts at its first bucket's start (unless UTC midnight passed in between)
    assert now["range"]["from"] == now["range"]["first_bucket"]
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


# -- charts: default ranges, cached answers per parameter, the clock, the document ----------------


def _bucket_start(at: datetime, granularity: str, zone: ZoneInfo, back: int = 0) -> datetime:
    """The start of the bucket holding ``at``, ``back`` buckets earlier (zoneinfo's calendar)."""
    local = at.astimezone(zone)
    if granularity == "hour":
        start = local.replace(minute=0, second=0, microsecond=0).astimezone(UTC)
        return start - timedelta(hours=back)  # no daylight-saving change in these zones
    day = local.date()
    if granularity == "day":
        day -= timedelta(days=back)
    elif granularity == "week":
        day -= timedelta(days=day.weekday() + 7 * back)
    else:
        months = day.year * 12 + day.month - 1 - back
        day = date(months // 12, months % 12 + 1, 1)
    return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_default_ranges_are_the_last_buckets_of_the_zone(
    server: LiveServer, tenant: Tenant
) -> None:
    seed_unified(server, tenant)
    for granularity, count in (("hour", 48), ("day", 28), ("week", 12), ("month", 12)):
        for tz in ("UTC", "Asia/Kolkata"):
            before = datetime.now(UTC)
            data = tenant.api.ok(
                tenant.api.get(
                    "/analytics/unified",
                    params={"granularity": granularity, "tz": tz, "group_by": "total"}
                    | {"limit": 100},
                )
            )
            after = datetime.now(UTC)
            end = _instant(data["range"]["to"])
            assert before - timedelta(seconds=1) <= end <= after  # now, to the millisecond
            zone = ZoneInfo(tz)
            last = _bucket_start(end, granularity, zone)
            first = _bucket_start(end, granularity, zone, back=count - 1)
            assert _instant(data["range"]["last_bucket"]) == last, (granularity, tz)
            assert _instant(data["range"]["first_bucket"]) == first, (granularity, tz)
            assert data["range"]["from"] == data["range"]["first_bucket"]
            items = data["series"]["items"]
            assert len(items) == count, (granularity, tz)  # the seeded group, every bucket
            assert _instant(items[0]["bucket"]) == first
            assert _instant(items[-1]["bucket"]) == last
            assert _instant(items[-1]["bucket_end"]) > end


def test_each_tz_basis_and_group_by_keeps_its_own_cached_answer(
    server: LiveServer, tenant: Tenant
) -> None:
    seed_unified(server, tenant)
    window = {"from": iso(today() - timedelta(days=9)), "to": iso(today() + timedelta(days=1))}
    variants: list[dict[str, str]] = [
        {},
        {"tz": "Asia/Kolkata"},
        {"tz": "America/New_York"},
        {"basis": "published"},
        {"group_by": "total"},
        {"group_by": "platform"},
        {"tz": "Asia/Kolkata", "group_by": "total"},
        {"granularity": "week"},
    ]
    defaults = {"tz": "UTC", "basis": "activity", "group_by": "account", "granularity": "day"}
    seen: dict[tuple[tuple[str, str], ...], tuple[str, dict[str, Any]]] = {}
    for ranged in (True, False):  # an explicit range, then the default one (ending now)
        for _ in range(2):  # again: from the caches, the second time from the edge's
            for variant in variants:
                response = tenant.api.get(
                    "/analytics/unified", params={**(window if ranged else {}), **variant}
                )
                data = response.json()["data"]
                for name, value in (defaults | variant).items():
                    assert data[name] == value, (variant, name)
                key = (("ranged", str(ranged)), *sorted(variant.items()))
                if key in seen:
                    assert response.headers["ETag"] == seen[key][0]
                    assert data["series"] == seen[key][1]["series"]
                else:
                    seen[key] = (response.headers["ETag"], data)
    tags = [tag for tag, _ in seen.values()]
    assert len(set(tags)) == len(tags)  # no two share an answer
    first_tag = seen[(("ranged", "True"),)][0]
    for variant in variants[1:]:
        other = tenant.api.get(
            "/analytics/unified", params={**window, **variant}, headers={"If-None-Match": first_tag}
        )
        assert other.status_code == 200
    same = tenant.api.get("/analytics/unified", params=window, headers={"If-None-Match": first_tag})
    assert same.status_code == 304


class _Clock:
    """The wall clock the API reads (``time.time``), set by the test; the rest is ``time``'s."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time_module, name)


def test_a_range_ending_now_is_kept_only_while_its_bucket_lasts(
    server: LiveServer, tenant: Tenant, monkeypatch: pytest.MonkeyPatch
) -> None:
    import api.analytics.router
    import api.caching
    import api.middleware

    seed_unified(server, tenant)
    real = time_module.time()
    clock = _Clock(real)
    for module in (api.analytics.router, api.caching, api.middleware):
        monkeypatch.setattr(module, "time", clock)

    def read(**params: str) -> dict[str, Any]:
        found: dict[str, Any] = tenant.api.ok(
            tenant.api.get(
                "/analytics/unified", params={"group_by": "total", "limit": "100", **params}
            )
        )
        return found

    def at(seconds: float) -> str:
        moment = datetime.fromtimestamp(seconds, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    # The default hourly range (48 hours) seconds before the hour turns, read twice (the
    # second time from the edge), then seconds after: the new hour's range, not the old.
    turn = (real // 3600 + 1) * 3600
    for moment, last in ((turn - 3, turn - 3600), (turn - 1, turn - 3600), (turn + 1, turn)):
        clock.now = moment
        data = read(granularity="hour")
        assert data["range"]["last_bucket"] == at(last)
        assert data["range"]["first_bucket"] == at(last - 47 * 3600)
        assert data["series"]["items"][-1]["bucket"] == at(last)
        assert data["range"]["to"] == at(moment)
    # Kolkata's day turns at 18:30 UTC: a daily range by its days there.
    turn = (real - 66600) // 86400 * 86400 + 86400 + 66600
    for moment, last in ((turn - 2, turn - 86400), (turn - 1, turn - 86400), (turn + 1, turn)):
        clock.now = moment
        data = read(tz="Asia/Kolkata")
        assert data["range"]["last_bucket"] == at(last)
        assert data["range"]["first_bucket"] == at(last - 27 * 86400)


def test_the_openapi_document_describes_the_chart_parameters(server: LiveServer) -> None:
    document = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json").json()
    operation = document["paths"]["/analytics/unified"]["get"]
    params = {p["name"]: p for p in operation["parameters"]}

    def schema(found: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in found:
            found = document["components"]["schemas"][found["$ref"].rsplit("/", 1)[1]]
        return found

    assert schema(params["granularity"]["schema"])["enum"] == ["hour", "day", "week", "month"]
    assert schema(params["basis"]["schema"])["enum"] == ["activity", "published"]
    assert schema(params["group_by"]["schema"])["enum"] == ["total", "platform", "account"]
    assert params["tz"]["schema"]["default"] == "UTC"
    for name in ("granularity", "tz", "basis", "group_by", "from"):
        assert params[name]["description"]
    point = document["components"]["schemas"]["SeriesPoint"]
    assert "bucket_end" in point["required"]
    assert {"type": "null"} in point["properties"]["impressions"]["anyOf"]
    answer = document["components"]["schemas"]["UnifiedAnalytics"]
    assert {"tz", "basis", "group_by", "granularity"} <= set(answer["required"])
