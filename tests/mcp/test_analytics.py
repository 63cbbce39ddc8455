"""The analytics tools answer what REST answers for the same query (seeded marts)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import mcp_types as types
import pytest

from tests.analytics.seed import seed_analytics
from tests.experiments.conftest import Measured
from tests.experiments.conftest import measured as measured  # the experiments' published run
from tests.mcp.agent import agent
from tests.support import LiveServer, Tenant, new_tenant

# One worker runs the module (make test: --dist loadgroup), so its seeded workspace is made once.
pytestmark = pytest.mark.xdist_group("mcp-analytics")


@pytest.fixture(scope="module")
def seeded(server: LiveServer) -> Iterator[tuple[Tenant, str]]:
    tenant = new_tenant(server)
    post = tenant.api.ok(
        tenant.api.post("/posts", json={"text": "Hello", "platforms": ["x"], "draft": True}), 201
    )
    seed_analytics(server, tenant, post["post_id"], days=20)
    tenant.api.ok(tenant.api.post("/competitors", json={"platform": "x", "handle": "@rival"}), 201)
    yield tenant, post["post_id"]
    tenant.api.close()


def _steady(value: Any) -> Any:
    """``value`` without the figures that move with the clock between two reads."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k != "freshness_seconds"}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


END = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
START = END - timedelta(days=14)

# (tool, the REST path, the arguments the tool and the path's query both take)
QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "get_unified_analytics",
        "/analytics/unified",
        {"from": _iso(START), "to": _iso(END), "granularity": "day", "group_by": "platform"},
    ),
    (
        "get_unified_analytics",
        "/analytics/unified",
        {
            "from": _iso(END - timedelta(days=2)),
            "to": _iso(END),
            "granularity": "hour",
            "tz": "Asia/Kolkata",
            "basis": "published",
            "platform": "x",
            "limit": 5,
        },
    ),
    ("list_viral_trends", "/viral-trends", {"limit": 3}),
    ("list_viral_trends", "/viral-trends", {"entity_type": "hashtag"}),
    ("get_insights", "/insights", {}),
    ("list_creators", "/creators", {}),
    ("list_competitors", "/competitors", {}),
]


@pytest.mark.parametrize(("tool", "path", "arguments"), QUERIES)
def test_the_analytics_tools_answer_as_rest(
    server: LiveServer,
    seeded: tuple[Tenant, str],
    tool: str,
    path: str,
    arguments: dict[str, Any],
) -> None:
    tenant, _ = seeded
    rest = tenant.api.ok(tenant.api.get(path, params=arguments))
    with agent(server, tenant.key) as a:
        data = a.ok(tool, arguments)
    assert _steady(data) == _steady(rest)


def test_post_analytics_and_best_times_answer_as_rest(
    server: LiveServer, seeded: tuple[Tenant, str]
) -> None:
    tenant, post_id = seeded
    account = tenant.accounts["x"]
    with agent(server, tenant.key) as a:
        post = a.ok("get_post_analytics", {"post_id": post_id})
        grid = a.ok("get_best_times", {"account_id": account})
    assert post["totals"]["impressions"] > 0
    assert _steady(post) == _steady(tenant.api.ok(tenant.api.get(f"/posts/{post_id}/analytics")))
    rest = tenant.api.ok(tenant.api.get("/insights/best-times", params={"account_id": account}))
    assert _steady(grid) == _steady(rest)


def test_a_cursor_of_either_interface_pages_the_other(
    server: LiveServer, seeded: tuple[Tenant, str]
) -> None:
    tenant, _ = seeded
    first = tenant.api.ok(tenant.api.get("/viral-trends", params={"limit": 2}))
    cursor = first["pagination"]["next_cursor"]
    assert cursor
    with agent(server, tenant.key) as a:
        second = a.ok("list_viral_trends", {"limit": 2, "cursor": cursor})
    rest = tenant.api.ok(tenant.api.get("/viral-trends", params={"limit": 2, "cursor": cursor}))
    assert _steady(second) == _steady(rest)
    assert second["items"] != first["items"]


def test_an_experiments_results_answer_as_rest_over_posts_really_published_and_read(
    measured: Measured,
) -> None:
    """Each arm's posts measured and lift with its interval: the numbers of GET
    /experiments/{id}, now and `as_of` a snapshot, and what the summary says of them."""
    api = measured.api
    key = api.http.headers["Authorization"].removeprefix("Bearer ")
    snapshot = api.ok(api.get("/analytics/unified"))["provenance"]["snapshot_id"]
    with agent(measured.server, key) as a:
        for experiment in (measured.one_account, measured.accounts):
            path = f"/experiments/{experiment['id']}"
            arguments = {"experiment_id": experiment["id"]}
            result = a.call("get_experiment", arguments)
            data = a.ok("get_experiment", arguments)
            assert data == api.ok(api.get(path))
            then = a.ok("get_experiment", {**arguments, "as_of": snapshot})
            assert then == api.ok(api.get(path, params={"as_of": snapshot}))
            assert then["results"]["arms"] == data["results"]["arms"]  # no capture since
            evening = next(arm for arm in data["results"]["arms"] if arm["name"] == "evening")
            lift = evening["lift"]
            assert lift is not None
            assert evening["posts_measured"] > 0
            summary = result.content[0]
            assert isinstance(summary, types.TextContent)
            assert (
                f"evening {evening['posts_measured']} post(s) measured, lift "
                f"{lift['estimate']:+.1%} (95 % interval {lift['low']:+.1%} to "
                f"{lift['high']:+.1%})"
            ) in summary.text
            results = data["results"]
            needed = results["posts_needed"]
            assert f"posts_needed {needed['per_arm']} per arm ({needed['more']} more)" in (
                summary.text
            )
            assert f"enough_data {str(results['enough_data']).lower()}" in summary.text
            assert f"can_stop_early {str(results['can_stop_early']).lower()}" in summary.text
        a.error("get_experiment", {"experiment_id": "exp_nope"}, "NOT_FOUND")
        a.error(
            "get_experiment",
            {"experiment_id": measured.one_account["id"], "as_of": "yesterday"},
            "VALIDATION_ERROR",
        )
