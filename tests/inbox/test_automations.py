"""Inbox automations over real HTTP: CRUD, per-type rules, auth, isolation, idempotency."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import (
    LiveServer,
    Tenant,
    assert_each_needs_a_key_and_the_scope,
    assert_error,
    iter_pages,
)

PATH = "/inbox/automations"

VALID: list[dict[str, Any]] = [
    {"trigger": {"type": "phrase", "phrases": ["refund"]}, "action": {"type": "draft"}},
    {
        "trigger": {"type": "any_phrase", "phrases": ["price", "cost"]},
        "action": {"type": "reply", "text": "Pricing is at example.com/pricing"},
    },
    {
        "trigger": {"type": "intent", "intent": "complaint"},
        "action": {"type": "tag", "tag": "care"},
    },
    {
        "trigger": {"type": "intent", "intent": "question"},
        "action": {"type": "assign", "assignee": "ada@example.com"},
    },
    {"trigger": {"type": "phrase", "phrases": ["lawyer"]}, "action": {"type": "hold"}},
]


def create(tenant: Tenant, rule: dict[str, Any], name: str = "rule") -> dict[str, Any]:
    data: dict[str, Any] = tenant.api.ok(tenant.api.post(PATH, json={"name": name, **rule}), 201)
    return data


@pytest.mark.parametrize("rule", VALID)
def test_create_and_get_each_kind(tenant: Tenant, rule: dict[str, Any]) -> None:
    made = create(tenant, rule)
    assert made["id"].startswith("iau_")
    assert made["enabled"] is True
    assert made["workspace_id"] == tenant.workspace_id
    expected_trigger = {"phrases": [], "intent": None, **rule["trigger"]}
    expected_action = {"text": None, "tag": None, "assignee": None, **rule["action"]}
    assert made["trigger"] == expected_trigger
    assert made["action"] == expected_action
    assert tenant.api.ok(tenant.api.get(f"{PATH}/{made['id']}")) == made


@pytest.mark.parametrize(
    ("rule", "field", "issue"),
    [
        (
            {"trigger": {"type": "phrase", "phrases": ["a", "b"]}, "action": {"type": "draft"}},
            "trigger.phrases",
            "exactly_one",
        ),
        (
            {"trigger": {"type": "phrase", "phrases": []}, "action": {"type": "draft"}},
            "trigger.phrases",
            "exactly_one",
        ),
        (
            {"trigger": {"type": "any_phrase"}, "action": {"type": "draft"}},
            "trigger.phrases",
            "min_items",
        ),
        (
            {"trigger": {"type": "intent"}, "action": {"type": "draft"}},
            "trigger.intent",
            "required",
        ),
        (
            {"trigger": {"type": "intent", "intent": "anger"}, "action": {"type": "draft"}},
            "trigger.intent",
            "literal_error",
        ),
        (
            {
                "trigger": {"type": "intent", "intent": "praise", "phrases": ["x"]},
                "action": {"type": "draft"},
            },
            "trigger.phrases",
            "not_allowed",
        ),
        (
            {"trigger": {"type": "phrase", "phrases": ["a"]}, "action": {"type": "reply"}},
            "action.text",
            "required",
        ),
        (
            {"trigger": {"type": "phrase", "phrases": ["a"]}, "action": {"type": "tag"}},
            "action.tag",
            "required",
        ),
        (
            {"trigger": {"type": "phrase", "phrases": ["a"]}, "action": {"type": "assign"}},
            "action.assignee",
            "required",
        ),
        (
            {
                "trigger": {"type": "phrase", "phrases": ["a"]},
                "action": {"type": "tag", "tag": "t", "text": "hi"},
            },
            "action.text",
            "not_allowed",
        ),
        (
            {"trigger": {"type": "regex", "phrases": ["a"]}, "action": {"type": "draft"}},
            "trigger.type",
            "literal_error",
        ),
        (
            {"trigger": {"type": "phrase", "phrases": ["a"]}, "action": {"type": "send"}},
            "action.type",
            "literal_error",
        ),
        ({"action": {"type": "draft"}}, "trigger", "required"),
    ],
)
def test_per_type_rules(tenant: Tenant, rule: dict[str, Any], field: str, issue: str) -> None:
    response = tenant.api.post(PATH, json={"name": "bad", **rule})
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert (field, issue) in {(d["field"], d["issue"]) for d in error["details"]}, error
    assert tenant.api.list_all(PATH) == []


def test_update_delete_and_list(tenant: Tenant) -> None:
    made = [create(tenant, rule, f"r{i}") for i, rule in enumerate(VALID)]
    seen = [a["id"] for page in iter_pages(tenant.api, PATH, 2) for a in page["items"]]
    assert seen == [a["id"] for a in reversed(made)]
    path = f"{PATH}/{made[0]['id']}"
    off = tenant.api.ok(tenant.api.patch(path, json={"enabled": False, "name": "renamed"}))
    assert (off["enabled"], off["name"], off["trigger"]) == (False, "renamed", made[0]["trigger"])
    assert [a["id"] for a in tenant.api.list_all(PATH, enabled="false")] == [made[0]["id"]]
    # A new action is checked against the kept trigger, and vice versa.
    error = assert_error(
        tenant.api.patch(path, json={"action": {"type": "reply"}}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "action.text"
    error = assert_error(
        tenant.api.patch(path, json={"trigger": {"type": "any_phrase", "phrases": []}}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["field"] == "trigger.phrases"
    changed = tenant.api.ok(
        tenant.api.patch(path, json={"action": {"type": "reply", "text": "On it!"}})
    )
    assert changed["action"]["text"] == "On it!"
    for body, field in (({}, "body"), ({"name": None}, "name"), ({"enabled": None}, "enabled")):
        error = assert_error(tenant.api.patch(path, json=body), 400, "VALIDATION_ERROR")
        assert error["details"][0]["field"] == field
    assert tenant.api.ok(tenant.api.delete(path)) == {"id": made[0]["id"], "deleted": True}
    assert_error(tenant.api.get(path), 404, "NOT_FOUND")
    assert_error(tenant.api.patch(path, json={"enabled": True}), 404, "NOT_FOUND")
    assert_error(tenant.api.delete(path), 404, "NOT_FOUND")
    assert made[0]["id"] not in {a["id"] for a in tenant.api.list_all(PATH)}


def _endpoints(automation_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("GET", PATH, None),
        ("POST", PATH, {"name": "n", **VALID[0]}),
        ("GET", f"{PATH}/{automation_id}", None),
        ("PATCH", f"{PATH}/{automation_id}", {"enabled": False}),
        ("DELETE", f"{PATH}/{automation_id}", None),
    ]


def test_every_endpoint_needs_a_key_and_the_scope(server: LiveServer, tenant: Tenant) -> None:
    made = create(tenant, VALID[0])
    assert_each_needs_a_key_and_the_scope(
        server,
        tenant,
        _endpoints(made["id"]),
        read_scopes=["inbox:read"],
        other_scopes=["automations:read", "automations:write"],
    )


def test_another_workspaces_automation_is_not_found(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = create(other_tenant, VALID[1])
    for method, path, body in _endpoints(theirs["id"])[2:]:
        assert_error(tenant.api.request(method, path, json=body), 404, "NOT_FOUND")
    assert tenant.api.list_all(PATH) == []
    kept = other_tenant.api.ok(other_tenant.api.get(f"{PATH}/{theirs['id']}"))
    assert kept == theirs


def test_writes_replay_and_conflict(tenant: Tenant) -> None:
    body = {"name": "once", **VALID[2]}
    first = tenant.api.post(PATH, json=body, idempotency_key="auto-1")
    again = tenant.api.post(PATH, json=body, idempotency_key="auto-1")
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert len(tenant.api.list_all(PATH)) == 1
    assert_error(
        tenant.api.post(PATH, json={**body, "name": "twice"}, idempotency_key="auto-1"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    path = f"{PATH}/{first.json()['data']['id']}"
    patched = tenant.api.patch(path, json={"enabled": False}, idempotency_key="auto-p")
    replay = tenant.api.patch(path, json={"enabled": False}, idempotency_key="auto-p")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json() == patched.json()
    assert_error(
        tenant.api.patch(path, json={"enabled": True}, idempotency_key="auto-p"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    gone = tenant.api.delete(path, idempotency_key="auto-d")
    replay = tenant.api.delete(path, idempotency_key="auto-d")
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json() == gone.json()
    assert tenant.api.list_all(PATH) == []
