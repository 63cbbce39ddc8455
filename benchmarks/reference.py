"""The reads' floor: a minimal FastAPI app in its own process, serving the same bodies.

``python -m benchmarks.reference --port P --bodies DIR`` serves every ``DIR/<name>.json``
at ``GET /ref/<name>``: an ``async def`` route, no middleware, no dependencies, the body
returned as the bytes read at start-up (no per-request encoding), under the uvicorn
settings of ``murmur serve`` (httptools and uvloop when installed, access log off, one
process). It shares no code with Murmur's app: it is what a competent engineer would write
as the fastest FastAPI answer of that many bytes, so a read's ratio to it is the cost of
everything Murmur does besides sending the body.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Response

JSON = "application/json"


def reference_app(bodies: dict[str, bytes]) -> FastAPI:
    """One ``async def`` route per body; nothing else."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    for name, body in bodies.items():
        app.add_api_route(f"/ref/{name}", _answer(body), methods=["GET"])
    return app


def _answer(body: bytes) -> Callable[[], Awaitable[Response]]:
    async def answer() -> Response:
        return Response(content=body, media_type=JSON)

    return answer


def main(argv: list[str] | None = None) -> int:
    """Serve the reference app until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bodies", type=Path, required=True)
    args = parser.parse_args(argv)
    bodies = {p.stem: p.read_bytes() for p in sorted(args.bodies.glob("*.json"))}
    uvicorn.run(
        reference_app(bodies),
        host="127.0.0.1",
        port=args.port,
        log_config=None,
        access_log=False,
        http="httptools",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
