"""HTTP load from a separate process: ``wrk`` when installed, else asyncio + httpx clients.

``run_load`` always starts a child process, so the load never shares the server's
interpreter (or, with ``wrk``, even Python's CPU cost of building requests). Each result
holds requests, errors, throughput and latency percentiles in milliseconds.

The Python generator is also a command: ``python -m benchmarks.loadgen --url … --clients 32
--seconds 10 [--method POST --body '{…}' --fresh-idempotency-key] [--header 'K: V']``,
printing one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# One Lua script for every wrk run: a fresh Idempotency-Key per request when asked, and a
# JSON summary from done() so that nothing parses wrk's human-readable output.
_WRK_LUA = """
local counter = 0
local threads = {}
local fresh = os.getenv("BENCH_FRESH_KEY") == "1"
local prefix = os.getenv("BENCH_KEY_PREFIX") or "bench"
local threads_made = 0
tid = 0  -- a global: setup() sets each thread's own copy

function setup(thread)
  threads_made = threads_made + 1
  thread:set("tid", threads_made)
  table.insert(threads, thread)
end

function request()
  if fresh then
    counter = counter + 1
    wrk.headers["Idempotency-Key"] = prefix .. "-" .. tostring(tid) .. "-" .. tostring(counter)
  end
  return wrk.format()
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write("BENCH_JSON ")
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "non_2xx": %d, "connect": %d, "read": %d, '
    .. '"write": %d, "timeout": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, '
    .. '"max_us": %d, "mean_us": %f}\\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    latency.mean))
end
"""


@dataclass
class LoadSpec:
    """One load: where, how hard, how long, and what each request carries."""

    url: str
    clients: int = 32
    seconds: float = 10.0
    method: str = "GET"
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    fresh_idempotency_key: bool = False
    engine: str = "auto"  # auto | wrk | python


@dataclass
class LoadResult:
    """What the load generator saw."""

    engine: str
    requests: int
    errors: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    first_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wrk_path() -> str | None:
    """The ``wrk`` binary if it is installed (``apt-get install wrk``); else None."""
    return shutil.which("wrk")


def run_load(spec: LoadSpec) -> LoadResult:
    """Drive ``spec`` from a child process and return what it measured."""
    engine = spec.engine
    if engine == "auto":
        engine = "wrk" if wrk_path() else "python"
    if engine == "wrk":
        return _run_wrk(spec)
    return _run_python_child(spec)


def _run_wrk(spec: LoadSpec) -> LoadResult:
    exe = wrk_path()
    if exe is None:
        raise RuntimeError("wrk is not installed")
    with tempfile.TemporaryDirectory(prefix="murmur-wrk-") as tmp:
        script = Path(tmp) / "bench.lua"
        lua = _WRK_LUA
        if spec.method != "GET" or spec.body is not None:
            # wrk.method/body are globals the script sets before the first request.
            body = json.dumps(spec.body) if spec.body is not None else "nil"
            lua = f'wrk.method = "{spec.method}"\nwrk.body = {body}\n' + lua
        script.write_text(lua)
        cmd = [
            exe,
            "-t",
            str(min(2, spec.clients)),
            "-c",
            str(spec.clients),
            "-d",
            f"{max(1, round(spec.seconds))}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
        ]
        for name, value in spec.headers.items():
            cmd += ["-H", f"{name}: {value}"]
        cmd.append(spec.url)
        env = {
            "BENCH_FRESH_KEY": "1" if spec.fresh_idempotency_key else "0",
            "BENCH_KEY_PREFIX": uuid.uuid4().hex[:12],
            "PATH": "/usr/bin:/bin",
        }
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=spec.seconds + 60, check=False
        )
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    seconds = raw["duration_us"] / 1e6
    errors = sum(int(raw[k]) for k in ("non_2xx", "connect", "read", "write", "timeout"))
    first = None
    if errors:
        first = ", ".join(f"{k}={raw[k]}" for k in ("non_2xx", "connect", "read", "timeout"))
    return LoadResult(
        engine="wrk",
        requests=int(raw["requests"]),
        errors=errors,
        seconds=round(seconds, 2),
        rps=round(raw["requests"] / seconds, 1) if seconds else 0.0,
        p50_ms=raw["p50_us"] / 1000,
        p90_ms=raw["p90_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        max_ms=raw["max_us"] / 1000,
        first_error=first,
    )


def _run_python_child(spec: LoadSpec) -> LoadResult:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.loadgen",
        "--url",
        spec.url,
        "--clients",
        str(spec.clients),
        "--seconds",
        str(spec.seconds),
        "--method",
        spec.method,
    ]
    if spec.body is not None:
        cmd += ["--body", spec.body]
    if spec.fresh_idempotency_key:
        cmd.append("--fresh-idempotency-key")
    for name, value in spec.headers.items():
        cmd += ["--header", f"{name}: {value}"]
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=spec.seconds + 120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"loadgen failed: {done.stderr[-800:]}")
    return LoadResult(**json.loads(done.stdout.strip().splitlines()[-1]))


def percentile(sorted_ms: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of already sorted values, by the nearest index; 0 when empty."""
    if not sorted_ms:
        return 0.0
    index = min(len(sorted_ms) - 1, max(0, round(q * (len(sorted_ms) - 1))))
    return sorted_ms[index]


async def _drive(spec: LoadSpec) -> LoadResult:
    import httpx

    latencies: list[float] = []
    errors = 0
    first_error: str | None = None
    prefix = uuid.uuid4().hex[:12]
    counter = 0
    limits = httpx.Limits(max_connections=spec.clients, max_keepalive_connections=spec.clients)
    async with httpx.AsyncClient(limits=limits, timeout=30, headers=spec.headers) as http:
        deadline = time.perf_counter() + spec.seconds

        async def client() -> None:
            nonlocal errors, first_error, counter
            while time.perf_counter() < deadline:
                headers: dict[str, str] = {}
                if spec.fresh_idempotency_key:
                    counter += 1
                    headers["Idempotency-Key"] = f"{prefix}-{counter}"
                started = time.perf_counter()
                try:
                    resp = await http.request(
                        spec.method,
                        spec.url,
                        content=spec.body.encode() if spec.body is not None else None,
                        headers=headers,
                    )
                    ok = resp.status_code < 300
                    problem = f"HTTP {resp.status_code}: {resp.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, problem = False, f"{type(exc).__name__}: {exc}"
                latencies.append((time.perf_counter() - started) * 1000)
                if not ok:
                    errors += 1
                    first_error = first_error or problem

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(spec.clients)))
        elapsed = time.perf_counter() - began
    ordered = sorted(latencies)
    return LoadResult(
        engine="python",
        requests=len(ordered),
        errors=errors,
        seconds=round(elapsed, 2),
        rps=round(len(ordered) / elapsed, 1) if elapsed else 0.0,
        p50_ms=round(statistics.median(ordered), 2) if ordered else 0.0,
        p90_ms=round(percentile(ordered, 0.90), 2),
        p99_ms=round(percentile(ordered, 0.99), 2),
        max_ms=round(ordered[-1], 2) if ordered else 0.0,
        first_error=first_error,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the Python load generator and print its result as JSON."""
    parser = argparse.ArgumentParser(description="Concurrent HTTP load, latencies in ms.")
    parser.add_argument("--url", required=True)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--method", default="GET")
    parser.add_argument("--body")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--fresh-idempotency-key", action="store_true")
    args = parser.parse_args(argv)
    headers = dict(h.split(": ", 1) for h in args.header)
    if args.body is not None:
        headers.setdefault("Content-Type", "application/json")
    spec = LoadSpec(
        url=args.url,
        clients=args.clients,
        seconds=args.seconds,
        method=args.method,
        headers=headers,
        body=args.body,
        fresh_idempotency_key=args.fresh_idempotency_key,
        engine="python",
    )
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is optional
        pass
    print(json.dumps(asyncio.run(_drive(spec)).to_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
