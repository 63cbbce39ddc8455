"""Exactly once under an agent's retries: the same idempotency unit as REST's writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.mcp.agent import agent
from tests.support import LiveServer, Tenant, assert_error

POST = {"text": "Launch day!", "platforms": ["x", "linkedin"], "draft": True, "tags": ["launch"]}


def test_a_write_replayed_with_the_same_key_makes_one_post(
    server: LiveServer, tenant: Tenant
) -> None:
    with agent(server, tenant.key) as a:
        first = a.call("create_post", {**POST, "idempotency_key": "launch-1"})
        again = a.call("create_post", {**POST, "idempotency_key": "launch-1"})
        assert not first.is_error
        assert not again.is_error
        assert again.structured_content == first.structured_content
        assert again.meta is not None
        assert again.meta["murmur/replayed"] is True
        assert first.meta is not None
        assert "murmur/replayed" not in first.meta
        error = a.error(
            "create_post",
            {**POST, "text": "Another text", "idempotency_key": "launch-1"},
            "IDEMPOTENCY_CONFLICT",
        )
        assert "another request" in error["message"]
        listed = a.ok("list_posts")
    assert [p["post_id"] for p in listed["items"]] == [first.structured_content["post_id"]]


def test_a_key_is_one_write_whichever_interface_asks(server: LiveServer, tenant: Tenant) -> None:
    with agent(server, tenant.key) as a:
        made = a.ok("create_post", {**POST, "idempotency_key": "both-1"})
    # REST with the same key and body replays the agent's post; another body is a conflict.
    replay = tenant.api.post("/posts", json=POST, idempotency_key="both-1")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert tenant.api.ok(replay, 201) == made
    assert_error(
        tenant.api.post("/posts", json={**POST, "text": "x"}, idempotency_key="both-1"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    # And the other way round: a REST write replayed by the agent.
    rest = tenant.api.ok(tenant.api.post(f"/posts/{made['post_id']}/cancel", idempotency_key="c-9"))
    with agent(server, tenant.key) as a:
        result = a.call("cancel_post", {"post_id": made["post_id"], "idempotency_key": "c-9"})
    assert not result.is_error
    assert result.structured_content == rest
    assert result.meta is not None
    assert result.meta["murmur/replayed"] is True
    assert len(tenant.api.list_all("/posts")) == 1


def test_a_refusal_from_the_resources_state_is_kept_and_replayed(
    server: LiveServer, tenant: Tenant
) -> None:
    with agent(server, tenant.key) as a:
        post = a.ok("create_post", {**POST, "idempotency_key": "p-1"})
        a.ok("cancel_post", {"post_id": post["post_id"], "idempotency_key": "cancel-1"})
        first = a.error(
            "update_post",
            {"post_id": post["post_id"], "text": "Too late", "idempotency_key": "edit-1"},
            "INVALID_STATE",
        )
        again = a.call(
            "update_post",
            {"post_id": post["post_id"], "text": "Too late", "idempotency_key": "edit-1"},
        )
    assert again.is_error
    assert isinstance(again.structured_content, dict)
    assert again.structured_content["error"] == first
    assert again.meta is not None
    assert again.meta["murmur/replayed"] is True


def test_the_idempotency_key_is_required_and_checked_before_the_arguments(
    server: LiveServer, tenant: Tenant
) -> None:
    with agent(server, tenant.key) as a:
        a.error("create_post", {"text": "Hi", "platforms": []}, "IDEMPOTENCY_KEY_REQUIRED")
        error = a.error(
            "create_post", {**POST, "idempotency_key": "\u00e9t\u00e9"}, "VALIDATION_ERROR"
        )
        assert error["details"][0]["field"] == "idempotency_key"
        # A refusal before any work is not kept: the same key works once the call is fixed.
        a.error(
            "create_post",
            {"text": "Hi", "platforms": [], "idempotency_key": "fix-1"},
            "VALIDATION_ERROR",
        )
        a.ok("create_post", {**POST, "idempotency_key": "fix-1"})


def _past() -> str:
    return (datetime.now(UTC) - timedelta(hours=1)).isoformat()


def test_validate_post_lists_every_failure_and_stores_nothing(
    server: LiveServer, tenant: Tenant
) -> None:
    body: dict[str, Any] = {
        "text": "x" * 301,
        "platforms": ["x", "bluesky", "myspace", tenant.accounts["x"]],
        "scheduled_at": _past(),
        "media_ids": ["med_nope"],
    }
    with agent(server, tenant.key) as a:
        check = a.ok("validate_post", body)
        shape = a.ok("validate_post", {"text": "Hi", "platforms": [], "colour": "red"})
    assert check["valid"] is False
    found = {(e["field"], e["issue"]) for e in check["errors"]}
    assert found == {
        ("scheduled_at", "in_past"),
        ("platforms.2", "unknown_platform"),
        ("platforms.3", "duplicate"),
        ("media_ids.0", "unknown_media"),
        ("platforms.0", "max_length"),
        ("platforms.1", "max_length"),
    }
    assert (check["status"], check["destinations"]) == (None, [])
    assert {(e["field"], e["issue"]) for e in shape["errors"]} == {
        ("platforms", "min_items"),
        ("colour", "unknown_field"),
    }
    # The REST endpoint is the same function: the same answer, and nothing stored either.
    rest = tenant.api.ok(tenant.api.post("/posts/validate", json=body))
    assert rest == check
    assert tenant.api.ok(tenant.api.get("/posts"))["items"] == []


def test_validate_post_over_rest_answers_a_valid_post_and_malformed_json(
    server: LiveServer, tenant: Tenant
) -> None:
    later = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    check = tenant.api.ok(
        tenant.api.post(
            "/posts/validate",
            json={"text": "Hi", "platforms": ["linkedin"], "scheduled_at": later.isoformat()},
        )
    )
    assert check == {
        "valid": True,
        "errors": [],
        "status": "scheduled",
        "scheduled_at": later.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "destinations": [{"account_id": tenant.accounts["linkedin"], "platform": "linkedin"}],
    }
    malformed = tenant.api.post(
        "/posts/validate", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert_error(malformed, 400, "VALIDATION_ERROR")
    assert_error(
        tenant.api.post("/posts/validate", json={}, headers={"Idempotency-Key": ""}),
        400,
        "IDEMPOTENCY_KEY_REQUIRED",
    )
    document = tenant.api.http.get("/openapi.json").json()
    operation = document["paths"]["/posts/validate"]["post"]
    assert operation["operationId"] == "validate_post"
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/PostCreate"}


def test_an_agent_editing_an_approved_post_sends_it_back_for_review(
    server: LiveServer, tenant: Tenant
) -> None:
    author = tenant.key_with(server, scopes=["posts:read", "posts:write"]).http
    key = author.headers["Authorization"].removeprefix("Bearer ")
    when = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    body = {**POST, "draft": False, "approval_required": True, "scheduled_at": when}
    with agent(server, key) as a:
        post = a.ok("create_post", {**body, "idempotency_key": "review-1"})
        a.error(
            "act_on_approval",
            {"item_id": post["approval"]["item_id"], "action": "approve", "idempotency_key": "r"},
            "SCOPE_FORBIDDEN",
        )
    with agent(server, tenant.key) as reviewer:
        approved = reviewer.ok(
            "act_on_approval",
            {
                "item_id": post["approval"]["item_id"],
                "action": "approve",
                "post_version": post["version"],
                "idempotency_key": "review-2",
            },
        )
    assert approved["post"]["status"] == "scheduled"
    with agent(server, key) as a:
        edited = a.ok(
            "update_post",
            {"post_id": post["post_id"], "text": "Rewritten", "idempotency_key": "review-3"},
        )
    assert edited["status"] == "pending_approval"
    assert edited["approval"]["status"] == "pending"
    assert edited["approval"]["item_id"] != approved["id"]
    with agent(server, tenant.key) as reviewer:
        stale = reviewer.error(
            "act_on_approval",
            {
                "item_id": edited["approval"]["item_id"],
                "action": "approve",
                "post_version": post["version"],
                "idempotency_key": "review-4",
            },
            "INVALID_STATE",
        )
    assert edited["version"] in stale["message"]


def test_a_key_reused_on_another_id_is_a_conflict_and_acts_on_nothing(
    server: LiveServer, tenant: Tenant
) -> None:
    with agent(server, tenant.key) as a:
        first = a.ok("create_post", {**POST, "idempotency_key": "two-1"})
        second = a.ok("create_post", {**POST, "text": "Another", "idempotency_key": "two-2"})
        a.ok("cancel_post", {"post_id": first["post_id"], "idempotency_key": "cancel-x"})
        # REST files a key under its path: this once canceled the second post.
        error = a.error(
            "cancel_post",
            {"post_id": second["post_id"], "idempotency_key": "cancel-x"},
            "IDEMPOTENCY_CONFLICT",
        )
        assert "another post_id" in error["message"]
        again = a.call("cancel_post", {"post_id": first["post_id"], "idempotency_key": "cancel-x"})
        assert again.meta is not None
        assert again.meta["murmur/replayed"] is True
        assert a.ok("get_post", {"post_id": second["post_id"]})["status"] == "draft"
