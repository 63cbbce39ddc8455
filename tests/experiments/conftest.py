"""An experiment whose posts were published and read: the simulator, a real API and store,
the real publishing worker and the hourly ingest job at simulated captures."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from dagster import Definitions

from core.settings import Settings
from domain.workspaces.keys import mint_key
from domain.workspaces.service import bootstrap_test_workspace
from pipelines.analytics import definitions as analytics
from pipelines.definitions import resources
from pipelines.ingest import definitions as ingest
from tests.publishing.conftest import FAST, wait_for
from tests.servers import StoreSettings
from tests.support import Api, LiveServer, start_server, start_simulator
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor
from workers.publishing.worker import Worker

SEED = 29
# Readings either side of 24 h and 48 h after publication (the metric is interpolated).
CAPTURE_AGES_H = (22, 26, 46, 50)
ARMS = [
    {"name": "morning", "control": True, "slots": [{"time": "09:00"}, {"time": "10:00"}]},
    {"name": "evening", "slots": [{"time": "18:00"}, {"time": "19:00"}]},
]


@dataclass
class Measured:
    """The store after the run: its API, and the experiments with the posts each scheduled."""

    settings: Settings
    server: LiveServer
    api: Api
    workspace_id: str
    sim: str
    one_account: dict[str, Any]  # engagements at 24 h, on Bluesky alone
    accounts: dict[str, Any]  # the engagement rate, over X, LinkedIn and Bluesky
    posts: dict[str, list[dict[str, Any]]]  # experiment id -> its posts as created


def _experiment(api: Api, accounts: list[str], metric: str, seed: int) -> dict[str, Any]:
    body = {
        "name": f"{metric} over {len(accounts)} account{'' if len(accounts) == 1 else 's'}",
        "account_ids": accounts,
        "arms": ARMS,
        "metric": metric,
        "target_posts": 60,
        "seed": seed,
    }
    return api.ok(api.post("/experiments", json=body), 201)  # type: ignore[no-any-return]


def _capture(settings: Settings, sim: str, now: datetime) -> None:
    """One run of the job the hourly schedule starts, at the simulator's ``now``."""
    httpx.post(f"{sim}/_sim/clock", json={"now": now.isoformat()}).raise_for_status()
    job = Definitions.merge(
        ingest.defs, analytics.defs, Definitions(resources=resources(settings))
    ).resolve_job_def("ingest_hourly")
    result = job.execute_in_process(
        partition_key=now.strftime("%Y-%m-%d-%H:00"), tags={"murmur/now": now.isoformat()}
    )
    assert result.success


def _publish_now(run: Measured, post_ids: list[str]) -> None:
    """The slots' time arrives: the posts fall due now, and the real worker publishes them.

    The one write of the test's own (the clock cannot be moved for the worker); what the
    experiment drew, each post's arm and slot, stays as it was recorded."""

    def due(cur: Cursor) -> None:
        cur.execute(
            "UPDATE posts SET scheduled_at = ? WHERE id IN (SELECT value FROM json_each(?))"
            if cur.dialect == "sqlite"
            else "UPDATE posts SET scheduled_at = ? WHERE id IN"
            " (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))",
            [datetime.now(UTC).replace(tzinfo=None), json.dumps(post_ids)],
        )

    run.server.store.run(due)
    store = run.settings.open_store()
    worker = Worker(run.settings, store, policy=FAST, poll_interval=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:

        def published() -> bool:
            return all(
                run.api.ok(run.api.get(f"/posts/{i}"))["status"] == "published" for i in post_ids
            )

        wait_for(published, "the experiments' posts to be published")
    finally:
        stop.set()
        thread.join(timeout=60)
        store.close()


@pytest.fixture(scope="module")
def measured(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[Measured]:
    running = start_simulator(SEED)
    settings = store_settings(
        tmp_path_factory.mktemp("experiments") / "data", platforms_url=running.root
    )
    server = start_server(settings)

    def setup(cur: Cursor) -> tuple[str, str, dict[str, str]]:
        ws_id = bootstrap_test_workspace(cur)
        ws = ws_repo.get_workspace(cur, ws_id)
        assert ws is not None
        accounts = {a.platform: a.id for a in ws_repo.list_accounts(cur, ws_id)}
        key = mint_key(cur, organization_id=ws.organization_id, workspace_ids=[ws_id]).key
        return ws_id, key, accounts

    ws_id, key, accounts = server.store.run(setup)
    api = Api(server.base_url, key)
    try:
        one = _experiment(api, [accounts["bluesky"]], "engagements_24h", 5)
        many_accounts = [accounts[p] for p in ("x", "linkedin", "bluesky")]
        many = _experiment(api, many_accounts, "engagement_rate", 6)
        posts: dict[str, list[dict[str, Any]]] = {one["id"]: [], many["id"]: []}
        for n in range(16):
            body = {
                "text": f"one {n} {uuid.uuid4().hex[:8]}",
                "platforms": ["bluesky"],
                "experiment_id": one["id"],
            }
            posts[one["id"]].append(api.ok(api.post("/posts", json=body), 201))
        for n in range(24):
            body = {
                "text": f"many {n} {uuid.uuid4().hex[:8]}",
                "platforms": [("x", "linkedin", "bluesky")[n % 3]],
                "experiment_id": many["id"],
            }
            posts[many["id"]].append(api.ok(api.post("/posts", json=body), 201))
        run = Measured(settings, server, api, ws_id, running.root, one, many, posts)
        # The platform publishes at its own clock, set days back, so that the captures after
        # it are hours the pipeline already has partitions for.
        published = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        published -= timedelta(days=3)
        httpx.post(
            f"{running.root}/_sim/clock", json={"now": published.isoformat()}
        ).raise_for_status()
        _publish_now(run, [p["id"] for group in posts.values() for p in group])
        for hours in CAPTURE_AGES_H:
            _capture(settings, running.root, published + timedelta(hours=hours, minutes=5))
        yield run
    finally:
        api.close()
        server.stop()
        running.stop()
