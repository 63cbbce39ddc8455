"""The benchmark's API server: Murmur's app plus a bare reference route, like `murmur serve`.

``python -m benchmarks.server --data-dir D --port P`` hosts the store exactly as ``murmur
serve`` does (same ``create_app``, same uvicorn settings: httptools and uvloop when
installed, access log off, one process) and adds ``GET /bench/bare``, a plain FastAPI
route returning a constant envelope. The bare route exists only in this benchmark app,
never in the public API.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastapi import FastAPI

BARE_PATH = "/bench/bare"
_BARE: dict[str, Any] = {"data": {"ok": True}, "request_id": "req_bench"}


def bench_app(data_dir: Path, port: int) -> FastAPI:
    """Murmur's app over ``data_dir`` with the reference route added."""
    from api.app import create_app
    from murmur.settings import Settings

    settings = Settings(data_dir=data_dir, port=port, quack_port=0)
    app = create_app(settings)

    @app.get(BARE_PATH, include_in_schema=False)
    def bare() -> dict[str, Any]:
        """A constant envelope: the floor of FastAPI, uvicorn and the edge middleware."""
        return _BARE

    return app


def uvicorn_options() -> dict[str, Any]:
    """The server settings of ``murmur serve`` (api/server.py)."""
    from api.server import server_options

    return server_options()


def main(argv: list[str] | None = None) -> int:
    """Serve the benchmark app until interrupted."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    uvicorn.run(
        bench_app(args.data_dir, args.port), host="127.0.0.1", port=args.port, **uvicorn_options()
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
