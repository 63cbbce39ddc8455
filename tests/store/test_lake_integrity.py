"""A damaged lake is seen: `murmur doctor` names each bad file with its table and days, a run
refuses a malformed catalog, analytics answer 503 in the envelope, and /readyz reports it.
And it is mended: `murmur doctor` takes a damaged file out, moves a raw one aside, and
rebuilds the derived days from the raw tables, also when killed half-way and run again.

The damage is done as it happens to files: a Parquet file cut short, one gone, a page
inside one overwritten (its size and footer intact: only decoding it fails), pages of the
catalog overwritten (on S3: the object rewritten so, or deleted). The days each file holds
are read from the file itself before it is damaged, not from the catalog the doctor reads
them from.

The tests run on the session's profile (``--store-profile=scale``: a PostgreSQL catalog, the
files on S3); a SQLite catalog's, the API's and a kill's are the embedded profile's, a race
on PostgreSQL's unique key the scale profile's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import boto3
import duckdb
import httpx
import psycopg
import pytest

from api.app import BASE_PATH
from benchmarks.servers import settings_env
from core.settings import Settings
from domain.workspaces.keys import ALL_SCOPES, mint_key
from domain.workspaces.service import bootstrap_test_workspace
from pipelines.importers.runner import run_import
from pipelines.run import run_all
from tests.servers import StoreSettings
from tests.support import (
    HANG_SECONDS,
    assert_error,
    corrupt_lake_catalog,
    run_murmur,
    start_server,
)
from warehouse import workspaces as ws_repo
from warehouse.cursor import StoreCursor
from warehouse.extensions import connect
from warehouse.lake.repair import current_files, take_out
from warehouse.rows import Cursor

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
# The US trending export: 15k rows over 2017-11-14..2018-01-29.
EXPORT = DATASETS / "youtube_trending_us.csv"
# At scale each test imports the export's first days (200 rows a day) rather than copying a
# store built once: a copy of databases and a bucket costs more than the build.
SCALE_DAYS = 4


def _build(settings: Settings, export: Path = EXPORT) -> None:
    settings.ensure_dirs()
    run_import(
        export, "youtube-trending", settings=settings, workspace_id=None, kind="own", progress=False
    )
    assert run_all(settings, now=datetime(2018, 2, 1, tzinfo=UTC), ingest=False).success


@pytest.fixture(scope="module")
def built_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded store with an import (the workspace's own channel: analytics read it) and
    a run's marts."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("built") / "data")
    _build(settings)
    return settings.data_dir


@pytest.fixture
def built(
    request: pytest.FixtureRequest, tmp_path: Path, store_settings: StoreSettings
) -> Settings:
    """Such a store of the test's own, of the session's profile: embedded, a copy of
    ``built_once`` (the lake's files are found where it is); at scale, built on the servers
    (two databases and a bucket of its own)."""
    if _scale(request):
        # Its first SCALE_DAYS days: each test builds its own store there.
        lines = EXPORT.read_bytes().splitlines(keepends=True)
        export = tmp_path / EXPORT.name
        export.write_bytes(b"".join(lines[: 1 + SCALE_DAYS * 200]))
        settings = store_settings(tmp_path / "data")
        _build(settings, export)
        return settings
    shutil.copytree(request.getfixturevalue("built_once"), tmp_path / "data", symlinks=True)
    return Settings(data_dir=tmp_path / "data")


@pytest.fixture
def built_embedded(request: pytest.FixtureRequest) -> Settings:
    """The embedded store, for what only it has (a SQLite catalog, a kill's timing)."""
    if _scale(request):
        pytest.skip("the embedded profile's")
    built: Settings = request.getfixturevalue("built")
    return built


def _scale(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--store-profile") == "scale")


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
    con = connect()
    try:
        settings.lake.attach(con, read_only=True)
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


@dataclass(frozen=True)
class LakeFile:
    """A file of the lake where it is: a local path, or an object of the S3 bucket."""

    settings: Settings
    location: str  # as the catalog names it: a path, or s3://bucket/key

    @property
    def name(self) -> str:
        return self.location.rsplit("/", 1)[-1]

    @property
    def _object(self) -> tuple[Any, str, str]:
        """An S3 client of the lake's endpoint, the bucket and the key."""
        s3 = self.settings.lake.s3
        assert s3 is not None
        client = boto3.client(
            "s3",
            endpoint_url=f"{'https' if s3.use_ssl else 'http'}://{s3.endpoint}",
            aws_access_key_id=s3.key_id,
            aws_secret_access_key=s3.secret,
            region_name=s3.region,
        )
        bucket, key = self.location.removeprefix("s3://").split("/", 1)
        return client, bucket, key

    def read(self) -> bytes:
        if self.settings.lake.local_data is not None:
            return Path(self.location).read_bytes()
        client, bucket, key = self._object
        body: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        return body

    def exists(self) -> bool:
        if self.settings.lake.local_data is not None:
            return Path(self.location).exists()
        client, bucket, key = self._object
        listed = client.list_objects_v2(Bucket=bucket, Prefix=key)
        return any(item["Key"] == key for item in listed.get("Contents", []))

    def cut(self, divisor: int) -> None:
        """Cut the file short, to 1/``divisor`` of its bytes (an object: rewritten so)."""
        if self.settings.lake.local_data is not None:
            os.truncate(self.location, Path(self.location).stat().st_size // divisor)
            return
        whole = self.read()
        client, bucket, key = self._object
        client.put_object(Bucket=bucket, Key=key, Body=whole[: len(whole) // divisor])

    def damage_page(self, column: str) -> None:
        """Overwrite 256 bytes at the start of ``column``'s chunk (its first page's header
        and data): the size and the footer stay, so the file's metadata still reads."""
        whole = bytearray(self.read())
        local = self.settings.data_dir.parent / f"page-{self.name}"
        local.write_bytes(whole)
        (start,) = duckdb.execute(
            "SELECT coalesce(dictionary_page_offset, data_page_offset)"
            " FROM parquet_metadata(?) WHERE path_in_schema = ?",
            [str(local), column],
        ).fetchone()  # type: ignore[misc]
        whole[start : start + 256] = b"\xa5" * 256
        local.write_bytes(whole)
        # As a fresh reader meets it: counted from the footer, failing once decoded.
        assert duckdb.execute("SELECT count(*) FROM read_parquet(?)", [str(local)]).fetchone()
        with pytest.raises(duckdb.Error):
            duckdb.execute("SELECT * FROM read_parquet(?)", [str(local)]).fetchall()
        local.unlink()
        if self.settings.lake.local_data is not None:
            with Path(self.location).open("r+b") as file:
                file.seek(start)
                file.write(whole[start : start + 256])
            return
        client, bucket, key = self._object
        client.put_object(Bucket=bucket, Key=key, Body=bytes(whole))

    def remove(self) -> None:
        if self.settings.lake.local_data is not None:
            Path(self.location).unlink()
            return
        client, bucket, key = self._object
        client.delete_object(Bucket=bucket, Key=key)

    def rows_and_days(self, tmp: Path) -> tuple[int, str]:
        """Its rows and the days they hold, read from the file itself (a copy, on S3)."""
        local = tmp / self.name
        local.write_bytes(self.read())
        column = "day" if "/mart_" in self.location else "captured_at"
        rows, low, high = duckdb.sql(
            f"SELECT count(*), min({column})::DATE::VARCHAR, max({column})::DATE::VARCHAR"  # noqa: S608
            f" FROM read_parquet('{local}')"
        ).fetchone()  # type: ignore[misc]
        local.unlink()
        return int(rows), (low if low == high else f"{low}..{high}")


def _a_file(settings: Settings, table: str) -> tuple[LakeFile, str]:
    """One Parquet file of ``table`` and the days its rows hold, read from the file itself."""
    con = connect()
    try:
        settings.lake.attach(con, read_only=True)
        (first,) = con.execute(
            "SELECT min(data_file) FROM ducklake_list_files('lake', ?)", [table]
        ).fetchone()  # type: ignore[misc]
    finally:
        con.close()
    file = LakeFile(settings, str(first))
    return file, file.rows_and_days(settings.data_dir.parent)[1]


def test_the_doctor_names_a_cut_and_a_lost_lake_file_with_their_table_and_days(
    built: Settings,
) -> None:
    cut, cut_days = _a_file(built, "mart_post_daily")
    lost, lost_days = _a_file(built, "raw_engagement_snapshots")
    healthy = run_murmur(built, "doctor", "--deep")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr

    cut.cut(2)
    lost.remove()

    for args in (("doctor", "--no-repair"), ("doctor", "--no-repair", "--deep")):
        found = run_murmur(built, *args)
        assert found.returncode == 1, found.stdout
        assert "Not healthy." in found.stdout
        problems = [line for line in found.stderr.splitlines() if "lake file:" in line]
        assert len(problems) == 2, found.stderr
        assert any(
            f"mart_post_daily: {cut.location} has" in line and f"holding {cut_days}" in line
            for line in problems
        ), problems
        assert any(
            f"raw_engagement_snapshots: {lost.location} is missing, holding {lost_days}" in line
            for line in problems
        ), problems
    assert not (built.data_dir / "quarantine").exists()  # --no-repair changes nothing


def test_a_malformed_catalog_is_reported_and_no_run_commits_on_top_of_it(
    built_embedded: Settings,
) -> None:
    built = built_embedded
    catalog = corrupt_lake_catalog(built)
    before = hashlib.sha256(catalog.read_bytes()).hexdigest()

    doctor = run_murmur(built, "doctor")
    assert doctor.returncode == 1
    problems = [line.strip() for line in doctor.stderr.splitlines() if line.strip()]
    assert problems == [
        "problem: the lake's catalog lake.sqlite is damaged: database disk image is malformed;"
        " restore a backup: `murmur restore`"
    ], doctor.stderr
    assert "repaired:" not in doctor.stdout  # the catalog is not mended, nor the files
    assert "not read: its catalog is damaged" in doctor.stdout
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


def test_reads_of_a_damaged_file_answer_503_and_readiness_reports_it(
    built_embedded: Settings,
) -> None:
    built = built_embedded
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
        cut.cut(2)

        answer = api.get("/analytics/unified", params={**window, "tz": "Europe/Paris"})
        error = assert_error(answer, 503, "SERVICE_UNAVAILABLE")
        assert "a file of the analytics store is damaged" in error["message"]
        assert answer.headers["Retry-After"] == "60"
        assert cut.location not in answer.text  # paths are the log's, not the client's
        ready = httpx.get(f"{live.base_url}/readyz", timeout=60)
        assert ready.status_code == 200  # publishing never reads the lake: still ready
        (problem,) = ready.json()["data"]["problems"]
        assert problem.startswith("a file of mart_post_hourly has ")
        assert cut.location.rsplit("/", 1)[0] not in problem  # the probe is public
        api.close()
    finally:
        live.stop()


def _mended(built: Settings, *options: str) -> tuple[str, list[str]]:
    """`murmur doctor OPTIONS` on ``built``, which ends well: its output and its repairs."""
    mended = run_murmur(built, "doctor", *options)
    assert mended.returncode == 0, mended.stdout + mended.stderr
    repaired = [line.strip() for line in mended.stdout.splitlines() if "repaired:" in line]
    return mended.stdout, repaired


def _took_out_of_the_mart(repaired: list[str], name: str, why: str, days: str) -> bool:
    """Whether one of ``repaired`` says mart_post_daily's file ``name``, holding ``days``, was
    taken out for ``why`` (how the line's reason begins)."""
    return any(
        line.startswith(f"repaired: mart_post_daily: took out {name} ({why}")
        and line.endswith(f"holding {days}")
        for line in repaired
    )


def test_the_doctor_rebuilds_a_cut_mart_file_from_the_raw_tables(built: Settings) -> None:
    before = {table: _rows(built, table) for table in DERIVED}
    assert before["mart_post_daily"]
    assert before["unified_daily"]
    cut, cut_days = _a_file(built, "mart_post_daily")
    cut.cut(2)

    said, repaired = _mended(built)
    assert _took_out_of_the_mart(repaired, cut.name, "has ", cut_days), repaired
    assert any(
        f"repaired: rebuilt the derived tables of {cut_days} from the raw tables" in line
        for line in repaired
    ), repaired
    assert "Healthy." in said
    assert {table: _rows(built, table) for table in DERIVED} == before

    # The upkeep after a take-out, keeping no history: the ended file expired and deleted
    # without being read, every read as before; then the doctor finds nothing to do.
    with built.open_lakehouse() as lake:
        upkeep = lake.maintain(timedelta(0))
    assert upkeep.snapshots[1] == 1
    assert not cut.exists()
    assert {table: _rows(built, table) for table in DERIVED} == before
    again = run_murmur(built, "doctor", "--deep")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "repaired:" not in again.stdout


def test_a_cut_raw_file_is_taken_out_and_its_loss_reported(
    request: pytest.FixtureRequest, built: Settings
) -> None:
    cut, cut_days = _a_file(built, "raw_engagement_snapshots")
    held, _ = cut.rows_and_days(built.data_dir.parent)
    cut.cut(3)

    mended = run_murmur(built, "doctor")
    assert mended.returncode == 0, mended.stdout + mended.stderr
    (line,) = [line.strip() for line in mended.stdout.splitlines() if "raw_engagement" in line]
    quarantine = built.data_dir / "quarantine"
    lost = f"lost {held:,} rows captured {cut_days}, ingested "
    if _scale(request):
        # An object of the bucket is not moved: it stays until the upkeep deletes it.
        assert line.startswith(f"repaired: raw_engagement_snapshots: took out {cut.name} (has "), (
            line
        )
        assert f"), left in the bucket until the upkeep deletes it: {lost}" in line, line
        assert cut.exists()
        assert not (quarantine / "raw_engagement_snapshots").exists()
    else:
        aside = quarantine / "raw_engagement_snapshots" / cut.name
        assert line.startswith(f"repaired: raw_engagement_snapshots: moved {cut.name} (has "), line
        assert f"aside to quarantine/raw_engagement_snapshots/{cut.name}: {lost}" in line, line
        assert not cut.exists()
        assert aside.exists()
        assert stat.S_IMODE(aside.stat().st_mode) == 0o600
        assert stat.S_IMODE(aside.parent.stat().st_mode) == 0o700
    assert line.endswith("the derived tables of those days are rebuilt without them"), line
    assert "repaired: rebuilt the derived tables of" in mended.stdout

    again = run_murmur(built, "doctor", "--deep")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "repaired:" not in again.stdout
    assert _rows(built, "raw_engagement_snapshots") == []
    # Every reading was in that file: the marts rebuilt without it hold nothing.
    assert _rows(built, "mart_post_daily") == []
    assert _rows(built, "raw_posts")  # the other raw tables are whole


def test_a_damaged_page_is_found_by_deep_and_mended_and_a_run_says_so_in_one_line(
    request: pytest.FixtureRequest, built: Settings
) -> None:
    """A page overwritten inside a raw and a derived file: their footers read, so a count
    answers; `--deep` decodes every page, names both, and mends them as cut files are."""
    mart, mart_days = _a_file(built, "mart_post_daily")
    raw, raw_days = _a_file(built, "raw_engagement_snapshots")
    held, _ = raw.rows_and_days(built.data_dir.parent)
    mart.damage_page("views")  # a column the insights read
    raw.damage_page("views")

    run = run_murmur(built, "pipeline", "run", "--no-ingest")
    assert run.returncode == 1, run.stdout + run.stderr
    (said,) = run.stderr.splitlines()
    assert said.startswith("Stopped: a lake file is damaged: "), said
    assert f"{mart.location} does not read: " in said or f"{raw.location} does not read: " in said
    assert said.endswith(
        " (and 1 more); `murmur doctor --deep` mends it (a derived file rebuilt, a raw one"
        " moved aside with its loss reported), then `murmur pipeline run` again"
    ), said
    assert "days rebuilt" not in run.stdout
    assert "Pipeline failed (insights all): " in run.stdout

    said, repaired = _mended(built, "--deep")
    assert _took_out_of_the_mart(repaired, mart.name, "does not read: ", mart_days), repaired
    lost = f"lost {held:,} rows captured {raw_days}, ingested "
    taken = "took out" if _scale(request) else "moved"
    assert any(
        line.startswith(f"repaired: raw_engagement_snapshots: {taken} {raw.name} (does not read:")
        and lost in line
        for line in repaired
    ), repaired
    assert any("repaired: rebuilt the derived tables of " in line for line in repaired), repaired
    assert "Healthy." in said  # checked again, every page decoded
    assert _rows(built, "raw_engagement_snapshots") == []
    assert _rows(built, "mart_post_daily") == []  # rebuilt without the lost readings


def test_a_repair_killed_half_way_is_finished_by_the_next_doctor(
    built_embedded: Settings,
) -> None:
    built = built_embedded
    before = {table: _rows(built, table) for table in DERIVED}
    cut, cut_days = _a_file(built, "mart_post_hourly")
    cut.cut(2)
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


def test_a_take_out_racing_another_commit_takes_the_next_snapshot(
    request: pytest.FixtureRequest, tmp_path: Path, store_settings: StoreSettings
) -> None:
    """Another commit takes the snapshot id the take-out meant to write: PostgreSQL holds the
    take-out's insert until that commit is done, then refuses it (unique violation), and the
    take-out runs again on the snapshot after it."""
    if not _scale(request):
        pytest.skip("a PostgreSQL catalog's")
    settings = store_settings(tmp_path / "data")
    table = "raw_engagement_snapshots"
    insert = (
        f"INSERT INTO {table} SELECT 'ws', 'x', 'p' || range, ?, range, NULL, NULL, 1, 0, 0,"  # noqa: S608
        " NULL, NULL, 'test', ?, ? FROM range(200)"
    )
    dsn = settings.lake.catalog.split(":", 1)[1]
    with settings.open_lakehouse() as lake:
        for n in range(2):  # two files, one to take out
            at = datetime(2026, 1, 1, n)
            lake.run(partial(_execute, insert, [at, f"b{n}", at]))
        with lake.cursor() as cur:
            con: duckdb.DuckDBPyConnection = cur.raw  # type: ignore[assignment]
            file, kept = sorted(set(current_files(con, table).values()), key=lambda f: f.path)
            with psycopg.connect(dsn) as rival, psycopg.connect(dsn, autocommit=True) as watch:
                last = _one(rival, "SELECT max(snapshot_id) FROM ducklake_snapshot")
                # A commit in flight: its snapshot row written, not yet committed.
                rival.execute(
                    "INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version,"
                    " next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = %s",
                    [last],
                )
                began = datetime.now(UTC) - timedelta(seconds=1)
                taken: list[int | None] = []
                worker = threading.Thread(
                    target=lambda: taken.append(take_out(con, [file], message="test")),
                    daemon=True,
                )
                worker.start()
                deadline = time.monotonic() + HANG_SECONDS
                waiting = (
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
                while not _one(watch, waiting) and time.monotonic() < deadline:
                    time.sleep(0.01)  # polling for the take-out to wait on the rival's row
                assert worker.is_alive(), "the take-out did not wait for the rival commit"
                rival.commit()
                worker.join(HANG_SECONDS)
            assert taken == [last + 2]
            assert set(current_files(con, table).values()) == {kept}
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall() == [(200,)]  # noqa: S608
            (read,) = con.execute(
                "SELECT snapshot_time FROM ducklake_snapshots('lake') WHERE snapshot_id = ?",
                taken,
            ).fetchone() or (None,)
    # Its time, written as DuckLake spells it, is the moment of the take-out in PostgreSQL's
    # timestamptz, and DuckLake reads it back so.
    with psycopg.connect(dsn) as catalog:
        stored = _one(
            catalog, "SELECT snapshot_time FROM ducklake_snapshot WHERE snapshot_id = %s", taken
        )
    assert began <= stored <= datetime.now(UTC)
    assert read == stored


def _execute(sql: str, params: list[Any], cur: StoreCursor) -> None:
    cur.execute(sql, params)


def _one(con: psycopg.Connection[Any], sql: str, params: list[Any] | None = None) -> Any:
    row = con.execute(sql, params).fetchone()
    assert row is not None
    return row[0]
