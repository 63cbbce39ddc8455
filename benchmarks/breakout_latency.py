"""How soon a breakout is pushed: from the capture's lake commit to the webhook's arrival.

Issue 52, point 1: "From the capture's commit to the event's delivery: under a minute, in
the bench." Everything runs as a user runs it, on loopback, in a temporary directory: the
simulator (``murmur simulator``, seed 11), the API (``murmur serve``) and the workers
(``murmur worker``: its engagement runner delivers webhooks) as processes of their own over
one store, and a webhook receiver of this module's (``http.server`` on 127.0.0.1, answering
200 and noting each POST's arrival), registered with ``POST /api/public/v1/webhooks`` for
``analytics.breakout``. Each hourly capture is the schedule's own job, ``ingest_hourly`` of
``pipelines.definitions`` (Dagster's multiprocess executor: each step a process of its own),
run by ``dagster job execute`` in a Dagster home of its own with the capture's clock as the
``murmur/now`` tag; the simulator's clock is set to the same moment first.

With seed 11 the simulated world's own Bluesky post surges at 2025-06-15 07:09 UTC: the
captures at 03:05 … 07:05 find nothing (checked), the one at 08:05 finds it and its
``mart_breakouts`` step enqueues one ``analytics.breakout`` event (checked), which the
runner delivers. The instants, all this machine's wall clock:

- **commit**: the capture's lake commit, DuckLake's ``snapshot_time`` of the snapshot that
  inserted the capture's ``ingest_batches`` rows (read from the embedded catalog, SQLite);
  at scale, where the catalog is PostgreSQL, the capture step's first asset materialization
  event instead (Dagster logs it as ``write_batches`` returns, i.e. just after the commit);
- **job start**: the run's ``RUN_START`` event in Dagster's event log;
- **outbox**: the event's ``webhook_events.created_at`` (written by the breakouts step);
- **arrival**: the receiver's clock when the delivery's POST reached it.

Each repetition starts over on a fresh store (and fresh processes). ``measure`` gives the rows
``murmur bench`` prints; ``python -m benchmarks.breakout_latency`` prints a small table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import httpx

from benchmarks.recording import free_port
from benchmarks.servers import HANG_SECONDS, bench_settings, settings_env, ssl_context
from core.settings import Settings

SEED = 11
EVENT = "analytics.breakout"
# The captures of one repetition: 03:05 … 07:05 find no breakout, 08:05 finds the one the
# world plants at 07:09 (tests/pipelines/test_breakouts.py judges the same world).
FIRST = datetime(2025, 6, 15, 3, 5, tzinfo=UTC)
CAPTURES = [FIRST + timedelta(hours=h) for h in range(6)]
TARGET_SECONDS = 60.0
BREAKOUTS_KEY = "analytics/mart_breakouts"
BASE = "/api/public/v1"
# How often the waits below look again (they return as soon as their condition holds).
POLL_SECONDS = 0.05

_T = TypeVar("_T")


# -- the receiver -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    """One POST the receiver got: when (wall clock, ``time.time()``), and what."""

    at: float
    event_type: str
    event_id: str
    signature: str
    body: bytes


@dataclass
class Receiver:
    """A webhook endpoint on loopback: notes every POST's arrival and answers 200."""

    url: str = ""
    arrivals: list[Arrival] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of_type(self, event_type: str) -> list[Arrival]:
        with self.lock:
            return [a for a in self.arrivals if a.event_type == event_type]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            at = time.time()  # before the body is read: the request's arrival
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            arrival = Arrival(
                at,
                self.headers.get("Murmur-Event", ""),
                self.headers.get("Murmur-Event-Id", ""),
                self.headers.get("Murmur-Signature", ""),
                body,
            )
            with receiver.lock:
                receiver.arrivals.append(arrival)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver on a loopback port of its own for the block."""
    made = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(made))
    made.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield made
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the processes ----------------------------------------------------------------------------


def _wait(check: Callable[[], _T | None], what: str, timeout: float = HANG_SECONDS) -> _T:
    """Poll ``check`` until it returns something (not None); a deadline turns a hang into an
    error, it never times anything."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(POLL_SECONDS)


def _answers(url: str) -> bool | None:
    try:
        httpx.get(url, timeout=2, verify=ssl_context()).raise_for_status()
    except httpx.HTTPError:
        return None
    return True


@dataclass
class Stack:
    """One repetition's store and processes."""

    work: Path
    settings: Settings
    env: dict[str, str]
    sim_root: str
    api_root: str
    dagster_home: Path
    receiver: Receiver
    workspace_id: str = ""
    key: str = ""
    secret: str = ""  # the endpoint's signing secret, as POST /webhooks answered it once
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, name: str, argv: list[str]) -> None:
        """Start ``argv`` as a process of its own, its output in ``work/<name>.log``."""
        with (self.work / f"{name}.log").open("wb") as log:
            self.procs[name] = subprocess.Popen(
                argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.work
            )

    def alive(self) -> None:
        """Fail now, with its log's tail, if one of the processes has stopped."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.work / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=HANG_SECONDS)


def _murmur() -> list[str]:
    return [sys.executable, "-m", "murmur"]


def _setup(settings: Settings) -> tuple[str, str]:
    """The test workspace (its accounts are the simulator's own) and a key of it."""
    from domain.workspaces.keys import mint_key
    from domain.workspaces.service import bootstrap_test_workspace
    from warehouse import workspaces as ws_repo
    from warehouse.rows import Cursor

    def setup(cur: Cursor) -> tuple[str, str]:
        ws_id = bootstrap_test_workspace(cur)
        ws = ws_repo.get_workspace(cur, ws_id)
        assert ws is not None
        minted = mint_key(
            cur, organization_id=ws.organization_id, workspace_ids=[ws_id], name="bench"
        )
        return ws_id, minted.key

    with settings.open_store() as store:
        return store.run(setup)


@contextlib.contextmanager
def stack(work: Path, seed: int = SEED) -> Iterator[Stack]:
    """The simulator, the API and the workers over a new store in ``work``, a receiver
    registered for ``analytics.breakout``; all stopped at the end."""
    from murmur.cli.up import DAGSTER_ENV, prepare_dagster_home

    with receiving() as receiver:
        sim_port, api_port = free_port(), free_port()
        allowed = receiver.url.split("/")[2]
        data_dir = work / "data"
        settings = bench_settings(
            data_dir, platforms_url=f"http://127.0.0.1:{sim_port}", outbound_allow_hosts=[allowed]
        )
        home = prepare_dagster_home(work / "dagster")
        env = {
            **os.environ,
            **settings_env(settings),
            "MURMUR_PLATFORMS_URL": settings.platforms_url,
            "MURMUR_OUTBOUND_ALLOW_HOSTS": json.dumps([allowed]),
            "DAGSTER_HOME": str(home),
            **DAGSTER_ENV,
        }
        made = Stack(
            work,
            settings,
            env,
            f"http://127.0.0.1:{sim_port}",
            f"http://127.0.0.1:{api_port}",
            home,
            receiver,
        )
        made.workspace_id, made.key = _setup(settings)  # creates the store, before its users
        try:
            made.start(
                "simulator",
                [*_murmur(), "simulator", "--port", str(sim_port), "--seed", str(seed),
                 "--data-dir", str(data_dir)],
            )  # fmt: skip
            made.start("api", [*_murmur(), "serve", "--data-dir", str(data_dir),
                               "--port", str(api_port)])  # fmt: skip
            made.start("worker", [*_murmur(), "worker", "--data-dir", str(data_dir)])
            for url in (f"{made.sim_root}/_sim/health", f"{made.api_root}/healthz"):

                def up(url: str = url) -> bool | None:
                    made.alive()
                    return _answers(url)

                _wait(up, url)
            made.secret = _register(made)
            yield made
        finally:
            made.stop()


def _register(made: Stack) -> str:
    """The receiver, registered through the public API for breakouts only."""
    answer = httpx.post(
        f"{made.api_root}{BASE}/webhooks",
        headers={
            "Authorization": f"Bearer {made.key}",
            "Idempotency-Key": str(uuid.uuid4()),
        },
        json={"url": made.receiver.url, "event_types": [EVENT], "description": "bench"},
        timeout=30,
        verify=ssl_context(),
    )
    if answer.status_code != 201:
        raise RuntimeError(f"POST /webhooks answered {answer.status_code}: {answer.text[:500]}")
    secret: str = answer.json()["data"]["secret"]
    return secret


# -- one capture ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Capture:
    """One run of ``ingest_hourly``: its instants (wall clock, unix seconds) and steps.

    The schedule's job captures each platform (and Murmur's own posts) in a step of its own,
    each its own lake commit; the breakouts step starts once they have all succeeded.
    """

    now: datetime
    run_id: str
    launched: float  # this process started `dagster job execute`
    run_start: float  # the run's RUN_START event
    run_end: float  # its RUN_SUCCESS event
    # The capture's lake commits (DuckLake's snapshot_time of each commit inserting
    # ingest_batches rows during the run), oldest first; empty when the catalog is not SQLite.
    commits: list[float]
    # Each capture step's materialization event, logged as its write returns (just after
    # its commit), oldest first.
    materializations: list[float]
    capture_end: float  # the last capture step's STEP_SUCCESS
    breakouts_start: float  # the breakouts step's STEP_START
    breakouts_end: float  # its STEP_SUCCESS
    events: int  # the breakouts step's `events` metadata: analytics.breakout events enqueued

    @property
    def committed(self) -> float:
        """The instant the latency is measured from: the capture's last lake commit (the
        moment the whole capture is in the lake; see the module's docstring)."""
        return self.commits[-1] if self.commits else self.materializations[-1]

    @property
    def first_committed(self) -> float:
        return self.commits[0] if self.commits else self.materializations[0]


def _run_job(made: Stack, now: datetime) -> tuple[str, float]:
    """The schedule's job for the hour of ``now``, as its run executes it; (run id, launch)."""
    httpx.post(
        f"{made.sim_root}/_sim/clock", json={"now": now.isoformat()}, timeout=30
    ).raise_for_status()
    marker = uuid.uuid4().hex
    tags = {
        "dagster/partition": now.strftime("%Y-%m-%d-%H:00"),
        "murmur/now": now.isoformat(),
        "murmur/started_by": "benchmarks.breakout_latency",
        "murmur/bench_run": marker,
    }
    argv = [sys.executable, "-m", "dagster", "job", "execute", "-m", "pipelines.definitions",
            "-j", "ingest_hourly", "--tags", json.dumps(tags)]  # fmt: skip
    launched = time.time()
    with (made.work / "jobs.log").open("ab") as log:
        done = subprocess.run(
            argv, env=made.env, stdout=log, stderr=subprocess.STDOUT, cwd=made.work,
            timeout=HANG_SECONDS * 2,
        )  # fmt: skip
    if done.returncode != 0:
        tail = (made.work / "jobs.log").read_text(errors="replace")[-4000:]
        raise RuntimeError(f"ingest_hourly at {now:%H:%M} failed ({done.returncode}):\n{tail}")
    return marker, launched


def _read_run(made: Stack, marker: str, launched: float, now: datetime) -> Capture:
    """The run's instants from Dagster's event log (its home's run and event storage)."""
    from dagster import DagsterEventType, DagsterInstance, RunsFilter
    from dagster._core.instance.ref import InstanceRef

    with DagsterInstance.from_ref(InstanceRef.from_dir(str(made.dagster_home))) as instance:
        (run,) = instance.get_runs(filters=RunsFilter(tags={"murmur/bench_run": marker}))
        entries = instance.all_logs(run.run_id)
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    materialized: dict[str, float] = {}  # capture step -> its materialization
    breakouts = ""
    events = -1
    run_start = run_end = 0.0
    for entry in entries:
        event = entry.dagster_event
        if event is None:
            continue
        kind, step = event.event_type, entry.step_key or ""
        if kind == DagsterEventType.RUN_START:
            run_start = entry.timestamp
        elif kind == DagsterEventType.RUN_SUCCESS:
            run_end = entry.timestamp
        elif kind == DagsterEventType.STEP_START:
            starts[step] = entry.timestamp
        elif kind == DagsterEventType.STEP_SUCCESS:
            ends[step] = entry.timestamp
        elif kind == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.step_materialization_data.materialization
            key = materialization.asset_key.to_user_string()
            if key.startswith("ingest/"):
                materialized.setdefault(step, entry.timestamp)
            elif key == BREAKOUTS_KEY:
                breakouts = step
                value = materialization.metadata["events"].value
                events = int(value) if isinstance(value, int | float) else -1
    if not (run_start and run_end and breakouts and materialized):
        raise RuntimeError(f"run {run.run_id} lacks the events measured ({len(entries)} events)")
    return Capture(
        now=now,
        run_id=run.run_id,
        launched=launched,
        run_start=run_start,
        run_end=run_end,
        commits=_commit_times(made.settings, run_start, starts[breakouts]),
        materializations=sorted(materialized.values()),
        capture_end=max(ends[step] for step in materialized),
        breakouts_start=starts[breakouts],
        breakouts_end=ends[breakouts],
        events=events,
    )


def _commit_times(settings: Settings, since: float, until: float) -> list[float]:
    """DuckLake's times of the commits that inserted ``ingest_batches`` rows between ``since``
    and ``until`` (unix seconds), oldest first; none when the catalog is not SQLite (at scale
    the capture steps' materialization events stand in)."""
    lake = settings.lake
    if lake.kind != "sqlite":
        return []
    path = lake.catalog.split(":", 1)[1]
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        (table_id,) = db.execute(
            "SELECT table_id FROM ducklake_table WHERE table_name = 'ingest_batches'"
            " AND end_snapshot IS NULL"
        ).fetchone()
        rows = db.execute(
            "SELECT s.snapshot_time, c.changes_made FROM ducklake_snapshot s"
            " JOIN ducklake_snapshot_changes c USING (snapshot_id) ORDER BY s.snapshot_id"
        ).fetchall()
    # Rows of a small insert are inlined in the catalog, a large one's written as a file.
    marks = {f"inserted_into_table:{table_id}", f"inlined_insert:{table_id}"}
    found = []
    for text, changes in rows:
        at = datetime.fromisoformat(str(text))
        at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
        if marks & set(str(changes).split(",")) and since <= at.timestamp() <= until:
            found.append(at.timestamp())
    return found


def capture(made: Stack, now: datetime) -> Capture:
    """One hourly capture, as the schedule's run executes it, and its instants."""
    made.alive()
    marker, launched = _run_job(made, now)
    return _read_run(made, marker, launched, now)


# -- one repetition ---------------------------------------------------------------------------


def _outbox(made: Stack) -> list[tuple[str, datetime]]:
    """The workspace's analytics.breakout events: (id, created_at, aware UTC)."""
    from warehouse.rows import Cursor

    def read(cur: Cursor) -> list[tuple[str, datetime]]:
        rows = cur.execute(
            "SELECT id, created_at FROM webhook_events WHERE workspace_id = ?"
            " AND event_type = ? ORDER BY created_at",
            [made.workspace_id, EVENT],
        ).fetchall()
        found = []
        for event_id, created in rows:
            at = created if isinstance(created, datetime) else datetime.fromisoformat(created)
            found.append((str(event_id), at if at.tzinfo else at.replace(tzinfo=UTC)))
        return found

    with made.settings.open_store() as store:
        return store.run(read)


def repetition(work: Path, seed: int = SEED) -> dict[str, Any]:
    """A fresh store: the captures, then the delivery of the one breakout; the figures."""
    with stack(work, seed) as made:
        quiet: list[Capture] = []
        for now in CAPTURES[:-1]:
            found = capture(made, now)
            if found.events != 0 or made.receiver.of_type(EVENT):
                raise RuntimeError(f"a breakout at {now:%H:%M}, before the planted surge")
            quiet.append(found)
        last = capture(made, CAPTURES[-1])
        if last.events != 1:
            raise RuntimeError(f"the {CAPTURES[-1]:%H:%M} capture enqueued {last.events} events")

        def delivered() -> Arrival | None:
            made.alive()
            got = made.receiver.of_type(EVENT)
            return got[0] if got else None

        arrival = _wait(delivered, "the analytics.breakout delivery")
        (event_id, enqueued), *others = _outbox(made)
        if others or arrival.event_id != event_id:
            raise RuntimeError(f"expected one event {event_id}, got {others} / {arrival}")
        _verify(made, arrival)
        # Anything else sent meanwhile would be a second delivery of the one breakout.
        duplicates = len(made.receiver.of_type(EVENT)) - 1
    return {
        "capture_at": last.now.isoformat(),
        "run_id": last.run_id,
        "commit_source": "ducklake snapshot_time" if last.commits else "dagster materialization",
        "capture_commits": len(last.commits or last.materializations),
        "commit_to_arrival_s": arrival.at - last.committed,
        "first_commit_to_arrival_s": arrival.at - last.first_committed,
        "capture_end_to_arrival_s": arrival.at - last.capture_end,
        "job_start_to_arrival_s": arrival.at - last.run_start,
        "launch_to_arrival_s": arrival.at - last.launched,
        "commit_to_breakouts_start_s": last.breakouts_start - last.committed,
        "breakouts_step_s": last.breakouts_end - last.breakouts_start,
        "commit_to_outbox_s": enqueued.timestamp() - last.committed,
        "outbox_to_arrival_s": arrival.at - enqueued.timestamp(),
        "commit_to_materialization_event_s": last.materializations[-1] - last.committed,
        "run_seconds": last.run_end - last.run_start,
        "quiet_breakouts_step_s": [q.breakouts_end - q.breakouts_start for q in quiet],
        "quiet_run_seconds": [q.run_end - q.run_start for q in quiet],
        "duplicate_deliveries": duplicates,
    }


def _verify(made: Stack, arrival: Arrival) -> None:
    """The delivery is signed with the endpoint's secret, and is the breakout event."""
    body = json.loads(arrival.body)
    if body.get("type") != EVENT or "breakout" not in body.get("data", {}):
        raise RuntimeError(f"not a breakout event: {arrival.body[:300]!r}")
    from workers.engagement.webhooks import verify

    if not verify(made.secret, arrival.body, arrival.signature):
        raise RuntimeError(f"a delivery not signed with the endpoint's secret: {arrival!r}")


# -- the figures ------------------------------------------------------------------------------


def run(runs: int = 3, seed: int = SEED) -> dict[str, Any]:
    """``runs`` repetitions, each on a fresh store; every repetition's figures and a summary."""
    reps: list[dict[str, Any]] = []
    for _ in range(runs):
        work = Path(tempfile.mkdtemp(prefix="murmur-breakout-bench-"))
        try:
            reps.append(repetition(work, seed))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    keys = [
        "commit_to_arrival_s",
        "first_commit_to_arrival_s",
        "job_start_to_arrival_s",
        "commit_to_breakouts_start_s",
        "breakouts_step_s",
        "commit_to_outbox_s",
        "outbox_to_arrival_s",
        "run_seconds",
    ]
    summary = {
        k: {
            "median": round(statistics.median(r[k] for r in reps), 2),
            "max": round(max(r[k] for r in reps), 2),
        }
        for k in keys
    }
    quiet = [s for r in reps for s in r["quiet_breakouts_step_s"]]
    summary["quiet_breakouts_step_s"] = {
        "median": round(statistics.median(quiet), 2),
        "max": round(max(quiet), 2),
    }
    return {"runs": runs, "seed": seed, "summary": summary, "repetitions": reps}


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    """The bench's row from ``run``'s figures."""
    s = found["summary"]
    latency, start = s["commit_to_arrival_s"], s["job_start_to_arrival_s"]
    step = s["breakouts_step_s"]
    return [
        {
            "what": "breakout webhook, capture's lake commit to the receiver"
            f" (median of {found['runs']}, max)",
            "measured": f"{latency['median']:.1f} s (max {latency['max']:.1f});"
            f" job start to arrival {start['median']:.1f} s (max {start['max']:.1f});"
            f" breakouts step {step['median']:.1f} s",
            "reference": "—",
            "target": f"< {TARGET_SECONDS:g} s (issue 52)",
            "ok": latency["max"] < TARGET_SECONDS,
            "figures": found,
        }
    ]


def measure(runs: int = 3, quick: bool = False) -> list[dict[str, Any]]:
    """The rows of ``murmur bench``: ``runs`` fresh stores, one when ``quick`` (a repetition
    is six runs of the job: 2-4 minutes on two shared cores)."""
    return rows(run(1 if quick else runs))


def table(found: dict[str, Any]) -> str:
    """The summary as a small text table."""
    names = {
        "commit_to_arrival_s": "capture's last lake commit → arrival",
        "first_commit_to_arrival_s": "capture's first lake commit → arrival",
        "job_start_to_arrival_s": "job start (RUN_START) → arrival",
        "commit_to_breakouts_start_s": "last commit → breakouts step start",
        "breakouts_step_s": "mart_breakouts step (08:05)",
        "commit_to_outbox_s": "last commit → event in the outbox",
        "outbox_to_arrival_s": "outbox → arrival (the runner)",
        "quiet_breakouts_step_s": "mart_breakouts step (03:05-07:05)",
        "run_seconds": "ingest_hourly run (08:05)",
    }
    out = [f"{'seconds, ' + str(found['runs']) + ' fresh stores':<40} {'median':>8} {'max':>8}"]
    out.append("-" * len(out[0]))
    for key, label in names.items():
        m = found["summary"][key]
        out.append(f"{label:<40} {m['median']:>8.2f} {m['max']:>8.2f}")
    per = ", ".join(f"{r['commit_to_arrival_s']:.2f}" for r in found["repetitions"])
    out.append(f"commit → arrival per repetition: {per}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3, help="repetitions, each a fresh store")
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    found = run(args.runs)
    print(table(found))
    if args.out:
        args.out.write_text(json.dumps(found, indent=2) + "\n")
    ok = found["summary"]["commit_to_arrival_s"]["max"] < TARGET_SECONDS
    print(f"target < {TARGET_SECONDS:g} s from commit to arrival: {'met' if ok else 'missed'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
