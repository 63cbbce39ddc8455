"""`murmur keys …`, `murmur pipeline run` and `murmur up`'s quickstart key, as real processes.

Each test has a data directory of its own (``MURMUR_DATA_DIR``) and free ports, and
reads what a user would read: the commands' output piped, not on a terminal. The `up` tests
share one pair of starts on one directory (the first stopped, the second running).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from dagster import DagsterInstance, DagsterRunStatus

from core.settings import Settings
from domain.workspaces.keys import ALL_SCOPES
from murmur.cli.up import prepare_dagster_home
from tests.engagement.conftest import wait_for
from tests.support import (
    HANG_SECONDS,
    PIPELINE_STEP,
    embedded_settings,
    free_port,
    start_simulator,
    wait_until_answers,
)
from warehouse import workspaces as repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor

MURMUR = [sys.executable, "-m", "murmur"]
README = Path(__file__).resolve().parents[2] / "README.md"
T = TypeVar("T")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A new store's directory: a copy of an empty store (what a first command would make)."""
    made = (tmp_path / "data").resolve()
    embedded_settings(made)
    return made


def _env(data_dir: Path, **more: str) -> dict[str, str]:
    return {
        **os.environ,
        "MURMUR_DATA_DIR": str(data_dir),
        "MURMUR_PORT": str(free_port()),
        **more,
    }


def murmur(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MURMUR, *args],
        env=_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def ok(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = murmur(data_dir, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def create_key(data_dir: Path, *args: str) -> str:
    """Mint a key with ``args``; its id (from the line on stderr)."""
    done = ok(data_dir, "keys", "create", *args)
    assert done.stdout.strip().startswith("sk_test_") or done.stdout.strip().startswith("sk_live_")
    return next(w for w in done.stderr.split() if w.startswith("key_"))


def in_store(data_dir: Path, work: Callable[[Cursor], T]) -> T:
    """Run ``work`` on the store's publishing rows directly (no Murmur process has it open)."""
    # The lake left unprepared, as `murmur keys` leaves it: preparing it was most of the cost.
    with Settings(data_dir=data_dir).open_store(prepare_lake=False) as store:
        return store.run(work)


def key_row(data_dir: Path, key_id: str) -> repo.ApiKeyRow:
    return next(r for r in in_store(data_dir, repo.list_api_keys) if r.id == key_id)


def listed(data_dir: Path) -> tuple[list[str], dict[str, list[str]]]:
    """``keys list``: its header's cells, and each key's line split on whitespace, by id."""
    header, rows, _ = listed_text(data_dir)
    return header, rows


def listed_text(data_dir: Path) -> tuple[list[str], dict[str, list[str]], str]:
    """``keys list``: its header's cells, each key's line split on whitespace, by id, and
    the text as printed."""
    text = ok(data_dir, "keys", "list").stdout
    lines = [line for line in text.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    return header, {line.split()[0]: line.split() for line in lines[1:]}, text


def usage_error(done: subprocess.CompletedProcess[str], needle: str) -> None:
    """Exit status 2, no traceback, the reason on one line among a few."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len([line for line in done.stderr.splitlines() if needle in line]) == 1, done.stderr
    assert len(done.stderr.splitlines()) <= 10, done.stderr
    assert not done.stdout.strip()


# -- keys list ------------------------------------------------------------------------------------


def test_keys_list_has_a_header_an_expiry_column_and_the_computed_state(data_dir: Path) -> None:
    lasting = create_key(data_dir, "--name", "lasting")
    dated = create_key(data_dir, "--name", "dated", "--expires-in-days", "30")
    lapsed = create_key(data_dir, "--name", "lapsed", "--expires-in-days", "1")
    gone = create_key(data_dir, "--name", ":fire:")  # an emoji code, printed as written
    ok(data_dir, "keys", "revoke", gone)

    # A key whose expires_at has passed (minting one in the past is refused, rightly).
    def backdate(cur: Cursor) -> None:
        past = utcnow() - timedelta(hours=1)
        cur.execute("UPDATE api_keys SET expires_at = ? WHERE id = ?", [past, lapsed])

    in_store(data_dir, backdate)

    header, rows, text = listed_text(data_dir)
    assert header[0] == "id"
    assert {"key", "name", "mode", "state", "expires (UTC)", "workspaces"} <= set(header)
    assert set(rows) == {lasting, dated, lapsed, gone}
    state = header.index("state")
    assert rows[lasting][state] == "active"
    assert rows[dated][state] == "active"
    assert rows[lapsed][state] == "expired"
    assert rows[gone][state] == "revoked"
    assert rows[gone][header.index("name")] == ":fire:"
    assert "never" in rows[lasting]
    settings = Settings(data_dir=data_dir)
    assert rows[lasting][-1] == f"{settings.read_rate_limit}/{settings.write_rate_limit}"
    expires = key_row(data_dir, dated).expires_at
    assert f"{expires:%Y-%m-%d}" in rows[dated]
    # Workspaces as a comma-separated list, never a Python list.
    ws_id = key_row(data_dir, lasting).workspace_ids[0]
    assert ws_id in rows[lasting]
    assert "[" not in text
    assert "'" not in text
    assert not any(line != line.rstrip() for line in text.splitlines())


def test_keys_list_shows_several_workspaces_comma_separated(data_dir: Path) -> None:
    def second_workspace(cur: Cursor) -> tuple[str, str]:
        from domain.workspaces.service import bootstrap_test_workspace

        test_ws = repo.get_workspace(cur, bootstrap_test_workspace(cur))  # what `init` makes
        assert test_ws is not None
        other = repo.create_workspace(cur, test_ws.organization_id, "Second")
        return test_ws.id, other

    first, second = in_store(data_dir, second_workspace)
    key_id = create_key(data_dir, "--name", "both", "--workspace", first, "--workspace", second)
    _, rows = listed(data_dir)
    assert f"{first},{second}" in rows[key_id]


# -- keys create and revoke -----------------------------------------------------------------------


def test_keys_create_with_an_unknown_mode_is_a_usage_error_not_a_traceback(
    data_dir: Path,
) -> None:
    usage_error(murmur(data_dir, "keys", "create", "--mode", "prod"), "'prod'")
    usage_error(murmur(data_dir, "keys", "create", "--scope", "posts:delete"), "posts:delete")
    usage_error(murmur(data_dir, "keys", "create", "--read-rate-limit", "0"), "x>=1")
    # Nothing was minted by the refusals.
    assert in_store(data_dir, repo.list_api_keys) == []


def test_keys_create_sets_scopes_rate_limits_and_several_workspaces(data_dir: Path) -> None:
    plain = key_row(data_dir, create_key(data_dir, "--name", "plain"))
    assert sorted(plain.scopes) == sorted(ALL_SCOPES)
    assert plain.read_rate_limit is None
    assert plain.write_rate_limit is None
    assert plain.mode == "test"

    def second_workspace(cur: Cursor) -> str:
        return repo.create_workspace(cur, plain.organization_id, "Second")

    first, second = plain.workspace_ids[0], in_store(data_dir, second_workspace)
    key_id = create_key(
        data_dir,
        "--name",
        "narrow",
        "--mode",
        "live",
        "--scope",
        "posts:read",
        "--scope",
        "analytics:read,posts:write",
        "--read-rate-limit",
        "50",
        "--write-rate-limit",
        "5",
        "--workspace",
        first,
        "--workspace",
        second,
    )
    row = key_row(data_dir, key_id)
    assert list(row.scopes) == ["posts:read", "analytics:read", "posts:write"]
    assert (row.read_rate_limit, row.write_rate_limit) == (50, 5)
    assert list(row.workspace_ids) == [first, second]
    assert row.mode == "live"
    header, rows = listed(data_dir)
    assert "posts:read,analytics:read,posts:write" in rows[key_id]
    assert rows[key_id][-1] == "50/5"
    assert header[-1] == "r/w per min"


def test_keys_create_for_a_missing_or_foreign_workspace_is_refused_in_one_line(
    data_dir: Path,
) -> None:
    missing = murmur(data_dir, "keys", "create", "--workspace", "ws_nope")
    assert missing.returncode == 1
    assert missing.stderr.strip() == "Refused: No workspace 'ws_nope'."

    def foreign(cur: Cursor) -> tuple[str, str]:
        test_ws = repo.find_test_workspace(cur)
        assert test_ws is None  # the refusal above created nothing
        from domain.workspaces.service import bootstrap_test_workspace

        mine = bootstrap_test_workspace(cur)
        theirs = repo.create_workspace(cur, repo.create_organization(cur, "Other"), "Theirs")
        return mine, theirs

    mine, theirs = in_store(data_dir, foreign)
    mixed = murmur(data_dir, "keys", "create", "--workspace", mine, "--workspace", theirs)
    assert mixed.returncode == 1, mixed.stderr
    assert len(mixed.stderr.strip().splitlines()) == 1, mixed.stderr
    assert "different organizations" in mixed.stderr
    assert in_store(data_dir, repo.list_api_keys) == []


def test_keys_revoke_of_an_unknown_id_is_one_line_and_exit_1(data_dir: Path) -> None:
    key_id = create_key(data_dir)
    unknown = murmur(data_dir, "keys", "revoke", "key_doesnotexist")
    assert unknown.returncode == 1
    assert unknown.stderr.strip().splitlines() == [
        "Refused: No key 'key_doesnotexist' (murmur keys list shows the ids)."
    ]
    assert "Usage" not in unknown.stderr + unknown.stdout
    assert ok(data_dir, "keys", "revoke", key_id).stdout.strip() == f"Revoked {key_id}."
    again = ok(data_dir, "keys", "revoke", key_id)
    assert again.stdout.startswith(f"{key_id} was already revoked at ")
    assert key_row(data_dir, key_id).revoked_at is not None


# -- pipeline run ---------------------------------------------------------------------------------


@pytest.fixture
def simulator() -> Iterator[str]:
    """The platform simulator in a thread of this process; its root URL."""
    # Not `murmur simulator` (the stopping test's): the platforms the pipeline reads are not
    # the claim, and a process of its own cost ~0.4 CPU-s to start.
    running = start_simulator(42)
    yield running.root
    running.stop()


@pytest.fixture
def simulator_process(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``murmur simulator`` on a free port: its root URL and its process."""
    port = free_port()
    proc = subprocess.Popen(
        [*MURMUR, "simulator", "--port", str(port)],
        env=_env(tmp_path / "simulator"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(proc, f"{url}/_sim/health", "the simulator")
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_stopping_simulator_cuts_an_answer_it_holds_back(
    simulator_process: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """SIGTERM stops ``murmur simulator`` while a fault holds a post's answer for 10 minutes."""
    url, proc = simulator_process
    with httpx.Client(base_url=url, timeout=HANG_SECONDS) as sim:
        fault = {"platform": "x", "kind": "timeout_after_commit", "delay": 600}
        sim.post("/_sim/faults", json=fault).raise_for_status()
        text = f"Held back {uuid.uuid4().hex}"
        answered: list[BaseException | int] = []

        def publish() -> None:
            try:
                answered.append(
                    httpx.post(
                        f"{url}/x/2/tweets",
                        json={"text": text},
                        headers={"Authorization": "Bearer any-user-token"},
                        timeout=HANG_SECONDS,
                    ).status_code
                )
            except httpx.HTTPError as error:
                answered.append(error)

        call = threading.Thread(target=publish)
        call.start()
        wait_for(
            lambda: any(
                p["text"] == text
                for p in sim.get("/_sim/posts", params={"platform": "x"}).json()["posts"]
            ),
            what="the simulator to create the post",
        )
    proc.send_signal(signal.SIGTERM)
    # Without a bound on its graceful stop it waited out the 600 s hold. uvicorn raises the
    # signal again once stopped: the exit is SIGTERM's.
    assert proc.wait(timeout=HANG_SECONDS) in (0, -signal.SIGTERM)
    call.join(timeout=HANG_SECONDS)
    # Cut: a 500 (uvicorn's when it cancels a call mid-way) or the connection closed.
    (answer,) = answered
    assert answer != 201, answer


@pytest.mark.timeout(300)
def test_pipeline_run_prints_each_step_and_a_readable_summary(
    data_dir: Path, simulator: str
) -> None:
    home = prepare_dagster_home(data_dir / "dagster")  # as `up` gives it
    done = murmur(
        data_dir, "pipeline", "run", MURMUR_PLATFORMS_URL=simulator, DAGSTER_HOME=str(home)
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    steps = [m.groups() for m in map(PIPELINE_STEP.match, lines) if m]
    names = [s[0] for s in steps]
    assert names[0] == "ingest"
    assert names[-1] == "insights"
    assert "marts" in names
    assert all(s[3] == "ok" for s in steps), done.stdout
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-\d{2}:00", steps[0][1])
    summary = [line for line in lines if line.startswith("Pipeline ok:")]
    assert len(summary) == 1, done.stdout
    assert f"{len(steps)} steps in " in summary[0]
    assert "days rebuilt: " in summary[0]
    assert "RunSummary(" not in done.stdout
    assert "StepSummary(" not in done.stdout
    # The steps are printed as they finish, before the summary.
    assert lines.index(summary[0]) > max(
        i for i, line in enumerate(lines) if PIPELINE_STEP.match(line)
    )
    # Each step is a run recorded in the Dagster home, so Dagster's UI lists them.
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert len(runs) == len(steps)
        assert {r.status for r in runs} == {DagsterRunStatus.SUCCESS}
        # Marts and insights compute as of the end of ingest, not of the run's start.
        records = instance.get_run_records()
        ingested = [r.end_time for r in records if "dagster/partition" in r.dagster_run.tags]
        later = [
            datetime.fromisoformat(r.dagster_run.tags["murmur/now"]).timestamp()
            for r in records
            if "dagster/partition" not in r.dagster_run.tags
        ]
        assert len(ingested) == 1
        assert ingested[0] is not None
        assert later
        assert min(later) >= ingested[0]


def _in_the_lake(settings: Settings, sql: str) -> None:
    """``sql`` run in a pipeline's session on ``settings``' lake, behind the commands' backs."""
    with settings.open_lakehouse() as lake:
        lake.run(lambda cur: cur.execute(sql))


@pytest.mark.timeout(300)
def test_pipeline_run_over_a_failed_error_check_exits_1_and_says_what_to_do(
    data_dir: Path, tmp_path: Path
) -> None:
    from pipelines.importers import run_import

    settings = Settings(data_dir=data_dir)
    settings.ensure_dirs()
    header = "video_id,trending_date,title,category_id,views,likes,dislikes,comment_count"
    rows = [header, "aaaaaaaaaaa,18.01.03,V,22,100,5,0,1", "aaaaaaaaaaa,18.02.03,V,22,150,7,0,2"]
    path = tmp_path / "us.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    run_import(path, "youtube-trending", settings=settings, workspace_id=None, progress=False)
    # The same reading written twice by one batch (a loader's bug): raw_snapshot_keys_unique,
    # an ERROR (a reading two batches hold is reconciled, not an error)
    _in_the_lake(
        settings,
        "INSERT INTO raw_engagement_snapshots SELECT * REPLACE ("
        " now()::TIMESTAMP AS ingested_at) FROM raw_engagement_snapshots"
        " WHERE captured_at = TIMESTAMP '2018-03-02 00:00:00'",
    )
    # No platform reads: the failed check is the import's; ingest (its reads of the simulated
    # accounts were most of the test's CPU) is test_pipeline_run_prints_each_step's.
    done = murmur(data_dir, "pipeline", "run", "--no-ingest")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "Pipeline ok" not in done.stdout
    assert "raw_snapshot_keys_unique" in done.stdout
    said = [line for line in done.stdout.splitlines() if line.startswith("Checks failed:")]
    assert len(said) == 1, done.stdout
    assert "then run `murmur pipeline run` again" in " ".join(done.stdout.split())
    # the import's past days are not judged for freshness
    assert "raw_fresh" not in done.stdout
    # the failed days stay due: with the duplicate removed, the next run checks them again
    _in_the_lake(
        settings,
        "DELETE FROM raw_engagement_snapshots WHERE captured_at = TIMESTAMP"
        " '2018-03-02 00:00:00' AND ingested_at > (SELECT min(ingested_at)"
        " FROM raw_engagement_snapshots)",
    )
    again = murmur(data_dir, "pipeline", "run", "--no-ingest")
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert "days rebuilt: 2018-03-01..2018-03-03" in again.stdout
    assert "raw_snapshot_keys_unique" not in again.stdout


DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


@pytest.mark.timeout(600)
def test_two_overlapping_exports_are_reconciled_on_import_and_the_run_is_ok(
    data_dir: Path,
) -> None:
    """The US and FR trending files share (video, day) readings: the second import says how
    many (against our own count from the CSVs), each is counted once, and the run is ok."""
    import polars as pl

    def pairs(name: str) -> pl.DataFrame:
        frame = pl.read_csv(DATASETS / name, infer_schema=False, encoding="utf8-lossy")
        return frame.select("video_id", "trending_date").unique()

    shared = pairs("youtube_trending_us.csv").join(
        pairs("youtube_trending_fr.csv"), on=["video_id", "trending_date"]
    )
    first = ok(
        data_dir,
        "import",
        str(DATASETS / "youtube_trending_us.csv"),
        "--format",
        "youtube-trending",
    )
    assert "already in the store" not in first.stdout
    second = ok(
        data_dir,
        "import",
        str(DATASETS / "youtube_trending_fr.csv"),
        "--format",
        "youtube-trending",
    )
    said = " ".join(second.stdout.split())
    assert f"{shared.height:,} of its readings (the same post at the same instant) were" in said
    assert "this file's counts (the latest import's)" in said

    done = murmur(data_dir, "pipeline", "run", "--no-ingest")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "Pipeline ok" in done.stdout
    assert "Checks failed" not in done.stdout
    # a warning is called a warning, once per step at most; past days are not judged fresh
    assert "raw_fresh" not in done.stdout
    settings = Settings(data_dir=data_dir)
    with settings.open_lakehouse() as lake, lake.cursor() as cur:
        counts = cur.execute(
            "SELECT (SELECT count(*) FROM raw_engagement_snapshots),"
            " (SELECT count(*) FROM stg_engagement_deltas)"
        ).fetchone()
    assert counts is not None
    raw, staged = counts
    # both files' copies are kept raw; staging holds each shared reading once
    assert raw - staged == shared.height


def test_run_all_reports_each_step_to_its_progress_callback(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from pipelines.run import StepSummary, run_all

    settings = embedded_settings(tmp_path / "data")
    seen: list[StepSummary] = []
    summary = run_all(
        settings, now=datetime(2025, 3, 7, tzinfo=UTC), ingest=False, progress=seen.append
    )
    assert seen == summary.steps
    assert [s.name for s in seen][-1] == "insights"


# -- up: one quickstart key -----------------------------------------------------------------------


UP_API_ONLY = ["up", "--no-simulator", "--no-workers", "--no-pipeline", "--no-dagster"]


def _start_up(data_dir: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``murmur up`` with nothing but the API, once it has printed all it says at start."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*MURMUR, *UP_API_ONLY], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + HANG_SECONDS
        # "Analysts:" is the last line printed after "Murmur is up".
        while "Analysts:" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.1)
    except BaseException:
        _stop_up(proc, log)
        raise
    return proc


def _stop_up(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGTERM, which must end it with status 0; killed if it does not stop."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(90) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def _up_once(data_dir: Path, log: Path) -> str:
    """``murmur up`` with nothing but the API until it says it is up, then SIGTERM; its output."""
    _stop_up(_start_up(data_dir, log, _env(data_dir)), log)
    return log.read_text(errors="replace")


def _quickstart_id(output: str) -> str:
    found = re.search(r"Test API key \((key_\w+)\)", output)
    assert found, output
    return found.group(1)


@dataclass
class Ups:
    """Two `up`s on one directory that held a key of its own: the first ran and stopped."""

    data_dir: Path
    env: dict[str, str]  # the second's
    other: str  # the key minted before, not by `up`
    first_out: str
    second: subprocess.Popen[bytes]  # running
    second_log: Path


# The two tests reading them run on one xdist worker, which starts them once.
UPS = pytest.mark.xdist_group(f"{__name__}.ups")


@pytest.fixture(scope="module")
def ups(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ups]:
    """A key minted, an `up` started and stopped, then a second `up`, running for the tests."""
    tmp_path = tmp_path_factory.mktemp("ups")
    data_dir = (tmp_path / "data").resolve()
    embedded_settings(data_dir)
    other = create_key(data_dir, "--name", "mine")
    first_out = _up_once(data_dir, tmp_path / "up-1.log")
    env = _env(data_dir)
    log = tmp_path / "up-2.log"
    proc = _start_up(data_dir, log, env)
    try:
        yield Ups(data_dir, env, other, first_out, proc, log)
    finally:
        _stop_up(proc, log)


@UPS
@pytest.mark.timeout(400)
def test_up_revokes_the_earlier_quickstart_keys_when_it_mints_one(ups: Ups) -> None:
    data_dir, other, first_out = ups.data_dir, ups.other, ups.first_out
    first = _quickstart_id(first_out)
    assert "Revoked the earlier quickstart" not in first_out
    second_out = ups.second_log.read_text(errors="replace")
    second = _quickstart_id(second_out)
    assert second != first
    assert f"Revoked the earlier quickstart key: {first}" in second_out

    header, rows = listed(data_dir)
    state = header.index("state")
    assert rows[first][state] == "revoked"
    assert rows[second][state] == "active"
    assert rows[other][state] == "active"  # keys not minted by `up` are left alone
    active_quickstart = [
        key for key, cells in rows.items() if "quickstart" in cells and cells[state] == "active"
    ]
    assert active_quickstart == [second]


@UPS
@pytest.mark.timeout(400)
def test_up_prints_the_key_first_and_a_second_up_cannot_revoke_it(ups: Ups) -> None:
    data_dir, env, proc = ups.data_dir, ups.env, ups.second
    out = ups.second_log.read_text(errors="replace")
    found = re.search(r"Test API key \((key_\w+)\), shown once: (sk_test_[\w-]+)\n", out)
    assert found, out
    key_id, key = found.groups()
    # The key comes before the API's own start-up lines and the summary, on one line.
    assert out.index(key) < out.index("Application startup complete") < out.index("Murmur is up"), (
        out
    )

    # A second `up` on the directory: one line, exit 1, nothing revoked (a `serve` there
    # would be a replica: tests/store/test_multiprocess.py).
    for command in (UP_API_ONLY,):
        second = murmur(data_dir, *command)
        assert second.returncode == 1, second.stdout + second.stderr
        said = second.stdout + second.stderr
        assert "Traceback" not in said
        lines = [line for line in said.splitlines() if line.strip()]
        assert len(lines) == 1, said
        assert f"{data_dir} is in use by a running Murmur (pid {proc.pid}," in lines[0]
        assert "Revoked" not in said

    # The running instance's key still works, and is the one active quickstart key.
    answer = httpx.get(
        f"http://127.0.0.1:{env['MURMUR_PORT']}/api/public/v1/workspaces",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    header, rows = listed(data_dir)  # beside the running instance
    state = header.index("state")
    active = [k for k, cells in rows.items() if "quickstart" in cells and cells[state] == "active"]
    assert active == [key_id]


# -- README ---------------------------------------------------------------------------------------


def test_readme_works_on_a_fresh_machine() -> None:
    text = README.read_text()
    # murmur is in .venv: the README says to activate it or call it there.
    assert ". .venv/bin/activate" in text
    assert ".venv/bin/murmur" in text
    # The publish example needs no uuidgen; the command it uses instead prints a UUID.
    assert "uuidgen" not in text
    command = re.search(r"Idempotency-Key: \$\((python3 -c '[^']*')\)", text)
    assert command, "the publish example's Idempotency-Key"
    code = re.search(r"-c '([^']*)'", command.group(1))
    assert code
    made = subprocess.run(
        ["python3", "-c", code.group(1)], capture_output=True, text=True, check=True
    )
    uuid.UUID(made.stdout.strip())
    # The duckdb CLI is not installed with Murmur: the README says how to get it.
    assert "pip install duckdb-cli==" in text
    # `up` revokes the quickstart keys of earlier starts, and says so.
    assert "quickstart" in text
