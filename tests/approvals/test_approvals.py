"""Approvals over real HTTP: batches, approve, reject, return, cancel while pending."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.posts.helpers import PNG, create_post, future, upload
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


def _approve(api: Api, post: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {"action": "approve", **extra.pop("body", {})}
    item: dict[str, Any] = api.ok(
        api.post(f"/approvals/{_item_of(api, post)}/action", json=body, **extra)
    )
    return item


def _outbox(server: LiveServer, tenant: Tenant, event_type: str) -> list[dict[str, Any]]:
    """The data of the workspace's webhook events of this type, oldest first."""
    rows = server.store.run(
        lambda cur: cur.execute(
            "SELECT payload FROM webhook_events WHERE workspace_id = ? AND event_type = ?"
            " ORDER BY id",
            [tenant.workspace_id, event_type],
        ).fetchall()
    )
    return [json.loads(payload) for (payload,) in rows]


def test_an_edit_of_what_a_reviewer_approved_sends_the_post_back_for_review(
    server: LiveServer, tenant: Tenant
) -> None:
    # An author who may write posts but not decide on them: the review is its only gate.
    author = tenant.key_with(server, scopes=["posts:read", "posts:write"])
    reviewer = tenant.api
    image = reviewer.ok(upload(reviewer, PNG), 201)["id"]
    edits: list[dict[str, Any]] = [
        {"text": "Launch day! Now 50% off"},
        {"platforms": ["linkedin", "x"]},
        {"media_ids": [image]},
        {"platform_options": {"linkedin": {"visibility": "connections"}}},
    ]
    for edit in edits:
        post = create_post(author, approval_required=True, scheduled_at=future())
        approved = _approve(reviewer, post)
        assert approved["post"]["status"] == "scheduled"
        after = author.ok(author.patch(f"/posts/{post['id']}", json=edit))
        assert after["status"] == "pending_approval", edit
        assert after["scheduled_at"] == post["scheduled_at"]
        assert after["version"] != post["version"]
        assert after["approval"]["status"] == "pending"
        assert after["approval"]["item_id"] != approved["id"]
        old = reviewer.ok(reviewer.get(f"/approvals/{approved['batch_id']}"))
        (superseded,) = [i for i in old["items"] if i["id"] == approved["id"]]
        assert superseded["status"] == "approved"
        assert superseded["superseded_by"] == after["approval"]["item_id"]
        assert superseded["actionable"] is False
        assert [e["action"] for e in superseded["events"]] == ["submit", "approve", "supersede"]
        assert next(iter(edit)) in superseded["events"][-1]["comment"]
        (fresh,) = [i for i in old["items"] if i["id"] == after["approval"]["item_id"]]
        assert fresh["actionable"] is True
        assert fresh["post"]["version"] == after["version"]
        # Nothing goes out until a reviewer approves the edited post.
        assert _approve(reviewer, after)["post"]["status"] == "scheduled"
    events = _outbox(server, tenant, "approval.superseded")
    assert len(events) == len(edits)
    assert events[-1]["superseded"] == {
        "item_id": approved["id"],
        "batch_id": approved["batch_id"],
        "status": "approved",
    }
    assert events[-1]["post"]["id"] == after["id"]
    assert events[-1]["post"]["approval"] == {**after["approval"], "status": "pending"}

    # A new time, or new tags, keep the approval: they are not what was reviewed.
    post = create_post(author, approval_required=True, scheduled_at=future())
    approved = _approve(reviewer, post)
    for edit in ({"scheduled_at": future(48)}, {"tags": ["moved"]}):
        kept = author.ok(author.patch(f"/posts/{post['id']}", json=edit))
        assert kept["status"] == "scheduled"
        assert kept["approval"] == {**post["approval"], "status": "approved"}
        assert kept["version"] == post["version"]
    assert approved["superseded_by"] is None
    # A post that needed no review is edited as before.
    free = create_post(author, scheduled_at=future())
    assert author.ok(author.patch(f"/posts/{free['id']}", json={"text": "v2"}))["status"] == (
        "scheduled"
    )


def test_a_decision_names_the_version_it_read(reviewed: Tenant) -> None:
    api = reviewed.api
    post = create_post(api, scheduled_at=future())
    read = api.get(f"/posts/{post['id']}")
    assert read.headers["ETag"] == f'"{post["version"]}"'
    edited = api.patch(f"/posts/{post['id']}", json={"text": "Edited after it was read"})
    assert edited.headers["ETag"] == f'"{api.ok(edited)["version"]}"'
    current = api.ok(edited)["version"]
    assert current != post["version"]
    path = f"/approvals/{_item_of(api, post)}/action"
    stale = assert_error(
        api.post(path, json={"action": "approve"}, headers={"If-Match": read.headers["ETag"]}),
        409,
        "INVALID_STATE",
    )
    assert current in stale["message"]
    assert stale["details"][0] == {
        "field": "If-Match",
        "issue": "stale",
        "message": f"The post's current version is {current!r}.",
    }
    by_field = assert_error(
        api.post(path, json={"action": "reject", "comment": "no", "post_version": post["version"]}),
        409,
        "INVALID_STATE",
    )
    assert by_field["details"][0]["field"] == "post_version"
    item = api.ok(api.get(f"/approvals/{post['approval']['batch_id']}"))["items"][0]
    assert [e["action"] for e in item["events"]] == ["submit", "edit"]
    assert item["events"][1]["comment"] == "Edited: text."
    assert item["post"]["version"] == current
    decided = api.ok(
        api.post(
            path,
            json={"action": "approve", "post_version": current},
            headers={"If-Match": f'W/"{current}"'},
        )
    )
    assert decided["status"] == "approved"
