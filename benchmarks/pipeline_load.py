"""A pipeline-like writer for the write benchmark: heavy server-side scripts until stopped.

``python -m benchmarks.pipeline_load --data-dir D --seconds S`` opens the store's lake as a
Dagster run does and, in a loop, rebuilds a 1M-row table and appends an aggregate of it in
one lake transaction each, so the lake is written throughout. It prints how many scripts it
committed as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.seed import open_store
from warehouse.sql import literal
from warehouse.store import Lakehouse

ROWS = 1_000_000


def script(n: int) -> str:
    """One run's worth of writes: a staging build and a mart-like aggregate (atomic)."""
    rows, run = literal(ROWS), literal(n)
    return f"""
CREATE OR REPLACE TABLE bench_pipeline_stage AS
    SELECT range AS id, range % 1000 AS post, (range * 7919) % 100000 AS likes,
           md5(range::VARCHAR) AS payload
    FROM range({rows});
CREATE TABLE IF NOT EXISTS bench_pipeline_mart (run BIGINT, post BIGINT, likes BIGINT);
INSERT INTO bench_pipeline_mart
    SELECT {run}, post, sum(likes) FROM bench_pipeline_stage GROUP BY post;
"""  # noqa: S608 - integers rendered by literal() only


def main(argv: list[str] | None = None) -> int:
    """Write until ``--seconds`` have passed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)
    store = Lakehouse(open_store(args.data_dir), owned=True)
    deadline = time.monotonic() + args.seconds
    runs = 0
    started = time.monotonic()
    try:
        while time.monotonic() < deadline:
            store.execute_script(script(runs))
            runs += 1
    finally:
        store.close()
    print(json.dumps({"scripts": runs, "seconds": round(time.monotonic() - started, 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
