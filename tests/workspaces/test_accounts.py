"""Workspaces and accounts over real HTTP."""

from __future__ import annotations

from tests.support import Api, LiveServer, Tenant, assert_error


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
