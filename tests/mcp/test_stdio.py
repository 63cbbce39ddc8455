"""`murmur mcp`: the same server on stdio, launched as a subprocess by the SDK's client."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.servers import settings_env
from tests.mcp.agent import TOOL_NAMES, agent, stdio_agent
from tests.support import HANG_SECONDS, LiveServer, Tenant


def test_murmur_mcp_over_stdio_answers_as_http(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    post = {"text": "From a local agent", "platforms": ["x"], "draft": True}
    with agent(server, tenant.key) as http:
        over_http = http.ok("list_accounts")
        listed = {t.name: t.model_dump() for t in http.tools()}
    with stdio_agent(server, tenant.key) as local:
        assert {t.name: t.model_dump() for t in local.tools()} == listed
        assert set(listed) == TOOL_NAMES
        assert local.ok("list_accounts") == over_http
        made = local.ok("create_post", {**post, "idempotency_key": "local-1"})
        again = local.call("create_post", {**post, "idempotency_key": "local-1"})
        assert again.structured_content == made
        assert again.meta is not None
        assert again.meta["murmur/replayed"] is True
        local.error("get_post", {"post_id": "post_nope"}, "NOT_FOUND")
        local.error(
            "list_posts", {"workspace_id": other_tenant.workspace_id}, "WORKSPACE_FORBIDDEN"
        )
        assert "engagement_rate" in local.read("murmur://docs/analytics")
    # The same store and the same idempotency records as the API's.
    assert [p["post_id"] for p in tenant.api.list_all("/posts")] == [made["post_id"]]
    with agent(server, tenant.key) as http:
        replay = http.call("create_post", {**post, "idempotency_key": "local-1"})
    assert replay.structured_content == made


def test_murmur_mcp_scopes_its_key(server: LiveServer, tenant: Tenant) -> None:
    reader = tenant.key_with(server, scopes=["analytics:read"])
    key = reader.http.headers["Authorization"].removeprefix("Bearer ")
    with stdio_agent(server, key) as local:
        error = local.error("list_posts", {}, "SCOPE_FORBIDDEN")
        assert "'posts:read'" in error["message"]
    reader.close()


def test_murmur_mcp_refuses_to_start_without_a_valid_key(server: LiveServer) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MURMUR_")}
    env.update(settings_env(server.settings))
    for key, said in ((None, "Set MURMUR_API_KEY"), ("sk_test_nope", "unknown or revoked")):
        if key is not None:
            env["MURMUR_API_KEY"] = key
        done = subprocess.run(
            [sys.executable, "-m", "murmur", "mcp"],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 1
        assert said in done.stderr
        assert done.stdout == ""
