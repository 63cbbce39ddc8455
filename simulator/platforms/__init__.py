"""The simulated platforms, one module per API: its reads, its writes and its routes."""

from __future__ import annotations

from starlette.routing import BaseRoute

from simulator.platforms import bluesky, graph, linkedin, pinterest, tiktok, x, youtube

MODULES = (youtube, x, graph, linkedin, tiktok, bluesky, pinterest)


def routes() -> list[BaseRoute]:
    """Every platform's endpoints, each under its own prefix (/youtube, /x, /instagram, …)."""
    return [route for module in MODULES for route in module.routes()]
