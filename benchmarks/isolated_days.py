"""An import whose days are isolated, against the same rows on consecutive days.

The vaccination-tweets export (../shared/datasets) is cut into 200 day groups (each
publication day's tweets split in two by id), and written twice: group ``g`` published on
day ``3g`` (200 isolated days, two empty days between each) or on day ``g`` (one range),
times of day kept. Each file is imported into a new store and the
pipeline is run over it (``run_all`` without platform reads); the figure is the isolated
file's import + run, the reference the consecutive file's, in the same process, alternating.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
DAYS = 200
TARGET_RATIO = 1.5
BASE = date(2021, 1, 1)


def files(root: Path) -> tuple[Path, Path, int]:
    """(isolated, consecutive) files from the tweets export, and their row count."""
    tweets = pl.read_csv(DATASETS / "vaccination_tweets.csv", infer_schema=False)
    day = pl.col("date").str.slice(0, 10)
    tweets = tweets.with_columns(
        (day.rank("dense") * 2 - 2 + pl.col("id").str.slice(-1).cast(pl.Int64) % 2).alias("g")
    ).filter(pl.col("g") < DAYS)
    out = []
    for name, spacing in (("isolated", 3), ("consecutive", 1)):
        moved = tweets.with_columns(
            (
                pl.lit(BASE).cast(pl.Datetime("us"))
                + pl.duration(days=pl.col("g").cast(pl.Int64) * spacing)
                + (
                    pl.col("date").str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S")
                    - pl.col("date").str.slice(0, 10).str.strptime(pl.Datetime("us"), "%Y-%m-%d")
                )
            )
            .dt.strftime("%Y-%m-%d %H:%M:%S")
            .alias("date")
        ).drop("g")
        path = root / f"{name}.csv"
        moved.write_csv(path)
        out.append(path)
    return out[0], out[1], tweets.height


def import_and_run(path: Path, data_dir: Path) -> dict[str, float | int]:
    """Import ``path`` into a new store, run the pipeline over it: seconds and ranges."""
    from benchmarks.servers import bench_settings
    from pipelines.importers import run_import
    from pipelines.run import run_all

    settings = bench_settings(data_dir)
    settings.ensure_dirs()
    began = time.perf_counter()
    run_import(path, "tweets", settings=settings, workspace_id=None, kind="own", progress=False)
    imported = time.perf_counter()
    summary = run_all(settings, now=datetime(2026, 11, 22, tzinfo=UTC), ingest=False)
    done = time.perf_counter()
    if not summary.success:
        raise RuntimeError(f"the pipeline failed on {path.name}")
    return {
        "import_s": imported - began,
        "run_s": done - imported,
        "total_s": done - began,
        "ranges": len(summary.days),
        "marts_steps": sum(1 for s in summary.steps if s.name == "marts"),
    }


def run(quick: bool) -> dict[str, Any]:
    """The row: isolated vs consecutive days, medians of alternating repeats."""
    repeats = 1 if quick else 3
    root = Path(tempfile.mkdtemp(prefix="murmur-bench-days-"))
    try:
        isolated, consecutive, rows = files(root)
        found: dict[str, list[dict[str, float | int]]] = {"isolated": [], "consecutive": []}
        for r in range(repeats):
            for name, path in (("isolated", isolated), ("consecutive", consecutive)):
                found[name].append(import_and_run(path, root / f"{name}-{r}"))
                shutil.rmtree(root / f"{name}-{r}", ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    iso = statistics.median(float(x["total_s"]) for x in found["isolated"])
    con = statistics.median(float(x["total_s"]) for x in found["consecutive"])
    ratio = iso / con
    return {
        "what": f"import + run of {rows:,} tweets on {DAYS} isolated days",
        "measured": f"{iso:.1f} s ({found['isolated'][0]['ranges']} range,"
        f" {found['isolated'][0]['marts_steps']} marts pass)",
        "reference": f"{con:.1f} s (the same rows on {DAYS} consecutive days)",
        "ratio": ratio,
        "target": f"≤ {TARGET_RATIO}x",
        "ok": ratio <= TARGET_RATIO,
        "figures": found,
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run("--quick" in sys.argv), indent=2, default=str))
