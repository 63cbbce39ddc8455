"""Reads beside scrapers: GET /posts alone, then while six clients scrape ``/metrics``.

The scrapers are a child process of their own (``python -m benchmarks.scrapers --url U
--clients 6``: asyncio + httpx, each client scraping in a loop until its standard input
closes, then one JSON line: scrapes, errors, p50/p99 ms), so neither the scrapes nor the
read load share the server's interpreter. ``measure`` interleaves the two loads
``repeats`` times; ``rows`` makes the table's row of them, the alone runs as its reference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.loadgen import LoadResult, percentile

SCRAPERS = 6
# The reads' own target (benchmarks.bench.READ_P99_MS), and what the scrapes may take of
# their throughput.
P99_MS = 50.0
RPS_RATIO = 0.8


async def _scrape(url: str, clients: int, stop: asyncio.Event) -> dict[str, Any]:
    import httpx

    latencies: list[float] = []
    errors = 0
    async with httpx.AsyncClient(timeout=30) as http:

        async def client() -> None:
            nonlocal errors
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    ok = (await http.get(url)).status_code == 200
                except httpx.HTTPError:
                    ok = False
                latencies.append((time.perf_counter() - started) * 1000)
                errors += not ok

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        elapsed = time.perf_counter() - began
    ordered = sorted(latencies)
    return {
        "scrapes": len(ordered),
        "errors": errors,
        "seconds": round(elapsed, 2),
        "per_second": round(len(ordered) / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(statistics.median(ordered), 2) if ordered else 0.0,
        "p99_ms": round(percentile(ordered, 0.99), 2),
    }


async def _until_stdin_closes(url: str, clients: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def wait() -> None:
        sys.stdin.read()  # returns at EOF: the parent closed the pipe
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=wait, daemon=True).start()
    print("scraping", flush=True)
    return await _scrape(url, clients, stop)


class Scrapers:
    """The scraping child, from the first scrape until ``finish()``."""

    def __init__(self, url: str, clients: int = SCRAPERS) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.scrapers", "--url", url, "--clients", str(clients)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "scraping":  # blocks until it has begun
            raise RuntimeError(f"scrapers failed: {self._proc.stderr and self._proc.stderr.read()}")

    def finish(self) -> dict[str, Any]:
        """Stop scraping; what the scrapers saw."""
        out, err = self._proc.communicate(timeout=120)
        if self._proc.returncode != 0:
            raise RuntimeError(f"scrapers failed: {err[-800:]}")
        found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return found


def measure(repeats: int, metrics_url: str, load: Callable[[], LoadResult]) -> dict[str, list[Any]]:
    """Interleaved runs of ``load`` alone and beside the scrapers."""
    runs: dict[str, list[Any]] = {"alone": [], "beside": [], "scrapes": []}
    for _ in range(repeats):
        runs["alone"].append(load())
        scrapers = Scrapers(metrics_url)
        try:
            runs["beside"].append(load())
        finally:
            runs["scrapes"].append(scrapers.finish())
    return runs


def _med(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def _fmt(runs: list[LoadResult]) -> str:
    rps, p50, p99 = (_med([getattr(r, k) for r in runs]) for k in ("rps", "p50_ms", "p99_ms"))
    return f"{rps:.0f} req/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms"


def row(runs: dict[str, list[Any]], clients: int) -> dict[str, Any]:
    """The table's row (benchmarks.bench's child-row shape): beside, against alone."""
    alone, beside, scrapes = runs["alone"], runs["beside"], runs["scrapes"]
    # Paired ratios (each run against the alone run just before it) resist drift.
    ratio = _med([b.rps / a.rps for b, a in zip(beside, alone, strict=True) if a.rps])
    p99 = _med([b.p99_ms for b in beside])
    errors = sum(r.errors for r in beside) + sum(s["errors"] for s in scrapes)
    scraped = (
        f"; scrapes {_med([s['per_second'] for s in scrapes]):.0f}/s,"
        f" p50 {_med([s['p50_ms'] for s in scrapes]):.1f} ms,"
        f" p99 {_med([s['p99_ms'] for s in scrapes]):.1f} ms"
    )
    return {
        "what": f"GET /posts (page of 50), {clients} clients, beside six /metrics scrapers",
        "measured": _fmt(beside) + f", {errors} errors" + scraped,
        "reference": "alone: " + _fmt(alone),
        "ratio": ratio,
        "target": f"≥ {RPS_RATIO}x alone, p99 ≤ {P99_MS:.0f} ms",
        "status": "PASS" if ratio >= RPS_RATIO and p99 <= P99_MS and not errors else "MISS",
        "runs": [r.to_dict() for r in beside],
        "alone_runs": [r.to_dict() for r in alone],
        "scrapes": scrapes,
    }


def main(argv: list[str] | None = None) -> int:
    """Scrape until standard input closes; print what was seen as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--clients", type=int, default=SCRAPERS)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(_until_stdin_closes(args.url, args.clients))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
