"""The webhooks group under the contract: auth, scope, isolation, validation, idempotency."""

from __future__ import annotations

import uuid

from tests.support import Api, LiveServer, Tenant, assert_error

BODY = {"url": "https://example.com/hook", "event_types": ["post.created"]}


def test_webhooks_need_a_key_and_the_scope(server: LiveServer, tenant: Tenant) -> None:
    anonymous = Api(server.base_url, None)
    assert_error(anonymous.get("/webhooks"), 401, "AUTH_REQUIRED")
    assert_error(anonymous.post("/webhooks", json=BODY), 401, "AUTH_REQUIRED")
    reader = tenant.key_with(server, scopes=["workspaces:read"])
    assert_error(reader.post("/webhooks", json=BODY), 403, "SCOPE_FORBIDDEN")
    posts_only = tenant.key_with(server, scopes=["posts:read"])
    assert_error(posts_only.get("/webhooks"), 403, "SCOPE_FORBIDDEN")


def test_another_workspaces_endpoint_is_not_found(tenant: Tenant, other_tenant: Tenant) -> None:
    theirs = other_tenant.api.ok(other_tenant.api.post("/webhooks", json=BODY), 201)
    for response in (
        tenant.api.get(f"/webhooks/{theirs['id']}"),
        tenant.api.patch(f"/webhooks/{theirs['id']}", json={"enabled": False}),
        tenant.api.delete(f"/webhooks/{theirs['id']}"),
        tenant.api.get(f"/webhooks/{theirs['id']}/deliveries"),
    ):
        assert_error(response, 404, "NOT_FOUND")


def test_validation_details_name_the_field(tenant: Tenant) -> None:
    error = assert_error(
        tenant.api.post("/webhooks", json={"url": "https://x.y", "event_types": []}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["field"] == "event_types"


def test_registering_is_idempotent(tenant: Tenant) -> None:
    key = str(uuid.uuid4())
    first = tenant.api.post("/webhooks", json=BODY, idempotency_key=key)
    again = tenant.api.post("/webhooks", json=BODY, idempotency_key=key)
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
    assert len(tenant.api.list_all("/webhooks")) == 1
    other = tenant.api.post(
        "/webhooks", json={**BODY, "url": "https://example.com/other"}, idempotency_key=key
    )
    assert_error(other, 409, "IDEMPOTENCY_CONFLICT")
    missing = tenant.api.http.post("/webhooks", json=BODY)
    assert_error(missing, 400, "IDEMPOTENCY_KEY_REQUIRED")
