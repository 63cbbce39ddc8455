"""A command imports only what it uses: `murmur --help` no store, `murmur keys` no lake or pipeline.

Structural, not timed: which modules a fresh process has loaded once the command is done
(issue 33: every command paid ~1.5 s for SQLAlchemy, DuckDB, polars and Alembic).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs the command as `murmur` does, then writes the names of the loaded modules to argv[1].
PROBE = """
import sys
from pathlib import Path

from murmur.cli import app

try:
    app(sys.argv[2:], prog_name="murmur")
finally:
    Path(sys.argv[1]).write_text("\\n".join(sorted(sys.modules)))
"""
# What only serving, the pipeline, the lake (DuckDB), PostgreSQL, migrations or outbound
# calls need.
NEVER_FOR_KEYS = {
    "alembic",
    "dagster",
    "duckdb",
    "fastapi",
    "httpx",
    "polars",
    "psycopg",
    "uvicorn",
}
# The publishing half's engine and the settings: the help of any command needs neither.
NEVER_FOR_HELP = NEVER_FOR_KEYS | {"pydantic_settings", "sqlalchemy", "structlog"}


def _loaded(tmp_path: Path, *argv: str) -> set[str]:
    """The top-level packages loaded by ``murmur *argv`` (which must succeed)."""
    listing = tmp_path / "modules.txt"
    env = dict(os.environ, MURMUR_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(listing), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {name.split(".")[0] for name in listing.read_text().split()}


def test_help_loads_no_store_engine_or_service(tmp_path: Path) -> None:
    assert _loaded(tmp_path, "--help") & NEVER_FOR_HELP == set()


@pytest.mark.parametrize(
    "argv",
    [
        ["keys", "--help"],
        ["keys", "create", "--help"],
        ["seal", "rotate", "--help"],
        ["pipeline", "run", "--help"],
        ["up", "--help"],
        ["import", "--help"],
    ],
)
def test_a_commands_help_loads_none_either(tmp_path: Path, argv: list[str]) -> None:
    # The root's callback runs before a command's help is shown: it configures the logs.
    assert _loaded(tmp_path, *argv) & (NEVER_FOR_HELP - {"structlog"}) == set()


def test_keys_open_the_publishing_half_alone(tmp_path: Path) -> None:
    # The first open of a new store migrates it with Alembic; later ones find it at its head.
    assert _loaded(tmp_path, "keys", "create") & (NEVER_FOR_KEYS - {"alembic"}) == set()
    listed = _loaded(tmp_path, "keys", "list")
    assert "sqlalchemy" in listed  # it did open the store
    assert listed & NEVER_FOR_KEYS == set()
    # The lake was never prepared: no command so far read it.
    assert not (tmp_path / "data" / "lake.sqlite").exists()
