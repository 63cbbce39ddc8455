"""``/mcp`` on the API: the MCP endpoint, built and started on its first request."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from api.mcp.server import McpEndpoint


class McpMount:
    """The ASGI endpoint at ``/mcp``, built when the first request reaches it.

    Importing the MCP SDK and building its server cost every API process ~0.9 s of CPU at
    start (measured: ``create_app`` 1.57 s of CPU with it, 0.67 s without), which most
    processes never use: replicas no agent calls, every command and test that starts an API.
    The first request builds the endpoint and runs its session manager in a task of its own;
    ``aclose`` ends that task when the app stops.
    """

    def __init__(self, app: Any) -> None:
        self._app = app
        self._endpoint: McpEndpoint | None = None
        self._starting = asyncio.Lock()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoint or await self._start()
        await endpoint(scope, receive, send)

    async def _start(self) -> McpEndpoint:
        async with self._starting:
            if self._endpoint is None:
                from api.mcp.server import McpEndpoint

                endpoint = McpEndpoint(self._app)
                running: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._task = asyncio.create_task(self._run(endpoint, running))
                await asyncio.wait({running, self._task}, return_when=asyncio.FIRST_COMPLETED)
                if not running.done():
                    self._task.result()  # the manager failed to start: its error, here
                self._endpoint = endpoint
        return self._endpoint

    async def _run(self, endpoint: McpEndpoint, running: asyncio.Future[None]) -> None:
        # The manager's task group is entered and left in this one task, as anyio requires.
        async with endpoint.manager.run():  # MCP's stateless Streamable HTTP
            running.set_result(None)
            await self._stop.wait()

    async def aclose(self) -> None:
        """End the session manager, if a request started it."""
        if self._task is not None:
            self._stop.set()
            await self._task
