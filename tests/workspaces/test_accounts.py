"""Workspaces and accounts over real HTTP."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from domain.workspaces.keys import hash_key
from tests.support import Api, LiveServer, Tenant, assert_error
from warehouse import workspaces as ws_repo


def test_lists_accounts_of_every_platform(tenant: Tenant) -> None:
    items = tenant.api.list_all("/accounts")
    assert sorted(i["platform"] for i in items) == sorted(tenant.accounts)
    assert all(i["workspace_id"] == tenant.workspace_id for i in items)


def test_filters_accounts_by_platform(tenant: Tenant) -> None:
    page = tenant.api.ok(tenant.api.get("/accounts", params={"platform": "x"}))
    assert [i["id"] for i in page["items"]] == [tenant.accounts["x"]]


def test_another_workspace_account_is_not_found(tenant: Tenant, other_tenant: Tenant) -> None:
    response = tenant.api.get(f"/accounts/{other_tenant.accounts['x']}")
    assert_error(response, 404, "NOT_FOUND")


def test_missing_key_is_auth_required(server: LiveServer) -> None:
    response = Api(server.base_url, None).get("/accounts")
    assert_error(response, 401, "AUTH_REQUIRED")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_unknown_key_is_invalid(server: LiveServer) -> None:
    assert_error(Api(server.base_url, "sk_test_nope").get("/accounts"), 401, "API_KEY_INVALID")


def test_key_without_scope_is_forbidden(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.key_with(server, scopes=["posts:read"])
    assert_error(api.get("/accounts"), 403, "SCOPE_FORBIDDEN")


def test_foreign_workspace_header_is_forbidden(tenant: Tenant, other_tenant: Tenant) -> None:
    response = tenant.api.get("/accounts", headers={"X-Workspace-Id": other_tenant.workspace_id})
    assert_error(response, 403, "WORKSPACE_FORBIDDEN")


def test_workspaces_lists_only_the_keys_own(tenant: Tenant, other_tenant: Tenant) -> None:
    ids = [w["id"] for w in tenant.api.list_all("/workspaces")]
    assert ids == [tenant.workspace_id]


def test_every_response_has_rate_limit_headers(tenant: Tenant) -> None:
    response = tenant.api.get("/accounts")
    for header in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"):
        assert header in response.headers
    assert response.headers["X-RateLimit-Reset"].endswith("Z")


def test_unknown_path_and_method_use_the_envelope(tenant: Tenant) -> None:
    assert_error(tenant.api.get("/no-such-thing"), 404, "NOT_FOUND")
    assert_error(tenant.api.delete("/accounts"), 405, "METHOD_NOT_ALLOWED")


def test_bad_limit_and_tampered_cursor_are_validation_errors(tenant: Tenant) -> None:
    error = assert_error(
        tenant.api.get("/accounts", params={"limit": 101}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "limit"
    page = tenant.api.ok(tenant.api.get("/accounts", params={"limit": 2}))
    cursor = page["pagination"]["next_cursor"]
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    error = assert_error(
        tenant.api.get("/accounts", params={"cursor": tampered}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "cursor"
    other = assert_error(
        tenant.api.get("/workspaces", params={"cursor": cursor}), 400, "VALIDATION_ERROR"
    )
    assert other["details"][0]["field"] == "cursor"


def test_over_the_read_budget_is_rate_limited(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.key_with(server, read_rate_limit=3)
    for _ in range(3):
        api.ok(api.get("/accounts"))
    response = api.get("/accounts")
    assert_error(response, 429, "RATE_LIMITED")
    assert int(response.headers["Retry-After"]) >= 1
    assert response.headers["X-RateLimit-Limit"] == "3"
    assert response.headers["X-RateLimit-Remaining"] == "0"


def test_expired_and_revoked_keys_are_refused(server: LiveServer, tenant: Tenant) -> None:
    expired = tenant.key_with(server, expires_at=datetime(2020, 1, 1))
    assert_error(expired.get("/accounts"), 401, "API_KEY_EXPIRED")
    live = tenant.key_with(server, name="to-revoke")
    live.ok(live.get("/accounts"))
    token = live.http.headers["Authorization"].removeprefix("Bearer ")
    found = server.store.run(lambda cur: ws_repo.find_api_key(cur, hash_key(token)))
    assert found is not None
    server.store.run(lambda cur: ws_repo.revoke_api_key(cur, found.id))
    assert_error(live.get("/accounts"), 401, "API_KEY_INVALID")


def test_key_with_two_workspaces_must_name_one(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    api = tenant.key_with(server, workspace_ids=[tenant.workspace_id, other_tenant.workspace_id])
    error = assert_error(api.get("/accounts"), 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "X-Workspace-Id"
    named = api.get("/accounts", headers={"X-Workspace-Id": other_tenant.workspace_id})
    assert {i["workspace_id"] for i in api.ok(named)["items"]} == {other_tenant.workspace_id}


def test_oversized_body_is_refused_before_any_work(tenant: Tenant) -> None:
    response = tenant.api.post("/posts", content=b"{" + b" " * 2_000_000 + b"}")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")


def test_stored_keys_are_hashes(server: LiveServer, tenant: Tenant) -> None:
    found = server.store.run(lambda cur: ws_repo.find_api_key(cur, hash_key(tenant.key)))
    assert found is not None
    assert tenant.key not in str(found)
    assert found.key_hint.endswith(tenant.key[-4:])


def test_no_endpoint_writes_api_keys() -> None:
    """The key cache trusts it (warehouse/changes.py): keys change only outside requests."""
    root = Path(__file__).resolve().parents[2]
    sources = [*(root / "api").rglob("*.py"), *(root / "domain").rglob("*.py")]
    for source in sources:
        text = source.read_text()
        if source.relative_to(root).as_posix() != "domain/workspaces/keys.py":
            for name in ("insert_api_key", "revoke_api_key", "mint_key"):
                assert name not in text, f"{source} writes api_keys through {name}"
        assert "UPDATE api_keys" not in text, source
        assert "INTO api_keys" not in text, source
