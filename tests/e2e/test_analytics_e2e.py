"""Platforms to dashboards: two pipeline runs, then the read API checked against raw data."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

from pipelines.run import run_all
from tests.e2e.conftest import Product
from tests.support import HANG_SECONDS
from warehouse.rows import Cursor, fetch_one
from workers.publishing.worker import run_worker

METRICS = ("impressions", "reach", "views", "likes", "comments", "shares", "saves", "clicks")


def api_post_totals(product: Product, post_id: str, params: dict[str, str]) -> dict[str, Any]:
    analytics = product.api.ok(product.api.get(f"/posts/{post_id}/analytics", params=params))
    totals: dict[str, Any] = analytics["totals"]
    return totals


def _raw_totals(cur: Cursor, workspace_id: str) -> dict[str, Any]:
    """Straight from the raw snapshots: each own post's latest cumulative counters, summed."""
    columns = ", ".join(f"sum(coalesce(s.{m}, 0)) AS {m}" for m in METRICS)
    row = fetch_one(
        cur,
        f"""
        WITH latest AS (
            SELECT * FROM raw_engagement_snapshots
            WHERE workspace_id = ?
            QUALIFY row_number() OVER (
                PARTITION BY platform, external_id ORDER BY captured_at DESC, ingested_at DESC
            ) = 1
        ), own AS (
            SELECT DISTINCT platform, external_id FROM raw_posts
            WHERE workspace_id = ? AND kind = 'own'
        )
        SELECT {columns}, count(*) AS posts
        FROM latest s JOIN own USING (platform, external_id)
        """,  # noqa: S608 - column names are constants
        [workspace_id, workspace_id],
    )
    assert row is not None
    return row


def test_two_runs_then_dashboards_match_the_raw_data(product: Product) -> None:
    settings = product.server.settings
    ours = _publish_through_the_api(product, 2)
    first = run_all(settings, now=product.sim.now())
    assert first.success, first
    # Let engagement grow on the platforms, then the next scheduled run.
    product.sim.advance(6 * 3600)
    second = run_all(settings, now=product.sim.now())
    assert second.success, second

    end = product.sim.now() + timedelta(days=1)
    params = {"from": (end - timedelta(days=60)).isoformat(), "to": end.isoformat()}
    unified = product.api.ok(product.api.get("/analytics/unified", params=params))
    raw = product.server.lake.run(lambda cur: _raw_totals(cur, product.workspace_id))
    assert raw["posts"] > 0
    totals = unified["totals"]
    # growth plus the first-seen totals (posts first read after their publication day)
    first_seen = totals["first_seen"]
    for metric in METRICS:
        assert totals[metric] + first_seen[metric] == raw[metric], metric
    engagements = sum(raw[m] for m in ("likes", "comments", "shares", "saves", "clicks"))
    assert totals["engagements"] + first_seen["engagements"] == engagements
    assert (
        sum(p["engagements"] + p["first_seen"]["engagements"] for p in unified["by_platform"])
        == engagements
    )
    assert unified["snapshot"]["data_through"] is not None
    for post in ours:  # the posts created through the API are part of those totals
        mine = api_post_totals(product, post["post_id"], params)
        assert mine["engagements"] > 0

    trends = product.api.ok(product.api.get("/viral-trends", params={"limit": 100}))
    assert trends["snapshot"]["computed_at"] is not None
    for item in trends["items"]:
        assert item["status"] in {"emerging", "peaking", "declining"}
        assert item["evidence"]


def _publish_through_the_api(product: Product, count: int) -> list[dict[str, Any]]:
    """Create posts with POST /posts and let the worker publish them on the simulator."""
    api = product.api
    created = [
        api.ok(
            api.post("/posts", json={"text": f"Launch {i} #murmur", "platforms": ["x", "bluesky"]}),
            201,
        )
        for i in range(count)
    ]
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(
            product.server.settings.model_copy(update={"publishing_poll_interval_seconds": 0.1}),
        ),
        kwargs={"stop": stop},
    )
    worker.start()
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while True:
            statuses = {api.ok(api.get(f"/posts/{p['post_id']}"))["status"] for p in created}
            if statuses == {"published"}:
                return created
            assert time.monotonic() < deadline, statuses
            time.sleep(0.2)
    finally:
        stop.set()
        worker.join(timeout=30)


def test_a_post_created_through_the_api_appears_in_analytics(product: Product) -> None:
    """POST /posts → the worker publishes it on the simulated platforms → the next run."""
    api = product.api
    created = _publish_through_the_api(product, 3)

    settings = product.server.settings
    assert run_all(settings, now=product.sim.now()).success
    product.sim.advance(3 * 3600)  # engagement on the new posts grows on the platforms
    assert run_all(settings, now=product.sim.now()).success

    end = product.sim.now() + timedelta(days=1)
    params = {"from": (end - timedelta(days=7)).isoformat(), "to": end.isoformat()}
    for post in created:
        analytics = api.ok(api.get(f"/posts/{post['post_id']}/analytics", params=params))
        platforms = {d["platform"] for d in analytics["destinations"]}
        assert platforms == {"x", "bluesky"}, analytics
        assert analytics["totals"]["engagements"] > 0, analytics
