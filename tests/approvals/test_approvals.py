"""Approvals over real HTTP: batches, approve, reject, return, cancel while pending."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.posts.helpers import create_post, future
from tests.support import Api, LiveServer, Tenant, assert_error, new_tenant


@pytest.fixture
def reviewed(server: LiveServer) -> Iterator[Tenant]:
    """A workspace where every post waits for approval."""
    made = new_tenant(server, approval_required=True)
    yield made
    made.api.close()


def _item_of(api: Api, post: dict[str, Any]) -> str:
    assert post["approval"] is not None
    return str(post["approval"]["item_id"])


def test_pending_post_shows_in_todays_batch(reviewed: Tenant) -> None:
    api = reviewed.api
    post = create_post(api, scheduled_at=future())
    assert post["status"] == "pending_approval"
    assert post["approval"]["status"] == "pending"
    batches = api.list_all("/approvals")
    assert len(batches) == 1
    batch = batches[0]
    assert batch["id"].startswith("apb_")
    assert batch["status"] == "pending"
    assert batch["name"] == f"Review batch {batch['batch_date']}"
    (item,) = batch["items"]
    assert item["id"] == _item_of(api, post)
    assert item["id"].startswith("api_")
    assert item["post"]["post_id"] == post["id"]
    assert item["post"]["status"] == "pending_approval"
    assert item["actionable"] is True
    assert [e["action"] for e in item["events"]] == ["submit"]
    assert api.ok(api.get(f"/approvals/{batch['id']}")) == batch
    assert [b["id"] for b in api.list_all("/approvals", status="pending")] == [batch["id"]]
    assert api.list_all("/approvals", status="completed") == []
    second = create_post(api)
    assert api.list_all("/approvals")[0]["items"][1]["post"]["post_id"] == second["id"]


def test_approve_keeps_the_schedule(reviewed: Tenant) -> None:
    api = reviewed.api
    when = future()
    post = create_post(api, scheduled_at=when)
    item_id = _item_of(api, post)
    error = assert_error(
        api.post(f"/approvals/{item_id}/action", json={"action": "reject"}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "comment"
    assert error["details"][0]["issue"] == "required"
    item = api.ok(
        api.post(f"/approvals/{item_id}/action", json={"action": "approve", "comment": "ok"})
    )
    assert item["status"] == "approved"
    assert item["decided_by"]
    assert item["decided_at"]
    assert item["post"]["status"] == "scheduled"
    assert item["actionable"] is False
    assert [e["action"] for e in item["events"]] == ["submit", "approve"]
    after = api.ok(api.get(f"/posts/{post['id']}"))
    assert after["status"] == "scheduled"
    assert after["scheduled_at"] == post["scheduled_at"]
    assert_error(
        api.post(f"/approvals/{item_id}/action", json={"action": "approve"}), 409, "INVALID_STATE"
    )
    assert api.list_all("/approvals", status="completed")[0]["status"] == "completed"


def test_approve_without_schedule_publishes_now(reviewed: Tenant) -> None:
    api = reviewed.api
    post = create_post(api)
    assert post["scheduled_at"] is None
    api.ok(api.post(f"/approvals/{_item_of(api, post)}/action", json={"action": "approve"}))
    assert api.ok(api.get(f"/posts/{post['id']}"))["scheduled_at"] is not None


def test_reject_cancels_and_return_sends_to_draft(reviewed: Tenant) -> None:
    api = reviewed.api
    rejected = create_post(api)
    item = api.ok(
        api.post(
            f"/approvals/{_item_of(api, rejected)}/action",
            json={"action": "reject", "comment": "Off brand"},
        )
    )
    assert item["status"] == "rejected"
    assert item["comment"] == "Off brand"
    post = api.ok(api.get(f"/posts/{rejected['id']}"))
    assert post["status"] == "canceled"
    assert post["canceled_at"] is not None

    returned = create_post(api)
    item = api.ok(
        api.post(f"/approvals/{_item_of(api, returned)}/action", json={"action": "return"})
    )
    assert item["status"] == "returned"
    assert api.ok(api.get(f"/posts/{returned['id']}"))["status"] == "draft"
    assert_error(
        api.post(f"/approvals/{item['id']}/action", json={"action": "approve"}),
        409,
        "INVALID_STATE",
    )
    # Fixed and resubmitted: a new pending item.
    again = api.ok(api.patch(f"/posts/{returned['id']}", json={"text": "v2", "draft": False}))
    assert again["status"] == "pending_approval"
    assert again["approval"]["item_id"] != item["id"]


def test_editing_a_pending_post_keeps_it_pending(reviewed: Tenant) -> None:
    api = reviewed.api
    post = create_post(api)
    edited = api.ok(api.patch(f"/posts/{post['id']}", json={"text": "edited"}))
    assert edited["status"] == "pending_approval"
    assert edited["approval"] == post["approval"]


def test_canceling_a_pending_post_closes_its_item(reviewed: Tenant) -> None:
    api = reviewed.api
    post = create_post(api)
    item_id = _item_of(api, post)
    api.ok(api.post(f"/posts/{post['id']}/cancel"))
    batch = api.list_all("/approvals")[0]
    (item,) = batch["items"]
    assert item["status"] == "pending"
    assert item["actionable"] is False
    assert item["post"]["status"] == "canceled"
    assert [e["action"] for e in item["events"]] == ["submit", "cancel"]
    assert batch["status"] == "completed"
    assert_error(
        api.post(f"/approvals/{item_id}/action", json={"action": "approve"}), 409, "INVALID_STATE"
    )


def test_approval_required_per_post(tenant: Tenant) -> None:
    post = create_post(tenant.api, approval_required=True)
    assert post["status"] == "pending_approval"
    assert create_post(tenant.api)["status"] == "scheduled"


def test_auth_scope_workspace_and_validation(
    server: LiveServer, reviewed: Tenant, other_tenant: Tenant
) -> None:
    api = reviewed.api
    post = create_post(api)
    item_id = _item_of(api, post)
    batch_id = post["approval"]["batch_id"]
    anonymous = Api(server.base_url, None)
    assert_error(anonymous.get("/approvals"), 401, "AUTH_REQUIRED")
    assert_error(anonymous.get(f"/approvals/{batch_id}"), 401, "AUTH_REQUIRED")
    assert_error(
        anonymous.post(f"/approvals/{item_id}/action", json={"action": "approve"}),
        401,
        "AUTH_REQUIRED",
    )
    reader = reviewed.key_with(server, scopes=["approvals:read"])
    assert_error(
        reader.post(f"/approvals/{item_id}/action", json={"action": "approve"}),
        403,
        "SCOPE_FORBIDDEN",
    )
    writer = reviewed.key_with(server, scopes=["approvals:write"])
    assert_error(writer.get("/approvals"), 403, "SCOPE_FORBIDDEN")
    other = other_tenant.api
    assert_error(other.get(f"/approvals/{batch_id}"), 404, "NOT_FOUND")
    assert_error(
        other.post(f"/approvals/{item_id}/action", json={"action": "approve"}), 404, "NOT_FOUND"
    )
    assert other.list_all("/approvals") == []
    error = assert_error(
        api.post(f"/approvals/{item_id}/action", json={"action": "maybe"}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "action"
    assert_error(api.get("/approvals", params={"status": "open"}), 400, "VALIDATION_ERROR")


def test_action_idempotency(reviewed: Tenant) -> None:
    api = reviewed.api
    item_id = _item_of(api, create_post(api))
    path = f"/approvals/{item_id}/action"
    key = str(uuid.uuid4())
    first = api.post(path, json={"action": "approve"}, idempotency_key=key)
    again = api.post(path, json={"action": "approve"}, idempotency_key=key)
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    events = api.ok(api.get(f"/approvals/{first.json()['data']['batch_id']}"))["items"][0]["events"]
    assert [e["action"] for e in events] == ["submit", "approve"]
    assert_error(
        api.post(path, json={"action": "return"}, idempotency_key=key), 409, "IDEMPOTENCY_CONFLICT"
    )
    assert_error(api.http.post(path, json={"action": "approve"}), 400, "IDEMPOTENCY_KEY_REQUIRED")
