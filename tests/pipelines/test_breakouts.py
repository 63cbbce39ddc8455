"""Breakouts (issue 52, point 1): a surge the simulator plants is found at the capture after
it starts, served by the API, and pushed as one ``analytics.breakout`` event, once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from dagster import Definitions, materialize

from core.settings import Settings
from domain.workspaces.keys import mint_key
from domain.workspaces.service import bootstrap_test_workspace
from pipelines.analytics import breakouts
from pipelines.analytics import definitions as analytics
from pipelines.analytics.assets import mart_breakouts
from pipelines.definitions import resources
from pipelines.ingest import definitions as ingest
from simulator.world import World
from tests.servers import StoreSettings
from tests.support import Api, LiveServer, start_server, start_simulator
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor

pytestmark = pytest.mark.xdist_group(__name__)

SEED = 11
# The simulated world's own Bluesky post published 2025-06-14 13:04 surges at 07:09 the next
# day (8.6 times its ordinary curve): the world knows it, Murmur reads only the platform.
PLATFORM = "bluesky"
FIRST = datetime(2025, 6, 15, 3, 5, tzinfo=UTC)
CAPTURES = [FIRST + timedelta(hours=h) for h in range(7)]  # 03:05 … 09:05


@dataclass(frozen=True)
class Surge:
    external_id: str
    at: datetime


def _planted() -> Surge:
    """The world's own-account post on PLATFORM whose surge starts between the captures."""
    world = World(SEED)
    (own,) = [a for a in world.accounts(PLATFORM) if a.kind == "own"]
    found = [
        Surge(p.external_id, p.surge_at)
        for p in world.posts(own, CAPTURES[-1])
        if p.surge and p.surge_at is not None and CAPTURES[1] < p.surge_at < CAPTURES[-2]
    ]
    assert len(found) == 1, found
    return found[0]


@dataclass
class Run:
    settings: Settings
    server: LiveServer
    api: Api
    workspace_id: str
    sim: str
    # each capture: its clock, the breakouts asset's metadata, the list the API gave after it
    captures: list[tuple[datetime, dict[str, Any], list[dict[str, Any]]]] = field(
        default_factory=list
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings) -> Iterator[Run]:
    running = start_simulator(SEED)
    settings = store_settings(
        tmp_path_factory.mktemp("breakouts") / "data", platforms_url=running.root
    )
    server = start_server(settings)

    def setup(cur: Cursor) -> tuple[str, str]:
        ws_id = bootstrap_test_workspace(cur)
        ws = ws_repo.get_workspace(cur, ws_id)
        assert ws is not None
        return ws_id, mint_key(cur, organization_id=ws.organization_id, workspace_ids=[ws_id]).key

    ws_id, key = server.store.run(setup)
    api = Api(server.base_url, key)
    try:
        found = Run(settings, server, api, ws_id, running.root)
        for now in CAPTURES:
            found.captures.append((now, _capture(found, now), api.list_all("/analytics/breakouts")))
        yield found
    finally:
        api.close()
        server.stop()
        running.stop()


def _capture(run: Run, now: datetime) -> dict[str, Any]:
    """One hourly run of the ingest job, as its schedule starts it: every platform, then the
    breakouts; the breakouts asset's metadata."""
    httpx.post(f"{run.sim}/_sim/clock", json={"now": now.isoformat()}).raise_for_status()
    # The very job the hourly schedule starts, on this test's store.
    job = Definitions.merge(
        ingest.defs, analytics.defs, Definitions(resources=resources(run.settings))
    ).resolve_job_def("ingest_hourly")
    result = job.execute_in_process(
        partition_key=now.strftime("%Y-%m-%d-%H:00"), tags={"murmur/now": now.isoformat()}
    )
    assert result.success
    (event,) = [
        e for e in result.get_asset_materialization_events() if e.asset_key == mart_breakouts.key
    ]
    meta = event.step_materialization_data.materialization.metadata
    return {k: v.value for k, v in meta.items()}


def _events(run: Run) -> list[dict[str, Any]]:
    rows = run.server.store.run(
        lambda cur: cur.execute(
            "SELECT id, payload FROM webhook_events WHERE workspace_id = ?"
            " AND event_type = 'analytics.breakout' ORDER BY created_at",
            [run.workspace_id],
        ).fetchall()
    )
    return [{"id": r[0], **json.loads(r[1])} for r in rows]


def test_a_planted_surge_is_a_breakout_at_the_capture_after_it_pushed_once(run: Run) -> None:
    surge = _planted()
    first_after = next(t for t in CAPTURES if t > surge.at)
    for now, meta, listed in run.captures:
        mine = [b for b in listed if b["external_id"] == surge.external_id]
        if now < first_after:
            assert mine == [], json.dumps(mine, indent=1)
            continue
        # Found at the first capture after the surge began, and the same one after.
        (found,) = mine
        assert found["started_at"] == first_after.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        assert found["observed"] > found["band"]["high"] > found["expected"]
        assert found["evidence"]["method"] == "own"
        assert found["evidence"]["windows"][0]["end"] == found["started_at"]
        assert found["account_external_id"].startswith(f"test-{PLATFORM}-")
        assert found["account_id"].startswith("acc_")
        if now == first_after:
            assert meta["events"] == 1
    # No other own post broke out in these hours (the world planted one).
    assert {b["external_id"] for b in listed} == {surge.external_id}, listed
    (event,) = _events(run)
    assert event["breakout"]["id"] == found["id"]
    assert event["breakout"]["observed"] == found["observed"]
    # A re-run over the same data writes the same rows and sends nothing.
    again = materialize(
        [mart_breakouts],
        resources=resources(run.settings),
        tags={"murmur/now": CAPTURES[-1].isoformat()},
    )
    assert again.success
    assert len(_events(run)) == 1
    assert run.api.list_all("/analytics/breakouts") == listed


def test_filters_and_pages(run: Run) -> None:
    (found,) = run.api.list_all("/analytics/breakouts")
    api = run.api
    assert api.ok(api.get("/analytics/breakouts", params={"platform": "x"}))["items"] == []
    after = api.get("/analytics/breakouts", params={"since": "2025-06-15T12:00:00Z"})
    assert api.ok(after)["items"] == []
    since = api.get("/analytics/breakouts", params={"since": found["started_at"]})
    assert [b["id"] for b in api.ok(since)["items"]] == [found["id"]]
    account = api.get("/analytics/breakouts", params={"account_id": found["account_id"]})
    assert [b["id"] for b in api.ok(account)["items"]] == [found["id"]]
    page = api.ok(api.get("/analytics/breakouts"))
    assert page["provenance"]["definitions"].keys() == {"observed", "expected", "band"}
    assert page["snapshot"]["marts"] == ["mart_breakouts"]
    bad = api.get("/analytics/breakouts", params={"since": "yesterday"})
    assert bad.status_code == 422 or bad.status_code == 400
    assert bad.json()["success"] is False


def test_the_detector_judges_each_window_only_by_what_came_before() -> None:
    """A window's prediction does not move when later readings arrive (a breakout found at
    one capture is the same one at the next)."""
    base = datetime(2025, 1, 1)
    rows = [
        {
            "workspace_id": "ws",
            "platform": "x",
            "external_id": "p",
            "account_external_id": "a",
            "post_id": None,
            "published_at": base,
            "captured_at": base + timedelta(hours=h),
            "engagements": total,
        }
        for h, total in enumerate([0, 100, 180, 240, 285, 318])
    ]
    (post,) = breakouts.posts_of(rows)
    same_age = breakouts.SameAge([post])
    early = breakouts.predict(post, 3, same_age)
    (longer,) = breakouts.posts_of(
        [*rows, {**rows[-1], "captured_at": base + timedelta(hours=6), "engagements": 9000}]
    )
    late = breakouts.predict(longer, 3, breakouts.SameAge([longer]))
    assert early is not None
    assert late is not None
    assert early.log_velocity == late.log_velocity
    assert early.source == "own"
    assert early.slope is not None
    assert early.slope < 0
