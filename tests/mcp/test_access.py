"""Auth as REST: keys refused before any MCP exchange, scopes, workspaces, budgets, ids."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp import MCPError

from domain.workspaces.keys import hash_key, revoke_key
from tests.mcp.agent import agent
from tests.support import LiveServer, Tenant
from warehouse import workspaces as ws_repo

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        (None, "AUTH_REQUIRED"),
        ("Bearer sk_test_nope", "API_KEY_INVALID"),
        ("Basic x", "AUTH_REQUIRED"),
    ],
)
def test_a_missing_or_invalid_key_is_refused_before_any_exchange(
    server: LiveServer, authorization: str | None, code: str
) -> None:
    headers = dict(MCP_HEADERS)
    if authorization:
        headers["Authorization"] = authorization
    response = httpx.post(server.base_url + "/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    challenge = response.headers["WWW-Authenticate"]
    assert challenge.startswith("Bearer")
    if code == "API_KEY_INVALID":  # RFC 6750: the reason beside the error code
        assert 'error_description="The API key is unknown or revoked."' in challenge
    # A JSON-RPC error answering the request, the contract's envelope as its data.
    body = response.json()
    assert (body["jsonrpc"], body["id"]) == ("2.0", 1)
    assert body["error"]["message"].startswith(f"{code}: ")
    envelope = body["error"]["data"]
    assert envelope["success"] is False
    assert envelope["error"]["code"] == code
    assert envelope["request_id"] == response.headers["X-Request-Id"]
    # What is no JSON-RPC request gets the envelope itself.
    bare = httpx.post(server.base_url + "/mcp", json={"hello": 1}, headers=headers)
    assert bare.status_code == 401
    assert bare.json()["error"]["code"] == code


def test_a_revoked_key_is_refused(server: LiveServer, tenant: Tenant) -> None:

    found = server.store.read(lambda cur: ws_repo.find_api_key(cur, hash_key(tenant.key)))
    assert found is not None
    revoke_key(server.store, found.id)
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {tenant.key}"}
    response = httpx.post(server.base_url + "/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 401
    assert response.json()["error"]["data"]["error"]["code"] == "API_KEY_INVALID"


def test_a_workspace_header_the_key_lacks_is_refused_before_any_exchange(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {tenant.key}",
        "X-Workspace-Id": other_tenant.workspace_id,
    }
    response = httpx.post(server.base_url + "/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 403
    assert response.json()["error"]["data"]["error"]["code"] == "WORKSPACE_FORBIDDEN"


def test_a_tool_the_key_cannot_use_names_the_missing_scope(
    server: LiveServer, tenant: Tenant
) -> None:
    reader = tenant.key_with(server, scopes=["posts:read"])
    key = reader.http.headers["Authorization"].removeprefix("Bearer ")
    with agent(server, key) as a:
        assert a.ok("list_posts")["items"] == []
        error = a.error(
            "create_post",
            {"text": "Hi", "platforms": ["x"], "idempotency_key": "k-1"},
            "SCOPE_FORBIDDEN",
        )
        assert "'posts:write'" in error["message"]
        error = a.error("get_unified_analytics", {}, "SCOPE_FORBIDDEN")
        assert "'analytics:read'" in error["message"]
    assert tenant.api.ok(tenant.api.get("/posts"))["items"] == []  # nothing was created
    reader.close()


def test_another_workspaces_ids_are_not_found(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    theirs = other_tenant.api.ok(
        other_tenant.api.post("/posts", json={"text": "Theirs", "platforms": ["x"], "draft": True}),
        201,
    )["post_id"]
    with agent(server, tenant.key) as a:
        a.error("get_post", {"post_id": theirs}, "NOT_FOUND")
        a.error("get_post_analytics", {"post_id": theirs}, "NOT_FOUND")
        a.error("cancel_post", {"post_id": theirs, "idempotency_key": "c-1"}, "NOT_FOUND")
        a.error("list_posts", {"workspace_id": other_tenant.workspace_id}, "WORKSPACE_FORBIDDEN")
    post = other_tenant.api.ok(other_tenant.api.get(f"/posts/{theirs}"))
    assert post["status"] == "draft"


def test_the_workspace_comes_from_the_header_or_the_argument(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    both = tenant.key_with(server, workspace_ids=[tenant.workspace_id, other_tenant.workspace_id])
    key = both.http.headers["Authorization"].removeprefix("Bearer ")
    with agent(server, key) as a:
        error = a.error("list_accounts", {}, "VALIDATION_ERROR")
        assert error["details"][0]["field"] == "X-Workspace-Id"
        mine = a.ok("list_accounts", {"workspace_id": tenant.workspace_id})
        assert {i["id"] for i in mine["items"]} == set(tenant.accounts.values())
        listed = a.ok("list_workspaces")
        assert {w["id"] for w in listed["items"]} == {
            tenant.workspace_id,
            other_tenant.workspace_id,
        }
    with agent(server, key, workspace_id=other_tenant.workspace_id) as a:
        theirs = a.ok("list_accounts")
        assert {i["id"] for i in theirs["items"]} == set(other_tenant.accounts.values())
    both.close()


def test_tool_calls_count_against_the_keys_budget(server: LiveServer, tenant: Tenant) -> None:
    limited = tenant.key_with(server, read_rate_limit=4, write_rate_limit=1)
    key = limited.http.headers["Authorization"].removeprefix("Bearer ")
    with agent(server, key) as a:  # the client's server/discover: 1 read
        a.tools()  # 2: listed now, else by the client before its first call
        a.ok("list_posts")
        a.ok("list_accounts")
        error = a.error("list_posts", {}, "RATE_LIMITED")
        assert "4 reads a minute" in error["message"]
        result = a.call("list_posts")
        assert result.meta is not None
        assert result.meta["murmur/retry_after"] >= 1
        # Writes have a budget of their own.
        args = {"text": "Hi", "platforms": ["x"], "draft": True}
        a.ok("create_post", {**args, "idempotency_key": "w-1"})
        a.error("create_post", {**args, "idempotency_key": "w-2"}, "RATE_LIMITED")
    limited.close()


def test_each_call_has_its_request_id(server: LiveServer, tenant: Tenant) -> None:
    with agent(server, tenant.key) as a:
        ids = set()
        for _ in range(3):
            result = a.call("list_posts")
            assert result.meta is not None
            ids.add(result.meta["murmur/request_id"])
        refused = a.call("get_post", {"post_id": "post_nope"})
        assert isinstance(refused.structured_content, dict)
        ids.add(refused.structured_content["request_id"])
    assert len(ids) == 4
    assert all(i.startswith("req_") for i in ids)


def _rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params or {}}


def test_every_message_spends_the_keys_reads_and_get_opens_no_stream(
    server: LiveServer, tenant: Tenant
) -> None:
    limited = tenant.key_with(server, read_rate_limit=3)
    key = limited.http.headers["Authorization"].removeprefix("Bearer ")
    url = server.base_url + "/mcp"
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {key}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    # A stateless server has no stream to offer: GET opened one that never ended, unmetered.
    stream = httpx.get(url, headers=headers)
    assert stream.status_code == 405
    assert stream.headers["Allow"] == "POST"
    assert stream.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    spent = [
        httpx.post(url, json=_rpc("tools/list"), headers=headers),
        httpx.post(url, json=_rpc("resources/read", {"uri": "murmur://docs/mcp"}), headers=headers),
    ]
    assert [r.status_code for r in spent] == [200, 200]
    assert [r.headers["X-RateLimit-Remaining"] for r in spent] == ["2", "1"]
    # The client's server/discover spends the last read.
    over_budget = pytest.raises(MCPError, match=r"^RATE_LIMITED: Over 3 reads a minute")
    with agent(server, key) as a, over_budget as refused:
        a.tools()
    assert refused.value.data["error"]["code"] == "RATE_LIMITED"
    over = httpx.post(url, json=_rpc("tools/list"), headers=headers)
    assert over.status_code == 429
    assert int(over.headers["Retry-After"]) >= 1
    assert over.headers["X-RateLimit-Remaining"] == "0"
    body = over.json()
    assert body["id"] == 7
    assert body["error"]["data"]["request_id"] == over.headers["X-Request-Id"]
    assert httpx.get(url, headers=headers).status_code == 405  # over budget too, and at once
    limited.close()


def test_the_sdk_client_reads_why_its_key_was_refused(server: LiveServer) -> None:
    with pytest.raises(ExceptionGroup) as refused, agent(server, "sk_test_nope"):
        pass
    # Before, "Server returned an error response": the SDK reads no envelope, only JSON-RPC.
    assert refused.group_contains(
        MCPError, match=r"^API_KEY_INVALID: The API key is unknown or revoked\."
    )
