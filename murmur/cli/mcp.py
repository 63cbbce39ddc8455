"""``murmur mcp``: Murmur's tools for a local agent, over MCP on stdin and stdout.

The same server as ``/mcp`` on the API's port (api/mcp/server.py), on the store of the data
directory, as the holder of the key in ``MURMUR_API_KEY`` (its scopes, workspaces and
budgets). Stdout carries only the protocol; the log goes to stderr.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from murmur.cli.common import DataDir, err, load_settings


def mcp(
    data_dir: DataDir = None,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            envvar="MURMUR_WORKSPACE_ID",
            help="The workspace of calls that name none (as X-Workspace-Id does over HTTP).",
        ),
    ] = None,
) -> None:
    """Serve Murmur's tools to a local agent over MCP on stdio (the key: MURMUR_API_KEY)."""
    # Imported here, as `serve` imports the API: the other commands start without the SDK.
    import anyio

    from api.mcp.server import Services, serve_stdio
    from api.ratelimit import RateLimiter
    from core.errors import MurmurError
    from domain.pagination import CursorCodec
    from domain.workspaces.keys import authenticate, hash_key
    from warehouse.store import Secrets

    api_key = os.environ.get("MURMUR_API_KEY", "").strip()
    if not api_key:
        err.print("Set MURMUR_API_KEY to an API key (murmur keys create prints one).")
        raise typer.Exit(1)
    settings = load_settings(data_dir)
    store = settings.open_store()
    try:
        try:
            key = store.read(lambda cur: authenticate(cur, hash_key(api_key)))
            if workspace is not None:
                key.workspace(workspace)
        except MurmurError as exc:
            err.print(f"MURMUR_API_KEY: {exc.message}")
            raise typer.Exit(1) from None
        services = Services(
            store, settings, RateLimiter(), CursorCodec(Secrets.load(settings.data_dir).signing_key)
        )
        anyio.run(serve_stdio, services, api_key, workspace)
    finally:
        store.close()
