"""``murmur bench``: Murmur's figures beside their references, measured in the same run.

One call builds a fresh data directory (a test workspace, a key, posts with destinations and
seeded marts), serves it with ``benchmarks.server`` (Murmur's app, in its own process),
serves each read's body from ``benchmarks.reference`` (a minimal FastAPI app in another
process: the reads' floor), drives both from a third process (``benchmarks.loadgen``: wrk
when installed, else asyncio + httpx), and prints one table: each figure, its reference,
the ratio, the target and PASS/MISS. Several runs are interleaved (reference, then each
target) and the table quotes their medians, because absolute times drift on a shared
machine. The pipeline/import rows come from ``benchmarks.pipeline_scale`` and the
publishing row from ``benchmarks.publishing_lateness``, the reads beside ``/metrics``
scrapers from ``benchmarks.scrapers``, the dashboard's from ``benchmarks.dashboard``, the
lists' from ``benchmarks.lists``, the commands' start-up from ``benchmarks.startup``; each
runs in a child process and shows "not measured" with the reason if it is absent or fails.
The breakouts' detection quality (``benchmarks.breakouts_quality``, issue 52) is a section of
its own ("Breakouts (issue 52)", ``BREAKOUTS_START``), not a column of the profiles' table:
it measures the detector in process over the simulator's and the real exports' readings, the
same on either profile. So is the posting-time experiments' interval coverage
(``benchmarks.experiments_quality``, issue 52 point 2: "Experiments (issue 52)",
``EXPERIMENTS_START``), seeded experiments over a simulator with a planted time-of-day effect.
``profile="scale"`` runs the same rows on PostgreSQL + S3 (SeaweedFS where installed, else
moto; ``MURMUR_BENCH_S3`` picks) started on loopback for the run (``benchmarks.servers``): every
process finds its store there through ``bench_settings``. There the pipeline's and the
import's references run against the same servers (their local-file figures in the notes),
and one row more writes over two replicas of the served store (``measure_replica_writes``).

Their row dicts may carry: ``what`` (or ``name``), ``figure`` (or ``value``), ``reference``,
``ratio``, ``target``, ``status`` ("PASS"/"MISS"/…) or ``passed`` (bool), ``note``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks import scrapers, smoke
from benchmarks.loadgen import LoadResult, LoadSpec, run_load, wrk_path
from benchmarks.seed import Tenant, create_tenant, grow, open_store
from benchmarks.serving import BASE, READS, REPO, auth, load, serve, serve_reference

DOCS = REPO / "docs"

REFERENCE = "bare FastAPI app (reference)"
READ_RPS_RATIO = 0.5
READ_P99_MS = 50.0
WRITE_RPS = 300.0
# Issue 53 point 1: POST /posts over two `murmur serve` replicas of one store (scale only).
REPLICA_WRITE_RPS = 1000.0
WRITE_P99_MS = 100.0

PROFILES = ("embedded", "scale")
SCALE_BUDGET = 2.5  # the child rows' time budgets at scale, times the embedded ones
CHARTS = {"embedded": "performance-scale.png", "scale": "performance-scale-profile.png"}
TABLE_START = "<!-- bench:table -->"
TABLE_END = "<!-- /bench:table -->"
HISTORY_START = "<!-- bench:history -->"
HISTORY_END = "<!-- /bench:history -->"
HISTORY_SNAPSHOTS = 100_000_000  # issue 33: ten times the pipeline rows' history
HISTORY_BUDGET = 3 * 3600.0
BREAKOUTS = "breakouts"  # the group printed and documented in a section of its own
BREAKOUTS_TITLE = "Breakouts (issue 52)"
BREAKOUTS_START = "<!-- bench:breakouts -->"
BREAKOUTS_END = "<!-- /bench:breakouts -->"
EXPERIMENTS = "experiments"  # the experiments' interval coverage: a section of its own too
EXPERIMENTS_TITLE = "Experiments (issue 52)"
EXPERIMENTS_START = "<!-- bench:experiments -->"
EXPERIMENTS_END = "<!-- /bench:experiments -->"


@dataclass
class BenchSettings:
    """How big and how long: the full run by default, seconds-long with ``quick``."""

    quick: bool = False
    data_dir: Path | None = None
    posts: int = 100_000
    scale_sizes: tuple[int, ...] = (10_000, 30_000, 100_000, 300_000)
    repeats: int = 3
    seconds: float = 8.0
    scale_seconds: float = 3.0
    clients: int = 32
    engine: str = "auto"
    write_docs: bool = True
    child_rows: bool = True  # the pipeline, import and publishing rows (child processes)
    profile: str = "embedded"  # or "scale": PostgreSQL + S3 on loopback (PROFILES)

    @classmethod
    def for_mode(
        cls, quick: bool, data_dir: Path | None = None, profile: str = "embedded"
    ) -> BenchSettings:
        if not quick:
            return cls(data_dir=data_dir, profile=profile)
        sizes: tuple[int, ...]
        if smoke():  # the test suite's: one scale step (the run's own size), short loads
            posts, sizes, seconds, scale_seconds = 500, (), 0.1, 0.1
        else:
            posts, sizes, seconds, scale_seconds = 2_000, (500, 2_000), 1.0, 0.5
        return cls(
            quick=True,
            data_dir=data_dir,
            profile=profile,
            posts=posts,
            scale_sizes=sizes,
            repeats=1,
            seconds=seconds,
            scale_seconds=scale_seconds,
            clients=4,
            write_docs=False,
        )


@dataclass
class Row:
    """One line of the table."""

    group: str
    what: str
    figure: str
    reference: str
    ratio: float | None
    target: str
    status: str  # PASS | MISS | not measured
    note: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


# -- measuring --------------------------------------------------------------------------------


def _load(
    cfg: BenchSettings, url: str, headers: dict[str, str], clients: int, seconds: float
) -> LoadResult:
    return load(url, headers, clients, seconds, engine=cfg.engine)


def measure_reads(
    cfg: BenchSettings, base: str, tenant: Tenant, references: dict[str, str]
) -> dict[str, list[LoadResult]]:
    """Interleaved runs at ``cfg.clients`` clients: each read's reference, then the read."""
    runs: dict[str, list[LoadResult]] = {}
    for _ in range(cfg.repeats):
        for name, path in READS.items():
            ref = _load(cfg, references[name], auth(tenant), cfg.clients, cfg.seconds)
            runs.setdefault(_ref(name), []).append(ref)
            runs.setdefault(name, []).append(
                _load(cfg, base + path, auth(tenant), cfg.clients, cfg.seconds)
            )
    return runs


def _ref(name: str) -> str:
    return f"{name}: {REFERENCE}"


def _post_body(tenant: Tenant) -> str:
    at = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    return json.dumps(
        {
            "text": "Benchmark write",
            "platforms": [tenant.account_id],
            "scheduled_at": at.isoformat().replace("+00:00", "Z"),
            "tags": ["bench"],
        }
    )


def _write_load(
    cfg: BenchSettings, base: str, tenant: Tenant, clients: int | None = None
) -> LoadResult:
    headers = {**auth(tenant), "Content-Type": "application/json"}
    spec = LoadSpec(
        url=f"{base}{BASE}/posts",
        clients=clients or cfg.clients,
        seconds=cfg.seconds,
        method="POST",
        headers=headers,
        body=_post_body(tenant),
        fresh_idempotency_key=True,
        engine=cfg.engine,
    )
    return run_load(spec)


def measure_writes(
    cfg: BenchSettings, base: str, tenant: Tenant, data_dir: Path, replica: str | None = None
) -> dict[str, list[Any]]:
    """Interleaved runs of POST /posts alone and while a pipeline-like writer runs; given a
    second server of the same store (``replica``), over both servers too (``replicas``)."""
    runs: dict[str, list[Any]] = {"alone": [], "pipeline": [], "pipeline_scripts": []}
    runs["replicas"] = []
    for _ in range(cfg.repeats):
        runs["alone"].append(_write_load(cfg, base, tenant))
        if replica is not None:
            runs["replicas"].append(measure_replica_writes(cfg, (base, replica), tenant))
        writer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.pipeline_load",
                "--data-dir",
                str(data_dir),
                "--seconds",
                str(cfg.seconds + 1),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        time.sleep(1.0)  # let it attach and start its first script
        runs["pipeline"].append(_write_load(cfg, base, tenant))
        out, err = writer.communicate(timeout=cfg.seconds + 120)
        try:
            runs["pipeline_scripts"].append(json.loads(out.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            runs["pipeline_scripts"].append({"error": err[-300:]})
    return runs


def measure_replica_writes(
    cfg: BenchSettings, bases: Sequence[str], tenant: Tenant
) -> list[LoadResult]:
    """One run of POST /posts over several servers of one store at once: ``cfg.clients``
    split evenly, a load generator (a wrk process) per server, all started together; each
    server's result."""
    from concurrent.futures import ThreadPoolExecutor

    clients = max(1, cfg.clients // len(bases))
    with ThreadPoolExecutor(len(bases)) as pool:
        loads = [pool.submit(_write_load, cfg, base, tenant, clients) for base in bases]
        return [load.result() for load in loads]


def combined(parts: Sequence[LoadResult]) -> LoadResult:
    """Loads run side by side as one: requests, errors and rates added up; p50 and p90 the
    parts' weighted by their requests (an estimate: wrk reports percentiles, not its
    histogram), p99 and max the worst part's (an upper bound on the whole's)."""
    requests = sum(p.requests for p in parts)

    def weighted(values: list[float]) -> float:
        if not requests:
            return max(values, default=0.0)
        return sum(v * p.requests for v, p in zip(values, parts, strict=True)) / requests

    errors = [p.first_error for p in parts if p.first_error]
    return LoadResult(
        engine=parts[0].engine if parts else "none",
        requests=requests,
        errors=sum(p.errors for p in parts),
        seconds=max((p.seconds for p in parts), default=0.0),
        rps=round(sum(p.rps for p in parts), 1),
        p50_ms=weighted([p.p50_ms for p in parts]),
        p90_ms=weighted([p.p90_ms for p in parts]),
        p99_ms=max((p.p99_ms for p in parts), default=0.0),
        max_ms=max((p.max_ms for p in parts), default=0.0),
        first_error="; ".join(errors) or None,
    )


def measure_scale(
    cfg: BenchSettings, base: str, tenant: Tenant, posts: int, references: dict[str, str]
) -> dict[str, Any]:
    """One client, one request at a time: each read's latency at this data size.

    Twice per read: polled (the steady state a dashboard sees, answered from the caches)
    and right after a write (a POST /posts replaces the store's change token, so the read
    runs its queries again; for analytics the marts are unchanged, so only their version).
    """
    p50: dict[str, float] = {}
    for name, path in READS.items():
        found = _load(cfg, base + path, auth(tenant), 1, cfg.scale_seconds)
        p50[name] = found.p50_ms
        p50[f"{name}, after a write"] = _after_a_write(base, tenant, path)
    found = _load(cfg, references[next(iter(READS))], auth(tenant), 1, cfg.scale_seconds)
    p50[REFERENCE] = found.p50_ms
    return {"posts": posts, "p50_ms": p50}


def _after_a_write(base: str, tenant: Tenant, path: str, samples: int = 7) -> float:
    """Median ms of a read that follows a POST /posts (the caches' miss path)."""
    import httpx

    headers = {**auth(tenant), "Content-Type": "application/json"}
    taken: list[float] = []
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        for _ in range(samples):
            wrote = http.post(
                f"{BASE}/posts",
                content=_post_body(tenant),
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
            wrote.raise_for_status()
            started = time.perf_counter()
            http.get(path).raise_for_status()
            taken.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(taken), 3)


# -- the rows ---------------------------------------------------------------------------------


def _med(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def _fmt(r: dict[str, float], errors: int | None = None) -> str:
    text = f"{r['rps']:.0f} req/s, p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms"
    if errors is not None:
        text += f", {errors} errors"
    return text


def _summary(results: list[LoadResult]) -> dict[str, float]:
    return {
        "rps": _med([r.rps for r in results]),
        "p50": _med([r.p50_ms for r in results]),
        "p99": _med([r.p99_ms for r in results]),
        "errors": float(sum(r.errors for r in results)),
    }


def read_rows(runs: dict[str, list[LoadResult]], clients: int) -> list[Row]:
    rows = []
    for name in READS:
        mine = _summary(runs[name])
        refs = runs[_ref(name)]
        bare = _summary(refs)
        # Paired ratios (each run against the reference run just before it) resist drift.
        ratio = _med([m.rps / b.rps for m, b in zip(runs[name], refs, strict=True) if b.rps])
        passed = ratio >= READ_RPS_RATIO and mine["p99"] <= READ_P99_MS and not mine["errors"]
        rows.append(
            Row(
                group="reads",
                what=f"{name}, {clients} clients",
                figure=_fmt(mine, int(mine["errors"])),
                reference="bare FastAPI app, same body: " + _fmt(bare),
                ratio=round(ratio, 2),
                target=f"≥ {READ_RPS_RATIO}x ref, p99 ≤ {READ_P99_MS:.0f} ms",
                status="PASS" if passed else "MISS",
                detail={"runs": [r.to_dict() for r in runs[name]]},
            )
        )
    return rows


def write_rows(runs: dict[str, list[Any]], clients: int) -> list[Row]:
    alone = _summary(runs["alone"])
    loaded = _summary(runs["pipeline"])
    rows = []
    for label, mine, ref in (
        ("POST /posts", alone, "—"),
        ("POST /posts while a pipeline writes", loaded, "alone: " + _fmt(alone)),
    ):
        passed = mine["rps"] >= WRITE_RPS and mine["p99"] <= WRITE_P99_MS and not mine["errors"]
        ratio = None
        if mine is loaded and alone["rps"]:
            ratio = round(
                _med(
                    [
                        p.rps / a.rps
                        for p, a in zip(runs["pipeline"], runs["alone"], strict=True)
                        if a.rps
                    ]
                ),
                2,
            )
        rows.append(
            Row(
                group="writes",
                what=f"{label}, {clients} clients, fresh keys",
                figure=_fmt(mine, int(mine["errors"])),
                reference=ref,
                ratio=ratio,
                target=f"≥ {WRITE_RPS:.0f}/s, p99 ≤ {WRITE_P99_MS:.0f} ms, 0 errors",
                status="PASS" if passed else "MISS",
                detail={
                    "runs": [r.to_dict() for r in runs["pipeline" if mine is loaded else "alone"]],
                    "pipeline_scripts": runs["pipeline_scripts"] if mine is loaded else None,
                },
            )
        )
    return rows


def replica_write_row(
    runs: list[list[LoadResult]], alone: list[LoadResult], clients: int, loadavg: float
) -> Row:
    """The writes over two replicas of one store (the scale profile's shared store), beside
    the single server's writes of the same run (each run paired with the one just before)."""
    whole = [combined(parts) for parts in runs]
    mine, one = _summary(whole), _summary(alone)
    replicas = len(runs[0]) if runs else 2
    passed = mine["rps"] >= REPLICA_WRITE_RPS and mine["p99"] <= WRITE_P99_MS and not mine["errors"]
    ratio = _med([w.rps / a.rps for w, a in zip(whole, alone, strict=True) if a.rps])
    return Row(
        group="writes",
        what=(
            f"POST /posts over {replicas} replicas (`murmur serve` x {replicas}, one store),"
            f" {replicas} x {clients // replicas} clients, fresh keys"
        ),
        figure=_fmt(mine, int(mine["errors"])),
        reference="one server, " + _fmt(one),
        ratio=round(ratio, 2) if ratio else None,
        target=f"≥ {REPLICA_WRITE_RPS:,.0f}/s, p99 ≤ {WRITE_P99_MS:.0f} ms, 0 errors",
        status="PASS" if passed else "MISS",
        note=(
            f"one wrk per replica, started together, interleaved with the one server's runs;"
            f" p50 the replicas' weighted by their requests (an estimate), p99 the worse"
            f" replica's (an upper bound); load average {loadavg:.1f} before the runs"
        ),
        detail={
            "runs": [r.to_dict() for r in whole],
            "replicas": [[p.to_dict() for p in parts] for parts in runs],
        },
    )


def _row_from(group: str, raw: dict[str, Any]) -> Row:
    """A table row from a child's JSON row (benchmarks.pipeline_scale's shape)."""
    status = raw.get("status") or ("PASS" if raw.get("ok") else "MISS")
    ratio = raw.get("ratio")
    return Row(
        group=group,
        what=str(raw["what"]),
        figure=str(raw["measured"]),
        reference=str(raw.get("reference", "—")),
        ratio=round(float(ratio), 2) if isinstance(ratio, int | float) else None,
        target=str(raw.get("target", "")),
        status=str(status),
        note=str(raw.get("notes", "")),
        detail={k: v for k, v in raw.items() if k not in {"what", "measured"}},
    )


def _publishing_row(run: Any, quick: bool) -> dict[str, Any]:
    """The lateness row from ``publishing_lateness.run``'s figures."""
    posts = (50 if smoke() else 200) if quick else 5000
    # The lead covers seeding 5,000 posts: 20 s was short on a slower machine of this kind.
    spread, lead = ((2.0, 3.0) if smoke() else (5.0, 5.0)) if quick else (60.0, 45.0)
    found: dict[str, Any] = run(posts, 2, spread, lead, 16)
    late = found["lateness_seconds"]
    once = found["exactly_once"]
    passed = late["p99"] <= 5 and not once["more_than_once"] and not once["missing"]
    return {
        "what": f"publishing lateness, {posts:,} posts due within {spread:.0f} s",
        "measured": f"p99 {late['p99']:.2f} s (p50 {late['p50']:.2f}, max {late['max']:.2f})"
        f", {once['once']} published once, {once['more_than_once']} twice,"
        f" {once['missing']} missing",
        "reference": "—",
        "target": "p99 ≤ 5 s after scheduled_at",
        "ok": passed,
        "figures": found,
    }


_PLACEHOLDERS = {
    "pipeline": [
        "full pipeline build, 10M engagement snapshots",
        "incremental run adding an hour (10M vs 1M history)",
    ],
    "import": [
        "import of a 10M-row CSV export",
        "import + run of tweets on 200 isolated days",
    ],
    "publishing": ["publishing lateness, 5,000 posts due in one minute"],
    "dashboard": ["dashboard overview, navigation to last chart drawn"],
    "lists": ["every paginated list's first and deep page, 300,000 rows"],
    "startup": ["`murmur --help`, new process", "`murmur keys list` on a store, new process"],
    "breakout_latency": ["a breakout's webhook, capture's commit to delivery"],
    BREAKOUTS: [
        "breakouts on the simulator, hourly captures",
        "breakouts on the simulator, 6-hourly captures",
        "breakouts in the real exports",
    ],
    EXPERIMENTS: [
        "experiment interval, engagements_24h, planted time-of-day lift",
        "experiment interval, engagements_48h, planted time-of-day lift",
        "experiment interval, engagement_rate, planted time-of-day lift (rate lift 0)",
        "experiment interval, engagements_24h, nothing planted (null)",
        "experiment interval, engagements_48h, nothing planted (null)",
        "experiment interval, engagement_rate, nothing planted (null)",
    ],
    "history": [
        "full build over a long history",
        "incremental hour over a long history",
        "the three reads over a long history",
    ],
}


def child_rows(group: str, quick: bool, timeout: float, args: Sequence[str] = ()) -> list[Row]:
    """The rows of one group (a key of ``_PLACEHOLDERS``), computed in a child process.

    A child of its own keeps their memory and DuckDB threads out of this process; when it
    fails or overruns its budget, the rows say "not measured" and why.
    """
    from benchmarks.servers import SERVERS_ENV

    if os.environ.get(SERVERS_ENV):
        # Every statement a round trip, every file over HTTP: the quick pipeline rows took
        # 147 s at scale (load average 12-21, 2026-11-27), their embedded budget is 120 s.
        timeout *= SCALE_BUDGET
    cmd = [sys.executable, "-m", "benchmarks.bench", "--rows-of", group, *args]
    if quick:
        cmd.append("--quick")
    try:
        done = _run_group(cmd, timeout)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode != 0 or not last.startswith("ROWS "):
            tail = [x for x in (done.stderr or done.stdout).strip().splitlines() if x.strip()]
            errors = [x for x in tail if "Error" in x or "error" in x]
            raise RuntimeError((errors or tail or [f"exit {done.returncode}"])[-1].strip())
        raws = json.loads(last.removeprefix("ROWS "))
        return [_row_from(group, raw) for raw in raws]
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        reason = (
            f"timed out after {timeout:.0f} s"
            if isinstance(exc, subprocess.TimeoutExpired)
            else str(exc)
        )
        return [
            Row(group, what, "—", "—", None, "", "not measured", note=reason[:200])
            for what in _PLACEHOLDERS[group]
        ]


def _run_group(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a group's child in a session of its own; past ``timeout``, kill all of it."""
    # The children's own children (a pool's workers, servers, `murmur worker`s) go with it:
    # killing the child alone left them running beside the next group.
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _pipeline_group(group: str, quick: bool, history: int | None) -> list[dict[str, Any]]:
    """The rows of the history, pipeline or import group."""
    from benchmarks.pipeline_scale import run_pipeline_rows

    if group == "history":
        from benchmarks.history import run_history_rows

        return run_history_rows(history or HISTORY_SNAPSHOTS, quick)
    if group == "pipeline":
        # Medians of three alternating build/script pairs (~2 min more than one).
        return run_pipeline_rows(quick, ("build", "incremental"), 1 if quick else 3)
    from benchmarks.isolated_days import run as run_isolated_days

    return [*run_pipeline_rows(quick, ("import",)), run_isolated_days(quick)]


def _print_rows_of(group: str, quick: bool, history: int | None = None) -> int:
    """The child side of ``child_rows``: compute the group's rows and print them as JSON."""
    if group in ("history", "pipeline", "import"):
        from benchmarks.pipeline_scale import smoke_children

        # This process is the group's own: a smoke run's steps can share it.
        with smoke_children(quick, inline=True):
            rows = _pipeline_group(group, quick, history)
    elif group == "dashboard":
        from benchmarks.dashboard import run as run_dashboard

        rows = [run_dashboard(quick)]
    elif group == "lists":
        from benchmarks.lists import run as run_lists

        rows = run_lists(quick)
    elif group == "startup":
        from benchmarks.startup import run as run_startup

        rows = run_startup(quick)
    elif group == BREAKOUTS:
        from benchmarks.breakouts_quality import run_rows as run_breakouts

        rows = run_breakouts(quick)
    elif group == EXPERIMENTS:
        from benchmarks.experiments_quality import run_rows as run_experiments

        rows = run_experiments(quick)
    elif group == "breakout_latency":
        from benchmarks.breakout_latency import measure as measure_breakout_latency

        rows = measure_breakout_latency(quick=quick)
    else:
        from benchmarks.publishing_lateness import run

        rows = [_publishing_row(run, quick)]
    print("ROWS " + json.dumps(rows, default=str))
    return 0


# -- the table --------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    out = [
        "| what | figure (median) | reference, same run | ratio | target | result |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = "—" if r.ratio is None else f"{r.ratio:.2f}x"
        status = r.status if not r.note else f"{r.status} ({r.note})"
        out.append(f"| {r.what} | {r.figure} | {r.reference} | {ratio} | {r.target} | {status} |")
    return "\n".join(out)


def side_by_side(latest: dict[str, dict[str, Any]]) -> str:
    """Each profile's latest rows as one Markdown table: a column per profile."""
    runs = {p: [Row(**raw) for raw in latest[p]["rows"]] for p in PROFILES if p in latest}
    whats = list(dict.fromkeys(r.what for rows in runs.values() for r in rows))
    out = [
        "| what | target | "
        + " | ".join(f"{p} (figure; reference; ratio; result)" for p in runs)
        + " |",
        "|---|---|" + "---|" * len(runs),
    ]
    for what in whats:
        found = {p: next((r for r in rows if r.what == what), None) for p, rows in runs.items()}
        target = next(r.target for r in found.values() if r)
        cells = []
        for row in found.values():
            if row is None:
                cells.append("not in this profile's latest run")
                continue
            ratio = "—" if row.ratio is None else f"{row.ratio:.2f}x"
            status = row.status if not row.note else f"{row.status} ({row.note})"
            cells.append(f"{row.figure}; {row.reference}; {ratio}; **{status}**")
        out.append(f"| {what} | {target} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _latest_line(profile: str, results: dict[str, Any]) -> str:
    meta = results["meta"]
    only = "" if meta.get("child_rows", True) else "; its reads and writes only"
    return (
        f"Latest {profile} run: `{meta.get('command', 'murmur bench')}` on {meta['finished']}"
        f" ({meta['cpus']} CPUs, load average {meta['loadavg_before'][0]} →"
        f" {meta['loadavg_after'][0]}, load generator {meta['engine']}, {meta['repeats']}"
        f" interleaved runs of {meta['seconds']:.0f} s, {meta['posts']} posts;"
        + (f" S3 server {meta['s3']};" if meta.get("s3") else "")
        + f" wall {meta['wall_s']:.0f} s{only})."
    )


def write_docs(rows: list[Row], results: dict[str, Any], command: str) -> None:
    """Put this profile's run beside the other's latest in docs/performance.md, and redraw
    its chart; each profile's raw figures are kept in docs/performance-latest.json."""
    from benchmarks.chart import draw

    profile = results["meta"].get("profile", "embedded")
    results["meta"]["command"] = command
    saved = DOCS / "performance-latest.json"
    latest: dict[str, Any] = json.loads(saved.read_text()) if saved.exists() else {}
    if "meta" in latest:  # a run saved before the profiles: the embedded one
        latest = {"embedded": latest}
    latest[profile] = results
    saved.write_text(json.dumps(latest, indent=2, default=str) + "\n")
    draw(results, DOCS / CHARTS[profile])
    block = "\n".join(
        [
            TABLE_START,
            *(_latest_line(p, latest[p]) + "\n" for p in PROFILES if p in latest),
            side_by_side(latest),
            "",
            *(
                f"![p50 latency of each read vs posts in the store, {p}]({CHARTS[p]})"
                for p in PROFILES
                if p in latest
            ),
            TABLE_END,
        ]
    )
    _replace_block(TABLE_START, TABLE_END, block)


def _replace_block(start: str, end: str, block: str) -> None:
    """Put ``block`` (its markers included) between ``start`` and ``end`` of performance.md."""
    path = DOCS / "performance.md"
    text = path.read_text() if path.exists() else "# Performance\n"
    if start not in text:
        text += f"\n{start}\n{end}\n"
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    path.write_text(head + block + tail)


def _raw(row: Row) -> dict[str, Any]:
    """A table row back in its child's JSON shape (what ``breakouts_quality.table`` reads)."""
    return {
        "what": row.what,
        "measured": row.figure,
        "target": row.target,
        "status": row.status,
        "notes": row.note,
    }


def write_breakouts_docs(rows: Sequence[dict[str, Any]], command: str, wall_s: float) -> None:
    """Put the breakouts' quality rows (``breakouts_quality``'s shape) in their block of
    docs/performance.md."""
    from benchmarks.quality import table as quality_table

    line = (
        f"Latest: `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC ({os.cpu_count()} CPUs,"
        f" load average {os.getloadavg()[0]:.2f}; wall {wall_s:.0f} s)."
    )
    block = [BREAKOUTS_START, line, "", quality_table(rows), BREAKOUTS_END]
    _replace_block(BREAKOUTS_START, BREAKOUTS_END, "\n".join(block))


def write_experiments_docs(rows: Sequence[dict[str, Any]], command: str, wall_s: float) -> None:
    """Put the experiments' coverage rows (``experiments_quality``'s shape) in their block of
    docs/performance.md, after a line stating the design."""
    from benchmarks.experiments_quality import design
    from benchmarks.quality import table as quality_table

    line = (
        f"Latest: `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC ({os.cpu_count()} CPUs,"
        f" load average {os.getloadavg()[0]:.2f}; wall {wall_s:.0f} s). Each repeat: {design()}."
    )
    block = [EXPERIMENTS_START, line, "", quality_table(rows), EXPERIMENTS_END]
    _replace_block(EXPERIMENTS_START, EXPERIMENTS_END, "\n".join(block))


def write_history_docs(rows: list[Row], results: dict[str, Any]) -> None:
    """Put the history run in docs/performance.md and its raw figures beside the profiles'."""
    saved = DOCS / "performance-latest.json"
    latest: dict[str, Any] = json.loads(saved.read_text()) if saved.exists() else {}
    latest["history"] = results
    saved.write_text(json.dumps(latest, indent=2, default=str) + "\n")
    meta = results["meta"]
    line = (
        f"Latest history run: `{meta['command']}` on {meta['finished']} ({meta['cpus']} CPUs,"
        f" {meta['memory_gb']} GB, load average {meta['loadavg_before'][0]} →"
        f" {meta['loadavg_after'][0]}; wall {meta['wall_s']:.0f} s)."
    )
    _replace_block(
        HISTORY_START, HISTORY_END, "\n".join([HISTORY_START, line, "", table(rows), HISTORY_END])
    )


# -- the run ----------------------------------------------------------------------------------


@contextlib.contextmanager
def profile_servers(profile: str) -> Iterator[None]:
    """The run's store servers: none embedded; at scale PostgreSQL + S3 on loopback (those
    ``SERVERS_ENV`` already names, else started for the run), named to every child process
    through the environment they inherit."""
    from benchmarks.servers import S3_ENV, SERVERS_ENV, start_servers, weed_path

    given = os.environ.pop(SERVERS_ENV, None)
    kind = os.environ.get(S3_ENV)
    try:
        if profile == "embedded":
            yield
        elif given:
            os.environ[SERVERS_ENV] = given
            yield
        else:
            # Its own servers: SeaweedFS where installed (`make install` does), a compiled
            # object store rather than moto's one Python process, unless S3_ENV names one;
            # S3_ENV then says which to the run's record (meta.s3).
            os.environ[S3_ENV] = kind or ("seaweedfs" if weed_path() else "moto")
            with start_servers() as servers:
                os.environ.update(servers.env())
                yield
    finally:
        os.environ.pop(SERVERS_ENV, None)
        if given:
            os.environ[SERVERS_ENV] = given
        if kind is None:
            os.environ.pop(S3_ENV, None)


def run_bench(settings_or_args: BenchSettings | argparse.Namespace) -> list[Row]:
    """Build the data, measure every row, print the table; write the docs on a full run."""
    cfg = (
        settings_or_args
        if isinstance(settings_or_args, BenchSettings)
        else BenchSettings.for_mode(
            bool(settings_or_args.quick), settings_or_args.data_dir, settings_or_args.profile
        )
    )
    started = time.monotonic()
    load_before = os.getloadavg()
    own_tmp = cfg.data_dir is None
    root = Path(tempfile.mkdtemp(prefix="murmur-bench-")) if own_tmp else Path(cfg.data_dir or ".")
    data_dir = root / "data"
    if data_dir.exists():
        shutil.rmtree(data_dir)
    engine = cfg.engine if cfg.engine != "auto" else ("wrk" if wrk_path() else "python")
    results: dict[str, Any] = {"scale": []}
    breakouts_wall = experiments_wall = 0.0
    replica_load = 0.0
    servers = contextlib.ExitStack()
    try:
        servers.enter_context(profile_servers(cfg.profile))
        from benchmarks.servers import s3_kind

        s3 = s3_kind()  # which S3-compatible server the run's store is on, at scale
        with open_store(data_dir) as store:
            tenant = create_tenant(store)
        sizes = sorted({*(s for s in cfg.scale_sizes), cfg.posts})
        have = 0
        with serve(data_dir) as base:
            _say(f"serving {data_dir} at {base}; load generator: {engine}")
            if engine == "python":
                # Measured on this 2-core machine: it saturates near 470 req/s, p99 ~300 ms,
                # so the read rows would measure the generator, not Murmur.
                _say(
                    "wrk is not installed (`make bench` installs it): the Python generator"
                    " shares the two cores with the server and caps the read rows"
                )

            def grow_to(n: int) -> None:
                nonlocal have
                with open_store(data_dir) as remote:
                    grow(remote, tenant.workspace_id, have, n)
                have = n

            def scale(size: int) -> None:
                grow_to(size)
                with serve_reference(base, tenant, data_dir) as refs:
                    results["scale"].append(measure_scale(cfg, base, tenant, size, refs))
                _say(f"scale {size} posts: {results['scale'][-1]['p50_ms']}")

            for size in (s for s in sizes if s <= cfg.posts):
                scale(size)
            with serve_reference(base, tenant, data_dir) as refs:
                reads = measure_reads(cfg, base, tenant, refs)
            _say("reads done")
            page = base + READS["GET /posts (page of 50)"]
            scraped = scrapers.measure(
                cfg.repeats,
                f"{base}/metrics",
                lambda: _load(cfg, page, auth(tenant), cfg.clients, cfg.seconds),
            )
            _say("scrapes done")
            with contextlib.ExitStack() as replica:
                second = None
                if cfg.profile == "scale":  # replicas share the store: PostgreSQL + S3 only
                    replica_load = os.getloadavg()[0]
                    second = replica.enter_context(serve(data_dir, replica=1))
                writes = measure_writes(cfg, base, tenant, data_dir, second)
            _say("writes done")
            for size in (s for s in sizes if s > cfg.posts):
                scale(size)
        rows = read_rows(reads, cfg.clients)
        rows.append(_row_from("scrapes", scrapers.row(scraped, cfg.clients)))
        rows += write_rows(writes, cfg.clients)
        if writes["replicas"]:
            rows.append(
                replica_write_row(writes["replicas"], writes["alone"], cfg.clients, replica_load)
            )
        if cfg.child_rows:
            # A child and a budget per group: an overrun loses its own rows only. Expected
            # on a 2-core machine: ~3, ~1.5 and ~1 minutes; machines of the same kind differ
            # by ~2x (read_csv's rows/s: 1.35M on 2026-11-23, 0.76M on 2026-11-25), and the
            # pipeline's budget allows it (420 s lost its rows on the slower one).
            rows += child_rows("pipeline", cfg.quick, 120.0 if cfg.quick else 900.0)
            rows += child_rows("import", cfg.quick, 180.0 if cfg.quick else 420.0)
            rows += child_rows("publishing", cfg.quick, 120.0 if cfg.quick else 210.0)
            rows += child_rows("dashboard", cfg.quick, 180.0 if cfg.quick else 300.0)
            rows += child_rows("lists", cfg.quick, 120.0 if cfg.quick else 900.0)
            rows += child_rows("startup", cfg.quick, 120.0 if cfg.quick else 300.0)
            # In process, no store: ~2 CPU-min (five seeds' worlds, hourly and 6-hourly).
            breakouts_started = time.monotonic()
            rows += child_rows(BREAKOUTS, cfg.quick, 180.0 if cfg.quick else 600.0)
            breakouts_wall = time.monotonic() - breakouts_started
            # In process, no store: ~1 CPU-min (1,000 seeded experiments, 200 with --quick).
            experiments_started = time.monotonic()
            rows += child_rows(EXPERIMENTS, cfg.quick, 180.0 if cfg.quick else 600.0)
            experiments_wall = time.monotonic() - experiments_started
            if not cfg.quick:  # real processes and six runs of the job a store: minutes
                rows += child_rows("breakout_latency", False, 1800.0)
    finally:
        servers.close()
        if own_tmp:
            shutil.rmtree(root, ignore_errors=True)
    results["meta"] = {
        "profile": cfg.profile,
        "child_rows": cfg.child_rows,
        "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "duckdb": __import__("duckdb").__version__,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "engine": engine,
        "repeats": cfg.repeats,
        "seconds": cfg.seconds,
        "clients": cfg.clients,
        "posts": cfg.posts,
        "wall_s": round(time.monotonic() - started, 1),
    }
    if cfg.profile == "scale":
        results["meta"]["s3"] = s3  # the S3-compatible server (MURMUR_BENCH_S3)
    apart = [r for r in rows if r.group == BREAKOUTS]
    experiments = [r for r in rows if r.group == EXPERIMENTS]
    profiled = [r for r in rows if r.group not in (BREAKOUTS, EXPERIMENTS)]
    results["rows"] = [asdict(r) for r in profiled]
    if apart:
        results[BREAKOUTS] = [asdict(r) for r in apart]
    if experiments:
        results[EXPERIMENTS] = [asdict(r) for r in experiments]
    print(table(profiled))
    if apart:
        from benchmarks.quality import table as quality_table

        print(f"\n{BREAKOUTS_TITLE}\n\n{quality_table([_raw(r) for r in apart])}")
    if experiments:
        from benchmarks.quality import table as quality_table

        print(f"\n{EXPERIMENTS_TITLE}\n\n{quality_table([_raw(r) for r in experiments])}")
    print(f"\n(wall {results['meta']['wall_s']} s, load generator {engine}, {cfg.profile})")
    if cfg.write_docs:
        command = "murmur bench" + (" --quick" if cfg.quick else "")
        command += f" --profile {cfg.profile}" * (cfg.profile != "embedded")
        write_docs(profiled, results, command)
        if apart:
            write_breakouts_docs([_raw(r) for r in apart], command, breakouts_wall)
        if experiments:
            write_experiments_docs([_raw(r) for r in experiments], command, experiments_wall)
    return rows


def run_history(snapshots: int, quick: bool = False) -> list[Row]:
    """``murmur bench --history N``: the history rows alone; the docs written on a full run."""
    started = time.monotonic()
    load_before = os.getloadavg()
    budget = 600.0 if quick else HISTORY_BUDGET
    rows = child_rows("history", quick, budget, ["--history", str(snapshots)])
    command = f"murmur bench --history {snapshots}" + (" --quick" if quick else "")
    results: dict[str, Any] = {
        "meta": {
            "command": command,
            "snapshots": snapshots,
            "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "cpus": os.cpu_count(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
            "python": platform.python_version(),
            "duckdb": __import__("duckdb").__version__,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "wall_s": round(time.monotonic() - started, 1),
        },
        "rows": [asdict(r) for r in rows],
    }
    print(table(rows))
    print(f"\n(wall {results['meta']['wall_s']} s, {snapshots:,} snapshots)")
    if not quick:
        write_history_docs(rows, results)
    return rows


def _say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def main(
    quick: bool = False,
    data_dir: Path | None = None,
    profile: str = "embedded",
    history: int | None = None,
) -> list[Row]:
    """What ``murmur bench [--quick] [--data-dir D] [--profile P] [--history N]`` calls."""
    if history is not None:
        if profile != "embedded":
            raise ValueError("--history runs on the embedded profile only")
        return run_history(history, quick)
    return run_bench(BenchSettings.for_mode(quick, data_dir, profile))


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--profile", choices=PROFILES, default="embedded")
    parser.add_argument("--history", type=int, metavar="SNAPSHOTS")
    parser.add_argument("--rows-of", choices=list(_PLACEHOLDERS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows_of:
        return _print_rows_of(args.rows_of, args.quick, args.history)
    main(args.quick, args.data_dir, args.profile, args.history)
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
