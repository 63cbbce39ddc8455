"""Exactly once under an agent's retries: the same idempotency unit as REST's writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import mcp_types as types

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


def _approval(item_id: str, post_version: str, idempotency_key: str) -> dict[str, Any]:
    """The arguments of act_on_approval approving ``item_id`` at ``post_version``."""
    return {
        "item_id": item_id,
        "action": "approve",
        "post_version": post_version,
        "idempotency_key": idempotency_key,
    }


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
            "act_on_approval", _approval(post["approval"]["item_id"], post["version"], "review-2")
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
            _approval(edited["approval"]["item_id"], post["version"], "review-4"),
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


# -- posting-time experiments: the same unit, the same numbers, the same refusals --------------


def _experiment(tenant: Tenant, **fields: Any) -> dict[str, Any]:
    return {
        "name": "When do our followers read us?",
        "account_ids": [tenant.accounts["x"], tenant.accounts["bluesky"]],
        "timezone": "Europe/Paris",
        "arms": [
            {"name": "morning", "control": True, "slots": [{"time": "09:00"}]},
            {"name": "evening", "slots": [{"time": "18:00"}, {"weekday": 5, "time": "20:30"}]},
        ],
        "metric": "engagements_24h",
        "target_posts": 40,
        "seed": 1234,
        **fields,
    }


def test_an_experiment_an_agent_creates_reads_as_rest_reads_it(
    server: LiveServer, tenant: Tenant
) -> None:
    body = _experiment(tenant)
    with agent(server, tenant.key) as a:
        made = a.ok("create_experiment", {**body, "idempotency_key": "exp-1"})
        again = a.call("create_experiment", {**body, "idempotency_key": "exp-1"})
        assert again.meta is not None
        assert again.meta["murmur/replayed"] is True
        assert again.structured_content == made
        # Its posts: create_post's experiment_id draws the arm, as POST /posts does.
        posts = [
            a.ok(
                "create_post",
                {
                    "text": f"post {n}",
                    "platforms": ["x"],
                    "experiment_id": made["id"],
                    "idempotency_key": f"exp-post-{n}",
                },
            )
            for n in range(3)
        ]
        detail = a.ok("get_experiment", {"experiment_id": made["id"]})
        summary = a.call("get_experiment", {"experiment_id": made["id"]}).content[0]
        listed = a.ok("list_experiments")
    assert made["status"] == "running"
    assert [p["experiment"]["experiment_id"] for p in posts] == [made["id"]] * 3
    assert all(p["scheduled_at"] == p["experiment"]["slot_at"] for p in posts)
    # One write whichever interface asks: REST with the key and body replays the agent's.
    replay = tenant.api.post("/experiments", json=body, idempotency_key="exp-1")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert tenant.api.ok(replay, 201) == made
    # The same numbers on both faces: the detail with each arm's results, and the list.
    assert detail == tenant.api.ok(tenant.api.get(f"/experiments/{made['id']}"))
    assert detail["posts_assigned"] == 3
    assert sum(arm["posts_assigned"] for arm in detail["results"]["arms"]) == 3
    assert listed == tenant.api.ok(tenant.api.get("/experiments"))
    assert [e["id"] for e in listed["items"]] == [made["id"]]
    assert listed["items"][0]["posts_assigned"] == 3
    assert isinstance(summary, types.TextContent)
    assert summary.text == (
        f"Experiment {made['id']} (running, engagements_24h): morning (control) 0 post(s)"
        " measured; evening 0 post(s) measured, no lift yet. enough_data false, posts_needed"
        " unknown (no spread measured yet), can_stop_early false."
    )


def test_stopping_an_experiment_is_refused_as_rest_refuses_it(
    server: LiveServer, tenant: Tenant
) -> None:
    made = tenant.api.ok(tenant.api.post("/experiments", json=_experiment(tenant)), 201)
    other = tenant.api.ok(tenant.api.post("/experiments", json=_experiment(tenant)), 201)
    path = f"/experiments/{made['id']}/stop"
    rest = assert_error(tenant.api.post(path, json={}), 409, "INVALID_STATE")
    with agent(server, tenant.key) as a:
        stop = {"experiment_id": made["id"], "idempotency_key": "stop-1"}
        refused = a.error("stop_experiment", stop, "INVALID_STATE")
        # A refusal from the experiment's state is kept: the retry replays it.
        again = a.call("stop_experiment", stop)
        abandoned = a.ok(
            "stop_experiment",
            {**stop, "abandon": True, "reason": "launch moved", "idempotency_key": "stop-2"},
        )
        a.error(
            "stop_experiment",
            {"experiment_id": other["id"], "abandon": True, "idempotency_key": "stop-2"},
            "IDEMPOTENCY_CONFLICT",
        )
        twice = a.error(
            "stop_experiment",
            {**stop, "abandon": True, "idempotency_key": "stop-3"},
            "INVALID_STATE",
        )
    assert refused["message"] == rest["message"]
    assert "Haybittle-Peto" in refused["message"]
    assert again.is_error
    assert again.meta is not None
    assert again.meta["murmur/replayed"] is True
    assert (abandoned["status"], abandoned["stop_reason"]) == ("abandoned", "launch moved")
    assert abandoned == tenant.api.ok(tenant.api.get(f"/experiments/{made['id']}"))
    assert (
        twice["message"]
        == assert_error(tenant.api.post(path, json={"abandon": True}), 409, "INVALID_STATE")[
            "message"
        ]
    )
    # The key reused on the other experiment acted on nothing.
    assert tenant.api.ok(tenant.api.get(f"/experiments/{other['id']}"))["status"] == "running"
