"""The benchmark's API server: Murmur's app served exactly as by `murmur serve`.

``python -m benchmarks.server --data-dir D --port P`` serves the store as ``murmur serve``
does (same ``create_app``, same logging, same uvicorn settings: httptools and uvloop
when installed, uvicorn's access log off, one process), without the quickstart's
start-up work. The reads' reference is not here: it is a separate app in its own
process (``benchmarks.reference``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fastapi import FastAPI


def bench_app(data_dir: Path, port: int) -> FastAPI:
    """Murmur's app over ``data_dir``."""
    from api.app import create_app
    from benchmarks.servers import bench_settings

    return create_app(bench_settings(data_dir, port=port))


def uvicorn_options() -> dict[str, Any]:
    """The server settings of ``murmur serve`` (api/server.py)."""
    from api.server import server_options

    return server_options()


def main(argv: list[str] | None = None) -> int:
    """Serve the benchmark app until interrupted."""
    import uvicorn

    from murmur.logs import configure_logging

    configure_logging()  # as `murmur serve` logs: one JSON line per request on stderr
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
