"""What every notebook starts with: open the Murmur store read-only, query it, show charts.

The store is opened exactly as ``murmur attach --data-dir D`` prints: the publishing
database as ``pub`` and the lake as ``lake``, both read-only, in the notebook's own DuckDB
session; no process owns the store, so a notebook never waits for the service or a run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import matplotlib

matplotlib.use("Agg")  # headless: charts are written as PNGs and displayed from the file

from matplotlib.figure import Figure

from warehouse.extensions import load_extension

# The repository's root. Jupyter runs a notebook's kernel in the notebook's folder
# (`jupyter execute notebooks/x.ipynb` from the root included), so relative paths are taken
# from the root, as `make up` and the README write them, never from the kernel's folder.
REPO = Path(__file__).resolve().parent.parent


def _from_repo(path: str) -> Path:
    return (REPO / Path(path).expanduser()).resolve()


def data_dir() -> Path:
    """The data directory: $MURMUR_DATA_DIR, default data; relative to the repository root."""
    return _from_repo(os.environ.get("MURMUR_DATA_DIR") or "data")


def attach_sql(directory: Path) -> str:
    """The SQL `murmur attach` prints for this data directory."""
    done = subprocess.run(
        [sys.executable, "-m", "murmur", "attach", "--data-dir", str(directory)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        # At scale without the analysts' credentials it says which MURMUR_ANALYST_* to set.
        raise RuntimeError(done.stderr.strip() or f"murmur attach exited {done.returncode}")
    return done.stdout


def connect(directory: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB session on the store, read-only, through `murmur attach`'s SQL."""
    directory = directory or data_dir()
    if not (directory / "publishing.sqlite").exists() and not os.environ.get(
        "MURMUR_PUBLISHING_URL"
    ):
        raise FileNotFoundError(f"No Murmur store in {directory}: run `murmur init` first.")
    sql = attach_sql(directory)
    con = duckdb.connect()
    # INSTALL may need the network; the extensions ship as wheels, so load those instead.
    for name in ("sqlite", "postgres", "ducklake", "httpfs"):
        load_extension(con, name)
    sql = re.sub(r"(INSTALL|LOAD) \w+;", "", sql)
    con.execute(sql)
    return con


def mode(con: duckdb.DuckDBPyConnection) -> str:
    """Where the store lives: 'embedded' (files) or 'scale' (PostgreSQL)."""
    found = con.execute(
        "SELECT type FROM duckdb_databases() WHERE database_name = 'pub'"
    ).fetchone()
    return "embedded" if found and str(found[0]) == "sqlite" else "scale"


def rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None
) -> list[dict[str, Any]]:
    """A query's rows as dicts."""
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, values, strict=True)) for values in cur.fetchall()]


def local(
    con: duckdb.DuckDBPyConnection, name: str, sql: str, params: list[Any] | None = None
) -> int:
    """Copy one query's rows into a session-local temp table ``temp.main.<name>``.

    For a slice the notebook reads several times (joins need no copy: the session sees the
    publishing tables and the lake's in one catalog).
    """
    if not name.isidentifier():
        raise ValueError(f"not a table name: {name!r}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}", params or [])
    found = con.execute(f"SELECT count(*) FROM temp.main.{name}").fetchone()  # noqa: S608
    return int(found[0]) if found else 0


def workspace() -> str | None:
    """The workspace the figures are of: $MURMUR_WORKSPACE, else every one in the store."""
    return os.environ.get("MURMUR_WORKSPACE") or None


# Own posts' counters summed per post over UTC days, then per platform with, per basis, the
# engagements and posts of the posts that have it: what a rate of the same posts divides.
_RATES = """
WITH post AS (
    SELECT platform, external_id, sum(impressions) AS impressions, sum(views) AS views,
           sum(engagements) AS engagements
    FROM mart_post_daily
    WHERE kind = 'own' AND (?::VARCHAR IS NULL OR workspace_id = ?) AND day BETWEEN ? AND ?
    GROUP BY ALL
)
SELECT platform, sum(impressions)::BIGINT AS impressions, sum(views)::BIGINT AS views,
       sum(engagements)::BIGINT AS engagements, count(*) AS posts,
       coalesce(sum(engagements) FILTER (WHERE impressions > 0), 0)::BIGINT AS eng_impressions,
       coalesce(sum(engagements) FILTER (WHERE views > 0), 0)::BIGINT AS eng_views,
       count(*) FILTER (WHERE impressions > 0) AS posts_impressions,
       count(*) FILTER (WHERE views > 0) AS posts_views
FROM post GROUP BY platform ORDER BY engagements DESC, platform
"""
_SUMMED = (
    "impressions",
    "views",
    "engagements",
    "posts",
    "eng_impressions",
    "eng_views",
    "posts_impressions",
    "posts_views",
)


def _rate(row: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The rate of ``row``'s posts with its basis, the platforms covered and the share left out."""
    # the basis: impressions where any post has them, else views
    basis = "impressions" if row["impressions"] else "views" if row["views"] else None
    if basis is None:
        return {
            "basis": None,
            "engagement_rate": None,
            "covered": [],
            "excluded": [],
            "excluded_share": None,
        }
    covered = row[f"eng_{basis}"]
    return {
        "basis": basis,
        "engagement_rate": covered / row[basis],
        "covered": sorted(p["platform"] for p in parts if p[f"posts_{basis}"]),
        "excluded": sorted(
            p["platform"] for p in parts if p["engagements"] and not p[f"posts_{basis}"]
        ),
        "excluded_share": (row["engagements"] - covered) / row["engagements"]
        if row["engagements"]
        else 0.0,
    }


def engagement_rates(
    con: duckdb.DuckDBPyConnection, first_day: date, last_day: date, workspace_id: str | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Own posts' engagement rate per platform and over all, for the UTC days [first, last]."""
    # what GET /analytics/unified answers for from=first, to=last + 1 day (its by_platform and
    # totals; docs/api/analytics.md, engagement_rate): a rate of the same posts
    per_platform = rows(con, _RATES, [workspace_id, workspace_id, first_day, last_day])
    for r in per_platform:
        r.update(_rate(r, [r]))
    total = {k: sum(int(r[k]) for r in per_platform) for k in _SUMMED}
    total.update(_rate(total, per_platform))
    return per_platform, total


def said(rate: dict[str, Any]) -> str:
    """A rate as the dashboard says it: "6.26% of impressions (5 of 9 platforms, …)"."""
    if rate["engagement_rate"] is None:
        return "not measured"
    scope = len(rate["covered"]) + len(rate["excluded"])
    platforms = f"{len(rate['covered'])} of {scope} platforms, " if scope > 1 else ""
    left = (
        f"{rate['excluded_share']:.1%} of engagements not covered"
        if rate["excluded_share"]
        else "all engagements covered"
    )
    return f"{rate['engagement_rate']:.2%} of {rate['basis']} ({platforms}{left})"


def output_dir() -> Path:
    """Where charts are saved: $MURMUR_NOTEBOOK_OUTPUT (relative to the repository root),
    default <data dir>/notebook-output."""
    chosen = os.environ.get("MURMUR_NOTEBOOK_OUTPUT")
    path = _from_repo(chosen) if chosen else data_dir() / "notebook-output"
    # Charts of tenants' data: owner-only, as everything in the data directory is.
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def show(fig: Figure, name: str) -> Path:
    """Save a chart as PNG and display it in the notebook."""
    from IPython.display import Image, display

    path = output_dir() / f"{name}.png"
    fig.savefig(path, dpi=100, bbox_inches="tight")
    path.chmod(0o600)
    display(Image(filename=str(path)))  # type: ignore[no-untyped-call]
    return path
