"""The bench's servers and load: Murmur's app and the reference app in child processes, a load.

``benchmarks.bench`` and the rows measured apart (``benchmarks.dashboard``,
``benchmarks.history``) serve the bench's store and load its reads from here, so none of them
imports another's module.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.loadgen import LoadResult, LoadSpec, run_load
from benchmarks.recording import free_port, stop_child
from benchmarks.seed import Tenant

REPO = Path(__file__).resolve().parent.parent
BASE = "/api/public/v1"
READS: dict[str, str] = {
    "GET /analytics/unified": f"{BASE}/analytics/unified",
    "GET /viral-trends": f"{BASE}/viral-trends?limit=50",
    "GET /posts (page of 50)": f"{BASE}/posts?limit=50",
}


@contextlib.contextmanager
def _child_server(module: str, args: list[str], log_path: Path, probe: str) -> Iterator[str]:
    """Run ``python -m module --port P *args`` until the block ends; yield its base URL.

    Up means ``probe`` answered 200.
    """
    import httpx

    port = free_port()
    env = dict(os.environ, MURMUR_READ_RATE_LIMIT="1000000000")
    env["MURMUR_WRITE_RATE_LIMIT"] = "1000000000"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", str(port), *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    from benchmarks.servers import ssl_context

    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{module} exited: see {log_path}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + probe, timeout=2, verify=ssl_context()).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{module} did not start in time")
            time.sleep(0.2)
        yield url
    finally:
        stop_child(proc, 20, 5)
        log.close()


def serve(data_dir: Path, replica: int = 0) -> contextlib.AbstractContextManager[str]:
    """Murmur's app over ``data_dir`` (``benchmarks.server``) in a child process.

    ``replica`` > 0: another server process over the same store (at scale, where the store is
    shared: PostgreSQL + S3), logging to a file of its own.
    """
    return _child_server(
        "benchmarks.server",
        ["--data-dir", str(data_dir)],
        data_dir / (f"serve-{replica}.log" if replica else "serve.log"),
        f"{BASE}/openapi.json",
    )


@contextlib.contextmanager
def serve_reference(base: str, tenant: Tenant, data_dir: Path) -> Iterator[dict[str, str]]:
    """The reference app serving each read's current body; yield each read's reference URL.

    The bodies are fetched from Murmur once, so each reference answers as many bytes as
    the read it is the floor of.
    """
    import httpx

    bodies = data_dir / "reference"
    bodies.mkdir(exist_ok=True)
    names: dict[str, str] = {}
    with httpx.Client(base_url=base, headers=auth(tenant), timeout=60) as http:
        for i, (name, path) in enumerate(READS.items()):
            answer = http.get(path)
            answer.raise_for_status()
            names[name] = f"read{i}"
            (bodies / f"read{i}.json").write_bytes(answer.content)
    args = ["--bodies", str(bodies)]
    probe = f"/ref/{names[next(iter(READS))]}"
    with _child_server("benchmarks.reference", args, data_dir / "reference.log", probe) as url:
        yield {name: f"{url}/ref/{slug}" for name, slug in names.items()}


def auth(tenant: Tenant) -> dict[str, str]:
    """The bench key's header."""
    return {"Authorization": f"Bearer {tenant.key}"}


def load(
    url: str, headers: dict[str, str], clients: int, seconds: float, *, engine: str = "auto"
) -> LoadResult:
    """``clients`` clients on ``url`` for ``seconds`` (wrk when installed, else Python)."""
    return run_load(
        LoadSpec(url=url, clients=clients, seconds=seconds, headers=headers, engine=engine)
    )
