"""`murmur up` and `murmur serve` as real processes: a stop signal leaves nothing behind.

Each test runs in a data directory of its own and finds the processes it started by that
directory in their environment (every child and grandchild inherits it), so no test can see or
touch another's processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dagster_shared.yaml_utils import load_yaml_from_path

from murmur.cli.up import DAGSTER_YAML, prepare_dagster_home
from murmur.supervise import Supervisor
from tests.support import HANG_SECONDS, answers, free_port

MURMUR = [sys.executable, "-m", "murmur"]
STOP_SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]


def processes_with(data_dir: Path) -> dict[int, str]:
    """Live processes (pid → command line) whose environment names ``data_dir``."""
    wanted = f"MURMUR_DATA_DIR={data_dir}".encode()
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            if wanted not in environ:
                continue
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            found[int(entry)] = command.decode(errors="replace").strip()
    return found


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


@dataclass
class Launched:
    """One `murmur` command under test, in its own data directory with its own ports."""

    proc: subprocess.Popen[bytes]
    data_dir: Path
    log: Path
    ports: dict[str, int]

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def says(self, text: str) -> Callable[[], bool]:
        return lambda: text in self.output()

    def wait_for(self, what: str, done: Callable[[], object], timeout: float = 120) -> None:
        """Poll ``done`` until it holds; fail early if the command exits meanwhile."""
        deadline = time.monotonic() + timeout
        while not done():
            if self.proc.poll() is not None and not done():
                pytest.fail(f"exited ({self.proc.returncode}) before {what}:\n{self.tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"not within {timeout:g} s: {what}\n{self.tail()}")
            time.sleep(0.1)

    def children(self, name: str) -> list[int]:
        """Pids of the `murmur NAME` children (or ``dagster…``) running now."""
        return [
            pid
            for pid, command in processes_with(self.data_dir).items()
            if pid != self.proc.pid and f" {name}" in f" {command}"
        ]

    def tail(self) -> str:
        return self.output()[-4000:]

    def assert_nothing_left(self, *ports: int, timeout: float = HANG_SECONDS) -> None:
        """No process of this test's data directory, and nobody listening on ``ports``."""
        deadline = time.monotonic() + timeout
        while processes_with(self.data_dir) or any(listening(p) for p in ports):
            if time.monotonic() > deadline:
                left = processes_with(self.data_dir)
                busy = [p for p in ports if listening(p)]
                pytest.fail(f"left behind: {left}, ports still listening: {busy}\n{self.tail()}")
            time.sleep(0.1)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., Launched]]:
    """Start a `murmur` command; whatever it leaves running is killed at the end."""
    data_dir = (tmp_path / "data").resolve()
    started: list[Launched] = []

    def start(*args: str, **extra: str) -> Launched:
        ports = {"api": free_port(), "simulator": free_port(), "dagster": free_port()}
        env = {
            **os.environ,
            **extra,
            "MURMUR_DATA_DIR": str(data_dir),
            "MURMUR_PORT": str(ports["api"]),
            # The pipeline finds the simulator by its port alone (platforms_url follows it).
            "MURMUR_SIMULATOR_PORT": str(ports["simulator"]),
            "MURMUR_DAGSTER_PORT": str(ports["dagster"]),
        }
        log = tmp_path / f"murmur-{len(started)}.log"
        with log.open("wb") as out:
            # Under a user's shell's umask (022), not this process's: Murmur sets its own.
            proc = subprocess.Popen(
                [*MURMUR, *args],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=lambda: os.umask(0o022),
            )
        launched = Launched(proc, data_dir, log, ports)
        started.append(launched)
        return launched

    yield start
    for launched in started:
        if launched.proc.poll() is None:
            launched.proc.kill()
            launched.proc.wait(30)
    # A failed test must not leave its children to the tests after it.
    for pid in processes_with(data_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def api_ready(run: Launched) -> Callable[[], bool]:
    url = f"http://127.0.0.1:{run.ports['api']}/api/public/v1/openapi.json"
    return lambda: answers(url)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: s.name)
def test_serve_stops_cleanly(launch: Callable[..., Launched], sig: signal.Signals) -> None:
    run = launch("serve")
    run.wait_for("the API answers", api_ready(run))
    # The API lives in this one process: no child to outlive it.
    assert set(processes_with(run.data_dir)) == {run.proc.pid}

    run.proc.send_signal(sig)

    assert run.proc.wait(90) == 0, run.tail()
    run.assert_nothing_left(run.ports["api"])


@pytest.mark.timeout(240)
@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: s.name)
def test_up_stops_everything_it_started(
    launch: Callable[..., Launched], sig: signal.Signals
) -> None:
    run = launch("up", "--no-dagster", "--no-pipeline")
    run.wait_for("the API answers", api_ready(run))
    run.wait_for("the simulator answers", lambda: answers(_sim_health(run)))
    run.wait_for("the worker runs", lambda: bool(run.children("murmur worker")))

    run.proc.send_signal(sig)

    assert run.proc.wait(120) == 0, run.tail()
    run.assert_nothing_left(run.ports["api"], run.ports["simulator"])
    assert f"{sig.name} received: stopping." in run.output()
    # Stopped cleanly: every child left on its signal, none had to be killed.
    assert "killing:" not in run.output(), run.tail()


@pytest.mark.timeout(300)
def test_up_with_dagster_leaves_no_grandchild(launch: Callable[..., Launched]) -> None:
    run = launch("up", "--no-pipeline")
    run.wait_for("the API answers", api_ready(run))
    dagster = f"http://127.0.0.1:{run.ports['dagster']}/server_info"
    run.wait_for("Dagster answers", lambda: answers(dagster), timeout=240)
    # `dagster dev` runs its webserver and daemon as processes of its own: grandchildren of up.
    run.wait_for("Dagster's daemon runs", lambda: bool(run.children("dagster._daemon")))
    assert run.children("dagster_webserver")
    # The Dagster home `up` made has a dagster.yaml: no telemetry (no banner, no id), no
    # welcome dialog, and neither Dagster's missing-config nor its `dg dev` warning is shown.
    home = run.data_dir / "dagster"
    config: dict[str, Any] = load_yaml_from_path(str(home / "dagster.yaml"))  # type: ignore[assignment]
    assert config["telemetry"] == {"enabled": False}
    assert config["nux"] == {"enabled": False}
    assert not (home / ".telemetry").exists()
    for noise in ("Telemetry:", "No dagster instance configuration", "SupersessionWarning"):
        assert noise not in run.output(), run.tail()

    run.proc.send_signal(signal.SIGTERM)

    assert run.proc.wait(120) == 0, run.tail()
    run.assert_nothing_left(run.ports["api"], run.ports["simulator"], run.ports["dagster"])
    assert "killing:" not in run.output(), run.tail()
    # Dagster's storage and run logs, the simulator's state: owner-only like the store's.
    loose = [
        f"{path.relative_to(run.data_dir)} {oct(path.stat().st_mode & 0o777)}"
        for path in [run.data_dir, *run.data_dir.rglob("*")]
        if not path.is_symlink() and path.stat().st_mode & 0o077
    ]
    assert loose == []


@pytest.mark.timeout(300)
def test_a_dying_child_is_reported_restarted_then_stops_everything(
    launch: Callable[..., Launched],
) -> None:
    run = launch("up", "--no-dagster", "--no-pipeline")
    run.wait_for("the API answers", api_ready(run))
    run.wait_for("the simulator answers", lambda: answers(_sim_health(run)))
    # Three restarts a minute are allowed, so the fourth death stops everything; on a machine
    # slow enough for a death to fall out of the minute it takes a kill more, hence the loop.
    kills = 0
    while True:
        deadline = time.monotonic() + HANG_SECONDS
        while len(workers := run.children("murmur worker")) != 1 and run.proc.poll() is None:
            assert time.monotonic() < deadline, f"no worker restarted\n{run.tail()}"
            time.sleep(0.1)
        if run.proc.poll() is not None:
            break
        assert kills < 10, run.tail()
        os.kill(workers[0], signal.SIGKILL)
        kills += 1
        said = f"worker (pid {workers[0]}) exited unexpectedly: killed by SIGKILL"
        run.wait_for(f"the death of worker {workers[0]} is reported", run.says(said))
    assert kills >= 4
    assert run.output().count("; restarting in ") == kills - 1, run.tail()

    assert run.proc.wait(120) == 1, run.tail()
    assert "restarted 3 times within 60 s, stopping everything" in run.output()
    run.assert_nothing_left(run.ports["api"], run.ports["simulator"])


def test_children_stop_when_up_is_killed(launch: Callable[..., Launched]) -> None:
    run = launch("up", "--no-dagster", "--no-pipeline")
    run.wait_for("the API answers", api_ready(run))
    run.wait_for("the simulator answers", lambda: answers(_sim_health(run)))
    run.wait_for("the worker runs", lambda: bool(run.children("murmur worker")))

    run.proc.send_signal(signal.SIGKILL)  # no handler runs: the children are on their own

    run.proc.wait(30)
    run.assert_nothing_left(run.ports["simulator"])


def test_a_child_ignoring_sigterm_is_killed_with_what_it_started(tmp_path: Path) -> None:
    marker = (tmp_path / "stubborn").resolve()
    stubborn = textwrap.dedent(
        """
        import signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        grandchild = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        grandchild += "while True: time.sleep(1)"
        subprocess.Popen([sys.executable, "-c", grandchild])
        while True:
            time.sleep(1)
        """
    )
    supervisor = Supervisor(grace=0.5)
    env = {**os.environ, "MURMUR_DATA_DIR": str(marker)}
    supervisor.start("stubborn", [sys.executable, "-c", stubborn], env)
    deadline = time.monotonic() + HANG_SECONDS
    while len(processes_with(marker)) < 2:
        assert time.monotonic() < deadline, processes_with(marker)
        time.sleep(0.05)

    supervisor.stop()

    assert processes_with(marker) == {}


DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
EXPORTS = {
    "youtube_trending_us.csv": "youtube-trending",
    "youtube_trending_fr.csv": "youtube-trending",
    "vaccination_tweets.csv": "tweets",
    "instagram_posts.csv": "instagram-insights",
}


@pytest.mark.timeout(1200)
def test_four_imports_into_a_running_up_are_four_runs_within_the_queue_limit(
    launch: Callable[..., Launched],
) -> None:
    from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
    from dagster._core.instance.ref import InstanceRef

    # The sensor looks every 5 s (not 60): the test waits for the runs, not for the ticks.
    run = launch(
        "up", "--no-pipeline", "--no-simulator", "--no-workers", MURMUR_IMPORT_SENSOR_SECONDS="5"
    )
    run.wait_for("the API answers", api_ready(run))
    run.wait_for("Dagster's daemon runs", lambda: bool(run.children("dagster._daemon")), 240)
    home = run.data_dir / "dagster"
    config: dict[str, Any] = load_yaml_from_path(str(home / "dagster.yaml"))  # type: ignore[assignment]
    limit = config["run_queue"]["tag_concurrency_limits"]
    assert limit == [{"key": "murmur/writes", "limit": 1}]
    env = {**os.environ, "MURMUR_DATA_DIR": str(run.data_dir)}
    for name, fmt in EXPORTS.items():
        done = subprocess.run(
            [*MURMUR, "import", str(DATASETS / name), "--format", fmt],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:

        def records() -> list[Any]:
            return list(instance.get_run_records(RunsFilter(job_name="import_refresh")))

        def finished() -> bool:
            found = records()
            return len(found) >= len(EXPORTS) and all(
                r.dagster_run.status in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE)
                for r in found
            )

        run.wait_for("a finished run per import", finished, timeout=1000)
        found = records()
        writes = [
            r
            for r in instance.get_run_records(RunsFilter(tags={"murmur/writes": "marts"}))
            if r.start_time is not None
        ]
    # One run per import (the run key names its batch), and each succeeded.
    assert len(found) == len(EXPORTS), [r.dagster_run.tags for r in found]
    batches = {r.dagster_run.tags["dagster/run_key"].split("|", 1)[1] for r in found}
    assert len(batches) == len(EXPORTS)
    assert all(r.dagster_run.status == DagsterRunStatus.SUCCESS for r in found)
    # Never two runs rewriting the marts at once.
    moments = sorted(
        [(r.start_time, 1) for r in writes] + [(r.end_time or float("inf"), -1) for r in writes]
    )
    running = peak = 0
    for _, step in moments:
        running += step
        peak = max(peak, running)
    assert peak == 1
    # up's console holds Murmur's lines and Dagster's warnings, not the runs' per-event debug
    # (the hourly ingest's step processes still say "STEP_WORKER_STARTED" once each, from
    # Dagster's process start-up, before the run's loggers apply).
    chatter = [
        line
        for line in run.output().splitlines()
        if (" - DEBUG - " in line or " - INFO - " in line) and "STEP_WORKER_STARTED" not in line
    ]
    assert not chatter, chatter[:5]


def _sim_health(run: Launched) -> str:
    return f"http://127.0.0.1:{run.ports['simulator']}/_sim/health"


def test_dagster_home_gets_a_dagster_yaml_once_and_keeps_the_users(tmp_path: Path) -> None:
    home = prepare_dagster_home(tmp_path / "dagster")
    assert (home / "dagster.yaml").read_text() == DAGSTER_YAML
    mine = "telemetry:\n  enabled: true\n"
    (home / "dagster.yaml").write_text(mine)
    prepare_dagster_home(home)
    assert (home / "dagster.yaml").read_text() == mine


def test_the_pipeline_reads_where_the_simulator_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.settings import Settings

    monkeypatch.delenv("MURMUR_PLATFORMS_URL", raising=False)
    monkeypatch.setenv("MURMUR_SIMULATOR_PORT", "18602")
    assert Settings().platforms_url == "http://127.0.0.1:18602"
    monkeypatch.setenv("MURMUR_PLATFORMS_URL", "http://127.0.0.1:9/")
    assert Settings().platforms_url == "http://127.0.0.1:9/"
