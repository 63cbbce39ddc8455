"""The marts' backfill on Dagster's Celery executor, its steps on two workers (issue 53, point 4).

On the scale profile only (``--store-profile=scale``): the store is PostgreSQL + S3, and so
is the Dagster instance (dagster-postgres) the runs and the workers share. Redis, the broker,
is started here as PostgreSQL is. Each of the two Celery workers is a ``dagster-celery worker
start`` process of its own, with its own working directory, its own DAGSTER_HOME (whose
dagster.yaml names the shared PostgreSQL storage) and its own MURMUR_* naming the shared
store, as two machines would have. Each run is ``dagster job execute`` in a third such folder.

A backfill of six days through Celery gives the marts the multiprocess executor gives on a
store seeded the same way, row for row; its steps run on both workers (the worker that took
the first one leaves the queue, as a machine drained for maintenance does, so the others go
to the second). A worker killed with SIGKILL mid-step leaves its task unacknowledged: the
broker hands it to the other worker and the run finishes (or it fails naming the step), and a
re-run leaves the marts as the reference has them: nothing counted twice.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from benchmarks.servers import ScaleServers, redis_server, settings_env
from core.settings import Settings
from pipelines.executors import QUEUE
from tests.pipelines.test_parallel_partitions import DAYS, TAGS, Rows, _seed, _tables
from tests.servers import StoreSettings
from tests.support import HANG_SECONDS

pytestmark = pytest.mark.xdist_group(__name__)

JOB = "marts_daily"
STEPS = (
    "analytics__stg_engagement_deltas",
    "analytics__mart_post_hourly",
    "analytics__mart_post_daily",
    "analytics__mart_account_daily",
)
BACKFILL = {
    **TAGS,
    "dagster/asset_partition_range_start": DAYS[0],
    "dagster/asset_partition_range_end": DAYS[-1],
}
# A task goes back to the queue this long after it was taken unless acknowledged (its worker
# died): longer than any step of this small store takes, even on a busy machine (at 10 s, a
# worker's first step under a load of 11 on 2 cores was handed to the other while it ran).
VISIBILITY_SECONDS = 30
WORKERS = ("worker-a", "worker-b")
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest) -> ScaleServers:
    if request.config.getoption("--store-profile") != "scale":
        pytest.skip(
            "the celery executor runs on the scale profile only (--store-profile=scale):"
            " its workers share the store and the Dagster instance through PostgreSQL + S3"
        )
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server, the celery executor's broker, is not installed (make redis)")
    found: ScaleServers = request.getfixturevalue("scale_servers")
    return found


@pytest.fixture(scope="module")
def broker(servers: ScaleServers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="module")
def dagster_storage(servers: ScaleServers) -> dict[str, Any]:
    """dagster.yaml's storage: a PostgreSQL database of its own, every home naming it."""
    name = "dagster_" + uuid.uuid4().hex[:8]
    servers.postgres.create_database(name)
    return {
        "postgres": {
            "postgres_db": {
                "hostname": "127.0.0.1",
                "port": servers.postgres.port,
                "username": "murmur",
                "password": "",
                "db_name": name,
                # SQLAlchemy 2.1 reads postgresql:// as psycopg 3, on which dagster-postgres's
                # NOTIFY with a bound parameter is a syntax error: its own driver, named.
                "scheme": "postgresql+psycopg2",
            }
        }
    }


@dataclass
class Machine:
    """One machine's folder, DAGSTER_HOME and environment (MURMUR_* naming the shared store)."""

    root: Path
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.root / "dagster_home"

    def stop(self) -> None:
        for process in self.processes:
            kill(process)


def machine(
    root: Path, store: Settings, storage: dict[str, Any], broker: str, executor: str
) -> Machine:
    """A folder of its own with its own DAGSTER_HOME and MURMUR_*: its data directory is its
    own (a step's scratch files), its store the shared one (PostgreSQL + S3)."""
    root.mkdir(parents=True)
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        # JSON, which is YAML
        json.dumps({"storage": storage, "telemetry": {"enabled": False}})
    )
    own = store.model_copy(update={"data_dir": root / "data"})
    env = {k: os.environ[k] for k in ("LANG", "LC_ALL", "TMPDIR") if k in os.environ}
    env |= {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(root),
        "DAGSTER_HOME": str(home),
        **settings_env(own),
        "MURMUR_PIPELINE_EXECUTOR": executor,
        "MURMUR_CELERY_BROKER_URL": broker,
        "MURMUR_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_SECONDS),
        "MURMUR_DUCKDB_THREADS": "1",
    }
    return Machine(root, env)


def poll(done: Callable[[], bool], what: str, alive: subprocess.Popen[bytes] | None = None) -> None:
    """Return once ``done()`` holds; fail after HANG_SECONDS, or once ``alive`` has exited."""
    deadline = time.monotonic() + HANG_SECONDS
    while not done():
        assert alive is None or alive.poll() is None, f"exited (code {alive.poll()}): {what}"
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)  # polling, not waiting for a time to pass


def start_worker(host: Machine, name: str) -> subprocess.Popen[bytes]:
    """``dagster-celery worker start`` on this machine, its Celery settings from the file
    ``python -m pipelines.executors`` writes (what docs/operations.md tells an operator)."""
    config = host.root / "celery.yaml"
    with config.open("w") as out:
        subprocess.run(
            [sys.executable, "-m", "pipelines.executors"],
            env=host.env,
            cwd=host.root,
            stdout=out,
            check=True,
            timeout=HANG_SECONDS,
        )
    log = host.root / "worker.log"
    command = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app"]
    command += ["-y", str(config), "-q", QUEUE, "-n", name, "-l", "INFO"]
    # Murmur's code imported at start (a worker that cannot import it fails now, not later)
    command += ["-i", "pipelines.definitions"]
    # Celery's default pool, one child process: a step at a time, its task acknowledged by the
    # worker's main process once the step has run (task_acks_late). SIGKILL of the worker's
    # process group is its machine lost.
    command += ["--", "--pool=prefork", "--concurrency=1", f"--logfile={log}"]
    worker = subprocess.Popen(
        command,
        env=host.env,
        cwd=host.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    host.processes.append(worker)
    return worker


def ready(host: Machine) -> bool:
    log = host.root / "worker.log"
    return log.exists() and " ready." in log.read_text(errors="replace")


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the process's group (a worker: dagster-celery and the celery it started;
    a run: its step processes too)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(HANG_SECONDS)


def tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"


def backfill(host: Machine, label: str) -> subprocess.Popen[bytes]:
    """The six days' backfill: one run, as the daily assets' single-run policy makes it."""
    tags = {**BACKFILL, "murmur/test": label}
    command = [str(BIN / "dagster"), "job", "execute", "-m", "pipelines.definitions", "-a", "defs"]
    command += ["-j", JOB, "--tags", json.dumps(tags)]
    with (host.root / f"{label}.log").open("wb") as log:
        run = subprocess.Popen(
            command,
            env=host.env,
            cwd=host.root,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a group of its own, its step processes with it (kill)
        )
    host.processes.append(run)
    return run


def finished(host: Machine, run: subprocess.Popen[bytes], label: str) -> int:
    code = run.wait(HANG_SECONDS)
    print(f"{label}: exit {code}\n{tail(host.root / f'{label}.log')[-600:]}")
    return code


class Runs:
    """The shared Dagster instance, read as the tests' own process sees it."""

    def __init__(self, home: Path) -> None:
        from dagster import DagsterInstance

        self.instance = DagsterInstance.from_config(str(home))

    def run_id(self, label: str) -> str | None:
        from dagster import RunsFilter

        runs = self.instance.get_runs(RunsFilter(tags={"murmur/test": label}))
        return runs[0].run_id if runs else None

    def status(self, run_id: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        assert run is not None
        return run.status.value

    def workers(self, run_id: str | None) -> list[tuple[str, str]]:
        """(step, worker name) for each task a worker took, in the order they took them."""
        out: list[tuple[str, str]] = []
        for entry in self.instance.all_logs(run_id) if run_id else []:
            event = entry.dagster_event
            if event is None or not event.is_engine_event:
                continue
            worker = event.engine_event_data.metadata.get("Celery worker")
            if worker is not None and event.step_key is not None:
                # Celery's hostname is name@host: the name the worker was started with
                out.append((event.step_key, str(worker.value).split("@")[0]))
        return out

    def succeeded(self, run_id: str) -> list[str]:
        return [
            entry.dagster_event.step_key or ""
            for entry in self.instance.all_logs(run_id)
            if entry.dagster_event is not None and entry.dagster_event.is_step_success
        ]

    def failures(self, run_id: str) -> str:
        """What the run's failures say: the steps' and the run's, errors included."""
        out = []
        for entry in self.instance.all_logs(run_id):
            event = entry.dagster_event
            if event is not None and (event.is_step_failure or event.is_run_failure):
                out.append(f"{event.step_key}: {event.message} {entry.user_message}")
            elif event is not None and event.is_engine_event and event.engine_event_data.error:
                out.append(str(event.engine_event_data.error.to_string()))
        return "\n".join(out)


def marts(settings: Settings) -> Rows:
    with settings.open_lakehouse() as store:
        return _tables(store)


def assert_marts(settings: Settings, reference: Rows) -> None:
    got = marts(settings)
    for table, rows in reference.items():
        assert len(got[table]) == len(rows), table
        assert got[table] == rows, table


@dataclass
class Cluster:
    store: Settings
    runner: Machine
    workers: dict[str, tuple[Machine, subprocess.Popen[bytes]]]
    runs: Runs
    broker: str
    # the reference's machine, store and run (under way while the first test runs)
    reference_host: Machine
    reference_store: Settings
    reference_run: subprocess.Popen[bytes]
    reference_label: str
    _reference: Rows | None = None

    def reference(self) -> Rows:
        """The multiprocess executor's marts, once its run has finished."""
        if self._reference is None:
            code = finished(self.reference_host, self.reference_run, self.reference_label)
            assert code == 0, "the multiprocess executor's backfill failed"
            self._reference = marts(self.reference_store)
            assert all(self._reference.values()), {t: len(r) for t, r in self._reference.items()}
        return self._reference


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory,
    store_settings: StoreSettings,
    broker: str,
    dagster_storage: dict[str, Any],
) -> Iterator[Cluster]:
    """A seeded store with two workers on it (machines a and b) and a machine to run the
    runs; and the reference: the same backfill through the multiprocess executor on a store
    seeded the same way, under way meanwhile."""
    root = tmp_path_factory.mktemp("celery")
    store, alone = store_settings(root / "store"), store_settings(root / "reference")
    _seed(store)
    _seed(alone)
    hosts = {
        name: machine(root / name, store, dagster_storage, broker, "celery")
        for name in ("runner", *WORKERS)
    }
    hosts["reference"] = machine(root / "ref", alone, dagster_storage, broker, "multiprocess")
    try:
        label = "reference-" + uuid.uuid4().hex[:6]
        run = backfill(hosts["reference"], label)
        workers = {name: (hosts[name], start_worker(hosts[name], name)) for name in WORKERS}
        for name, (host, worker) in workers.items():
            poll(lambda host=host: ready(host), f"worker {name} ready", worker)  # type: ignore[misc]
        runs = Runs(hosts["runner"].home)
        yield Cluster(
            store, hosts["runner"], workers, runs, broker, hosts["reference"], alone, run, label
        )
    finally:
        for host in hosts.values():
            host.stop()


def control(cluster: Cluster) -> Any:
    """Celery's remote control of the workers (through the broker, as `celery control` is)."""
    from celery import Celery  # type: ignore[import-untyped]

    return Celery(broker=cluster.broker).control


def test_a_backfill_on_two_celery_workers_gives_the_multiprocess_marts(cluster: Cluster) -> None:
    label = "celery-" + uuid.uuid4().hex[:6]
    run = backfill(cluster.runner, label)
    poll(lambda: bool(cluster.runs.workers(cluster.runs.run_id(label))), "a step taken", run)
    run_id = cluster.runs.run_id(label)
    assert run_id is not None
    # The worker that took the first step leaves the queue once it is done (a machine
    # drained): the steps after it go to the other worker, and read what the first wrote.
    first = cluster.runs.workers(run_id)[0][1]
    drained = [f"{first}@{socket.gethostname()}"]  # Celery's name for it: name@host
    control(cluster).cancel_consumer(QUEUE, destination=drained)
    try:
        assert finished(cluster.runner, run, label) == 0
    finally:
        replies = control(cluster).add_consumer(QUEUE, destination=drained, reply=True, timeout=30)
    assert replies, f"{first} did not rejoin the queue"
    assert cluster.runs.status(run_id) == "SUCCESS"
    taken = cluster.runs.workers(run_id)
    print("steps per worker:", taken)
    assert sorted(step for step, _ in taken) == sorted(STEPS)
    assert {worker for _, worker in taken} == set(WORKERS)
    assert sorted(cluster.runs.succeeded(run_id)) == sorted(STEPS)
    assert_marts(cluster.store, cluster.reference())


def test_a_worker_killed_mid_step_loses_nothing_and_counts_nothing_twice(
    cluster: Cluster,
) -> None:
    label = "killed-" + uuid.uuid4().hex[:6]
    started = time.monotonic()
    run = backfill(cluster.runner, label)
    # Once a worker has taken the run's second step (the event log, polled), kill that
    # worker's whole process group: its machine is lost mid-step.
    poll(
        lambda: STEPS[1] in dict(cluster.runs.workers(cluster.runs.run_id(label))),
        f"a worker took {STEPS[1]}",
        run,
    )
    run_id = cluster.runs.run_id(label)
    assert run_id is not None
    victim = dict(cluster.runs.workers(run_id))[STEPS[1]]
    kill(cluster.workers[victim][1])
    killed = time.monotonic()
    assert STEPS[1] not in cluster.runs.succeeded(run_id), "the step ended before its worker"
    code = finished(cluster.runner, run, label)
    status = cluster.runs.status(run_id)
    after = cluster.runs.workers(run_id)
    print(f"killed {victim} in {STEPS[1]} {killed - started:.1f} s in; exit {code}, {status}")
    print(f"{time.monotonic() - killed:.1f} s later; tasks: {after}")
    survivor = next(name for name in WORKERS if name != victim)
    if status == "SUCCESS":
        # the broker gave the dead worker's task to the other one, which ran the step again
        assert code == 0
        assert (STEPS[1], survivor) in after
        assert sorted(set(cluster.runs.succeeded(run_id))) == sorted(STEPS)
    else:
        assert status == "FAILURE"
        assert STEPS[1] in cluster.runs.failures(run_id), cluster.runs.failures(run_id)
    # A re-run, on the surviving worker, completes and leaves the marts as the reference has
    # them: the killed step's days (and the earlier run's) rebuilt whole, nothing counted twice.
    again = backfill(cluster.runner, label + "-again")
    assert finished(cluster.runner, again, label + "-again") == 0
    again_id = cluster.runs.run_id(label + "-again")
    assert again_id is not None
    assert {worker for _, worker in cluster.runs.workers(again_id)} == {survivor}
    assert_marts(cluster.store, cluster.reference())
