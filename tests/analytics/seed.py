"""Mart rows written straight into the real lake, as the Dagster mart assets would write them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from tests.support import LiveServer, Tenant

COUNTERS = (
    "impressions",
    "reach",
    "views",
    "likes",
    "comments",
    "shares",
    "saves",
    "clicks",
)
# The counters a unified read answers: the eight and their engagements.
UNIFIED_COUNTERS = (*COUNTERS, "engagements")
# Seeded platforms: YouTube reports views but no impressions (the rate falls back to views).
PLATFORMS = ("x", "instagram", "youtube")


def today() -> date:
    return datetime.now(UTC).date()


def _counters(platform: str, post: int, offset: int) -> dict[str, int]:
    """Deterministic, distinct counters per platform, post and day."""
    base = 100 + 7 * offset + 13 * post + 31 * PLATFORMS.index(platform)
    values = {
        "impressions": 0 if platform == "youtube" else base * 10,
        "reach": base * 6,
        "views": base * 4,
        "likes": base // 2,
        "comments": base // 10,
        "shares": base // 20,
        "saves": base // 25,
        "clicks": base // 5,
    }
    return values


# The statements the seeds share: each writes rows as the pipeline's assets would.
POST_DAILY = (
    "INSERT INTO mart_post_daily (workspace_id, day, platform, account_external_id,"
    " account_id, external_id, post_id, kind, impressions, reach, views, likes, comments,"
    " shares, saves, clicks, engagements, engagement_rate)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)"
)
POST_HOURLY = (
    "INSERT INTO mart_post_hourly (workspace_id, day, hour, platform,"
    " account_external_id, account_id, external_id, post_id, kind, impressions, reach,"
    " views, likes, comments, shares, saves, clicks, engagements)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
ACCOUNT_DAILY = (
    "INSERT INTO mart_account_daily (workspace_id, day, platform, account_external_id,"
    " account_id, kind, handle, followers, follower_growth,"
    " impressions, engagements, engagement_rate)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_dims(cur: Any, posts: list[list[Any]], accounts: list[list[Any]]) -> None:
    """Posts (workspace, platform, id, account id, kind, published_at) and own accounts
    (workspace, platform, id, our account id, handle, captured_at) as the dimensions hold
    them: the read API counts posts from dim_posts, each under its account's id."""
    cur.executemany(
        "INSERT INTO dim_posts BY NAME SELECT ? AS workspace_id, ? AS platform,"
        " ? AS external_id, ? AS account_external_id, ? AS kind, [] AS hashtags,"
        " ?::TIMESTAMP AS published_at, ?::TIMESTAMP AS captured_at",
        [[*p, p[-1]] for p in posts],
    )
    cur.executemany(
        "INSERT INTO dim_accounts BY NAME SELECT ? AS workspace_id, ? AS platform,"
        " ? AS external_id, ? AS account_id, 'own' AS kind, ? AS handle,"
        " ?::TIMESTAMP AS captured_at",
        accounts,
    )


@dataclass
class Seeded:
    days: list[date]
    post_ids: dict[str, list[str]]  # platform -> external post ids


def seed_unified(
    server: LiveServer, tenant: Tenant, *, days: int = 40, hourly_days: int = 3
) -> Seeded:
    """Daily and hourly post rows, account rows (own and a competitor's) and their snapshots."""
    end = today()
    span = [end - timedelta(days=i) for i in range(days - 1, -1, -1)]
    ws = tenant.workspace_id
    daily: list[list[Any]] = []
    hourly: list[list[Any]] = []
    accounts: list[list[Any]] = []
    posts: dict[str, list[str]] = {}
    for platform in PLATFORMS:
        acc = tenant.accounts[platform]
        ext_acc = f"ext-{platform}"
        posts[platform] = [f"{platform}-post-{i}-{ws[-6:]}" for i in range(2)]
        for offset, day in enumerate(span):
            for i, ext in enumerate(posts[platform]):
                c = _counters(platform, i, offset)
                eng = c["likes"] + c["comments"] + c["shares"] + c["saves"] + c["clicks"]
                daily.append([ws, day, platform, ext_acc, acc, ext, None, "own", *c.values(), eng])
            if offset >= days - hourly_days:
                for hour in range(0, 24, 3):
                    c = _counters(platform, hour, offset)
                    eng = c["likes"] + c["comments"] + c["shares"] + c["saves"] + c["clicks"]
                    at = datetime(day.year, day.month, day.day, hour)
                    hourly.append(
                        [
                            ws,
                            day,
                            at,
                            platform,
                            ext_acc,
                            acc,
                            posts[platform][0],
                            None,
                            "own",
                            *c.values(),
                            eng,
                        ]
                    )
            followers = 1000 * (1 + PLATFORMS.index(platform)) + 10 * offset
            accounts.append(
                [
                    ws,
                    day,
                    platform,
                    ext_acc,
                    acc,
                    "own",
                    f"{platform}_handle",
                    followers,
                    10,
                    1000,
                    50,
                    0.05,
                ]
            )
        # A competitor's post in the same marts: never part of our unified totals.
        for day in span:
            c = _counters(platform, 9, 0)
            daily.append(
                [
                    ws,
                    day,
                    platform,
                    "rival",
                    None,
                    f"rival-{platform}",
                    None,
                    "competitor",
                    *c.values(),
                    999,
                ]
            )

    # Every third day each account publishes a post just after midnight.
    first_minutes = [
        datetime(d.year, d.month, d.day, 0, 1) for i, d in enumerate(span) if i % 3 == 0
    ]
    published = [
        [ws, p, f"{p}-published-{at:%Y%m%d}-{ws[-6:]}", f"ext-{p}", "own", at]
        for p in PLATFORMS
        for at in first_minutes
    ]
    known = [
        [ws, p, f"ext-{p}", tenant.accounts[p], f"{p}_handle", first_minutes[0]] for p in PLATFORMS
    ]

    def work(cur: Any) -> None:
        cur.executemany(POST_DAILY, daily)
        cur.executemany(POST_HOURLY, hourly)
        cur.executemany(ACCOUNT_DAILY, accounts)
        insert_dims(cur, published, known)

    server.lake.run(work)
    seed_snapshots(server, ["mart_post_daily", "mart_post_hourly", "mart_account_daily"], span)
    return Seeded(days=span, post_ids=posts)


def seed_snapshots(server: LiveServer, marts: list[str], days: list[date] | None = None) -> None:
    """One snapshot per mart partition (days, else 'all'), data through an hour ago."""
    now = datetime.now(UTC).replace(tzinfo=None)
    keys = [d.isoformat() for d in days] if days else ["all"]
    rows = [[m, k, now, 1, now - timedelta(hours=1), "run-test"] for m in marts for k in keys]

    def work(cur: Any) -> None:
        for mart, key, *_ in rows:
            cur.execute(
                "DELETE FROM mart_snapshots WHERE mart = ? AND partition_key = ?", [mart, key]
            )
        cur.executemany(
            "INSERT INTO mart_snapshots (mart, partition_key, computed_at, rows,"
            " data_through, run_id) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )

    server.lake.run(work)


def direct_sums(
    server: LiveServer,
    workspace_id: str,
    first: date,
    last: date,
    table: str = "mart_post_daily",
    platforms: tuple[str, ...] = PLATFORMS,
) -> dict[str, int]:
    """The reference: a plain SQL sum over the seeded own-post rows of the days [first, last]
    (of ``platforms``)."""
    assert table in {"mart_post_daily", "mart_post_hourly"}
    cols = ", ".join(f"coalesce(sum({c}), 0)::BIGINT" for c in (*COUNTERS, "engagements"))

    def work(cur: Any) -> dict[str, int]:
        cur.execute(
            f"SELECT {cols} FROM {table} WHERE workspace_id = ? AND kind = 'own'"  # noqa: S608
            " AND day BETWEEN ? AND ? AND list_contains(?, platform)",
            [workspace_id, first, last, list(platforms)],
        )
        row = cur.fetchone()
        return dict(zip((*COUNTERS, "engagements"), row, strict=True))

    result: dict[str, int] = server.lake.run(work)
    return result


def seed_trends(server: LiveServer, tenant: Tenant) -> None:
    """Six trends (two tied on score), an older window of one of them, and the day before's."""
    now = datetime.now(UTC).replace(tzinfo=None)
    ws = tenant.workspace_id
    rows: list[list[Any]] = [
        [ws, "hashtag", "#launch", "x", 9.5, "peaking", 120.0, 10.0, 0],
        [ws, "hashtag", "#alpha", "x", 7.0, "emerging", 70.0, 10.0, 0],
        [ws, "hashtag", "#beta", "instagram", 7.0, "emerging", 60.0, 9.0, 0],
        [ws, "topic", "product launch", None, 5.5, "peaking", 50.0, 8.0, 0],
        [ws, "post", "x-post-0", "x", 3.2, "declining", 30.0, 9.0, 0],
        [ws, "post", "ig-post-9", "instagram", 2.0, "emerging", 20.0, 10.0, 0],
        # An older window of #launch: superseded by the newer one above.
        [ws, "hashtag", "#launch", "x", 1.0, "emerging", 12.0, 10.0, 48],
        # The window judged a day before: what trended then.
        [ws, "post", "x-post-0", "x", 4.0, "emerging", 40.0, 9.0, 24],
        [ws, "hashtag", "#alpha", "x", 1.5, "declining", 20.0, 10.0, 24],
    ]

    def work(cur: Any) -> None:
        cur.executemany(
            "INSERT INTO mart_viral_trends (workspace_id, entity_type, entity, platform, score,"
            " status, velocity, baseline, evidence, window_end, computed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                [
                    *r[:8],
                    json.dumps({"robust_z": r[4], "window_hours": 6}),
                    now - timedelta(hours=r[8]),
                    now,
                ]
                for r in rows
            ],
        )

    server.lake.run(work)
    seed_snapshots(server, ["mart_viral_trends"])


# The first of the seeded best-times posts (12 Tuesdays at 09:00 UTC, 8 Mondays at 12:00).
BEST_TUESDAYS = (datetime(2026, 1, 6, 9), 12, 1.5)
BEST_MONDAYS = (datetime(2026, 1, 5, 12), 8, 0.5)


def seed_insights(server: LiveServer, tenant: Tenant) -> None:
    """Insights of every kind and a best-times grid for the tenant's X account."""
    now = datetime.now(UTC).replace(tzinfo=None)
    ws = tenant.workspace_id
    insights: list[list[Any]] = [
        [ws, "best_time", "x", "ext-x", "Post on Tuesdays at 09:00", "…", 0.9],
        [ws, "top_content", "instagram", "ext-instagram", "Carousels win", "…", 0.8],
        [ws, "anomaly", "x", "ext-x", "Impressions spiked", "…", 0.7],
        [ws, "recommendation", None, None, "Post more video", "…", 0.6],
        [ws, "benchmark", "x", "ext-x", "Rival engages 2x", "…", 0.6],
    ]
    # Best times: the X account's posts as the pipeline rates them (index: rate / the
    # account's mean): 12 on Tuesdays at 09:00 UTC (1.5) and 8 on Mondays at 12:00 (0.5), in
    # Paris's winter (UTC+1)
    posts = [
        (first + timedelta(weeks=i), index)
        for first, count, index in (BEST_TUESDAYS, BEST_MONDAYS)
        for i in range(count)
    ]

    def work(cur: Any) -> None:
        cur.executemany(
            "INSERT INTO mart_insights (workspace_id, kind, platform, account_external_id,"
            " title, body, score, evidence, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[*r, json.dumps({"source": r[1]}), now] for r in insights],
        )
        cur.executemany(
            "INSERT INTO mart_best_times (workspace_id, platform, account_external_id, kind,"
            " external_id, published_at, engagement_rate, rate_index, dates_only, computed_at)"
            " VALUES (?, 'x', 'ext-x', 'own', ?, ?, ?, ?, false, ?)",
            [[ws, f"bt-{i}", at, index / 50, index, now] for i, (at, index) in enumerate(posts)],
        )

    server.lake.run(work)
    seed_snapshots(server, ["mart_insights", "mart_best_times", "mart_anomalies"])


# The group's mean rate the seeded shrunk rates lean toward, with the pipeline's prior weight.
RANKING_PRIOR = 0.05
RANKING_PRIOR_POSTS = 10.0


def _parts(row: list[Any]) -> dict[str, Any]:
    """A seeded ranking's parts: its figures, and where it has a measured rate, the rate's
    basis and the prior its shrunk rate leans toward (as the pipeline keeps them)."""
    parts: dict[str, Any] = {"engagement": row[8], "growth": row[9], "reach": row[10]}
    if row[7] is not None:
        parts["engagement_rate"] = {
            "basis": "impressions",
            "posts": row[6],
            "prior": RANKING_PRIOR,
            "prior_posts": RANKING_PRIOR_POSTS,
        }
    return parts


def seed_rankings(server: LiveServer, tenant: Tenant) -> None:
    """Five creators (ranks 1 to 5) and a competitor 'RivalCo' on X and Instagram."""
    now = datetime.now(UTC).replace(tzinfo=None)
    ws = tenant.workspace_id
    rows: list[list[Any]] = [
        ["creator", "x", "c1", "alice", "tech", 5000, 40, 0.06, 0.055, 0.1, 900.0, 0.91, 1],
        ["creator", "instagram", "c2", "bob", "food", 8000, 30, 0.05, 0.048, 0.2, 1200.0, 0.85, 2],
        ["creator", "x", "c3", "carol", "Tech", 3000, 10, 0.09, 0.06, 0.05, 500.0, 0.70, 3],
        ["creator", "youtube", "c4", "dan", "music", 90000, 5, None, 0.02, 0.0, 4000.0, 0.6, 4],
        ["creator", "x", "c5", "erin", None, 100, 2, 0.2, 0.04, 0.3, 50.0, 0.5, 5],
        ["competitor", "x", "r1", "RivalCo", None, 20000, 50, 0.04, 0.039, 0.02, 3000.0, 0.8, 1],
    ]

    def work(cur: Any) -> None:
        cur.executemany(
            "INSERT INTO mart_creator_rankings (workspace_id, kind, platform,"
            " account_external_id, handle, category, followers, posts, engagement_rate,"
            " engagement_rate_shrunk, growth_rate, avg_reach, score, rank, parts, computed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[ws, *r, json.dumps(_parts(r)), now] for r in rows],
        )

    server.lake.run(work)
    seed_snapshots(server, ["mart_creator_rankings"])


def seed_post_rows(
    server: LiveServer, tenant: Tenant, post_id: str, platform: str, days: list[date]
) -> list[dict[str, int]]:
    """Daily rows of one of our posts on one platform; returns each day's counters."""
    ws = tenant.workspace_id
    out = []
    rows = []
    for offset, day in enumerate(days):
        c = _counters(platform, 5, offset)
        eng = c["likes"] + c["comments"] + c["shares"] + c["saves"] + c["clicks"]
        out.append({**c, "engagements": eng})
        rows.append(
            [
                ws,
                day,
                platform,
                f"ext-{platform}",
                tenant.accounts[platform],
                f"{platform}-{post_id}",
                post_id,
                "own",
                *c.values(),
                eng,
            ]
        )

    def work(cur: Any) -> None:
        cur.executemany(POST_DAILY, rows)

    server.lake.run(work)
    return out


def seed_analytics(server: LiveServer, tenant: Tenant, post_id: str, *, days: int) -> None:
    """Every mart the analytics read, seeded for ``tenant``: ``days`` of unified rows, the
    trends, insights and rankings, and daily rows of its post ``post_id`` on X yesterday and
    today (what the MCP tools' tests read through REST and the tools alike)."""
    seed_unified(server, tenant, days=days)
    seed_trends(server, tenant)
    seed_insights(server, tenant)
    seed_rankings(server, tenant)
    seed_post_rows(server, tenant, post_id, "x", [today() - timedelta(days=1), today()])
