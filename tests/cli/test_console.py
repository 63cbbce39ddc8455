"""The console of `murmur up` and `murmur serve`: one plain line per event that matters.

Real processes on loopback ports in data directories of their own: `murmur serve` (no line
per request unless asked, JSON when asked), one `murmur up` shared by the module (a post
published by its worker, an import and the Dagster run it started), and Murmur's watch of
Dagster's runs over a real Dagster home. Lines are waited for, never slept for.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import structlog

from murmur.logs import PlainRenderer
from tests.cli.test_lifecycle import DATASETS, MURMUR, Launched, processes_with
from tests.support import HANG_SECONDS, answers, embedded_settings, free_port, run_checked

pytestmark = pytest.mark.xdist_group(__name__)

BASE = "/api/public/v1"
# `HH:MM:SS  label     text`: the plain console's line for an event it says in words.
TIME = r"\d\d:\d\d:\d\d"
# The variables that choose the console: unset, so that a test gets the defaults.
CONSOLE_ENV = ("MURMUR_LOG_FORMAT", "MURMUR_ACCESS_LOG")


class Running(Launched):
    """A `murmur` command in its own data directory; stdout and stderr in one log."""

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.ports['api']}"

    def lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()

    def line(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        """The first line matching ``pattern`` (whole), once it is there."""
        wanted = re.compile(pattern)

        def found() -> re.Match[str] | None:
            return next((m for m in map(wanted.fullmatch, self.lines()) if m), None)

        self.wait_for(f"a line {pattern!r}", found, timeout)
        match = found()
        assert match is not None
        return match

    def stop(self) -> None:
        """SIGTERM, and everything it said is in the log once it exited."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(120) == 0, self.tail()

    def tail(self) -> str:
        return "\n".join(self.lines()[-60:])


def start(tmp_path: Path, *args: str, **extra: str) -> Running:
    """``murmur ARGS`` with the console's defaults (``extra``: more environment), on a new store."""
    data_dir = (tmp_path / "data").resolve()
    # A copy of an empty store: its creation in each command cost ~1 CPU-s, and no claim here
    # is about it.
    embedded_settings(data_dir)
    ports = {"api": free_port(), "simulator": free_port(), "dagster": free_port()}
    env = {k: v for k, v in os.environ.items() if k not in CONSOLE_ENV}
    env.update(
        extra,
        MURMUR_DATA_DIR=str(data_dir),
        MURMUR_PORT=str(ports["api"]),
        MURMUR_SIMULATOR_PORT=str(ports["simulator"]),
        MURMUR_DAGSTER_PORT=str(ports["dagster"]),
    )
    log = tmp_path / f"murmur-{uuid.uuid4().hex[:6]}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([*MURMUR, *args], env=env, stdout=out, stderr=subprocess.STDOUT)
    return Running(proc, data_dir, log, ports)


@contextlib.contextmanager
def running(tmp_path: Path, *args: str, **extra: str) -> Iterator[Running]:
    """``murmur ARGS`` until the block ends; whatever it left running is killed."""
    run = start(tmp_path, *args, **extra)
    try:
        yield run
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait(30)
        for pid in processes_with(run.data_dir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def api_answers(run: Running) -> bool:
    return answers(f"{run.api}{BASE}/openapi.json")


def requests_to_nowhere(run: Running, count: int = 3) -> dict[str, str]:
    """GET ``count`` paths no route has (each once): path → the answer's request id."""
    said = {}
    for _ in range(count):
        path = f"{BASE}/nowhere-{uuid.uuid4().hex[:8]}"
        answer = httpx.get(run.api + path, timeout=30)
        assert answer.status_code == 404, answer.text
        said[path] = answer.headers["X-Request-Id"]
    return said


# -- murmur serve: the access log ----------------------------------------------------------------


@pytest.mark.timeout(180)
def test_serve_says_no_line_per_request_by_default(tmp_path: Path) -> None:
    with running(tmp_path, "serve") as run:
        run.wait_for("the API answers", lambda: api_answers(run))
        paths = requests_to_nowhere(run)

        run.stop()

    lines = run.lines()
    assert [line for line in lines if any(path in line for path in paths)] == []
    assert [line for line in lines if "request" in line] == [], run.tail()
    # Plain: uvicorn's start and stop too, none of them JSON.
    assert any(re.fullmatch(rf"{TIME}  Application startup complete\.", line) for line in lines)
    assert [line for line in lines if line.lstrip().startswith("{")] == []


@pytest.mark.timeout(180)
@pytest.mark.parametrize("asked", ["option", "env"])
def test_serve_with_the_access_log_says_one_line_per_request(tmp_path: Path, asked: str) -> None:
    args, env = (["--access-log"], {}) if asked == "option" else ([], {"MURMUR_ACCESS_LOG": "true"})
    with running(tmp_path, "serve", *args, **env) as run:
        run.wait_for("the API answers", lambda: api_answers(run))
        paths = requests_to_nowhere(run)

        run.stop()

    lines = run.lines()
    for path, request_id in paths.items():
        said = [line for line in lines if path in line]
        assert len(said) == 1, said
        assert re.fullmatch(
            rf"{TIME}  request   GET {re.escape(path)} 404 in [\d.]+ ms \({request_id}\)", said[0]
        ), said


@pytest.mark.timeout(180)
def test_serve_with_json_logs_says_every_line_as_json(tmp_path: Path) -> None:
    with running(tmp_path, "serve", "--log-format", "json", "--access-log") as run:
        run.wait_for("the API answers", lambda: api_answers(run))
        paths = requests_to_nowhere(run, count=1)

        run.stop()

    events = []
    for line in run.lines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"not JSON: {line!r}\n{run.tail()}")
    ((path, request_id),) = paths.items()
    requests = [e for e in events if e["event"] == "request" and e["path"] == path]
    assert len(requests) == 1, events
    assert requests[0]["method"] == "GET"
    assert requests[0]["status"] == 404
    assert requests[0]["request_id"] == request_id
    assert requests[0]["level"] == "info"
    assert "timestamp" in requests[0]
    # uvicorn's lines and serve's own are events too.
    said = {e["event"] for e in events}
    assert {"Application startup complete.", "serve.stopping"} <= said, said


# -- Dagster's runs, watched over a real Dagster home --------------------------------------------

# A run of an import (tagged as the sensor tags it) whose check fails, and a run whose step
# raises, both recorded in the Dagster home argv[1]; then one look of `up`'s watch.
WATCHED = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from dagster import AssetCheckResult, asset, asset_check, materialize

    from murmur.cli.up import prepare_dagster_home
    from murmur.logs import configure_logging
    from murmur.runs import RunWatch, open_instance
    from pipelines import IMPORT_TAG
    from pipelines.logs import SILENT_CONSOLE

    configure_logging()
    home = prepare_dagster_home(Path(sys.argv[1]))


    @asset
    def counts() -> int:
        return 1


    @asset_check(asset=counts)
    def no_negative_counts() -> AssetCheckResult:
        return AssetCheckResult(passed=False)


    @asset
    def broken() -> int:
        raise ValueError("the file is not a CSV")


    watch = RunWatch(home, "http://127.0.0.1:3000")
    with open_instance(home) as instance:
        tags = {IMPORT_TAG: "import:tweets:ws_1:abc"}
        materialize([counts, no_negative_counts], instance=instance, tags=tags,
                    run_config=SILENT_CONSOLE)
        materialize([broken], instance=instance, raise_on_error=False, run_config=SILENT_CONSOLE)
        watch.look(instance)
    """
)


@pytest.mark.timeout(180)
def test_the_watch_says_an_imports_run_a_failed_check_and_a_failed_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CONSOLE_ENV}
    done = subprocess.run(
        [sys.executable, "-c", WATCHED, str(tmp_path / "dagster")],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    run = r"([0-9a-f]{8})"
    link = r"http://127\.0\.0\.1:3000/runs/\1[0-9a-f-]{28}"
    expected = [
        rf"{TIME}  import    batch import:tweets:ws_1:abc → Dagster run {run} \(success\): {link}",
        rf"{TIME}  run       Dagster run {run} for import:tweets:ws_1:abc succeeded after \d+ s",
        rf"{TIME}  check     counts no_negative_counts failed in Dagster run {run}: {link}",
        rf"{TIME}  failed    Dagster run {run} \(__ephemeral_asset_job__\) failed after \d+ s:"
        rf" broken: ValueError: the file is not a CSV: {link}",
    ]
    lines = done.stderr.splitlines()
    assert len(lines) == len(expected), done.stderr
    runs = []
    for pattern, line in zip(expected, lines, strict=True):
        said = re.fullmatch(pattern, line)
        assert said, (pattern, line)
        runs.append(said.group(1))
    # The import's run three times, then the other run.
    assert runs[0] == runs[1] == runs[2] != runs[3]


# -- the plain renderer, event by event ----------------------------------------------------------


def plain(event: str, *, keep_all: bool = False, **fields: object) -> str:
    """The plain line of ``event``, timestamp 12:00:00."""
    said = {"event": event, "level": "info", "timestamp": "12:00:00", **fields}
    return PlainRenderer(keep_all=keep_all)(None, "info", said)


RUN = "0f3c2a9e-1b2d-4c5e-8f70-123456789abc"
UI = f"http://127.0.0.1:3000/runs/{RUN}"


def test_a_publication_in_words() -> None:
    assert (
        plain("publishing.published", post="post_1", platform="x", url="https://x.com/i/1")
        == "12:00:00  published post_1 to x (https://x.com/i/1)"
    )
    assert (
        plain("publishing.published", post="post_1", platform="x", url=None, recovered=True)
        == "12:00:00  published post_1 to x (found published by an earlier attempt)"
    )


def test_a_failed_destination_in_words() -> None:
    assert (
        plain(
            "publishing.destination_failed",
            post="post_1",
            platform="linkedin",
            code="auth_expired",
            message="Reconnect the account.",
            destination="dst_1",
        )
        == "12:00:00  failed    post_1 on linkedin: auth_expired: Reconnect the account."
    )


def test_an_imports_run_in_words_and_the_schedules_runs_left_to_json() -> None:
    assert (
        plain(
            "dagster.run",
            run_id=RUN,
            job="import_refresh",
            import_batch="import:tweets:ws_1:abc",
            url=UI,
            status="QUEUED",
        )
        == f"12:00:00  import    batch import:tweets:ws_1:abc → Dagster run 0f3c2a9e (queued): {UI}"
    )
    with pytest.raises(structlog.DropEvent):
        plain("dagster.run", run_id=RUN, job="ingest", status="QUEUED")
    with pytest.raises(structlog.DropEvent):
        plain("dagster.run_finished", run_id=RUN, job="ingest", status="SUCCESS", seconds=3.2)


def test_a_failed_run_in_words() -> None:
    assert (
        plain(
            "dagster.run_finished",
            run_id=RUN,
            job="ingest",
            partition="2026-12-03-07:00",
            url=UI,
            status="FAILURE",
            seconds=12.6,
            error="ingest: HTTPError: 503",
        )
        == "12:00:00  failed    Dagster run 0f3c2a9e (ingest [2026-12-03-07:00]) failed after"
        f" 13 s: ingest: HTTPError: 503: {UI}"
    )
    # Without the UI's address, the run's whole id.
    assert plain("dagster.run_finished", run_id=RUN, job="insights", status="CANCELED") == (
        f"12:00:00  failed    Dagster run 0f3c2a9e (insights) canceled (run id {RUN})"
    )


def test_a_failed_check_in_words() -> None:
    assert (
        plain(
            "dagster.check_failed",
            asset="analytics/mart_post_daily",
            check="no_negative_counts",
            severity="WARN",
            partition="2026-12-02",
            run_id=RUN,
            url=UI,
        )
        == "12:00:00  check     analytics/mart_post_daily no_negative_counts [2026-12-02] failed"
        f" (a warning) in Dagster run 0f3c2a9e: {UI}"
    )


def test_an_event_without_words_is_its_name_and_fields_and_verbose_says_the_left_out() -> None:
    assert (
        plain("publishing.worker_started", worker="wrk_1", counts={"published": 2})
        == '12:00:00  publishing.worker_started worker=wrk_1 counts={"published":2}'
    )
    with pytest.raises(structlog.DropEvent):
        plain("publishing.post_settled", post="post_1", status="published")
    assert (
        plain("publishing.post_settled", keep_all=True, post="post_1", status="published")
        == "12:00:00  publishing.post_settled post=post_1 status=published"
    )


# -- murmur up: a publication, an import and its run ---------------------------------------------

# Last in the module: its `up` lives from its first test to the module's end, and idle it
# spends ~0.2 CPU-s a second (Dagster's daemon and code servers, the worker).


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One `murmur up` (no start-up pipeline) for the module: simulator, worker, Dagster.

    The import sensor looks every 5 s (not 60): the test waits for the run, not the tick.
    """
    with running(
        tmp_path_factory.mktemp("console-up"),
        "up",
        "--no-pipeline",
        MURMUR_IMPORT_SENSOR_SECONDS="5",
    ) as run:
        run.wait_for("the API answers", lambda: api_answers(run))
        run.line(r"Murmur is up on \S+")
        yield run
        run.stop()


def quickstart_key(run: Running) -> str:
    return run.line(r"Test API key \(key_\w+\), shown once: (sk_test_[\w-]+)").group(1)


@pytest.mark.timeout(600)
def test_a_published_post_is_one_plain_line(up: Running) -> None:
    api = httpx.Client(
        base_url=up.api + BASE,
        headers={"Authorization": f"Bearer {quickstart_key(up)}"},
        timeout=30,
    )
    with api:
        answer = api.post(
            "/posts",
            json={"text": f"Console {uuid.uuid4().hex[:8]}", "platforms": ["x"]},
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
    assert answer.status_code == 201, answer.text
    post = answer.json()["data"]["id"]

    up.line(rf"{TIME}  published {post} to x \(https://\S+\)", timeout=240)

    lines = up.lines()
    # One line for the post: not its destination's and its own roll-up, nor its requests.
    assert len([line for line in lines if post in line]) == 1, up.tail()
    assert [line for line in lines if line.lstrip().startswith("{")] == [], up.tail()
    assert [line for line in lines if re.match(rf"{TIME}  request ", line)] == []


@pytest.mark.timeout(900)
def test_an_import_is_one_plain_line_with_its_dagster_run(up: Running) -> None:
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    from pipelines import IMPORT_TAG

    env = {**os.environ, "MURMUR_DATA_DIR": str(up.data_dir)}
    export = DATASETS / "instagram_posts.csv"
    run_checked(
        [*MURMUR, "import", str(export), "--format", "instagram-insights"],
        env=env,
        timeout=HANG_SECONDS,
    )

    ui = f"http://127\\.0\\.0\\.1:{up.ports['dagster']}"
    said = up.line(
        rf"{TIME}  import    batch (import:instagram-insights:ws_\w+:[0-9a-f]+) → Dagster run"
        rf" ([0-9a-f]{{8}}) \((not started|queued|starting|started|success)\):"
        rf" {ui}/runs/([0-9a-f-]{{36}})",
        timeout=600,
    )
    batch, short, _, run_id = said.groups()
    assert run_id.startswith(short)
    # The run the line links to is the import's, in the Dagster home `up` runs.
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(up.data_dir / "dagster"))) as dagster:
        run = dagster.get_run_by_id(run_id)
        assert run is not None
        assert run.job_name == "import_refresh"
        assert run.tags[IMPORT_TAG] == batch

    up.line(rf"{TIME}  run       Dagster run {short} for {batch} succeeded after \d+ s", 600)
    assert len([line for line in up.lines() if short in line]) == 2, up.tail()
