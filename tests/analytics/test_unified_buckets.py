"""GET /analytics/unified for charts: calendars and zones, published basis, groups, gaps.

The marts are written straight into the real lake (as the pipeline would write them: the
daily mart is the hourly one rolled up), in March 2025 around New York's change to summer
time (2025-03-09). Every expected figure is computed here from the seeded readings, with
zoneinfo's calendar, by the definitions of docs/api/analytics.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.analytics.seed import (
    ACCOUNT_DAILY,
    POST_HOURLY,
    insert_dims,
    seed_snapshots,
)
from tests.analytics.seed import UNIFIED_COUNTERS as COUNTERS
from tests.support import LiveServer, Tenant

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

METRICS = (
    *COUNTERS,
    "engagement_rate",
    "engagement_rate_basis",
    "posts",
    "active_posts",
    "followers",
    "follower_growth",
)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def counters(likes: int) -> dict[str, int]:
    """Every counter of a reading, from its likes (distinct per metric, engagements summed)."""
    found = {
        "impressions": 10 * likes,
        "reach": 6 * likes,
        "views": 4 * likes,
        "likes": likes,
        "comments": likes // 3,
        "shares": 0,
        "saves": 0,
        "clicks": likes // 5,
    }
    found["engagements"] = found["likes"] + found["comments"] + found["clicks"]
    return found


@dataclass(frozen=True)
class Reading:
    platform: str
    post: str
    at: datetime  # aware UTC; a growth reading at an hour's start (the hourly mart's)
    likes: int
    first_seen: bool = False  # a lifetime total at the first reading, not growth


def _every_six_hours(platform: str, post: str, first: datetime, last: datetime) -> list[Reading]:
    out = []
    at, i = first, 0
    while at <= last:
        out.append(Reading(platform, post, at, 1 + i % 7))
        at, i = at + 6 * HOUR, i + 1
    return out


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


READINGS: list[Reading] = [
    *_every_six_hours("x", "x-1", utc(2025, 3, 1), utc(2025, 3, 20, 18)),
    Reading("x", "x-2", utc(2025, 3, 12), 500, first_seen=True),
    *[
        Reading("x", "x-2", r.at, 2)
        for r in _every_six_hours("x", "x-2", utc(2025, 3, 12, 6), utc(2025, 3, 20, 18))
    ],
    *[
        Reading("instagram", "ig-1", r.at, 3)
        for r in _every_six_hours("instagram", "ig-1", utc(2025, 3, 5), utc(2025, 3, 12, 18))
        + _every_six_hours("instagram", "ig-1", utc(2025, 3, 15), utc(2025, 3, 18, 18))
    ],
    Reading("instagram", "ig-2", utc(2025, 3, 18), 900, first_seen=True),
    Reading("linkedin", "li-1", utc(2025, 2, 20, 12), 5),
    Reading("linkedin", "li-1", utc(2025, 3, 25, 12), 5),
    Reading("tiktok", "tt-1", utc(2025, 2, 10, 12), 8),
]
PUBLISHED = {
    ("x", "x-1"): utc(2025, 2, 28, 23),  # 1 March 04:30 in Kolkata
    ("x", "x-2"): utc(2025, 3, 10, 20),
    ("x", "x-3"): utc(2025, 3, 9, 3, 30),  # 8 March in New York; never read
    ("instagram", "ig-1"): utc(2025, 3, 5),
    ("instagram", "ig-2"): utc(2025, 3, 15, 10),
    ("linkedin", "li-1"): utc(2025, 2, 20, 11),
    ("tiktok", "tt-1"): utc(2025, 2, 10, 11),
}
# Follower figures per account and UTC day (the day's last reading; dated 23:00 UTC here).
FOLLOWERS: dict[tuple[str, date], int] = {
    **{("x", date(2025, 3, d)): 1000 + 10 * d for d in range(1, 21)},
    **{("instagram", date(2025, 3, d)): 500 + 5 * d for d in [*range(5, 13), *range(15, 19)]},
}


def account(platform: str) -> str:
    return f"ext-{platform}"


def seed(server: LiveServer, tenant: Tenant) -> None:
    """The readings as the marts hold them, with the posts' and the accounts' rows."""
    ws = tenant.workspace_id
    hourly, first_seen = [], []
    for r in READINGS:
        at = r.at.replace(tzinfo=None)
        acc = tenant.accounts[r.platform]
        keys = [r.platform, account(r.platform), acc, f"{r.post}-{ws}", None, "own"]
        values = list(counters(r.likes).values())
        if r.first_seen:
            published = PUBLISHED[(r.platform, r.post)].replace(tzinfo=None)
            first_seen.append([ws, at.date(), at, *keys, published, *values])
        else:
            hourly.append([ws, at.date(), at, *keys, *values])
    # A competitor's readings in the same marts: never ours.
    rival = counters(99).values()
    hourly += [
        [ws, d.date(), d, "x", "rival", None, f"rival-{ws}", None, "competitor", *rival]
        for d in (datetime(2025, 3, 3, 6), datetime(2025, 3, 16, 6))
    ]
    days: dict[tuple[str, date], dict[str, Any]] = {}
    for r in READINGS:
        if not r.first_seen:
            days.setdefault((r.platform, r.at.date()), {})
    for key, figure in FOLLOWERS.items():
        days.setdefault(key, {})["followers"] = figure
    accounts = []
    for (platform, day), row in sorted(days.items()):
        followers = row.get("followers")
        accounts.append(
            [
                ws,
                day,
                platform,
                account(platform),
                tenant.accounts[platform],
                "own",
                platform,
                followers,
                None if followers is None else 10,
                0,
                0,
                None,
            ]
        )
    posts = [
        [ws, platform, f"{post}-{ws}", account(platform), "own", at.replace(tzinfo=None)]
        for (platform, post), at in PUBLISHED.items()
    ]

    def work(cur: Any) -> None:
        cur.executemany(POST_HOURLY, hourly)
        # The daily mart is the hourly one's rollup, as the pipeline builds it.
        cur.execute(
            "INSERT INTO mart_post_daily SELECT workspace_id, day, platform,"
            " account_external_id, account_id, external_id, post_id, kind, sum(impressions),"
            " sum(reach), sum(views), sum(likes), sum(comments), sum(shares), sum(saves),"
            " sum(clicks), sum(engagements), NULL FROM mart_post_hourly WHERE workspace_id = ?"
            " GROUP BY ALL",
            [ws],
        )
        cur.executemany(
            "INSERT INTO mart_post_first_seen (workspace_id, day, captured_at, platform,"
            " account_external_id, account_id, external_id, post_id, kind, published_at,"
            " impressions, reach, views, likes, comments, shares, saves, clicks, engagements)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            first_seen,
        )
        cur.executemany(ACCOUNT_DAILY, accounts)
        # The accounts as the pipeline's dimension knows them: a post's account id is its
        # account's.
        first = min(PUBLISHED.values()).replace(tzinfo=None)
        own = sorted({platform for platform, _ in PUBLISHED})
        insert_dims(cur, posts, [[ws, p, account(p), tenant.accounts[p], p, first] for p in own])

    server.lake.run(work)
    seed_snapshots(
        server,
        ["mart_post_daily", "mart_post_hourly", "mart_account_daily"],
        sorted({day for _, day in days}),
    )


@pytest.fixture(scope="module")
def charted(server: LiveServer) -> Iterator[Tenant]:
    from tests.support import new_tenant

    tenant = new_tenant(server)
    seed(server, tenant)
    yield tenant
    tenant.api.close()


# -- the expected figures, from the readings ------------------------------------------------------


def local_edges(tz: str, granularity: str, first: date, count: int) -> list[datetime]:
    """The zone's bucket starts from the local ``first`` on (zoneinfo), as UTC instants."""
    zone = ZoneInfo(tz)
    if granularity == "hour":
        start = datetime(first.year, first.month, first.day, tzinfo=zone).astimezone(UTC)
        return [start + i * HOUR for i in range(count + 1)]
    days: list[date] = [first]
    while len(days) <= count:
        d = days[-1]
        if granularity == "day":
            days.append(d + DAY)
        elif granularity == "week":
            days.append(d + 7 * DAY)
        else:
            days.append(date(d.year + d.month // 12, d.month % 12 + 1, 1))
    return [datetime(d.year, d.month, d.day, tzinfo=zone).astimezone(UTC) for d in days]


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Group = Callable[[str], Any]  # platform -> the group's key


def spans(group: Group, *, published: bool) -> dict[Any, tuple[datetime, datetime]]:
    """Each group's readings from first to newest (from its first publication, published)."""
    times: dict[Any, list[datetime]] = {}
    for r in READINGS:
        times.setdefault(group(r.platform), []).append(r.at)
    for platform, day in FOLLOWERS:
        dated = datetime(day.year, day.month, day.day, 23, tzinfo=UTC)
        times.setdefault(group(platform), []).append(dated)
    found = {}
    for key, seen in times.items():
        first = min(seen)
        if published:
            first = min(at for (p, _), at in PUBLISHED.items() if group(p) == key)
        found[key] = (first, max(seen))
    return found


def expected_series(
    edges: list[datetime], group: Group, *, published: bool = False, hourly: bool = False
) -> dict[tuple[int, Any], dict[str, Any] | None]:
    """Per (bucket index, group): the point's metrics, or None where the group was not read
    (by publication: outside its span)."""
    spans_of = spans(group, published=published)
    sums: dict[tuple[int, Any], dict[str, Any]] = {}

    def at(i: int, key: Any) -> dict[str, Any]:
        blank = dict.fromkeys(COUNTERS, 0) | {"posts": 0, "active_posts": set()}
        return sums.setdefault((i, key), blank | {"followers": {}})

    def index(instant: datetime) -> int | None:
        for i in range(len(edges) - 1):
            if edges[i] <= instant < edges[i + 1]:
                return i
        return None

    if published:
        for (platform, post), when in PUBLISHED.items():
            mine = [r for r in READINGS if (r.platform, r.post) == (platform, post)]
            i = index(when)
            if i is None or not mine:
                continue  # a post never read has no totals
            point = at(i, group(platform))
            for r in mine:
                for name, value in counters(r.likes).items():
                    point[name] += value
            point["posts"] += 1
            if any(not r.first_seen for r in mine):
                point["active_posts"].add(post)
    else:
        for r in READINGS:
            i = index(r.at)
            if i is None or r.first_seen:
                continue
            point = at(i, group(r.platform))
            for name, value in counters(r.likes).items():
                point[name] += value
            point["active_posts"].add(r.post)
        for (platform, _), when in PUBLISHED.items():
            i = index(when)
            if i is not None:
                at(i, group(platform))["posts"] += 1
    for (platform, day), followers in FOLLOWERS.items():
        i = index(datetime(day.year, day.month, day.day, 23, tzinfo=UTC))
        if i is not None:
            at(i, group(platform))["followers"][(platform, day)] = followers
    # by activity, the buckets a reading falls in: a growth or first-seen reading, or (above
    # hours) a follower figure; the others, between readings, are null
    read = {(index(r.at), group(r.platform)) for r in READINGS}
    if not hourly:
        read |= {
            (index(datetime(d.year, d.month, d.day, 23, tzinfo=UTC)), group(p))
            for p, d in FOLLOWERS
        }
    out: dict[tuple[int, Any], dict[str, Any] | None] = {}
    for key, (first, last) in spans_of.items():
        if not (first < edges[-1] and last >= edges[0]):
            continue  # the group's readings miss the range: not in the series
        for i in range(len(edges) - 1):
            if not (first < edges[i + 1] and last >= edges[i]) or (
                not published and (i, key) not in read
            ):
                out[(i, key)] = None
                continue
            point = dict(sums.get((i, key)) or at(i, key))
            point["active_posts"] = len(point["active_posts"])
            figures = point.pop("followers")
            latest: dict[str, tuple[date, int]] = {}
            for (platform, day), value in figures.items():
                if platform not in latest or latest[platform][0] < day:
                    latest[platform] = (day, value)
            point["followers"] = sum(v for _, v in latest.values()) if figures else None
            point["follower_growth"] = 10 * len(figures) if figures else None
            if hourly:
                point["followers"] = point["follower_growth"] = None
            imp, views, eng = point["impressions"], point["views"], point["engagements"]
            point["engagement_rate"] = eng / imp if imp else eng / views if views else None
            point["engagement_rate_basis"] = "impressions" if imp else "views" if views else None
            out[(i, key)] = point
    return out


def get(tenant: Tenant, **params: Any) -> dict[str, Any]:
    data: dict[str, Any] = tenant.api.ok(
        tenant.api.get("/analytics/unified", params={"limit": 100, **params})
    )
    assert data["series"]["pagination"]["has_more"] is False
    return data


def compare(
    data: dict[str, Any],
    edges: list[datetime],
    expected: dict[tuple[int, Any], dict[str, Any] | None],
    key_of: Callable[[dict[str, Any]], Any],
) -> None:
    """The series is exactly the expected points, in bucket then group order."""
    items = data["series"]["items"]
    got = {}
    for item in items:
        i = [iso(e) for e in edges].index(item["bucket"])
        assert item["bucket_end"] == iso(edges[i + 1])
        values = {m: item[m] for m in METRICS}
        got[(i, key_of(item))] = None if values["impressions"] is None else values
        if values["impressions"] is None:
            assert all(v is None for v in values.values()), item
    assert got == expected
    order = [
        (item["bucket"], item["platform"] or "", item["account_external_id"] or "")
        for item in items
    ]
    assert order == sorted(order)


def by_total(platform: str) -> None:
    return None


def by_platform(platform: str) -> str:
    return platform


def by_account(platform: str) -> tuple[str, str]:
    return platform, account(platform)


def total_key(item: dict[str, Any]) -> None:
    assert item["platform"] is None
    assert item["account_id"] is None
    assert item["account_external_id"] is None
    return None


def platform_key(item: dict[str, Any]) -> str:
    assert item["account_id"] is None
    assert item["account_external_id"] is None
    platform: str = item["platform"]
    return platform


def account_key(charted: Tenant) -> Callable[[dict[str, Any]], tuple[str, str]]:
    def key(item: dict[str, Any]) -> tuple[str, str]:
        assert item["account_id"] == charted.accounts[item["platform"]]
        return item["platform"], item["account_external_id"]

    return key


# -- calendars ------------------------------------------------------------------------------------


def test_week_and_month_buckets_follow_the_calendar(charted: Tenant) -> None:
    weeks = local_edges("UTC", "week", date(2025, 2, 24), 6)  # Mondays
    data = get(
        charted,
        **{"from": "2025-02-24T00:00:00Z", "to": "2025-04-07T00:00:00Z"},
        granularity="week",
        group_by="total",
    )
    assert (data["granularity"], data["tz"], data["basis"], data["group_by"]) == (
        "week",
        "UTC",
        "activity",
        "total",
    )
    assert all(datetime.fromisoformat(e["bucket"]).weekday() == 0 for e in data["series"]["items"])
    compare(data, weeks, expected_series(weeks, by_total), total_key)
    # the week of 31 March starts after the newest reading (25 March): no data, not zeros
    assert data["series"]["items"][-1]["likes"] is None
    # totals are the buckets' sums (not gap-filled)
    for name in COUNTERS:
        assert data["totals"][name] == sum(i[name] or 0 for i in data["series"]["items"])

    months = local_edges("UTC", "month", date(2025, 1, 1), 4)
    data = get(
        charted,
        **{"from": "2025-01-15T00:00:00Z", "to": "2025-04-10T00:00:00Z"},
        granularity="month",
        group_by="total",
    )
    assert [i["bucket"] for i in data["series"]["items"]] == [iso(e) for e in months[:-1]]
    assert data["range"]["first_bucket"] == "2025-01-01T00:00:00.000Z"
    assert data["range"]["last_bucket"] == "2025-04-01T00:00:00.000Z"
    compare(data, months, expected_series(months, by_total), total_key)
    february = data["series"]["items"][1]
    assert february["bucket_end"] == "2025-03-01T00:00:00.000Z"  # 28 days
    assert february["likes"] == 5 + 8  # linkedin's and tiktok's readings


def test_time_zone_buckets_across_a_dst_change_and_a_half_hour_offset(charted: Tenant) -> None:
    # New York: 9 March 2025 has 23 hours; a reading at 00:00 UTC is the evening before.
    days = local_edges("America/New_York", "day", date(2025, 3, 7), 5)
    assert days[3] - days[2] == 23 * HOUR
    data = get(
        charted,
        **{"from": "2025-03-07T00:00:00-05:00", "to": "2025-03-12T00:00:00-04:00"},
        tz="America/New_York",
    )
    assert data["tz"] == "America/New_York"
    assert data["range"]["first_bucket"] == "2025-03-07T05:00:00.000Z"
    assert data["range"]["last_bucket"] == "2025-03-11T04:00:00.000Z"
    compare(data, days, expected_series(days, by_account), account_key(charted))
    # x-3, published 03:30 UTC on the 9th, is a post of the 8th in New York
    x = [i for i in data["series"]["items"] if i["platform"] == "x"]
    assert [i["posts"] for i in x] == [0, 1, 0, 1, 0]
    # the same range in UTC buckets differs: buckets and figures follow the zone
    utc_data = get(charted, **{"from": "2025-03-07T00:00:00Z", "to": "2025-03-12T00:00:00Z"})
    assert [i["likes"] for i in utc_data["series"]["items"] if i["platform"] == "x"] != [
        i["likes"] for i in x
    ]

    weeks = local_edges("America/New_York", "week", date(2025, 3, 3), 3)
    data = get(
        charted,
        **{"from": "2025-03-03T00:00:00-05:00", "to": "2025-03-24T00:00:00-04:00"},
        tz="America/New_York",
        granularity="week",
        group_by="platform",
    )
    compare(data, weeks, expected_series(weeks, by_platform), platform_key)

    # Kolkata (+05:30): days start at 18:30 UTC; the UTC hour from 18:00 starts before it,
    # so it counts in the day before (an hour counts in the bucket holding its start).
    days = local_edges("Asia/Kolkata", "day", date(2025, 3, 2), 4)
    data = get(
        charted,
        **{"from": "2025-03-02T00:00:00+05:30", "to": "2025-03-06T00:00:00+05:30"},
        tz="asia/kolkata",  # any case; echoed as IANA spells it
        group_by="platform",
    )
    assert data["tz"] == "Asia/Kolkata"
    assert [i["bucket"][11:] for i in data["series"]["items"]] == ["18:30:00.000Z"] * 12
    compare(data, days, expected_series(days, by_platform), platform_key)

    hours = local_edges("Asia/Kolkata", "hour", date(2025, 3, 3), 24)[10:17]
    data = get(
        charted,
        **{"from": "2025-03-03T10:00:00+05:30", "to": "2025-03-03T16:00:00+05:30"},
        tz="Asia/Kolkata",
        granularity="hour",
        group_by="total",
    )
    assert data["series"]["items"][0]["bucket"] == "2025-03-03T04:30:00.000Z"
    compare(data, hours, expected_series(hours, by_total, hourly=True), total_key)
    # 06:00 UTC (11:30 local) is in the bucket from 05:30
    (six,) = [r.likes for r in READINGS if r.at == utc(2025, 3, 3, 6)]
    assert [i["likes"] for i in data["series"]["items"]] == [None, six, None, None, None, None]


# -- published basis ------------------------------------------------------------------------------


def test_published_basis_buckets_each_post_s_lifetime_by_its_publication(
    charted: Tenant,
) -> None:
    months = local_edges("UTC", "month", date(2025, 2, 1), 3)
    data = get(
        charted,
        **{"from": "2025-02-01T00:00:00Z", "to": "2025-05-01T00:00:00Z"},
        granularity="month",
        basis="published",
        group_by="total",
    )
    assert data["basis"] == "published"
    compare(data, months, expected_series(months, by_total, published=True), total_key)
    february, march, april = data["series"]["items"]
    # x-1 (23:00 UTC on 28 February), li-1 and tt-1, with all their growth, even later
    assert february["posts"] == 3
    assert february["likes"] == sum(r.likes for r in READINGS if r.post in {"x-1", "li-1", "tt-1"})
    # x-2 and ig-2 carry their first-seen totals; x-3 was never read
    assert (march["posts"], march["active_posts"]) == (3, 2)
    assert april["likes"] is None  # published after the newest reading: unknown
    totals = data["totals"]
    assert totals["first_seen"]["posts"] == 2
    assert totals["first_seen"]["likes"] == 1400
    assert totals["likes"] == sum(r.likes for r in READINGS)  # lifetimes: growth + first seen
    assert (totals["posts"], totals["active_posts"]) == (6, 5)

    # In Kolkata x-1 was published on 1 March.
    months = local_edges("Asia/Kolkata", "month", date(2025, 2, 1), 3)
    data = get(
        charted,
        **{"from": "2025-02-01T00:00:00+05:30", "to": "2025-05-01T00:00:00+05:30"},
        tz="Asia/Kolkata",
        granularity="month",
        basis="published",
    )
    compare(data, months, expected_series(months, by_account, published=True), account_key(charted))
    x = [i for i in data["series"]["items"] if i["platform"] == "x"]
    assert [i["posts"] for i in x] == [None, 2, None]  # none of x's before (local) March

    # A post's lifetime does not stop at the range's end: x-2's growth runs to 20 March.
    day = get(
        charted,
        **{"from": "2025-03-10T00:00:00Z", "to": "2025-03-11T00:00:00Z"},
        basis="published",
        platform="x",
    )
    (point,) = day["series"]["items"]
    assert point["likes"] == sum(r.likes for r in READINGS if r.post == "x-2")
    assert (point["posts"], point["active_posts"]) == (1, 1)


# -- groups and gaps ------------------------------------------------------------------------------


def test_group_by_total_and_platform_add_up_to_the_accounts(charted: Tenant) -> None:
    days = local_edges("UTC", "day", date(2025, 3, 1), 22)
    window = {"from": "2025-03-01T00:00:00Z", "to": "2025-03-23T00:00:00Z"}
    rows = {}
    for group_by, group, key_of in (
        ("total", by_total, total_key),
        ("platform", by_platform, platform_key),
        ("account", by_account, account_key(charted)),
    ):
        found: list[dict[str, Any]] = []
        cursor = None
        while True:  # paged with the contract's limit
            page = charted.api.ok(
                charted.api.get(
                    "/analytics/unified",
                    params={**window, "group_by": group_by, "limit": 40}
                    | ({"cursor": cursor} if cursor else {}),
                )
            )
            found += page["series"]["items"]
            cursor = page["series"]["pagination"]["next_cursor"]
            if not cursor:
                break
        assert page["group_by"] == group_by
        compare({"series": {"items": found}}, days, expected_series(days, group), key_of)
        rows[group_by] = found
    assert len(rows["total"]) == 22
    assert len(rows["platform"]) == len(rows["account"]) == 22 * 3  # x, instagram, linkedin
    for i in range(22):
        parts = rows["platform"][3 * i : 3 * i + 3]
        whole = rows["total"][i]
        for name in COUNTERS:
            present = [p[name] for p in parts if p[name] is not None]
            assert whole[name] == (sum(present) if present else None)


def test_buckets_between_readings_are_null_and_a_read_one_says_what_it_covers(
    charted: Tenant,
) -> None:
    data = get(charted, **{"from": "2025-03-01T00:00:00Z", "to": "2025-03-23T00:00:00Z"})
    series: dict[str, list[dict[str, Any]]] = {}
    for item in data["series"]["items"]:
        series.setdefault(item["platform"], []).append(item)
    # tiktok's only reading is before the range, the competitor is not ours: absent
    assert sorted(series) == ["instagram", "linkedin", "x"]
    likes = {p: [i["likes"] for i in items] for p, items in series.items()}
    # instagram: read 5 to 12 and 15 to 18 March; not on the 13th and 14th, so nothing is known
    # of them (null, not 0): the 15th holds their growth and says so
    assert likes["instagram"][:4] == [None] * 4
    assert likes["instagram"][12:14] == [None, None]
    assert all(v for v in likes["instagram"][4:12] + likes["instagram"][14:18])
    assert likes["instagram"][18:] == [None] * 4
    fifteenth = series["instagram"][14]
    assert fifteenth["covers_from"] == "2025-03-13T00:00:00.000Z"
    assert fifteenth["covers_hours"] == 72
    assert [i["covers_hours"] for i in series["instagram"][5:12]] == [24] * 7
    # its first reading has no earlier one to cover from
    assert series["instagram"][4]["covers_from"] is None
    # linkedin: read on 20 February and 25 March only: no day between was read
    assert likes["linkedin"] == [None] * 22
    # x: read through the 20th
    assert likes["x"][-2:] == [None, None]
    for name in COUNTERS:
        assert data["totals"][name] == sum(i[name] or 0 for i in data["series"]["items"])


def test_an_hourly_series_of_six_hourly_readings_is_null_between_them(charted: Tenant) -> None:
    # x is read every 6 hours (00, 06, 12, 18 UTC): the hours between hold no reading, so no
    # figure, not 0; each read hour holds the 6 hours of growth since the previous reading
    hours = local_edges("UTC", "hour", date(2025, 3, 14), 24)
    data = get(
        charted,
        **{"from": "2025-03-14T00:00:00Z", "to": "2025-03-15T00:00:00Z"},
        granularity="hour",
        platform="x",
    )
    expected = expected_series(hours, by_account, hourly=True)
    compare(
        data, hours, {k: v for k, v in expected.items() if k[1][0] == "x"}, account_key(charted)
    )
    items = data["series"]["items"]
    readings: dict[datetime, int] = {}
    for r in READINGS:
        if r.platform == "x" and not r.first_seen:
            readings[r.at] = readings.get(r.at, 0) + r.likes
    expected_likes = [readings.get(start) for start in hours[:-1]]
    assert [i["likes"] for i in items] == expected_likes
    assert [i["bucket"][11:13] for i in items if i["likes"] is not None] == ["00", "06", "12", "18"]
    assert 0 not in [i["likes"] for i in items]
    # the first one's previous reading (18:00 the day before) lies before the range
    assert [(i["covers_from"], i["covers_hours"]) for i in items if i["likes"] is not None] == [
        (iso(start - 5 * HOUR), 6) for start in hours[:-1] if start in readings
    ]
    assert all(i["covers_from"] is None for i in items if i["likes"] is None)
    assert data["totals"]["likes"] == sum(v for v in expected_likes if v is not None)
