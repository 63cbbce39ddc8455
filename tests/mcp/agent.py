"""An agent's side: the SDK's own client, over HTTP to the live server or stdio to `murmur mcp`.

Tests are plain functions; the client's async calls run on an anyio blocking portal.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks.servers import settings_env
from tests.support import LiveServer

# The tools of issue 31, by these names: prompts count on them.
TOOL_NAMES = {
    "list_workspaces",
    "list_accounts",
    "list_posts",
    "get_post",
    "validate_post",
    "create_post",
    "update_post",
    "cancel_post",
    "list_approvals",
    "act_on_approval",
    "list_inbox_items",
    "draft_reply",
    "respond_to_inbox_item",
    "list_queues",
    "get_unified_analytics",
    "list_viral_trends",
    "get_insights",
    "get_best_times",
    "list_creators",
    "list_competitors",
    "get_post_analytics",
    "list_breakouts",
    "get_publishing_reliability",
    "explain_error",
    # Posting-time experiments (issue 52, point 2).
    "list_experiments",
    "get_experiment",
    "create_experiment",
    "stop_experiment",
}
WRITES = {
    "create_post",
    "update_post",
    "cancel_post",
    "act_on_approval",
    "draft_reply",
    "respond_to_inbox_item",
    "create_experiment",
    "stop_experiment",
}


@dataclass
class Agent:
    """A connected MCP client, called from synchronous tests."""

    portal: BlockingPortal
    client: Client

    def tools(self) -> list[types.Tool]:
        return self.portal.call(self.client.list_tools).tools

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        result: types.CallToolResult = self.portal.call(
            self.client.call_tool, name, arguments or {}
        )
        return result

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The structured `data` of a successful call (the client checked it against the
        tool's output schema), after checking its one-line summary, the same data as JSON
        text, and its request id."""
        result = self.call(name, arguments)
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        summary, data = result.content
        assert isinstance(summary, types.TextContent)
        assert summary.text
        assert "\n" not in summary.text
        assert isinstance(data, types.TextContent)
        assert json.loads(data.text) == result.structured_content
        assert result.meta is not None
        assert result.meta["murmur/request_id"].startswith("req_")
        return result.structured_content

    def error(self, name: str, arguments: dict[str, Any] | None, code: str) -> dict[str, Any]:
        """The contract's `error` of a refused call: a tool error (isError), no traceback."""
        result = self.call(name, arguments)
        assert result.is_error, result.structured_content
        envelope = result.structured_content
        assert isinstance(envelope, dict)
        assert envelope["success"] is False
        assert envelope["error"]["code"] == code, envelope
        assert envelope["request_id"].startswith("req_")
        text, as_json = result.content
        assert isinstance(text, types.TextContent)
        assert text.text.startswith(f"{code}: ")
        assert "Traceback" not in text.text
        assert isinstance(as_json, types.TextContent)
        assert json.loads(as_json.text) == envelope
        error: dict[str, Any] = envelope["error"]
        return error

    def read(self, uri: str) -> str:
        result = self.portal.call(self.client.read_resource, uri)
        content = result.contents[0]
        assert isinstance(content, types.TextResourceContents)
        return content.text


@asynccontextmanager
async def _over_http(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def _over_stdio(params: StdioServerParameters) -> AsyncIterator[Client]:
    async with Client(params) as client:
        yield client


@contextmanager
def agent(server: LiveServer, key: str, workspace_id: str | None = None) -> Iterator[Agent]:
    """An agent connected to ``/mcp`` of the live server with ``key``."""
    headers = {"Authorization": f"Bearer {key}"}
    if workspace_id is not None:
        headers["X-Workspace-Id"] = workspace_id
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_over_http(server.base_url + "/mcp", headers)) as c,
    ):
        yield Agent(portal, c)


def stdio_parameters(server: LiveServer, key: str, *extra: str) -> StdioServerParameters:
    """`murmur mcp` in a process of its own, on the live server's store."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MURMUR_")},
        **settings_env(server.settings),
        "MURMUR_API_KEY": key,
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "murmur", "mcp", *extra], env=env
    )


@contextmanager
def stdio_agent(server: LiveServer, key: str, *extra: str) -> Iterator[Agent]:
    params = stdio_parameters(server, key, *extra)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_over_stdio(params)) as client,
    ):
        yield Agent(portal, client)
