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
