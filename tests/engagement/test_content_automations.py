"""Content automations run by the engagement runner's code, in a store opened of its own."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from connectors.outbound import STRICT, OutboundClient
from tests.support import LiveServer, Tenant
from warehouse.store import Store
from workers.engagement import content_automations
from workers.engagement.content_automations import parse_feed, render_row


@pytest.fixture
def remote(server: LiveServer) -> Iterator[Store]:
    """The store as the runner opens it: by itself, beside the API's."""
    with server.settings.open_store() as store:
        yield store


def _queue(tenant: Tenant) -> dict[str, object]:
    body = {
        "name": "Evergreen",
        "timezone": "Europe/Paris",
        "slots": [{"weekday": d, "time": "09:30"} for d in range(7)],
        "destinations": ["x", "linkedin"],
    }
    queue: dict[str, object] = tenant.api.ok(tenant.api.post("/queues", json=body), 201)
    return queue


def _automation(tenant: Tenant, body: dict[str, Any]) -> dict[str, Any]:
    """The content automation ``body``, created through the API."""
    made: dict[str, Any] = tenant.api.ok(tenant.api.post("/content-automations", json=body), 201)
    return made


def _due(automation: dict[str, Any]) -> datetime:
    """When ``automation`` (as the API shows it) runs next, on the runner's clock (naive UTC)."""
    return datetime.fromisoformat(automation["next_run_at"].replace("Z", "+00:00")).replace(
        tzinfo=None
    )


def test_an_evergreen_automation_fills_its_queue_round_robin_once_per_run(
    tenant: Tenant, remote: Store
) -> None:
    queue = _queue(tenant)
    rule = _automation(
        tenant,
        {
            "name": "Tips",
            "source": {"type": "evergreen", "posts": [{"text": "Tip one"}, {"text": "Tip two"}]},
            "schedule": {"cron": "0 8 * * *", "timezone": "Europe/Paris"},
            "target": {"queue_id": queue["id"]},
        },
    )
    due = _due(rule)
    with OutboundClient(STRICT) as client:
        first = content_automations.run_due(
            remote, client, now=due, workspace_id=tenant.workspace_id
        )
        again = content_automations.run_due(
            remote, client, now=due, workspace_id=tenant.workspace_id
        )
    assert first.errors == []
    assert first.runs == 1
    assert len(first.posts) == 1
    assert again.runs == 0  # the schedule moved on: the same due time runs once
    after = tenant.api.ok(tenant.api.get(f"/content-automations/{rule['id']}"))
    assert after["last_run_at"] is not None
    assert after["next_run_at"] > rule["next_run_at"]
    items = tenant.api.list_all(f"/queues/{queue['id']}/items")
    assert [i["text"] for i in items] == ["Tip one"]
    assert items[0]["status"] == "scheduled"
    assert items[0]["slot_at"] is not None

    nxt = _due(after)
    with OutboundClient(STRICT) as client:
        second = content_automations.run_due(
            remote, client, now=nxt, workspace_id=tenant.workspace_id
        )
        third_due = tenant.api.ok(tenant.api.get(f"/content-automations/{rule['id']}"))
        third = content_automations.run_due(
            remote, client, now=_due(third_due), workspace_id=tenant.workspace_id
        )
    assert second.runs == 1
    assert third.runs == 1
    items = tenant.api.list_all(f"/queues/{queue['id']}/items")
    assert [i["text"] for i in items] == ["Tip one", "Tip two", "Tip one"]
    events = tenant.api.list_all(
        "/scheduled-events", kind="automation_run", **{"from": rule["next_run_at"]}
    )
    done = [e for e in events if e["ref_id"] == rule["id"] and e["status"] == "done"]
    assert len(done) >= 1


def test_a_template_automation_schedules_posts_directly_with_approval_when_required(
    server: LiveServer, remote: Store
) -> None:
    from tests.support import new_tenant

    tenant = new_tenant(server, approval_required=True)
    rule = _automation(
        tenant,
        {
            "name": "Cities",
            "source": {
                "type": "template",
                "template": "Hello {city}!",
                "rows": [{"city": "Paris"}, {"city": "Lyon"}],
            },
            "schedule": {"cron": "0 8 * * *", "timezone": "UTC"},
            "target": {"platforms": ["x"]},
        },
    )
    due = _due(rule)
    with OutboundClient(STRICT) as client:
        report = content_automations.run_due(
            remote, client, now=due, workspace_id=tenant.workspace_id
        )
    assert report.errors == []
    assert len(report.posts) == 1
    post = tenant.api.ok(tenant.api.get(f"/posts/{report.posts[0]}"))
    assert post["text"] == "Hello Paris!"
    assert post["status"] == "pending_approval"  # never straight to publishing
    assert post["approval"] is not None
    tenant.api.close()


def test_feed_parsing_reads_rss_and_atom() -> None:
    rss = b"""<rss><channel><item><title>One</title><link>https://e.x/1</link>
    <guid>g1</guid></item><item><title>Two</title><link>https://e.x/2</link></item>
    </channel></rss>"""
    atom = b"""<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>tag:a</id>
    <title>Three</title><link rel="alternate" href="https://e.x/3"/></entry></feed>"""
    assert parse_feed(rss) == [("g1", "One https://e.x/1"), ("https://e.x/2", "Two https://e.x/2")]
    assert parse_feed(atom) == [("tag:a", "Three https://e.x/3")]
    assert render_row("Hi {name}, {missing}", {"name": "Ann"}) == "Hi Ann, {missing}"
