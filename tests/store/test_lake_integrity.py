"""A damaged lake is seen: `murmur doctor` names each bad file with its table and days, a run
refuses a malformed catalog, analytics answer 503 in the envelope, and /readyz reports it.

The damage is done as it happens to files: a Parquet file cut short, one gone, pages of the
catalog overwritten. The days each file holds are read from the file itself before it is
damaged, not from the catalog the doctor reads them from.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import httpx
import pytest

from api.app import BASE_PATH
from domain.workspaces.keys import ALL_SCOPES, mint_key
from domain.workspaces.service import bootstrap_test_workspace
from murmur.settings import Settings
from pipelines.importers.runner import run_import
from pipelines.run import run_all
from tests.support import assert_error, run_murmur, start_server
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
# The US trending export: 15k rows over 2017-11-14..2018-01-29.
EXPORT = DATASETS / "youtube_trending_us.csv"


@pytest.fixture
def built(tmp_path: Path) -> Settings:
    """A store with an import (the workspace's own channel: analytics read it) and a run's marts."""
    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    run_import(
        EXPORT, "youtube-trending", settings=settings, workspace_id=None, kind="own", progress=False
    )
    assert run_all(settings, now=datetime(2018, 2, 1, tzinfo=UTC), ingest=False).success
    return settings


def _a_file(settings: Settings, table: str) -> tuple[Path, str]:
    """One Parquet file of ``table`` and the days its rows hold, read from the file itself."""
    path = sorted((settings.data_dir / "lake" / "main" / table).glob("*.parquet"))[0]
    column = "day" if table.startswith("mart_") else "captured_at"
    low, high = duckdb.sql(
        f"SELECT min({column})::DATE::VARCHAR, max({column})::DATE::VARCHAR"  # noqa: S608
        f" FROM read_parquet('{path}')"
    ).fetchone()  # type: ignore[misc]
    return path, (low if low == high else f"{low}..{high}")


def _corrupt_catalog(settings: Settings) -> Path:
    catalog = settings.data_dir / "lake.sqlite"
    assert catalog.stat().st_size > 5 * 4096
    with catalog.open("r+b") as file:
        file.seek(3 * 4096)  # the pages after the schema's: the catalog's tables
        file.write(b"\xde\xad\xbe\xef" * 2048)
    return catalog


def test_the_doctor_names_a_cut_and_a_lost_lake_file_with_their_table_and_days(
    built: Settings,
) -> None:
    cut, cut_days = _a_file(built, "mart_post_daily")
    lost, lost_days = _a_file(built, "raw_engagement_snapshots")
    healthy = run_murmur(built, "doctor", "--deep")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr

    os.truncate(cut, cut.stat().st_size // 2)
    lost.unlink()

    for args in (("doctor",), ("doctor", "--deep")):
        found = run_murmur(built, *args)
        assert found.returncode == 1, found.stdout
        assert "Not healthy." in found.stdout
        problems = [line for line in found.stderr.splitlines() if "lake file:" in line]
        assert len(problems) == 2, found.stderr
        assert any(
            f"mart_post_daily: {cut} has" in line and f"holding {cut_days}" in line
            for line in problems
        ), problems
        assert any(
            f"raw_engagement_snapshots: {lost} is missing, holding {lost_days}" in line
            for line in problems
        ), problems


def test_a_malformed_catalog_is_reported_and_no_run_commits_on_top_of_it(
    built: Settings,
) -> None:
    catalog = _corrupt_catalog(built)
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()

    doctor = run_murmur(built, "doctor")
    assert doctor.returncode == 1
    assert "the lake's catalog lake.sqlite is damaged: database disk image is malformed" in (
        doctor.stderr
    ), doctor.stderr

    run = run_murmur(built, "pipeline", "run", "--no-ingest")
    assert run.returncode == 1
    refusal = [line for line in run.stderr.splitlines() if line.strip()]
    assert refusal == [
        "Refused: the store is unavailable: the lake's catalog lake.sqlite is damaged:"
        " database disk image is malformed; `murmur doctor` names what is damaged"
    ], run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert hashlib.sha256(catalog.read_bytes()).hexdigest() == before


def test_reads_of_a_damaged_file_answer_503_and_readiness_reports_it(built: Settings) -> None:
    live = start_server(built)
    try:

        def key(cur: Cursor) -> str:
            ws_id = bootstrap_test_workspace(cur)
            ws = ws_repo.get_workspace(cur, ws_id)
            assert ws is not None
            return mint_key(
                cur,
                organization_id=ws.organization_id,
                workspace_ids=[ws_id],
                scopes=list(ALL_SCOPES),
            ).key

        headers = {"Authorization": f"Bearer {live.store.run(key)}"}
        api = httpx.Client(base_url=live.base_url + BASE_PATH, headers=headers, timeout=60)
        window = {"from": "2017-11-01T00:00:00Z", "to": "2018-02-01T00:00:00Z"}
        first = api.get("/analytics/unified", params=window)
        assert first.status_code == 200
        assert first.json()["data"]["totals"]["engagements"] > 0
        ready = httpx.get(f"{live.base_url}/readyz", timeout=60)
        assert ready.status_code == 200
        assert ready.json()["data"] == {"status": "ready", "problems": []}

        cut, _ = _a_file(built, "mart_post_hourly")  # what /analytics/unified reads by day
        os.truncate(cut, cut.stat().st_size // 2)

        answer = api.get("/analytics/unified", params={**window, "tz": "Europe/Paris"})
        error = assert_error(answer, 503, "SERVICE_UNAVAILABLE")
        assert "a file of the analytics store is damaged" in error["message"]
        assert answer.headers["Retry-After"] == "60"
        assert str(cut) not in answer.text  # paths are the log's, not the client's
        ready = httpx.get(f"{live.base_url}/readyz", timeout=60)
        assert ready.status_code == 200  # publishing never reads the lake: still ready
        (problem,) = ready.json()["data"]["problems"]
        assert problem.startswith("a file of mart_post_hourly has ")
        assert str(cut.parent) not in problem  # the probe is public
        api.close()
    finally:
        live.stop()
