"""A damaged lake is seen: `murmur doctor` names each bad file with its table and days, a run
refuses a malformed catalog, analytics answer 503 in the envelope, and /readyz reports it.
And it is mended: `murmur doctor` takes a damaged file out, moves a raw one aside, and
rebuilds the derived days from the raw tables, also when killed half-way and run again.

The damage is done as it happens to files: a Parquet file cut short, one gone, pages of the
catalog overwritten. The days each file holds are read from the file itself before it is
damaged, not from the catalog the doctor reads them from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
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
from tests.support import HANG_SECONDS, assert_error, run_murmur, settings_env, start_server
from warehouse import workspaces as ws_repo
from warehouse.lake import Lake
from warehouse.rows import Cursor

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
# The US trending export: 15k rows over 2017-11-14..2018-01-29.
EXPORT = DATASETS / "youtube_trending_us.csv"


@pytest.fixture(scope="module")
def built_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with an import (the workspace's own channel: analytics read it) and a run's marts."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("built") / "data")
    settings.ensure_dirs()
    run_import(
        EXPORT, "youtube-trending", settings=settings, workspace_id=None, kind="own", progress=False
    )
    assert run_all(settings, now=datetime(2018, 2, 1, tzinfo=UTC), ingest=False).success
    return settings.data_dir


@pytest.fixture
def built(built_once: Path, tmp_path: Path) -> Settings:
    """A copy of that store of the test's own (the lake's files are found where it is)."""
    shutil.copytree(built_once, tmp_path / "data", symlinks=True)
    return Settings(data_dir=tmp_path / "data")


# What the doctor's rebuild must give again: each derived table's rows, its run's stamps aside.
DERIVED = (
    "stg_engagement_deltas",
    "mart_post_hourly",
    "mart_post_daily",
    "mart_account_daily",
    "mart_post_first_seen",
    "dim_posts",
    "dim_accounts",
    "unified_daily",
)


def _rows(settings: Settings, table: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    try:
        Lake.under(settings.data_dir).attach(con, read_only=True)
        columns = [
            str(name)
            for (name,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'lake'"
                " AND table_name = ? AND column_name NOT IN ('computed_at', 'run_id')"
                " ORDER BY column_index",
                [table],
            ).fetchall()
        ]
        listed = ", ".join(columns)
        return con.execute(f"SELECT {listed} FROM lake.{table} ORDER BY ALL").fetchall()  # noqa: S608
    finally:
        con.close()


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

    for args in (("doctor", "--no-repair"), ("doctor", "--no-repair", "--deep")):
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
    assert not (built.data_dir / "quarantine").exists()  # --no-repair changes nothing


def test_a_malformed_catalog_is_reported_and_no_run_commits_on_top_of_it(
    built: Settings,
) -> None:
    catalog = _corrupt_catalog(built)
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()

    doctor = run_murmur(built, "doctor")
    assert doctor.returncode == 1
    problems = [line.strip() for line in doctor.stderr.splitlines() if line.strip()]
    assert problems == [
        "problem: the lake's catalog lake.sqlite is damaged: database disk image is malformed;"
        " restore a backup: `murmur restore`"
    ], doctor.stderr
    assert "repaired:" not in doctor.stdout  # the catalog is not mended, nor the files
    assert not (built.data_dir / "quarantine").exists()

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


def test_the_doctor_rebuilds_a_cut_mart_file_from_the_raw_tables(built: Settings) -> None:
    before = {table: _rows(built, table) for table in DERIVED}
    assert before["mart_post_daily"]
    assert before["unified_daily"]
    cut, cut_days = _a_file(built, "mart_post_daily")
    os.truncate(cut, cut.stat().st_size // 2)

    mended = run_murmur(built, "doctor")
    assert mended.returncode == 0, mended.stdout + mended.stderr
    repaired = [line.strip() for line in mended.stdout.splitlines() if "repaired:" in line]
    assert any(
        line.startswith(f"repaired: mart_post_daily: took out {cut.name} (has ")
        and line.endswith(f"holding {cut_days}")
        for line in repaired
    ), repaired
    assert any(
        f"repaired: rebuilt the derived tables of {cut_days} from the raw tables" in line
        for line in repaired
    ), repaired
    assert "Healthy." in mended.stdout

    again = run_murmur(built, "doctor", "--deep")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "repaired:" not in again.stdout
    assert {table: _rows(built, table) for table in DERIVED} == before


def test_a_cut_raw_file_is_moved_aside_and_its_loss_reported(built: Settings) -> None:
    cut, cut_days = _a_file(built, "raw_engagement_snapshots")
    (held,) = duckdb.sql(f"SELECT count(*) FROM read_parquet('{cut}')").fetchone()  # type: ignore[misc]  # noqa: S608
    os.truncate(cut, cut.stat().st_size // 3)

    mended = run_murmur(built, "doctor")
    assert mended.returncode == 0, mended.stdout + mended.stderr
    aside = built.data_dir / "quarantine" / "raw_engagement_snapshots" / cut.name
    (line,) = [line.strip() for line in mended.stdout.splitlines() if "raw_engagement" in line]
    assert line.startswith(f"repaired: raw_engagement_snapshots: moved {cut.name} (has "), line
    assert (
        f"aside to quarantine/raw_engagement_snapshots/{cut.name}: lost {held:,} rows captured"
        f" {cut_days}, ingested " in line
    ), line
    assert line.endswith("the derived tables of those days are rebuilt without them"), line
    assert "repaired: rebuilt the derived tables of" in mended.stdout
    assert not cut.exists()
    assert aside.exists()
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    assert stat.S_IMODE(aside.parent.stat().st_mode) == 0o700

    again = run_murmur(built, "doctor", "--deep")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "repaired:" not in again.stdout
    assert _rows(built, "raw_engagement_snapshots") == []
    # Every reading was in that file: the marts rebuilt without it hold nothing.
    assert _rows(built, "mart_post_daily") == []
    assert _rows(built, "raw_posts")  # the other raw tables are whole


def test_a_repair_killed_half_way_is_finished_by_the_next_doctor(built: Settings) -> None:
    before = {table: _rows(built, table) for table in DERIVED}
    cut, cut_days = _a_file(built, "mart_post_hourly")
    os.truncate(cut, cut.stat().st_size // 2)
    plan = built.data_dir / "quarantine" / "repair.json"

    doctor = subprocess.Popen(
        [sys.executable, "-m", "murmur", "doctor", "--data-dir", str(built.data_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **settings_env(built)},
    )
    try:
        deadline = time.monotonic() + HANG_SECONDS
        # Killed once its plan is written: while it ends the file, or while it rebuilds.
        while not plan.exists() and doctor.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert doctor.poll() is None, "the doctor finished before it could be killed"
        assert plan.exists()
    finally:
        doctor.send_signal(signal.SIGKILL)
        doctor.wait()

    resumed = run_murmur(built, "doctor")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"repaired: mart_post_hourly: took out {cut.name} (has " in resumed.stdout
    assert f"repaired: rebuilt the derived tables of {cut_days} from the raw tables" in (
        resumed.stdout
    )
    assert not plan.exists()
    again = run_murmur(built, "doctor")
    assert again.returncode == 0, again.stdout + again.stderr
    assert {table: _rows(built, table) for table in DERIVED} == before
