"""How late the publishing worker publishes when thousands of posts fall due in one minute.

The benchmark process opens the store and seeds N posts, each with one destination,
scheduled across one minute starting a little ahead (``--spread 60``; ``0`` puts them all on
the same instant). The simulator and W workers run as processes of their own; each worker
opens the store itself, as in production (ADR 0002: no process owns it). Lateness is the
time from a post's ``scheduled_at`` to the end of the platform call that published it (our
clock, from the publish log). The exactly-once check reads the simulator's own log
(GET /_sim/posts): every text exactly once.

Usage::

    python -m benchmarks.publishing_lateness --posts 5000 --workers 2 --spread 60
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.servers import bench_settings, settings_env
from tests.support import free_port
from warehouse import posts as posts_repo
from warehouse import publishing as repo
from warehouse import workspaces as ws_repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor

PLATFORM = "x"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))
    return ordered[index]


def _wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=2).raise_for_status()
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def run(posts: int, workers: int, spread: float, lead: float, concurrency: int) -> dict[str, Any]:
    """Seed, publish, measure; returns the figures."""
    data_dir = Path(tempfile.mkdtemp(prefix="murmur-publishing-bench-"))
    sim_port = free_port()
    sim_root = f"http://127.0.0.1:{sim_port}"
    procs: list[subprocess.Popen[bytes]] = []
    settings = bench_settings(data_dir)
    store = settings.open_store()
    try:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    f"from simulator.app import serve; serve('127.0.0.1', {sim_port}, seed=5)",
                ]
            )
        )
        _wait_http(f"{sim_root}/_sim/health")
        httpx.post(
            f"{sim_root}/_sim/accounts",
            json={"platform": PLATFORM, "external_id": "bench-x", "handle": "bench"},
        ).raise_for_status()

        env = dict(
            os.environ,
            **settings_env(settings),
            MURMUR_PLATFORMS_URL=sim_root,
            MURMUR_PUBLISHING_CONCURRENCY=str(concurrency),
            MURMUR_PUBLISHING_POLL_INTERVAL_SECONDS="0.2",
        )
        for i in range(workers):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "murmur",
                        "worker",
                        "--no-engagement",
                        "--data-dir",
                        str(data_dir),
                        "--worker-id",
                        f"bench-{i}",
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )

        start = utcnow() + timedelta(seconds=lead)
        texts = [f"bench {i} {uuid.uuid4().hex[:8]}" for i in range(posts)]

        def seed(cur: Cursor) -> list[str]:
            org = ws_repo.create_organization(cur, "bench")
            ws = ws_repo.create_workspace(cur, org, "bench", approval_required=False)
            account = ws_repo.insert_account(cur, ws, PLATFORM, "bench", "Bench", "bench-x")
            ids = []
            for i, text in enumerate(texts):
                at = start + timedelta(seconds=spread * i / posts)
                new = posts_repo.NewPost(
                    ws, text, posts_repo.PostStatus.SCHEDULED, at, False, [], [], {}, "bench"
                )
                post_id = posts_repo.insert_post(cur, new)
                posts_repo.replace_destinations(cur, post_id, ws, [(account, PLATFORM)])
                ids.append(post_id)
            return ids

        t_seed = time.monotonic()
        post_ids = store.run(seed)
        seeded_in = time.monotonic() - t_seed
        if utcnow() >= start:
            raise SystemExit(f"seeding took {seeded_in:.1f}s, past the lead; raise --lead")

        deadline = time.monotonic() + lead + spread + 120
        while store.run(lambda cur: repo.open_destinations(cur, post_ids)) > 0:
            if time.monotonic() > deadline:
                raise SystemExit("not every destination settled in time")
            time.sleep(0.5)
        finished = utcnow()

        late = store.run(lambda cur: repo.lateness(cur, post_ids))
        statuses = dict(
            store.run(
                lambda cur: cur.execute(
                    "SELECT status, count(*) FROM posts GROUP BY status"
                ).fetchall()
            )
        )
        body = httpx.get(f"{sim_root}/_sim/posts", params={"platform": PLATFORM}).json()
        counts: dict[str, int] = body["count_by_text"]
        once = sum(1 for t in texts if counts.get(t) == 1)
        twice = sum(1 for t in texts if counts.get(t, 0) > 1)
        missing = sum(1 for t in texts if t not in counts)
        return {
            "posts": posts,
            "workers": workers,
            "concurrency_per_worker": concurrency,
            "spread_seconds": spread,
            "seeded_in_seconds": round(seeded_in, 2),
            "published_destinations": len(late),
            "post_statuses": statuses,
            "lateness_seconds": {
                "p50": round(_percentile(late, 50), 3),
                "p95": round(_percentile(late, 95), 3),
                "p99": round(_percentile(late, 99), 3),
                "max": round(max(late), 3),
                "mean": round(statistics.fmean(late), 3),
                "min": round(min(late), 3),
            },
            "last_publication_after_last_due_seconds": round(
                (finished - (start + timedelta(seconds=spread))).total_seconds(), 2
            ),
            "exactly_once": {"once": once, "more_than_once": twice, "missing": missing},
        }
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--spread", type=float, default=60.0, help="seconds the posts span")
    parser.add_argument("--lead", type=float, default=20.0, help="seconds before the first")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    figures = run(args.posts, args.workers, args.spread, args.lead, args.concurrency)
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
