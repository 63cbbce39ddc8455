"""Every automation endpoint: no key, wrong scope, and another workspace's ids."""

from __future__ import annotations

from typing import Any

import pytest

from tests.automation.helpers import make_automation, make_preset, make_queue, soon
from tests.support import Api, LiveServer, Tenant, assert_error

ENDPOINTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "/content-automations", None),
    ("POST", "/content-automations", {}),
    ("GET", "/content-automations/ca_x", None),
    ("PATCH", "/content-automations/ca_x", {}),
    ("DELETE", "/content-automations/ca_x", None),
    ("GET", "/destination-presets", None),
    ("POST", "/destination-presets", {}),
    ("GET", "/destination-presets/dp_x", None),
    ("PATCH", "/destination-presets/dp_x", {}),
    ("DELETE", "/destination-presets/dp_x", None),
    ("GET", "/queues", None),
    ("POST", "/queues", {}),
    ("GET", "/queues/q_x", None),
    ("PATCH", "/queues/q_x", {}),
    ("DELETE", "/queues/q_x", None),
    ("GET", "/queues/q_x/slots", None),
    ("PUT", "/queues/q_x/slots", {"slots": []}),
    ("GET", "/queues/q_x/items", None),
    ("POST", "/queues/q_x/items", {"text": "hi"}),
    ("POST", "/queues/q_x/items/reorder", {"item_ids": ["qi_x"]}),
    ("GET", "/queues/q_x/items/qi_x", None),
    ("DELETE", "/queues/q_x/items/qi_x", None),
    ("GET", "/scheduled-events", None),
    ("POST", "/scheduled-events", {}),
    ("POST", "/scheduled-events/evt_x/cancel", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_no_key_is_auth_required(
    server: LiveServer, method: str, path: str, body: dict[str, Any] | None
) -> None:
    response = Api(server.base_url, None).request(method, path, json=body)
    assert_error(response, 401, "AUTH_REQUIRED")


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_wrong_scope_is_forbidden(
    server: LiveServer, tenant: Tenant, method: str, path: str, body: dict[str, Any] | None
) -> None:
    # Reads need automations:read, writes automations:write; the other one is not enough.
    scope = "automations:write" if method == "GET" else "automations:read"
    api = tenant.key_with(server, scopes=[scope, "posts:read", "posts:write"])
    assert_error(api.request(method, path, json=body), 403, "SCOPE_FORBIDDEN")


def test_another_workspaces_ids_are_not_found(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = other_tenant.api
    automation = make_automation(theirs, other_tenant)
    preset = make_preset(theirs, other_tenant)
    queue = make_queue(theirs)
    item = theirs.ok(theirs.post(f"/queues/{queue['id']}/items", json={"text": "theirs"}), 201)
    event = theirs.ok(
        theirs.post("/scheduled-events", json={"title": "theirs", "starts_at": soon(days=1)}), 201
    )
    a, p, q, i = automation["id"], preset["id"], queue["id"], item["id"]
    calls: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", f"/content-automations/{a}", None),
        ("PATCH", f"/content-automations/{a}", {"name": "mine"}),
        ("DELETE", f"/content-automations/{a}", None),
        ("GET", f"/destination-presets/{p}", None),
        ("PATCH", f"/destination-presets/{p}", {"name": "mine"}),
        ("DELETE", f"/destination-presets/{p}", None),
        ("GET", f"/queues/{q}", None),
        ("PATCH", f"/queues/{q}", {"name": "mine"}),
        ("DELETE", f"/queues/{q}", None),
        ("GET", f"/queues/{q}/slots", None),
        ("PUT", f"/queues/{q}/slots", {"slots": []}),
        ("GET", f"/queues/{q}/items", None),
        ("POST", f"/queues/{q}/items", {"text": "mine"}),
        ("POST", f"/queues/{q}/items/reorder", {"item_ids": [i]}),
        ("GET", f"/queues/{q}/items/{i}", None),
        ("DELETE", f"/queues/{q}/items/{i}", None),
        ("POST", f"/scheduled-events/{event['id']}/cancel", None),
    ]
    for method, path, body in calls:
        assert_error(tenant.api.request(method, path, json=body), 404, "NOT_FOUND")
    # Nothing of theirs shows in our lists, and nothing of theirs changed.
    for path in ("/content-automations", "/destination-presets", "/queues", "/scheduled-events"):
        assert tenant.api.list_all(path) == []
    assert theirs.ok(theirs.get(f"/queues/{q}/items/{i}"))["status"] == "scheduled"
    # Their account ids are not destinations here.
    response = tenant.api.post(
        "/queues",
        json={"name": "q", "timezone": "UTC", "destinations": [other_tenant.accounts["x"]]},
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "destinations.0"
    # Their queue is not a target here.
    response = tenant.api.post(
        "/content-automations",
        json={
            "name": "n",
            "source": {"type": "feed", "url": "https://example.com/f"},
            "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
            "target": {"queue_id": q},
        },
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "target.queue_id"
