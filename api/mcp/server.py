"""Murmur over MCP: the tools of api/mcp/tools.py served with the official SDK.

Two transports, one server: Streamable HTTP at ``/mcp`` on the API's port (stateless, the
SDK's session manager started in the app's lifespan, api/app.py) and stdio (``murmur mcp``).
Every call goes through what a REST request goes through: the key (HTTP: the
``Authorization`` header, refused with the contract's 401 before any MCP exchange; stdio:
``MURMUR_API_KEY``), the key's budget of reads or writes, the endpoint's scope, the
workspace (``X-Workspace-Id`` or the ``workspace_id`` argument), the idempotency unit of
domain/idempotency.py for writes, and a request id. A refusal is a tool error (``isError``)
carrying the contract's envelope; never a traceback.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import mcp_types as types
import pydantic
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, TypeAdapter
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from api.context import request_id_var
from api.deps import authenticate_request, key_budget, refuse_over
from api.errors import STORABLE_ERRORS, murmur_error_response, reply_for
from api.mcp import docs
from api.mcp.tools import BY_NAME, TOOLS, Call, Tool
from api.ratelimit import RateLimiter
from api.request_state import RequestState
from api.schemas import Envelope
from domain import idempotency as unit
from domain import text as json_text
from domain.errors import DomainError, ValidationFailed, shape_details
from domain.pagination import CursorCodec
from domain.workspaces.keys import ApiKey, authenticate, hash_key
from murmur.errors import MurmurError
from murmur.settings import Settings
from warehouse import idempotency as idem_repo
from warehouse.ids import new_id
from warehouse.store import Store

log = structlog.get_logger("murmur.mcp")

SERVER_NAME = "murmur"
INSTRUCTIONS = (
    "Murmur publishes posts to social platforms and reads the analytics its pipeline computes. "
    "Start with list_workspaces and list_accounts; check a post with validate_post before "
    "create_post. Every write takes an idempotency_key: reuse it when you retry a call, so "
    "that nothing is done twice. Errors carry a code (explain_error says what to do). What an "
    "analytics figure means: the resource murmur://docs/analytics."
)
CALLER = "murmur.mcp.caller"  # where the HTTP endpoint leaves the caller, in the ASGI scope


@dataclass(frozen=True)
class Services:
    """What the tools run against: the store, the settings, the budgets, the cursors' codec."""

    store: Store
    settings: Settings
    limiter: RateLimiter
    codec: CursorCodec


@dataclass(frozen=True)
class Caller:
    """Who calls: the key, the workspace the connection names (if any), the request's id."""

    key: ApiKey
    workspace_id: str | None
    request_id: str


CallerOf = Callable[[ServerRequestContext[Any, Any]], Awaitable[Caller]]


# -- the tools' definitions --------------------------------------------------------------------


def _schema(model: Any, mode: str) -> dict[str, Any]:
    schema: dict[str, Any] = TypeAdapter(model).json_schema(mode=mode)  # type: ignore[arg-type]
    schema.pop("title", None)
    return schema


def definition(tool: Tool) -> types.Tool:
    """The tool as ``tools/list`` shows it: schemas of its arguments and its `data`."""
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description + (f" Needs the scope `{tool.scope}`." if tool.scope else ""),
        input_schema=_schema(tool.args, "validation"),
        output_schema=_schema(tool.output, "serialization"),
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive,
            idempotent_hint=tool.idempotent,
            open_world_hint=tool.open_world,
        ),
    )


# -- one call ----------------------------------------------------------------------------------


class _Refused(Exception):
    """A refusal as the contract's error envelope (a stored one, replayed, included)."""

    def __init__(
        self, envelope: dict[str, Any], retry_after: str | None = None, replayed: bool = False
    ) -> None:
        super().__init__(envelope["error"]["code"])
        self.envelope = envelope
        self.retry_after = retry_after
        self.replayed = replayed


def _refusal(exc: MurmurError) -> _Refused:
    """``exc`` as the REST API answers it (api/errors.py's table); raises it if unlisted."""
    response = murmur_error_response(exc)
    return _Refused(json.loads(bytes(response.body)), response.headers.get("retry-after"))


def _stored_refusal(exc: DomainError) -> unit.Reply | None:
    if not isinstance(exc, STORABLE_ERRORS):
        return None
    response = murmur_error_response(exc)
    return unit.Reply(response.status_code, bytes(response.body).decode())


def _dump(result: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = result.model_dump(mode="json", by_alias=True)
    return data


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def execute(
    services: Services, caller: Caller, tool: Tool, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Run one tool call in REST's order of checks; its `data` and whether it is a replay.

    Authentication (done by the caller's transport), rate limit, scope, workspace,
    idempotency, validation, then the work: a read in a read transaction, a write through
    the idempotency unit under its REST method and path.
    """
    settings, key = services.settings, caller.key
    is_write = tool.write is not None or tool.counts_as_write
    refuse_over(key_budget(services.limiter, settings, key, is_write), is_write)
    if tool.scope is not None:
        key.require(tool.scope)
    workspace_id = ""
    if tool.in_workspace:
        workspace_id = key.workspace(_text(arguments.get("workspace_id")) or caller.workspace_id)
    raw_key = None
    if tool.write is not None:
        raw_key = unit.validate_key(_text(arguments.get("idempotency_key")), "idempotency_key")
    try:
        args: Any = tool.args.model_validate(arguments) if not tool.raw else None
    except pydantic.ValidationError as exc:
        details = shape_details(exc.errors())
        first = details[0]
        raise ValidationFailed(f"{first.field}: {first.message}", details) from None
    call = Call(key=key, workspace_id=workspace_id, settings=settings, codec=services.codec)
    if tool.raw:
        args = {k: v for k, v in arguments.items() if k != "workspace_id"}
    write = tool.write
    if write is None:
        call.txn = services.store.begin(write=False)
        try:
            return _dump(tool.run(call, args)), False
        finally:
            call.txn.rollback()

    assert raw_key is not None
    skipped = {"idempotency_key", "workspace_id", *write.path_args}
    call.body = {k: v for k, v in arguments.items() if k not in skipped}
    record = idem_repo.RecordKey(key.id, workspace_id, write.method, write.path(args), raw_key)

    def work(cur: Any) -> BaseModel:
        call.write_cur = cur
        return tool.run(call, args)

    def answer(result: BaseModel) -> unit.Reply:
        body = Envelope(data=result, request_id=caller.request_id).model_dump_json()
        return unit.Reply(write.status, body)

    outcome = unit.run_once(
        services.store,
        record,
        unit.fingerprint_of(call.body if write.body else None),
        work,
        answer=answer,
        refusal=_stored_refusal,
        lease_seconds=settings.idempotency_lease_seconds,
        ttl_seconds=settings.idempotency_ttl_seconds,
    )
    envelope = json.loads(outcome.reply.body)
    if not envelope.get("success"):
        raise _Refused(envelope, replayed=outcome.replayed)
    data: dict[str, Any] = envelope["data"]
    return data, outcome.replayed


def _error_result(refused: _Refused) -> types.CallToolResult:
    error = refused.envelope["error"]
    lines = [f"{error['code']}: {error['message']}"]
    lines += [f"- {d['field']} ({d['issue']}): {d['message']}" for d in error.get("details", [])]
    if refused.retry_after is not None:
        lines.append(f"Retry after {refused.retry_after} s.")
    meta: dict[str, Any] = {"murmur/request_id": refused.envelope.get("request_id")}
    if refused.retry_after is not None:
        meta["murmur/retry_after"] = int(refused.retry_after)
    if refused.replayed:
        meta["murmur/replayed"] = True
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="\n".join(lines))],
        structured_content=refused.envelope,
        is_error=True,
        _meta=meta,
    )


async def call_tool(
    services: Services, caller: Caller, name: str, arguments: Mapping[str, Any]
) -> types.CallToolResult:
    """One ``tools/call``, answered as a result or a tool error; logged with its request id."""
    started = time.perf_counter()
    token = request_id_var.set(caller.request_id)
    outcome = "ok"
    try:
        tool = BY_NAME.get(name)
        if tool is None:
            raise ValidationFailed.on(
                "name", "unknown_tool", f"No tool {name!r}; tools/list names them."
            )
        # The limits of a REST body (docs/api.md, Conventions): no NUL or lone surrogate,
        # no NaN, at most 64 levels.
        violation = json_text.first_violation(dict(arguments))
        if violation is not None:
            raise ValidationFailed.on(*violation)
        data, replayed = await anyio.to_thread.run_sync(
            partial(execute, services, caller, tool, arguments)
        )
        text = tool.summary(data) + (" (replayed: the first call's answer)" if replayed else "")
        meta: dict[str, Any] = {"murmur/request_id": caller.request_id}
        if replayed:
            meta["murmur/replayed"] = True
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=data,
            _meta=meta,
        )
    except _Refused as refused:
        outcome = refused.envelope["error"]["code"]
        return _error_result(refused)
    except MurmurError as exc:
        if reply_for(exc) is None:
            outcome = "INTERNAL_ERROR"
            log.exception("mcp.tool_failed", request_id=caller.request_id, tool=name)
            return _error_result(_internal(caller))
        answer = _refusal(exc)
        outcome = answer.envelope["error"]["code"]
        return _error_result(answer)
    except Exception:
        outcome = "INTERNAL_ERROR"
        log.exception("mcp.tool_failed", request_id=caller.request_id, tool=name)
        return _error_result(_internal(caller))
    finally:
        log.info(
            "mcp.tool",
            request_id=caller.request_id,
            tool=name,
            key_id=caller.key.id,
            outcome=outcome,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        request_id_var.reset(token)


def _internal(caller: Caller) -> _Refused:
    return _Refused(
        {
            "success": False,
            "error": {
                "code": "INTERNAL_ERROR",
                "message": "An unexpected error occurred.",
                "details": [],
            },
            "request_id": caller.request_id,
        }
    )


# -- the server --------------------------------------------------------------------------------


def build_server(services_of: Callable[[], Services], caller_of: CallerOf) -> Server[Any]:
    """The MCP server: the tools, and the contract and analytics docs as resources."""
    definitions = [definition(tool) for tool in TOOLS]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=definitions)

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            caller = await caller_of(ctx)
        except MurmurError as exc:  # stdio: the key was revoked or expired since
            token = request_id_var.set(new_id("req"))
            try:
                return _error_result(_refusal(exc))
            finally:
                request_id_var.reset(token)
        return await call_tool(services_of(), caller, params.name, params.arguments or {})

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=doc.uri,
                    name=doc.name,
                    title=doc.title,
                    description=doc.description,
                    mime_type="text/markdown",
                )
                for doc in docs.DOCUMENTS
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        await caller_of(ctx)  # the documents are public, but only to a caller with a key
        uri = str(params.uri)
        try:
            text = await anyio.to_thread.run_sync(docs.read, uri)
        except ValidationFailed as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=exc.message) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)]
        )

    return Server(
        SERVER_NAME,
        version="1.0.0",
        title="Murmur",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


# -- Streamable HTTP at /mcp -------------------------------------------------------------------


async def _http_caller(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    caller = getattr(request, "scope", {}).get(CALLER) if request is not None else None
    if not isinstance(caller, Caller):  # the endpoint below always leaves one
        raise RuntimeError("an MCP request reached the server without a caller")
    return caller


class McpEndpoint:
    """The ASGI endpoint at ``/mcp``: authenticates like REST, then hands over to the SDK.

    A missing, unknown, revoked or expired key, a client over its budget of failed keys, or
    an ``X-Workspace-Id`` the key lacks is answered here in the contract's envelope (401,
    429, 403), before any MCP exchange. The edge middleware has given the request its id,
    its access log line and its body limit already.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.server = build_server(self._services, _http_caller)
        self.manager = StreamableHTTPSessionManager(
            app=self.server, stateless=True, json_response=True
        )

    def _services(self) -> Services:
        state = self.app.state
        return Services(state.store, state.settings, state.rate_limiter, state.cursor_codec)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        state = self.app.state
        store: Store = state.store
        settings: Settings = state.settings
        try:
            # Only the transaction's keys token is read: the key is looked up on its own.
            txn = store.begin(write=True)
            key = await authenticate_request(request, store, settings, txn, is_write=True)
            workspace_id = request.headers.get("x-workspace-id")
            if workspace_id is not None:
                key.workspace(workspace_id)  # a workspace the key lacks: 403 before any work
        except MurmurError as exc:
            if reply_for(exc) is None:
                raise
            await murmur_error_response(exc)(scope, receive, send)
            return
        # The rate headers show the key's budget of reads; each tool call counts itself.
        RequestState.of(scope).rate_budget = key_budget(
            state.rate_limiter, settings, key, False, count=False
        )
        scope[CALLER] = Caller(key, workspace_id, request_id_var.get())
        await self.manager.handle_request(scope, receive, send)


# -- stdio (murmur mcp) ------------------------------------------------------------------------


async def serve_stdio(services: Services, api_key: str, workspace_id: str | None) -> None:
    """Serve the tools on stdin/stdout for one local agent, as the holder of ``api_key``."""
    key_hash = hash_key(api_key)

    async def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
        # Looked up at each call, so that a revoked or expired key stops working at once.
        key = await anyio.to_thread.run_sync(
            services.store.read, lambda cur: authenticate(cur, key_hash)
        )
        return Caller(key, workspace_id, new_id("req"))

    server = build_server(lambda: services, caller_of)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
