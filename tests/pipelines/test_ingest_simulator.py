"""The ingest assets against the bundled simulator over real HTTP, then the marts over them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from dagster import ExecuteInProcessResult, materialize

from connectors.registry import SUPPORTED
from core.settings import Settings
from domain.workspaces.service import bootstrap_test_workspace
from pipelines.analytics.assets import DAILY_ASSETS
from pipelines.definitions import resources
from pipelines.ingest.assets import CAPTURE, INGEST_ASSETS
from tests.servers import StoreSettings
from tests.support import start_simulator

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

T0 = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def sim_root() -> Iterator[str]:
    running = start_simulator(11)
    yield running.root
    running.stop()


def _set_clock(root: str, now: datetime) -> None:
    httpx.post(f"{root}/_sim/clock", json={"now": now.isoformat()}).raise_for_status()


@pytest.fixture
def settings(tmp_path: Path, store_settings: StoreSettings, sim_root: str) -> Settings:
    return store_settings(tmp_path / "data", platforms_url=sim_root)


def test_ingest_hours_then_marts(sim_root: str, settings: Settings) -> None:
    with settings.open_lakehouse() as store:
        # The test workspace tracks a competitor of the simulated world on X (chirply).
        ws = store.publishing.run(bootstrap_test_workspace)
    res = resources(settings)
    x_and_posts = [a for a in INGEST_ASSETS if a.key.path[-1] in ("raw_x", "raw_murmur_posts")]
    for hours in (0, 3):
        now = T0 + timedelta(hours=hours)
        _set_clock(sim_root, now)
        result = materialize(
            x_and_posts,
            partition_key=now.strftime("%Y-%m-%d-%H:00"),
            resources=res,
            tags={"murmur/now": now.isoformat()},
        )
        assert result.success
    assert materialize(DAILY_ASSETS, partition_key="2025-06-15", resources=res).success
    with settings.open_lakehouse() as store, store.cursor() as cur:
        kinds = dict(
            cur.execute(
                "SELECT kind, count(DISTINCT external_id) FROM raw_account_snapshots"
                " WHERE workspace_id = ? GROUP BY kind",
                [ws],
            ).fetchall()
        )
        assert kinds.get("own") == 1
        assert kinds.get("competitor") == 1
        assert kinds.get("creator")
        # two hourly batches: posts seen by both keep both snapshots (never overwritten);
        # posts published between the two hours have one
        per_post = cur.execute(
            "SELECT count(*) FILTER (WHERE n = 2), count(*) FILTER (WHERE n > 2),"
            " count(DISTINCT captured_at) FROM (SELECT external_id, count(*) n,"
            " any_value(captured_at) AS captured_at"
            " FROM raw_engagement_snapshots WHERE workspace_id = ? GROUP BY external_id)",
            [ws],
        ).fetchone()
        assert per_post is not None
        assert per_post[0] > 0
        assert per_post[1] == 0
        batches = cur.execute(
            "SELECT count(*) FROM ingest_batches WHERE workspace_id = ? AND source = 'connector:x'",
            [ws],
        ).fetchone()
        assert batches == (2,)
        engaged = cur.execute(
            "SELECT sum(engagements) FROM mart_post_daily WHERE workspace_id = ?", [ws]
        ).fetchone()
        assert engaged is not None
        assert engaged[0] > 0


def test_an_expired_connection_is_flagged_and_the_run_goes_on(
    sim_root: str, settings: Settings
) -> None:
    with settings.open_lakehouse() as store:
        ws = store.publishing.run(bootstrap_test_workspace)
    res = resources(settings)
    raw = {a.key.path[-1]: a for a in INGEST_ASSETS}
    _set_clock(sim_root, T0)
    # Every X call answers 401 while YouTube answers: accounts are read several at a time,
    # so each failure must land on its own account, and X's failures on X alone.
    fault = {"platform": "x", "kind": "expired_token", "count": 10_000}
    httpx.post(f"{sim_root}/_sim/faults", json=fault).raise_for_status()
    try:
        result = materialize(
            [raw["raw_x"], raw["raw_youtube"]],
            partition_key=T0.strftime("%Y-%m-%d-%H:00"),
            resources=res,
            tags={"murmur/now": T0.isoformat()},
        )
    finally:
        httpx.delete(f"{sim_root}/_sim/faults").raise_for_status()
    assert result.success

    def counted(name: str, key: str) -> int:
        value = result.asset_materializations_for_node(f"ingest__{name}")[0].metadata[key].value
        assert isinstance(value, int)
        return value

    assert counted("raw_x", "accounts") == 0
    assert counted("raw_x", "errors") > 0
    assert counted("raw_youtube", "errors") == 0
    assert counted("raw_youtube", "accounts") > 2
    with settings.open_lakehouse() as store, store.cursor() as cur:
        statuses = dict(
            store.publishing.read(
                lambda pub: pub.execute(
                    "SELECT platform, status FROM accounts WHERE workspace_id = ?", [ws]
                ).fetchall()
            )
        )
        recorded = cur.execute(
            "SELECT errors FROM ingest_batches WHERE workspace_id = ? AND source = 'connector:x'",
            [ws],
        ).fetchone()
    assert statuses["x"] == "needs_reconnection"
    assert statuses["youtube"] == "active"
    assert recorded is not None
    stages = {(e["kind"], e["stage"]) for e in json.loads(recorded[0])}
    assert ("own", "auth") in stages
    assert ("competitor", "auth") in stages


def test_a_capture_commits_every_platform_at_once(sim_root: str, settings: Settings) -> None:
    """`murmur pipeline run`'s capture of a moment: every platform read, then ONE lake commit
    holding each platform's batch (its own ingest_batches row, its own errors)."""
    with settings.open_lakehouse() as store:
        ws = store.publishing.run(bootstrap_test_workspace)
    _set_clock(sim_root, T0)
    key = T0.strftime("%Y-%m-%d-%H:00")

    def snapshots() -> int:
        with settings.open_lakehouse() as store, store.cursor() as cur:
            row = cur.execute("SELECT count(*) FROM lake.snapshots()").fetchone()
            assert row is not None
            return int(row[0])

    def capture() -> ExecuteInProcessResult:
        """Materialize the capture of the moment; it commits to the lake exactly once."""
        before = snapshots()
        result = materialize(
            [CAPTURE],
            partition_key=key,
            resources=resources(settings),
            tags={"murmur/now": T0.isoformat()},
        )
        assert result.success
        assert snapshots() - before == 1
        return result

    result = capture()
    # Every platform (and Murmur's own posts, none yet) materialized as its own asset.
    assert {
        e.asset_key.path[-1] if e.asset_key else ""
        for e in result.get_asset_materialization_events()
    } == {a.key.path[-1] for a in INGEST_ASSETS}
    with settings.open_lakehouse() as store, store.cursor() as cur:
        batches = cur.execute(
            "SELECT source, id, rows_accounts FROM ingest_batches WHERE workspace_id = ?"
            " ORDER BY source",
            [ws],
        ).fetchall()
        per_source = cur.execute(
            "SELECT source, count(DISTINCT ingest_batch) FROM raw_account_snapshots"
            " WHERE workspace_id = ? GROUP BY source ORDER BY source",
            [ws],
        ).fetchall()
    assert [b[0] for b in batches] == sorted(f"connector:{p}" for p in SUPPORTED)
    assert all(b[1] == f"{b[0]}:{ws}:{key}" and b[2] > 0 for b in batches)
    assert per_source == [(b[0], 1) for b in batches]

    # Captured again: each batch replaces its own rows, still in one commit.
    capture()
    with settings.open_lakehouse() as store, store.cursor() as cur:
        row = cur.execute(
            "SELECT count(*), count(DISTINCT id) FROM ingest_batches WHERE workspace_id = ?", [ws]
        ).fetchone()
    assert row == (len(SUPPORTED), len(SUPPORTED))
