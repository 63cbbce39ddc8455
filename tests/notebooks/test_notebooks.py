"""The analysts' notebooks run end to end against the live store, attached read-only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from benchmarks.servers import settings_env
from murmur.settings import Settings
from tests.analytics.seed import seed_insights, seed_rankings, seed_trends, seed_unified
from tests.support import LiveServer, Tenant

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
NAMES = ["cross_platform_performance", "viral_trends", "creators_and_competitors"]


@pytest.fixture
def seeded(server: LiveServer, tenant: Tenant) -> Tenant:
    seed_unified(server, tenant)
    seed_trends(server, tenant)
    seed_insights(server, tenant)
    seed_rankings(server, tenant)
    tenant.api.ok(tenant.api.post("/competitors", json={"platform": "x", "handle": "RivalCo"}), 201)
    return tenant


def _run(path: Path, settings: Settings, out: Path) -> Any:
    book = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    env = dict(os.environ, **settings_env(settings), MURMUR_NOTEBOOK_OUTPUT=str(out))
    # The kernel must find the repository's packages and notebooks/_murmur.py: run it from
    # the notebooks folder, with this interpreter's environment.
    client = NotebookClient(
        book,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.km = client.create_kernel_manager()
    client.km.kernel_spec.env = env  # type: ignore[union-attr]
    # Sockets in a folder of its own, not TCP ports: a free port is found by binding and
    # letting go, and two suites' kernels started at once took the same ones (a kernel died).
    client.km.transport = "ipc"
    client.km.ip = str(out / "kernel")
    # The kernel as an analyst's shell starts it (umask 022), not with this process's 077.
    previous = os.umask(0o022)
    try:
        client.execute(env=env)
    finally:
        os.umask(previous)
    return book


def _outputs(book: Any) -> list[dict[str, Any]]:
    return [o for cell in book.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_attached_read_only(
    name: str, server: LiveServer, seeded: Tenant, tmp_path: Path
) -> None:
    book = _run(NOTEBOOKS / f"{name}.ipynb", server.settings, tmp_path)
    outputs = _outputs(book)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    # The notebook opened the session's store itself (either profile), read-only.
    embedded = server.settings.publishing_url is None
    assert f"opened read-only, {'embedded' if embedded else 'scale'}" in text
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, text
    charts = list(tmp_path.glob("*.png"))
    assert charts
    # Charts of tenants' data are owner-only, as the data directory's files are.
    assert {oct(chart.stat().st_mode & 0o777) for chart in charts} == {oct(0o600)}


def test_notebooks_run_from_the_repository_root(
    server: LiveServer, seeded: Tenant, tmp_path: Path
) -> None:
    """`jupyter execute notebooks/x.ipynb` from the root, paths relative to the root.

    Jupyter runs the kernel in the notebook's folder; the data directory and the output
    folder given relative to the repository root must still be found there.
    """
    out = tmp_path / "charts"
    env = {
        **os.environ,
        **settings_env(server.settings),
        "MURMUR_DATA_DIR": os.path.relpath(server.settings.data_dir, REPO),
        "MURMUR_NOTEBOOK_OUTPUT": os.path.relpath(out, REPO),
    }
    books = [f"notebooks/{name}.ipynb" for name in NAMES]
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "execute", "--timeout=300", *books],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert len(list(out.glob("*.png"))) >= len(NAMES), done.stderr[-4000:]


def test_the_default_data_directory_is_the_repositorys(tmp_path: Path) -> None:
    """With no MURMUR_DATA_DIR, a kernel in notebooks/ looks in <repo>/data, not notebooks/data."""
    env = {k: v for k, v in os.environ.items() if k != "MURMUR_DATA_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", "import _murmur; print(_murmur.data_dir())"],
        cwd=NOTEBOOKS,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert Path(done.stdout.strip()) == REPO / "data"
