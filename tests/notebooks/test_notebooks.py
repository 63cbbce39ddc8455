"""The analysts' notebooks run end to end against the live store, attached read-only."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from benchmarks.servers import settings_env
from core.settings import Settings
from tests.analytics.seed import seed_insights, seed_rankings, seed_trends, seed_unified
from tests.support import LiveServer, Tenant, new_tenant, run_checked

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
NAMES = ["cross_platform_performance", "viral_trends", "creators_and_competitors"]


@pytest.fixture(scope="module")
def seeded(server: LiveServer) -> Iterator[Tenant]:
    """One workspace seeded for the module: the notebooks attach read-only, so none writes."""
    tenant = new_tenant(server)
    try:
        seed_unified(server, tenant)
        seed_trends(server, tenant)
        seed_insights(server, tenant)
        seed_rankings(server, tenant)
        api = tenant.api
        api.ok(api.post("/competitors", json={"platform": "x", "handle": "RivalCo"}), 201)
        yield tenant
    finally:
        tenant.api.close()


def _run(path: Path, settings: Settings, out: Path, workspace_id: str) -> Any:
    book = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    env = dict(
        os.environ,
        **settings_env(settings),
        MURMUR_NOTEBOOK_OUTPUT=str(out),
        # the figures of one workspace over the API's default 28 days: comparable with it
        MURMUR_WORKSPACE=workspace_id,
        MURMUR_NOTEBOOK_DAYS="28",
    )
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
    book = _run(NOTEBOOKS / f"{name}.ipynb", server.settings, tmp_path, seeded.workspace_id)
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
    _assert_same_figures_as_the_api(name, text, seeded)


def _said(rate: float | None, basis: str | None, coverage: dict[str, Any] | None) -> str:
    """A rate as the notebooks print it, from the API's fields."""
    if rate is None or coverage is None:
        return "not measured"
    covered, left = coverage["platforms"], coverage["excluded_platforms"]
    scope = len(covered) + len(left)
    platforms = f"{len(covered)} of {scope} platforms, " if scope > 1 else ""
    share = coverage["excluded_engagements_share"]
    excluded = f"{share:.1%} of engagements not covered" if share else "all engagements covered"
    return f"{rate:.2%} of {basis} ({platforms}{excluded})"


def _assert_same_figures_as_the_api(name: str, text: str, tenant: Tenant) -> None:
    """A rate a notebook prints is the API's for the same workspace and window."""
    api = tenant.api
    if name == "cross_platform_performance":
        today = datetime.now(UTC).date()
        first, end = today - timedelta(days=27), today + timedelta(days=1)
        answer = api.ok(
            api.get("/analytics/unified", params={"from": f"{first}T00:00Z", "to": f"{end}T00:00Z"})
        )
        rows = [*answer["by_platform"], {**answer["totals"], "platform": "all"}]
        for row in rows:
            rate = row["engagement_rate"]
            said = _said(rate, row["engagement_rate_basis"], row["engagement_rate_coverage"])
            assert re.search(rf"^{row['platform']} .* ER {re.escape(said)}$", text, re.M), said
    elif name == "creators_and_competitors":
        for c in api.ok(api.get("/competitors"))["items"]:
            bench, ranking = c["benchmark"], c["ranking"]
            theirs = "not measured"
            measured, basis = bench["their_engagement_rate"], bench["their_engagement_rate_basis"]
            if measured is not None:
                estimate = ranking["engagement_rate_estimate"]["value"]
                theirs = f"{measured:.2%} of {basis} (estimate {estimate:.2%})"
            ours = _said(
                bench["our_engagement_rate"],
                bench["our_engagement_rate_basis"],
                bench["our_engagement_rate_coverage"],
            )
            said = f"{c['handle']} +theirs {re.escape(theirs)}  ours {re.escape(ours)}"
            assert re.search(rf"^{c['platform']} +{said}", text, re.M), (theirs, ours)


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
    done = run_checked(
        [sys.executable, "-m", "jupyter", "execute", "--timeout=300", *books],
        cwd=REPO,
        env=env,
        timeout=600,
    )
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert len(list(out.glob("*.png"))) >= len(NAMES), done.stderr[-4000:]


def test_the_default_data_directory_is_the_repositorys(tmp_path: Path) -> None:
    """With no MURMUR_DATA_DIR, a kernel in notebooks/ looks in <repo>/data, not notebooks/data."""
    env = {k: v for k, v in os.environ.items() if k != "MURMUR_DATA_DIR"}
    done = run_checked(
        [sys.executable, "-c", "import _murmur; print(_murmur.data_dir())"],
        cwd=NOTEBOOKS,
        env=env,
        timeout=120,
    )
    assert Path(done.stdout.strip()) == REPO / "data"
