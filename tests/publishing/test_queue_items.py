"""Queue items follow their posts to `published` or `failed` (contract: queued → scheduled →
published | failed | removed), with the real worker publishing to the simulator over HTTP."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from domain.automation import service as automation
from tests.publishing.conftest import Sim, StartWorker, post_row, settled, wait_for
from tests.support import Api, LiveServer, Tenant
from warehouse import publishing as repo
from warehouse.ids import utcnow


def _this_minute() -> datetime:
    """The whole UTC minute now in progress (slots are whole minutes): already begun."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


def _queue(api: Api, platform: str, at: datetime) -> dict[str, Any]:
    body = {
        "name": f"queue-{uuid.uuid4().hex[:6]}",
        "timezone": "UTC",
        "slots": [{"weekday": at.weekday(), "time": at.strftime("%H:%M")}],
        "destinations": [platform],
    }
    data: dict[str, Any] = api.ok(api.post("/queues", json=body), 201)
    return data


def _item(api: Api, queue: dict[str, Any], text: str) -> dict[str, Any]:
    data: dict[str, Any] = api.ok(
        api.post(f"/queues/{queue['id']}/items", json={"text": text}), 201
    )
    return data


def test_queue_items_end_published_or_failed_with_their_posts(
    pub_server: LiveServer,
    pub_tenant: Tenant,
    sim: Sim,
    start_worker: StartWorker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = pub_tenant.api
    at = _this_minute()
    # The items are queued as if a second before their slot: the queues' clock (the API's,
    # in this process) reads ``at`` less a second while they are added, and the real one
    # again before the worker starts. The slot is then already due on the worker's clock:
    # no wait of up to a minute for the next whole minute to come.
    monkeypatch.setattr(automation, "_now", lambda: at - timedelta(seconds=1))
    good, bad = _queue(api, "x", at), _queue(api, "linkedin", at)
    sim.fault("linkedin", "reject", message="not today")
    ok_item = _item(api, good, f"Queued and out {uuid.uuid4().hex[:8]}")
    ko_item = _item(api, bad, f"Queued and refused {uuid.uuid4().hex[:8]}")
    for item in (ok_item, ko_item):
        assert item["status"] == "scheduled"
        assert item["slot_at"].startswith(at.strftime("%Y-%m-%dT%H:%M"))
    monkeypatch.undo()

    start_worker()
    posts = [str(ok_item["post_id"]), str(ko_item["post_id"])]
    wait_for(lambda: all(settled(pub_server, p) for p in posts), "both posts to settle")

    assert post_row(pub_server, ok_item["post_id"]).status == "published"
    assert post_row(pub_server, ko_item["post_id"]).status == "failed"
    shown = api.ok(api.get(f"/queues/{good['id']}/items/{ok_item['id']}"))
    assert (shown["status"], shown["post_status"]) == ("published", "published")
    shown = api.ok(api.get(f"/queues/{bad['id']}/items/{ko_item['id']}"))
    assert (shown["status"], shown["post_status"]) == ("failed", "failed")
    # The status filter and the waiting items see the final states too.
    page = api.ok(api.get(f"/queues/{good['id']}/items", params={"status": "published"}))
    assert [i["id"] for i in page["items"]] == [ok_item["id"]]
    page = api.ok(api.get(f"/queues/{bad['id']}/items", params={"status": "scheduled"}))
    assert page["items"] == []
    # A settled item is no longer waiting: it cannot be removed.
    gone = api.delete(f"/queues/{good['id']}/items/{ok_item['id']}")
    assert gone.status_code == 409, gone.text


def test_the_sweep_settles_an_item_whose_post_settled_before_a_crash(
    pub_server: LiveServer, pub_tenant: Tenant
) -> None:
    api = pub_tenant.api
    queue = _queue(api, "x", datetime.now(UTC) + timedelta(days=2))
    item = _item(api, queue, f"Crash between statements {uuid.uuid4().hex[:8]}")
    # The post rolled up to published, then the process died before its item followed.
    pub_server.store.run(
        lambda cur: cur.execute(
            "UPDATE posts SET status = 'published' WHERE id = ?", [item["post_id"]]
        )
    )
    assert api.ok(api.get(f"/queues/{queue['id']}/items/{item['id']}"))["status"] == "scheduled"

    pub_server.store.run(lambda cur: repo.roll_up(cur, None, utcnow()))  # the worker's sweep

    shown = api.ok(api.get(f"/queues/{queue['id']}/items/{item['id']}"))
    assert (shown["status"], shown["post_status"]) == ("published", "published")
