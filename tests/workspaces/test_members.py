"""Workspace members over real HTTP: CRUD, the last owner, auth, scope, isolation, idempotency."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, LiveServer, Tenant, assert_error, iter_pages


def members_path(tenant: Tenant) -> str:
    return f"/workspaces/{tenant.workspace_id}/members"


def add(tenant: Tenant, email: str, role: str = "editor", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = tenant.api.ok(
        tenant.api.post(members_path(tenant), json={"email": email, "role": role, **extra}), 201
    )
    return data


def test_create_get_list_update_remove(tenant: Tenant) -> None:
    created = add(tenant, "  Ada@Example.COM ", "admin", name="Ada")
    assert created["id"].startswith("mem_")
    assert created["email"] == "ada@example.com"
    assert created["workspace_id"] == tenant.workspace_id
    assert (created["role"], created["name"]) == ("admin", "Ada")
    assert created["created_at"].endswith("Z")
    path = f"{members_path(tenant)}/{created['id']}"
    assert tenant.api.ok(tenant.api.get(path)) == created

    updated = tenant.api.ok(tenant.api.patch(path, json={"role": "viewer", "name": None}))
    assert (updated["role"], updated["name"]) == ("viewer", None)
    listed = tenant.api.list_all(members_path(tenant))
    assert [m["id"] for m in listed] == [created["id"]]

    removed = tenant.api.ok(tenant.api.delete(path))
    assert removed == {"id": created["id"], "deleted": True}
    assert tenant.api.list_all(members_path(tenant)) == []
    assert_error(tenant.api.get(path), 404, "NOT_FOUND")
    assert_error(tenant.api.delete(path), 404, "NOT_FOUND")
    # A removed member's email may join again.
    assert add(tenant, "ada@example.com")["id"] != created["id"]


def test_list_pages_newest_first_and_filters_by_role(tenant: Tenant) -> None:
    ids = [
        add(tenant, f"m{i}@example.com", "viewer" if i % 2 else "editor")["id"] for i in range(5)
    ]
    seen = [
        m["id"] for page in iter_pages(tenant.api, members_path(tenant), 2) for m in page["items"]
    ]
    assert seen == list(reversed(ids))
    viewers = tenant.api.ok(tenant.api.get(members_path(tenant), params={"role": "viewer"}))
    assert {m["id"] for m in viewers["items"]} == {ids[1], ids[3]}


def test_duplicate_live_email_is_invalid_state(tenant: Tenant) -> None:
    add(tenant, "bob@example.com")
    response = tenant.api.post(
        members_path(tenant), json={"email": "BOB@example.com", "role": "viewer"}
    )
    error = assert_error(response, 409, "INVALID_STATE")
    assert "bob@example.com" in error["message"]


def test_last_owner_cannot_be_removed_or_demoted(tenant: Tenant) -> None:
    first = add(tenant, "owner1@example.com", "owner")
    first_path = f"{members_path(tenant)}/{first['id']}"
    assert_error(tenant.api.delete(first_path), 409, "INVALID_STATE")
    assert_error(tenant.api.patch(first_path, json={"role": "admin"}), 409, "INVALID_STATE")
    second = add(tenant, "owner2@example.com", "owner")
    assert tenant.api.ok(tenant.api.patch(first_path, json={"role": "admin"}))["role"] == "admin"
    second_path = f"{members_path(tenant)}/{second['id']}"
    assert_error(tenant.api.delete(second_path), 409, "INVALID_STATE")
    # Renaming the last owner is fine.
    assert tenant.api.ok(tenant.api.patch(second_path, json={"name": "Boss"}))["name"] == "Boss"


@pytest.mark.parametrize(
    ("body", "field", "issue"),
    [
        ({"email": "not-an-email", "role": "editor"}, "email", "invalid_email"),
        ({"email": "a@b.co", "role": "superuser"}, "role", "literal_error"),
        ({"role": "editor"}, "email", "required"),
        ({"email": "a@b.co", "role": "editor", "name": ""}, "name", "min_length"),
        ({"email": "a@b.co", "role": "editor", "admin": True}, "admin", "unknown_field"),
    ],
)
def test_create_validation(tenant: Tenant, body: dict[str, Any], field: str, issue: str) -> None:
    error = assert_error(tenant.api.post(members_path(tenant), json=body), 400, "VALIDATION_ERROR")
    assert (error["details"][0]["field"], error["details"][0]["issue"]) == (field, issue)


def test_update_validation(tenant: Tenant) -> None:
    member = add(tenant, "c@example.com")
    path = f"{members_path(tenant)}/{member['id']}"
    error = assert_error(tenant.api.patch(path, json={}), 400, "VALIDATION_ERROR")
    assert error["details"][0]["issue"] == "empty"
    error = assert_error(tenant.api.patch(path, json={"role": None}), 400, "VALIDATION_ERROR")
    assert (error["details"][0]["field"], error["details"][0]["issue"]) == ("role", "not_nullable")
    error = assert_error(tenant.api.patch(path, json={"email": "x@y.z"}), 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "email"


def test_another_workspace_is_not_found(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = add(other_tenant, "them@example.com")
    foreign = members_path(other_tenant)
    assert_error(tenant.api.get(foreign), 404, "NOT_FOUND")
    assert_error(
        tenant.api.post(foreign, json={"email": "x@y.zz", "role": "viewer"}), 404, "NOT_FOUND"
    )
    assert_error(tenant.api.get(f"{foreign}/{theirs['id']}"), 404, "NOT_FOUND")
    # Their member through our own workspace's path is not found either.
    mine = f"{members_path(tenant)}/{theirs['id']}"
    assert_error(tenant.api.get(mine), 404, "NOT_FOUND")
    assert_error(tenant.api.patch(mine, json={"role": "admin"}), 404, "NOT_FOUND")
    assert_error(tenant.api.delete(mine), 404, "NOT_FOUND")
    assert (
        other_tenant.api.ok(other_tenant.api.get(f"{foreign}/{theirs['id']}"))["role"] == "editor"
    )


def _endpoints(tenant: Tenant, member_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    one = f"{members_path(tenant)}/{member_id}"
    return [
        ("GET", members_path(tenant), None),
        ("POST", members_path(tenant), {"email": "z@example.com", "role": "viewer"}),
        ("GET", one, None),
        ("PATCH", one, {"role": "viewer"}),
        ("DELETE", one, None),
    ]


def test_every_endpoint_needs_a_key_and_the_scope(server: LiveServer, tenant: Tenant) -> None:
    member = add(tenant, "d@example.com")
    anonymous = Api(server.base_url, None)
    read_only = tenant.key_with(server, scopes=["workspaces:read"])
    no_scope = tenant.key_with(server, scopes=["posts:read"])
    for method, path, body in _endpoints(tenant, member["id"]):
        assert_error(anonymous.request(method, path, json=body), 401, "AUTH_REQUIRED")
        assert_error(no_scope.request(method, path, json=body), 403, "SCOPE_FORBIDDEN")
        if method != "GET":
            assert_error(read_only.request(method, path, json=body), 403, "SCOPE_FORBIDDEN")
        else:
            read_only.ok(read_only.request(method, path))


def test_writes_need_an_idempotency_key(tenant: Tenant) -> None:
    member = add(tenant, "e@example.com")
    for method, path, body in _endpoints(tenant, member["id"]):
        if method == "GET":
            continue
        response = tenant.api.http.request(method, path, json=body)
        assert_error(response, 400, "IDEMPOTENCY_KEY_REQUIRED")


def test_create_replays_and_conflicts(tenant: Tenant) -> None:
    body = {"email": "f@example.com", "role": "viewer"}
    first = tenant.api.post(members_path(tenant), json=body, idempotency_key="mem-create-1")
    again = tenant.api.post(members_path(tenant), json=body, idempotency_key="mem-create-1")
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert len(tenant.api.list_all(members_path(tenant))) == 1
    other = tenant.api.post(
        members_path(tenant), json={**body, "role": "admin"}, idempotency_key="mem-create-1"
    )
    assert_error(other, 409, "IDEMPOTENCY_CONFLICT")


def test_update_and_remove_replay(tenant: Tenant) -> None:
    member = add(tenant, "g@example.com")
    path = f"{members_path(tenant)}/{member['id']}"
    first = tenant.api.patch(path, json={"role": "admin"}, idempotency_key="mem-patch")
    tenant.api.ok(tenant.api.patch(path, json={"role": "viewer"}))
    again = tenant.api.patch(path, json={"role": "admin"}, idempotency_key="mem-patch")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert tenant.api.ok(tenant.api.get(path))["role"] == "viewer"  # nothing done twice
    assert_error(
        tenant.api.patch(path, json={"role": "owner"}, idempotency_key="mem-patch"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    gone = tenant.api.delete(path, idempotency_key="mem-del")
    replay = tenant.api.delete(path, idempotency_key="mem-del")
    assert gone.status_code == replay.status_code == 200
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json() == gone.json()
