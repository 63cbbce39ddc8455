"""The store's mixed load, against each design docs/adr/0001-store.md weighed.

Every role runs in an OS process of its own (multiprocessing 'spawn'), as the API server,
a Dagster run and an analyst would:

* a writer committing 32-row batches;
* a bulk writer building a 5M-row table (CREATE TABLE AS from range() with computed
  columns) and then aggregating it;
* a reader paging 50 rows at a time (ORDER BY id DESC LIMIT 50) on a table of 100k+ rows.

Alternatives:

A. ``ducklake``: DuckLake, SQLite catalog, Parquet data; each role attaches the lake.
B. ``quack``: one server process owns a native file and serves Quack; all roles are clients.
C. ``combined``: the chosen design. A real ``murmur serve`` subprocess hosts the store; a
   load process drives the API over HTTP (pages of GET /accounts on a workspace seeded
   with 100k accounts; POST /posts too when that route exists); pipeline processes reach
   the store with ``Store.connect`` (the 5M-row build server-side through
   ``execute_script``, 32-row batches as single INSERT statements); an analyst attaches
   READ_ONLY with the SQL ``murmur attach`` prints and runs counts.

Usage::

    python -m benchmarks.store_mixed_load --seconds 20 --out docs/adr/0001-store-figures.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BULK_ROWS = 5_000_000
PAGE_TABLE_ROWS = 100_000
BATCH_ROWS = 32
API_CONCURRENCY = 24

BULK_SELECT = (  # BULK_ROWS rows
    "SELECT range AS id, range % 97 AS bucket, hash(range) AS h,"
    " range * 1.5 AS amount, 'row-' || (range % 1000)::VARCHAR AS label"
    " FROM range(5000000)"
)
AGGREGATE = "SELECT bucket, count(*) AS n, sum(amount) AS total FROM big GROUP BY bucket"
EVENTS_DDL = "CREATE TABLE events (id BIGINT, ws INTEGER, body VARCHAR, at_ms BIGINT)"
SEED_EVENTS = (  # PAGE_TABLE_ROWS rows
    "INSERT INTO events SELECT range, range % 10, 'seed-' || range::VARCHAR, 0 FROM range(100000)"
)
# One statement, so it commits atomically whatever the transport.
BATCH_INSERT = (
    "INSERT INTO events SELECT range, range % 10, 'batch-' || range::VARCHAR, ? FROM range(?, ?)"
)
PAGE_READ = "SELECT * FROM events ORDER BY id DESC LIMIT 50"
QUACK_TOKEN = "bench-token-0123456789"


# -- measuring ------------------------------------------------------------------------------


class Recorder:
    """Latencies and errors of one role."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.samples: dict[str, list[float]] = {}
        self.errors = 0
        self.first_error: str | None = None
        self.retries = 0
        self.extra: dict[str, Any] = {}
        self._lock = threading.Lock()

    def timed(self, name: str, fn: Callable[[], Any]) -> bool:
        start = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # every failure is a finding, not a crash
            self.error(exc)
            return False
        elapsed = (time.perf_counter() - start) * 1000
        with self._lock:
            self.samples.setdefault(name, []).append(elapsed)
        return True

    def error(self, exc: BaseException | str) -> None:
        with self._lock:
            self.errors += 1
            if self.first_error is None:
                self.first_error = f"{type(exc).__name__}: {exc}"[:300]

    def result(self, seconds: float) -> dict[str, Any]:
        return {
            "role": self.role,
            "seconds": seconds,
            "samples": {k: summarize(v) for k, v in self.samples.items()},
            "errors": self.errors,
            "first_error": self.first_error,
            "retries": self.retries,
            **self.extra,
        }


def summarize(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)

    return {"n": len(ordered), "p50": pct(0.50), "p99": pct(0.99), "max": round(ordered[-1], 2)}


def is_retryable(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "conflict" in text or "database is locked" in text or "busy" in text


def with_retries(rec: Recorder, fn: Callable[[], Any], attempts: int = 10) -> None:
    for attempt in range(attempts):
        try:
            fn()
            return
        except Exception as exc:
            if not is_retryable(exc) or attempt == attempts - 1:
                raise
            rec.retries += 1
            time.sleep(0.005 * (attempt + 1))


def _go(ready: Any, go: Any, role: str) -> None:
    ready.put(role)
    if not go.wait(180):
        raise SystemExit(f"{role}: never told to start")


# -- generic roles over a DuckDB connection (alternatives A and B) -----------------------


def _connect(alt: str, cfg: dict[str, Any]) -> Any:
    import duckdb

    from warehouse.store import load_extension

    con = duckdb.connect()
    if alt == "ducklake":
        load_extension(con, "sqlite")
        load_extension(con, "ducklake")
        con.execute(
            f"ATTACH 'ducklake:sqlite:{cfg['catalog']}' AS lake (DATA_PATH '{cfg['data_path']}')"
        )
        con.execute("USE lake")
    else:
        load_extension(con, "httpfs")
        load_extension(con, "quack")
        con.execute(f"CREATE SECRET bench (TYPE quack, TOKEN '{QUACK_TOKEN}')")
        con.execute(f"ATTACH '{cfg['uri']}' AS q")
        con.execute("USE q")
    return con


def role_writer(alt: str, cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    rec = Recorder("writer")
    con = _connect(alt, cfg)
    _go(ready, go, "writer")
    start = time.monotonic()
    deadline = start + cfg["seconds"]
    n = 0
    base = 1_000_000_000
    while time.monotonic() < deadline:
        lo = base + n * BATCH_ROWS

        def batch(lo: int = lo, n: int = n) -> None:
            with_retries(rec, lambda: con.execute(BATCH_INSERT, [n, lo, lo + BATCH_ROWS]))

        if rec.timed("insert", batch):
            n += 1
    elapsed = time.monotonic() - start
    rec.extra["batches"] = n
    rec.extra["batches_per_s"] = round(n / elapsed, 1)
    out.put(rec.result(elapsed))


def role_reader(alt: str, cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    rec = Recorder("reader")
    con = _connect(alt, cfg)
    _go(ready, go, "reader")
    start = time.monotonic()
    deadline = start + cfg["seconds"]
    while time.monotonic() < deadline:
        if not rec.timed("page", lambda: con.execute(PAGE_READ).fetchall()):
            time.sleep(0.05)
    out.put(rec.result(time.monotonic() - start))


def role_bulk(alt: str, cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    rec = Recorder("bulk")
    con = _connect(alt, cfg)
    _go(ready, go, "bulk")
    start = time.monotonic()
    built = rec.timed("build", lambda: con.execute(f"CREATE TABLE big AS {BULK_SELECT}"))
    if built:
        rec.timed("aggregate", lambda: con.execute(AGGREGATE).fetchall())
    out.put(rec.result(time.monotonic() - start))


def quack_server(path: str, uri: str, ready: Any, stop: Any) -> None:
    import duckdb

    from warehouse.store import load_extension

    con = duckdb.connect(path)
    con.execute(EVENTS_DDL)
    con.execute(SEED_EVENTS)
    load_extension(con, "httpfs")
    load_extension(con, "quack")
    con.execute("SELECT * FROM quack_serve(?, token := ?)", [uri, QUACK_TOKEN])
    ready.put("server")
    stop.wait(600)
    con.close()


def setup_ducklake(cfg: dict[str, Any]) -> None:
    con = _connect("ducklake", cfg)
    con.execute(EVENTS_DDL)
    con.execute(SEED_EVENTS)
    con.close()


# -- alternative C: the chosen design with the real API ------------------------------------


def role_api_load(cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    import httpx

    rec = Recorder("api")
    base = cfg["base_url"]
    headers = {"Authorization": f"Bearer {cfg['key']}"}
    writes = cfg["post_posts"]
    _go(ready, go, "api")
    start = time.monotonic()
    deadline = start + cfg["seconds"]

    def worker(index: int) -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            i = index
            while time.monotonic() < deadline:
                i += 1
                if writes and i % 4 == 0:
                    key = str(uuid.uuid4())

                    def post(key: str = key) -> None:
                        resp = http.post(
                            "/posts",
                            json={"text": "hi", "platforms": ["x"]},
                            headers={"Idempotency-Key": key},
                        )
                        if resp.status_code >= 300:
                            raise RuntimeError(f"POST /posts {resp.status_code}: {resp.text[:200]}")

                    rec.timed("api_write", post)
                else:

                    def get() -> None:
                        resp = http.get("/accounts", params={"limit": 50})
                        if resp.status_code != 200:
                            raise RuntimeError(
                                f"GET /accounts {resp.status_code}: {resp.text[:200]}"
                            )

                    rec.timed("api_read", get)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(cfg["concurrency"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    rec.extra["requests_per_s"] = round(
        sum(len(v) for v in rec.samples.values()) / max(elapsed, 1e-9), 1
    )
    out.put(rec.result(elapsed))


def _store(cfg: dict[str, Any]) -> Any:
    from warehouse.store import Secrets, Store

    data_dir = Path(cfg["data_dir"])
    return Store.connect(
        data_dir / "murmur.duckdb",
        host_file=data_dir / "store.host.json",
        quack_token=Secrets.load(data_dir).quack_token,
        migrate_schema=False,
    )


def role_pipeline_batches(cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    rec = Recorder("pipeline_batches")
    store = _store(cfg)
    rec.extra["store_mode"] = store.mode
    _go(ready, go, "pipeline_batches")
    start = time.monotonic()
    deadline = start + cfg["seconds"]
    n = 0
    while time.monotonic() < deadline:
        lo = n * BATCH_ROWS

        def batch(lo: int = lo, n: int = n) -> None:
            with store.cursor() as cur:
                cur.execute(BATCH_INSERT, [n, lo, lo + BATCH_ROWS])

        if rec.timed("insert", batch):
            n += 1
    elapsed = time.monotonic() - start
    rec.extra["batches"] = n
    rec.extra["batches_per_s"] = round(n / elapsed, 1)
    store.close()
    out.put(rec.result(elapsed))


def role_pipeline_bulk(cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    rec = Recorder("bulk")
    store = _store(cfg)
    rec.extra["store_mode"] = store.mode
    _go(ready, go, "bulk")
    start = time.monotonic()
    built = rec.timed(
        "build", lambda: store.execute_script(f"CREATE OR REPLACE TABLE big AS {BULK_SELECT};")
    )
    if built:

        def aggregate() -> None:
            with store.cursor() as cur:
                cur.execute("SELECT * FROM quack_query(?, ?)", [store.quack_uri, AGGREGATE])
                rows = cur.fetchall()
                if len(rows) != 97:
                    raise RuntimeError(f"aggregate returned {len(rows)} rows")

        rec.timed("aggregate", aggregate)
    store.close()
    out.put(rec.result(time.monotonic() - start))


def role_analyst(cfg: dict[str, Any], ready: Any, go: Any, out: Any) -> None:
    import duckdb

    from warehouse.store import load_extension

    rec = Recorder("analyst")
    con = duckdb.connect()
    for ext in ("httpfs", "quack"):
        load_extension(con, ext)
    con.execute(cfg["attach_sql"])
    _go(ready, go, "analyst")
    start = time.monotonic()
    deadline = start + cfg["seconds"]
    while time.monotonic() < deadline:
        rec.timed("count", lambda: con.execute("SELECT count(*) FROM accounts").fetchone())
        time.sleep(0.2)
    try:
        con.execute("INSERT INTO events VALUES (-1, 0, 'analyst', 0)")
        rec.extra["read_only_write"] = "accepted (unexpected)"
    except duckdb.Error as exc:
        rec.extra["read_only_write"] = f"refused: {str(exc)[:80]}"
    out.put(rec.result(time.monotonic() - start))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _murmur() -> list[str]:
    exe = shutil.which("murmur") or str(Path(sys.executable).with_name("murmur"))
    return [exe]


def start_murmur(data_dir: Path) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    """Mint a key, seed 100k accounts, then start ``murmur serve`` on free ports."""
    from warehouse.store import Secrets, Store

    env = dict(
        os.environ,
        MURMUR_DATA_DIR=str(data_dir),
        MURMUR_PORT=str(_free_port()),
        MURMUR_QUACK_PORT="0",
        # The load is the point here, not the per-key limits.
        MURMUR_READ_RATE_LIMIT="100000000",
        MURMUR_WRITE_RATE_LIMIT="100000000",
    )
    key = (
        subprocess.run(
            [*_murmur(), "keys", "create", "--data-dir", str(data_dir)],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    with (
        Store.connect(
            data_dir / "murmur.duckdb",
            host_file=data_dir / "store.host.json",
            quack_token=Secrets.load(data_dir).quack_token,
        ) as store,
        store.cursor() as cur,
    ):
        ws = cur.execute("SELECT id FROM workspaces WHERE is_test").fetchone()
        assert ws is not None
        cur.execute(
            "INSERT INTO accounts (id, workspace_id, platform, handle, display_name,"
            " external_id, status, is_test, connected_at, created_at, updated_at)"
            " SELECT 'acc_00' || lpad(range::VARCHAR, 24, '0'), ?, 'threads',"
            " 'seed' || range::VARCHAR, 'Seed', 'ext' || range::VARCHAR, 'active', true,"
            " TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-01', TIMESTAMP '2024-01-01'"
            " FROM range(?)",
            [ws[0], PAGE_TABLE_ROWS],
        )
        cur.execute(EVENTS_DDL.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
    log = open(data_dir / "serve.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(
        [*_murmur(), "serve", "--data-dir", str(data_dir)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return proc, key, env


def wait_for_api(
    base_url: str, proc: subprocess.Popen[bytes], timeout: float = 60
) -> dict[str, Any]:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"murmur serve exited with {proc.returncode}")
        try:
            resp = httpx.get(f"{base_url}/openapi.json", timeout=2)
            if resp.status_code == 200:
                doc: dict[str, Any] = resp.json()
                return doc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("murmur serve did not answer in time")


def idle_probe(base_url: str, key: str, seconds: float = 2.0) -> dict[str, Any]:
    """One client, one request at a time, nothing else running: the API's own cost."""
    import httpx

    rec = Recorder("idle")
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            rec.timed("api_read", lambda: http.get("/accounts", params={"limit": 50}))
    samples: dict[str, Any] = rec.result(seconds)["samples"]
    return samples


def stop_process(proc: subprocess.Popen[bytes], timeout: float = 15) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


# -- running one alternative ---------------------------------------------------------------


Role = tuple[Callable[..., None], tuple[Any, ...]]


def run_roles(ctx: Any, roles: list[Role], timeout: float) -> list[dict[str, Any]]:
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=fn, args=(*args, ready, go, out)) for fn, args in roles]
    for p in procs:
        p.start()
    results: list[dict[str, Any]] = []
    try:
        for _ in procs:
            ready.get(timeout=120)
        go.set()
        end = time.monotonic() + timeout
        while len(results) < len(procs) and time.monotonic() < end:
            try:
                results.append(out.get(timeout=1))
            except Exception:
                if all(not p.is_alive() for p in procs) and out.empty():
                    break
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.terminate()
                p.join(5)
    for p in procs:
        if p.exitcode not in (0, None):
            results.append({"role": p.name, "errors": 1, "first_error": f"exit {p.exitcode}"})
    return results


def run_alternative(
    ctx: Any, alt: str, seconds: float, concurrency: int = API_CONCURRENCY
) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"murmur-bench-{alt}-"))
    started = time.monotonic()
    try:
        if alt == "ducklake":
            (work / "files").mkdir()
            cfg = {
                "seconds": seconds,
                "catalog": str(work / "catalog.sqlite"),
                "data_path": str(work / "files") + "/",
            }
            setup_ducklake(cfg)
            roles: list[Role] = [
                (role_writer, (alt, cfg)),
                (role_bulk, (alt, cfg)),
                (role_reader, (alt, cfg)),
            ]
            results = run_roles(ctx, roles, seconds + 120)
        elif alt == "quack":
            uri = f"quack:127.0.0.1:{_free_port()}"
            cfg = {"seconds": seconds, "uri": uri}
            sready, stop = ctx.Queue(), ctx.Event()
            server = ctx.Process(
                target=quack_server, args=(str(work / "q.duckdb"), uri, sready, stop)
            )
            server.start()
            try:
                sready.get(timeout=60)
                roles = [
                    (role_writer, (alt, cfg)),
                    (role_bulk, (alt, cfg)),
                    (role_reader, (alt, cfg)),
                ]
                results = run_roles(ctx, roles, seconds + 120)
            finally:
                stop.set()
                server.join(15)
                if server.is_alive():
                    server.terminate()
        else:
            proc, key, env = start_murmur(work)
            base_url = f"http://127.0.0.1:{env['MURMUR_PORT']}/api/public/v1"
            try:
                doc = wait_for_api(base_url, proc)
                post_posts = "post" in doc.get("paths", {}).get("/api/public/v1/posts", {})
                attach_sql = subprocess.run(
                    [*_murmur(), "attach", "--data-dir", str(work)],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=60,
                ).stdout
                cfg = {
                    "seconds": seconds,
                    "data_dir": str(work),
                    "base_url": base_url,
                    "key": key,
                    "post_posts": post_posts,
                    "attach_sql": attach_sql,
                    "concurrency": concurrency,
                }
                idle = idle_probe(base_url, key)
                roles = [
                    (role_api_load, (cfg,)),
                    (role_pipeline_batches, (cfg,)),
                    (role_pipeline_bulk, (cfg,)),
                    (role_analyst, (cfg,)),
                ]
                results = run_roles(ctx, roles, seconds + 120)
                results.append({"role": "setup", "post_posts_route": post_posts, "idle_api": idle})
            finally:
                stop_process(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"alternative": alt, "wall_s": round(time.monotonic() - started, 1), "roles": results}


def headline(run: dict[str, Any]) -> dict[str, Any]:
    """The figures the ADR's table shows, from one run."""
    roles = {r["role"]: r for r in run["roles"]}

    def s(role: str, name: str) -> dict[str, Any]:
        samples: dict[str, Any] = roles.get(role, {}).get("samples", {}).get(name, {})
        return samples

    writer = roles.get("writer") or roles.get("pipeline_batches") or {}
    if run["alternative"] == "combined":
        insert = (
            s("api", "api_write")
            if s("api", "api_write").get("n")
            else s("pipeline_batches", "insert")
        )
        page = s("api", "api_read")
    else:
        insert, page = s("writer", "insert"), s("reader", "page")
    errors = sum(int(r.get("errors", 0)) for r in run["roles"])
    first = next((r["first_error"] for r in run["roles"] if r.get("first_error")), None)
    return {
        "alternative": run["alternative"],
        "insert_p50_ms": insert.get("p50"),
        "insert_p99_ms": insert.get("p99"),
        "batch_insert_p50_ms": s(writer.get("role", ""), "insert").get("p50"),
        "batches_per_s": writer.get("batches_per_s"),
        "page_p50_ms": page.get("p50"),
        "page_p99_ms": page.get("p99"),
        "pages": page.get("n"),
        "bulk_build_s": round(s("bulk", "build").get("p50", 0) / 1000, 2) or None,
        "aggregate_s": round(s("bulk", "aggregate").get("p50", 0) / 1000, 2) or None,
        "analyst_count_p50_ms": s("analyst", "count").get("p50"),
        "api_requests_per_s": roles.get("api", {}).get("requests_per_s"),
        "api_idle_read_p50_ms": roles.get("setup", {})
        .get("idle_api", {})
        .get("api_read", {})
        .get("p50"),
        "retries": sum(int(r.get("retries", 0)) for r in run["roles"]),
        "errors": errors,
        "first_error": first,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20, help="Load duration per run.")
    parser.add_argument("--repeats", type=int, default=2, help="Runs per alternative.")
    parser.add_argument(
        "--alternatives",
        default="ducklake,quack,combined",
        help="Comma-separated: ducklake, quack, combined.",
    )
    parser.add_argument(
        "--api-concurrency",
        type=int,
        default=API_CONCURRENCY,
        help="Concurrent HTTP clients driving the API (alternative C).",
    )
    parser.add_argument("--out", type=Path, help="Write every figure here as JSON.")
    args = parser.parse_args(argv)
    ctx = mp.get_context("spawn")
    alts = [a.strip() for a in args.alternatives.split(",") if a.strip()]
    runs: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    for repeat in range(args.repeats):
        for alt in alts:
            run = run_alternative(ctx, alt, args.seconds, args.api_concurrency)
            run["repeat"] = repeat + 1
            run["headline"] = headline(run)
            runs.append(run)
            print(json.dumps(run["headline"]), flush=True)
    report = {
        "duckdb": __import__("duckdb").__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": args.seconds,
        "api_concurrency": args.api_concurrency,
        "runs": runs,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
