"""The history rows of ``murmur bench --history N``: a long history beside one ten times shorter.

Issue 33 point 4: does the pipeline still fit and still cost what the new data costs when the
history grows tenfold? Two stores are generated as the pipeline rows generate theirs
(``benchmarks.pipeline_scale``: posts x 100 hourly snapshots, 100 new posts an hour), one of
N snapshots and one of N / 10, each in the bench's own workspace so that the API reads them.
Measured on both, in the same run:

1. The full build (``run_all``, no ingest), each in a child process: wall time (target: about
   linear, within 1.2x of ten times the short history's) and peak RSS (target: 8 GB).
2. The incremental hour: an hour of new data on both, alternating, medians (target: 1.2x).
3. The three reads of the read rows: the first request after the server starts (the caches
   empty: the whole query) and 32 clients for a few seconds (p99), alternating stores
   (target: p99 unchanged within noise, 1.25x).

Usage::

    python -m benchmarks.history --snapshots 100000000 [--quick]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks import smoke
from benchmarks.pipeline_scale import (
    SNAPSHOTS_PER_POST,
    _history_end,
    _in_child,
    _incremental_rows,
    _row,
    build_store,
    child_pipeline,
    smoke_children,
)

PEAK_MB = 8 * 1024
LINEAR = 1.2  # the long build's time against ten times the short one's
READ_P99 = 1.25  # "unchanged within noise": the long history's p99 against the short one's


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _tenant(data_dir: Path) -> Any:
    """The bench's workspace and key in a new store of ``data_dir``."""
    from benchmarks.seed import create_tenant, open_store

    with open_store(data_dir) as store:
        return create_tenant(store)


def _reads(data_dir: Path, tenant: Any, clients: int, seconds: float) -> dict[str, Any]:
    """Each read's first request on a fresh server (ms), then its load run at ``clients``."""
    import httpx

    from benchmarks.serving import READS, auth, load, serve

    found: dict[str, Any] = {}
    with serve(data_dir) as base, httpx.Client(base_url=base, headers=auth(tenant)) as http:
        for name, path in READS.items():
            began = time.perf_counter()
            http.get(path).raise_for_status()
            first_ms = (time.perf_counter() - began) * 1000
            loaded = load(base + path, auth(tenant), clients, seconds)
            found[name] = {"first_ms": first_ms, **loaded.to_dict()}
    return found


def run_history_rows(snapshots: int, quick: bool = False) -> list[dict[str, Any]]:
    """The rows: full build, incremental hour and reads over ``snapshots`` against a tenth."""
    with smoke_children(quick):
        return _history_rows(snapshots, quick)


def _history_rows(snapshots: int, quick: bool) -> list[dict[str, Any]]:
    big_posts = max(snapshots // SNAPSHOTS_PER_POST, 10)
    small_posts = big_posts // 10
    repeats = 1 if quick else 3
    clients, seconds = (4, 0.1 if smoke() else 1.0) if quick else (32, 5.0)
    end = _history_end()
    now = end + timedelta(minutes=25)
    root = Path(tempfile.mkdtemp(prefix="murmur-bench-history-"))
    rows: list[dict[str, Any]] = []
    try:
        big, small = root / "long", root / "short"
        tenants = {big: _tenant(big), small: _tenant(small)}
        n_big = build_store(big, big_posts, end, tenants[big].workspace_id)
        n_small = build_store(small, small_posts, end, tenants[small].workspace_id)
        # 1. The full builds, the short one first: the long one's store goes on below.
        short = _in_child(child_pipeline, str(small), now.isoformat())
        long = _in_child(child_pipeline, str(big), now.isoformat())
        linear = long["seconds"] / (10 * short["seconds"]) if short["seconds"] else 0.0
        rows.append(
            _row(
                f"full build (run_all), {n_big:,} snapshots",
                f"{long['seconds']:.1f} s (marts {long['marts']:.1f} s), peak"
                f" {long['peak_mb']:,.0f} MB",
                f"{short['seconds']:.1f} s (marts {short['marts']:.1f} s), peak"
                f" {short['peak_mb']:,.0f} MB over {n_small:,}; ratio against 10x that",
                linear,
                f"≤ {LINEAR}x of linear; peak ≤ {PEAK_MB // 1024} GB",
                long["success"] and linear <= LINEAR and long["peak_mb"] <= PEAK_MB,
                f"checks failed: {long['checks_failed'] or 'none'}; days {', '.join(long['days'])}",
            )
        )
        # 2. The incremental hour, both stores built.
        rows.extend(
            _incremental_rows(
                big,
                small,
                big_posts,
                small_posts,
                n_big,
                n_small,
                end,
                repeats,
                built=True,
                workspaces=(tenants[big].workspace_id, tenants[small].workspace_id),
            )
        )
        # 3. The reads, alternating stores.
        runs: dict[Path, list[dict[str, Any]]] = {big: [], small: []}
        for _ in range(repeats):
            for data_dir in (big, small):
                runs[data_dir].append(_reads(data_dir, tenants[data_dir], clients, seconds))
        rows.extend(_read_rows(runs[big], runs[small], n_big, n_small, clients))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def _read_rows(
    long: list[dict[str, Any]], short: list[dict[str, Any]], n_big: int, n_small: int, clients: int
) -> list[dict[str, Any]]:
    """One row per read: p99 under load over the long history against the short one's."""
    rows = []
    for name in long[0]:

        def med(runs: list[dict[str, Any]], key: str, read: str = name) -> float:
            return _median([r[read][key] for r in runs])

        p99_l, p99_s = med(long, "p99_ms"), med(short, "p99_ms")
        errors = sum(r[name]["errors"] for r in long + short)
        ratio = p99_l / p99_s if p99_s else 0.0
        rows.append(
            _row(
                f"{name} over {n_big:,} snapshots of history, {clients} clients",
                f"p99 {p99_l:.1f} ms, p50 {med(long, 'p50_ms'):.1f} ms,"
                f" {med(long, 'rps'):,.0f} req/s; first read {med(long, 'first_ms'):.0f} ms",
                f"over {n_small:,}: p99 {p99_s:.1f} ms, p50 {med(short, 'p50_ms'):.1f} ms,"
                f" {med(short, 'rps'):,.0f} req/s; first read {med(short, 'first_ms'):.0f} ms",
                ratio,
                f"p99 ≤ {READ_P99}x",
                errors == 0 and ratio <= READ_P99,
                f"median of {len(long)} runs each, alternating; {errors} errors; the first"
                " read is a fresh server's first request of it (caches empty; the first"
                " analytics read also attaches the lake)",
            )
        )
    return rows


def main() -> None:
    """Print the rows as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--snapshots", type=int, default=100_000_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for row in run_history_rows(args.snapshots, args.quick):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
