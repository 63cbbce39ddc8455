"""The store's alternatives for docs/adr/0002-store.md, measured in separate processes.

Candidates (issue "The store, re-founded"):

a. ``duckdb_host``: ADR 0001's design, replaced by ADR 0002's (b and c). One DuckDB file
   owned by one process (the host, which also ran the publishing writers in-process, as
   ``murmur serve`` then did); every other process reached it over Quack (``quack_query``
   server-side, as ADR 0001's ``HostCursor`` did). Kept here as ADR 0002's evidence.
b. ``split_embedded``: publishing state in SQLite (WAL mode, python sqlite3 through
   SQLAlchemy Core, ``BEGIN IMMEDIATE``); analytics in DuckLake with a SQLite catalog file in
   WAL mode and Parquet files on local disk. Analysts and pipelines are DuckDB sessions that
   ATTACH both.
c. ``split_scale``: publishing state in PostgreSQL 15 (SQLAlchemy Core over psycopg 3) and
   DuckLake with a PostgreSQL catalog, its Parquet files on an S3-compatible server (moto's
   server mode) on loopback. The cluster is a throwaway one in a temp dir.

The mixed load (each role its own OS process, ``multiprocessing`` spawn): a pipeline
rewriting one day of a 1M-row ``mart_post_daily`` (40 days x 25,000 posts) per transaction,
two readers aggregating 28 days, two publishing writers (a post with 3 destinations and an
idempotency record per transaction, paced at ``--rate`` posts/s each), and an analyst joining
``posts`` with ``mart_post_daily`` every 200 ms. Then, per candidate: two API-like writer
processes checking each other's writes (replicas), ``kill -9`` of a publishing writer and of
a pipeline mid-transaction followed by a check of every acknowledged write, and two pipelines
rewriting different days of one table at once (without and with a retry loop).

Usage::

    python -m benchmarks.store_alternatives --seconds 20 --json docs/adr/0002-store-figures.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.recording import QUACK_TOKEN, Recorder
from benchmarks.recording import free_port as _free_port
from benchmarks.servers import SUPERUSER, create_bucket, postgres_bin, postgres_server, s3_server

DAYS = 40
ROWS_PER_DAY = 25_000  # = posts seeded; DAYS * ROWS_PER_DAY = 1M mart rows
WINDOW_DAYS = 28
DESTINATIONS = ("x", "threads", "bluesky")
DEFAULT_JSON = Path("docs/adr/0002-store-figures.json")
CANDIDATES = ("duckdb_host", "split_embedded", "split_scale")
BUCKET = "murmur-lake"

PUB_DDL = (
    "CREATE TABLE posts (id VARCHAR(40) PRIMARY KEY, workspace_id INTEGER NOT NULL,"
    " body VARCHAR(500) NOT NULL, created_at_ms BIGINT NOT NULL)",
    "CREATE TABLE post_destinations (id VARCHAR(48) PRIMARY KEY, post_id VARCHAR(40) NOT NULL,"
    " platform VARCHAR(20) NOT NULL, status VARCHAR(20) NOT NULL)",
    "CREATE TABLE idempotency (key VARCHAR(64) PRIMARY KEY, post_id VARCHAR(40) NOT NULL)",
)
# Not on DuckDB: migration 0008 dropped its secondary indexes (docs/adr/0001-store.md).
PUB_INDEX = "CREATE INDEX ix_destinations_post ON post_destinations (post_id)"
MART_DDL = (
    "CREATE TABLE mart_post_daily (day DATE, post_id VARCHAR, workspace_id INTEGER,"
    " impressions BIGINT, likes BIGINT, replies BIGINT)"
)


def short(exc: BaseException) -> str:
    """An engine error on one line, keeping PostgreSQL's own ERROR text when there is one."""
    text = " ".join(str(exc).split())
    at = text.find("ERROR:")
    return (text[:120] + " … " + text[at : at + 120]) if at > 120 else text[:240]


def mart_rows(day: int, version: int) -> str:
    """A SELECT yielding one day's ROWS_PER_DAY rows (integers only: no injection surface)."""
    return (
        f"SELECT DATE '2026-01-01' + {int(day)} AS day,"  # noqa: S608
        " 'p' || lpad(r::VARCHAR, 8, '0') AS post_id, (r % 10)::INTEGER AS workspace_id,"
        f" (hash(r, {int(day)}, {int(version)}) % 10000)::BIGINT AS impressions,"
        f" (hash(r, {int(version)}) % 500)::BIGINT AS likes, (r % 7)::BIGINT AS replies"
        f" FROM range({ROWS_PER_DAY}) t(r)"
    )


def rewrite_day_sql(table: str, day: int, version: int, *, append: bool = False) -> list[str]:
    """A day's rewrite: delete it and insert it anew (``append``: the insert alone)."""
    if append:
        return [f"INSERT INTO {table} {mart_rows(day, version)}"]
    return [
        f"DELETE FROM {table} WHERE day = DATE '2026-01-01' + {int(day)}",  # noqa: S608
        f"INSERT INTO {table} {mart_rows(day, version)}",
    ]


READ_28_DAYS = (
    "SELECT day, count(*) AS n, sum(impressions) AS impressions FROM {t}"  # noqa: S608
    f" WHERE day > DATE '2026-01-01' + {DAYS - 1 - WINDOW_DAYS} GROUP BY day ORDER BY day"
)
ANALYST_JOIN = (
    "SELECT p.workspace_id, count(*) AS rows, sum(m.impressions) AS impressions"  # noqa: S608
    " FROM {pub}posts p JOIN {lake}mart_post_daily m ON m.post_id = p.id"
    f" WHERE m.day > DATE '2026-01-01' + {DAYS - 1 - WINDOW_DAYS}"
    " GROUP BY p.workspace_id ORDER BY p.workspace_id"
)


# -- connections -----------------------------------------------------------------------------


def duck() -> Any:
    import duckdb

    return duckdb.connect()


def load(con: Any, *names: str) -> None:
    from warehouse.extensions import load_extension

    for name in names:
        load_extension(con, name)


def lake_session(cfg: dict[str, Any], *, read_only: bool = False, pub: bool = False) -> Any:
    """A DuckDB session with the lake attached as ``lake`` (and publishing as ``pub``)."""
    con = duck()
    ro = ", READ_ONLY" if read_only else ""
    if cfg["kind"] == "split_embedded":
        load(con, "sqlite", "ducklake")
        con.execute(
            f"ATTACH 'ducklake:sqlite:{cfg['catalog']}' AS lake"
            f" (DATA_PATH '{cfg['data_path']}'{ro})"
        )
        if pub:
            con.execute(f"ATTACH '{cfg['pub_path']}' AS pub (TYPE sqlite{ro})")
    else:
        load(con, "httpfs", "postgres", "ducklake")
        con.execute(
            "CREATE SECRET lake_s3 (TYPE s3, KEY_ID 'bench', SECRET 'bench', REGION 'us-east-1',"
            f" ENDPOINT '127.0.0.1:{cfg['s3_port']}', URL_STYLE 'path', USE_SSL false)"
        )
        user = cfg.get("session_user", SUPERUSER)
        con.execute(
            f"ATTACH 'ducklake:postgres:{pg_dsn(cfg, 'lake', user)}' AS lake"
            f" (DATA_PATH 's3://{BUCKET}/data/'{ro})"
        )
        if pub:
            con.execute(f"ATTACH '{pg_dsn(cfg, 'pub', user)}' AS pub (TYPE postgres{ro})")
    return con


def pg_dsn(cfg: dict[str, Any], db: str, user: str = SUPERUSER) -> str:
    return f"host=127.0.0.1 port={cfg['pg_port']} user={user} dbname={db}"


def pub_engine(cfg: dict[str, Any]) -> Any:
    """SQLAlchemy Core engine on the publishing database (split candidates)."""
    from sqlalchemy import create_engine, event

    if cfg["kind"] == "split_embedded":
        engine = create_engine(f"sqlite:///{cfg['pub_path']}")

        @event.listens_for(engine, "connect")
        def _connect(dbapi_con: Any, _record: Any) -> None:
            dbapi_con.isolation_level = None  # SQLAlchemy's recipe: we emit BEGIN ourselves
            cur = dbapi_con.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # A writer takes the write lock up front; a reader's BEGIN takes no lock.
            read = conn.get_execution_options().get("murmur_read", False)
            conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

        return engine
    return create_engine(f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{cfg['pg_port']}/pub")


# -- the publishing transaction ---------------------------------------------------------------

INSERT_POST = "INSERT INTO posts VALUES ({p}, {p}, {p}, {p})"
INSERT_DEST = "INSERT INTO post_destinations VALUES ({p}, {p}, {p}, {p})"
INSERT_KEY = "INSERT INTO idempotency VALUES ({p}, {p})"
FIND_KEY = "SELECT post_id FROM idempotency WHERE key = {p}"


def sa_create_post(engine: Any, post_id: str) -> None:
    """One POST /posts worth of writes, in one transaction (SQLAlchemy Core)."""
    from sqlalchemy import text

    key = "k-" + post_id
    with engine.begin() as conn:
        if conn.execute(text("SELECT post_id FROM idempotency WHERE key = :k"), {"k": key}).first():
            return
        conn.execute(
            text("INSERT INTO posts VALUES (:id, :ws, :body, :at)"),
            {"id": post_id, "ws": 1, "body": "hello " * 10, "at": int(time.time() * 1000)},
        )
        conn.execute(
            text("INSERT INTO post_destinations VALUES (:id, :post, :platform, 'queued')"),
            [{"id": f"{post_id}-{d}", "post": post_id, "platform": d} for d in DESTINATIONS],
        )
        conn.execute(
            text("INSERT INTO idempotency VALUES (:k, :post)"), {"k": key, "post": post_id}
        )


def duck_create_post(cur: Any, post_id: str) -> None:
    """The same transaction on a DuckDB cursor (in the host process, as the API does)."""
    key = "k-" + post_id
    cur.execute("BEGIN TRANSACTION")
    try:
        if cur.execute(FIND_KEY.format(p="?"), [key]).fetchone() is None:
            cur.execute(
                INSERT_POST.format(p="?"), [post_id, 1, "hello " * 10, int(time.time() * 1000)]
            )
            cur.executemany(
                INSERT_DEST.format(p="?"),
                [[f"{post_id}-{d}", post_id, d, "queued"] for d in DESTINATIONS],
            )
            cur.execute(INSERT_KEY.format(p="?"), [key, post_id])
        cur.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):
            cur.execute("ROLLBACK")
        raise


def sa_post_visible(engine: Any, post_id: str) -> int:
    """Destinations found for ``post_id`` (3 when the post is wholly there)."""
    from sqlalchemy import text

    with engine.connect() as conn:
        conn.execution_options(murmur_read=True)
        row = conn.execute(
            text(
                "SELECT count(*) FROM posts p JOIN post_destinations d ON d.post_id = p.id"
                " WHERE p.id = :id"
            ),
            {"id": post_id},
        ).first()
        return int(row[0]) if row else 0


def new_post_id(tag: str) -> str:
    return f"{tag}-{uuid.uuid4().hex[:20]}"


# -- quack (candidate a) ---------------------------------------------------------------------


def quack_client(uri: str) -> Any:
    con = duck()
    load(con, "httpfs", "quack")
    con.execute(f"CREATE SECRET bench_quack (TYPE quack, TOKEN '{QUACK_TOKEN}')")
    con.execute(f"ATTACH '{uri}' AS murmur")
    return con


def on_host(con: Any, uri: str, sql: str) -> list[Any]:
    rows: list[Any] = con.execute("SELECT * FROM quack_query(?, ?)", [uri, sql]).fetchall()
    return rows


def script(statements: list[str]) -> str:
    return "BEGIN TRANSACTION;\n" + ";\n".join(statements) + ";\nCOMMIT;"


def in_transaction(con: Any, statements: list[str]) -> None:
    """Run ``statements`` on a lake session in one transaction, rolled back on any failure."""
    con.execute("BEGIN TRANSACTION")
    try:
        for sql in statements:
            con.execute(sql)
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):
            con.execute("ROLLBACK")
        raise


def host_main(cfg: dict[str, Any], hready: Any, go: Any, stop: Any, out: Any, writers: int) -> None:
    """Own the DuckDB file, serve Quack, and (when told) run publishing writers in-process."""
    import duckdb

    con = duckdb.connect(cfg["db_path"])
    con.execute("SET checkpoint_threshold = '256MB'")  # as the host does
    con.execute("CHECKPOINT")
    load(con, "httpfs", "quack")
    con.execute("SELECT * FROM quack_serve(?, token := ?)", [cfg["uri"], QUACK_TOKEN])
    hready.put("host")
    if writers:
        go.wait(180)
        recs = [Recorder(f"writer{i + 1}") for i in range(writers)]
        threads = [
            threading.Thread(target=paced_writer, args=(rec, cfg, con.cursor(), None))
            for rec in recs
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for rec in recs:
            out.put(rec.result(cfg["seconds"]))
    stop.wait(900)
    con.close()


@contextlib.contextmanager
def host_running(ctx: Any, cfg: dict[str, Any], writers: int = 0) -> Iterator[tuple[Any, Any]]:
    """A host process for candidate a; yields (go event, out queue)."""
    hready, go, stop, out = ctx.Queue(), ctx.Event(), ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=host_main, args=(cfg, hready, go, stop, out, writers))
    proc.start()
    try:
        hready.get(timeout=120)
        yield go, out
    finally:
        stop.set()
        proc.join(30)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)


# -- roles of the mixed load -------------------------------------------------------------------


def _start(ready: Any, go: Any, role: str) -> None:
    ready.put(role)
    if not go.wait(180):
        raise SystemExit(f"{role}: never told to start")


def paced_writer(rec: Recorder, cfg: dict[str, Any], cur: Any, engine: Any) -> None:
    """Create posts at cfg['rate'] per second for cfg['seconds'] (DuckDB cursor or engine)."""
    interval = 1.0 / cfg["rate"]
    start = time.monotonic()
    deadline = start + cfg["seconds"]
    due = start
    done = 0
    while time.monotonic() < deadline:
        post_id = new_post_id(rec.role)
        if cur is not None:
            ok = rec.timed("post", lambda p=post_id: duck_create_post(cur, p))  # type: ignore[misc]
        else:
            ok = rec.timed("post", lambda p=post_id: sa_create_post(engine, p))  # type: ignore[misc]
        done += ok
        due += interval
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    elapsed = time.monotonic() - start
    rec.extra["posts"] = done
    rec.extra["posts_per_s"] = round(done / elapsed, 1)


def role_writer(cfg: dict[str, Any], name: str, ready: Any, go: Any, out: Any) -> None:
    rec = Recorder(name)
    engine = pub_engine(cfg)
    with engine.connect():
        pass  # open the pool's connection before the clock starts
    _start(ready, go, name)
    paced_writer(rec, cfg, None, engine)
    out.put(rec.result(cfg["seconds"]))


def role_pipeline(cfg: dict[str, Any], name: str, ready: Any, go: Any, out: Any) -> None:
    """Rewrite one day per transaction, round-robin over the days, for cfg['seconds']."""
    rec = Recorder(name)
    if cfg["kind"] == "duckdb_host":
        con = quack_client(cfg["uri"])

        def rewrite(day: int, version: int) -> None:
            on_host(con, cfg["uri"], script(rewrite_day_sql("mart_post_daily", day, version)))

    else:
        con = lake_session(cfg)

        def rewrite(day: int, version: int) -> None:
            in_transaction(con, rewrite_day_sql("lake.mart_post_daily", day, version))

    _start(ready, go, name)
    start = time.monotonic()
    n = 0
    while time.monotonic() < start + cfg["seconds"]:
        rec.timed("rewrite_day", lambda n=n: rewrite(n % DAYS, n + 1))  # type: ignore[misc]
        n += 1
    elapsed = time.monotonic() - start
    done = rec.result(elapsed)["samples"].get("rewrite_day", {}).get("n", 0)
    rec.extra["days_rewritten"] = done
    rec.extra["rows_per_s"] = round(done * ROWS_PER_DAY / elapsed)
    out.put(rec.result(elapsed))


def role_reader(cfg: dict[str, Any], name: str, ready: Any, go: Any, out: Any) -> None:
    rec = Recorder(name)
    if cfg["kind"] == "duckdb_host":
        con = quack_client(cfg["uri"])
        sql = READ_28_DAYS.format(t="mart_post_daily")

        def read() -> None:
            rows = on_host(con, cfg["uri"], sql)
            if len(rows) != WINDOW_DAYS:
                raise RuntimeError(f"{len(rows)} days")

    else:
        con = lake_session(cfg, read_only=True)
        sql = READ_28_DAYS.format(t="lake.mart_post_daily")

        def read() -> None:
            rows = con.execute(sql).fetchall()
            if len(rows) != WINDOW_DAYS:
                raise RuntimeError(f"{len(rows)} days")

    _start(ready, go, name)
    start = time.monotonic()
    while time.monotonic() < start + cfg["seconds"]:
        if not rec.timed("read_28_days", read):
            time.sleep(0.05)
    out.put(rec.result(time.monotonic() - start))


def role_analyst(cfg: dict[str, Any], name: str, ready: Any, go: Any, out: Any) -> None:
    """Join posts with mart_post_daily every 200 ms; then try to write on both sides."""
    import duckdb

    rec = Recorder(name)
    kind = cfg["kind"]
    if kind == "duckdb_host":
        # What `murmur attach` printed under ADR 0001: a READ_ONLY Quack attach.
        con = duck()
        load(con, "httpfs", "quack")
        con.execute(f"CREATE SECRET bench_quack (TYPE quack, TOKEN '{QUACK_TOKEN}')")
        con.execute(f"ATTACH '{cfg['uri']}' AS murmur (READ_ONLY)")
        join = ANALYST_JOIN.format(pub="murmur.", lake="murmur.")
    else:
        if kind == "split_scale":
            cfg = {**cfg, "session_user": "analyst"}
        con = lake_session(cfg, read_only=True, pub=True)
        join = ANALYST_JOIN.format(pub="pub.", lake="lake.")

    def run_join() -> None:
        rows = con.execute(join).fetchall()
        if len(rows) != 10:
            raise RuntimeError(f"join returned {len(rows)} rows")

    _start(ready, go, name)
    start = time.monotonic()
    while time.monotonic() < start + cfg["seconds"]:
        rec.timed("join", run_join)
        time.sleep(0.2)
    elapsed = time.monotonic() - start
    attempts: dict[str, str] = {}
    writes = {
        "write_posts": "INSERT INTO {db}.posts VALUES ('analyst', 1, 'x', 0)",
        "write_mart": "DELETE FROM {db}.mart_post_daily WHERE day = DATE '2026-01-01'",
    }
    for label, sql in writes.items():
        db = "murmur" if kind == "duckdb_host" else ("pub" if "posts" in label else "lake")
        try:
            con.execute(sql.format(db=db))
            attempts[label] = "ACCEPTED"
        except duckdb.Error as exc:
            attempts[label] = "refused: " + short(exc)
    if kind == "duckdb_host":
        # The workaround analysts had then: the join run on the host through quack_query.
        on_host_join = ANALYST_JOIN.format(pub="", lake="")
        rec.timed("join_via_quack_query", lambda: on_host(con, cfg["uri"], on_host_join))
        try:
            on_host(con, cfg["uri"], "INSERT INTO posts VALUES ('analyst-qq', 1, 'x', 0)")
            attempts["write_posts_via_quack_query"] = "ACCEPTED"
        except duckdb.Error as exc:
            attempts["write_posts_via_quack_query"] = "refused: " + short(exc)
    if kind == "split_scale":
        # The PostgreSQL role, not the attach option, is the enforcement: attach read-write.
        rw = lake_session(cfg, read_only=False, pub=True)
        for label, sql in writes.items():
            db = "pub" if "posts" in label else "lake"
            try:
                rw.execute(sql.format(db=db))
                attempts[label + "_rw_attach_as_analyst_role"] = "ACCEPTED"
            except duckdb.Error as exc:
                attempts[label + "_rw_attach_as_analyst_role"] = "refused: " + short(exc)
    rec.extra["writes"] = attempts
    out.put(rec.result(elapsed))


# -- running a group of role processes ---------------------------------------------------------


Role = tuple[Callable[..., None], tuple[Any, ...]]


def run_group(
    ctx: Any, roles: list[Role], timeout: float, host_writers: int = 0, cfg: Any = None
) -> list[dict[str, Any]]:
    ready, out = ctx.Queue(), ctx.Queue()
    results: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        if host_writers:
            go, host_out = stack.enter_context(host_running(ctx, cfg, writers=host_writers))
        else:
            go, host_out = ctx.Event(), None
        procs = [ctx.Process(target=fn, args=(*args, ready, go, out)) for fn, args in roles]
        for p in procs:
            p.start()
        try:
            for _ in procs:
                ready.get(timeout=180)
            go.set()
            end = time.monotonic() + timeout
            while len(results) < len(procs) and time.monotonic() < end:
                try:
                    results.append(out.get(timeout=1))
                except Exception:
                    if all(not p.is_alive() for p in procs) and out.empty():
                        break
            if host_out is not None:
                for _ in range(host_writers):
                    results.append(host_out.get(timeout=timeout))
        finally:
            for p in procs:
                p.join(15)
                if p.is_alive():
                    p.terminate()
                    p.join(5)
        for p, (_fn, args) in zip(procs, roles, strict=True):
            if p.exitcode not in (0, None):
                results.append({"role": args[1], "errors": 1, "first_error": f"exit {p.exitcode}"})
    return results


def mixed_load(ctx: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    roles: list[Role] = [
        (role_pipeline, (cfg, "pipeline")),
        (role_reader, (cfg, "reader1")),
        (role_reader, (cfg, "reader2")),
        (role_analyst, (cfg, "analyst")),
    ]
    host_writers = 0
    if cfg["kind"] == "duckdb_host":
        host_writers = 2
    else:
        roles += [(role_writer, (cfg, "writer1")), (role_writer, (cfg, "writer2"))]
    load_before = os.getloadavg()
    results = run_group(ctx, roles, cfg["seconds"] + 240, host_writers, cfg)
    return {
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "roles": sorted(results, key=lambda r: str(r.get("role"))),
    }


def publishing_alone(ctx: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    """The two publishing writers with nothing else running: the baseline for their p99."""
    quiet = {**cfg, "seconds": min(cfg["seconds"], 10)}
    if cfg["kind"] == "duckdb_host":
        results = run_group(ctx, [], quiet["seconds"] + 60, 2, quiet)
    else:
        roles: list[Role] = [(role_writer, (quiet, "writer1")), (role_writer, (quiet, "writer2"))]
        results = run_group(ctx, roles, quiet["seconds"] + 60)
    return {"roles": sorted(results, key=lambda r: str(r.get("role")))}


# -- replicas: two API-like processes on one store -------------------------------------------


def replica_main(cfg: dict[str, Any], name: str, first: bool, pipe: Any, out: Any) -> None:
    import duckdb

    rounds = cfg["replica_rounds"]
    rec = Recorder(name)
    seen = missed = 0
    kind = cfg["kind"]
    write: Callable[[str], None]
    check: Callable[[str], int]
    if kind == "duckdb_host":
        if first:
            con = duckdb.connect(cfg["db_path"])
            load(con, "httpfs", "quack")
            con.execute("SELECT * FROM quack_serve(?, token := ?)", [cfg["uri"], QUACK_TOKEN])
            cur = con.cursor()
            pipe.send("serving")

            def write(p: str) -> None:
                duck_create_post(cur, p)

            def check(p: str) -> int:
                row = cur.execute(
                    "SELECT count(*) FROM posts p JOIN post_destinations d ON d.post_id = p.id"
                    " WHERE p.id = ?",
                    [p],
                ).fetchone()
                return int(row[0]) if row else 0

        else:
            pipe.recv()
            try:  # what a second `murmur serve` does first: open the file itself
                duckdb.connect(cfg["db_path"]).close()
                rec.extra["second_process_opens_file"] = "opened (unexpected)"
            except duckdb.Error as exc:
                rec.extra["second_process_opens_file"] = (
                    "refused: " + str(exc).splitlines()[0][:200]
                )
            con = quack_client(cfg["uri"])
            rec.extra["mode"] = "Quack client (quack_query, each statement autocommitted)"

            def write(p: str) -> None:
                # Over Quack there is no client transaction: one script, server-side.
                on_host(
                    con,
                    cfg["uri"],
                    script(
                        [
                            f"INSERT INTO posts VALUES ('{p}', 1, 'hi', 0)",  # noqa: S608
                            *(
                                f"INSERT INTO post_destinations VALUES ('{p}-{d}', '{p}',"  # noqa: S608
                                f" '{d}', 'queued')"
                                for d in DESTINATIONS
                            ),
                            f"INSERT INTO idempotency VALUES ('k-{p}', '{p}')",  # noqa: S608
                        ]
                    ),
                )

            def check(p: str) -> int:
                rows = on_host(
                    con,
                    cfg["uri"],
                    "SELECT count(*) FROM posts p JOIN post_destinations d"  # noqa: S608
                    f" ON d.post_id = p.id WHERE p.id = '{p}'",
                )
                return int(rows[0][0])

    else:
        engine = pub_engine(cfg)

        def write(p: str) -> None:
            sa_create_post(engine, p)

        def check(p: str) -> int:
            return sa_post_visible(engine, p)

        if first:
            pipe.send("ready")
        else:
            pipe.recv()
    for i in range(rounds):
        mine = (i % 2 == 0) == first
        if mine:
            post_id = new_post_id(name)
            rec.timed("write", lambda p=post_id: write(p))  # type: ignore[misc]
            pipe.send(post_id)
            pipe.recv()
        else:
            post_id = pipe.recv()
            found: list[int] = []
            rec.timed("read_peer_write", lambda p=post_id, f=found: f.append(check(p)))  # type: ignore[misc]
            found = found or [0]
            if found[0] == len(DESTINATIONS):
                seen += 1
            else:
                missed += 1
            pipe.send("ok")
    rec.extra["peer_writes_seen_at_once"] = seen
    rec.extra["peer_writes_missed"] = missed
    out.put(rec.result(0))
    if kind == "duckdb_host" and first:
        pipe.recv()  # keep serving until the client is done


def replicas(ctx: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    a_end, b_end = ctx.Pipe()
    out = ctx.Queue()
    a = ctx.Process(target=replica_main, args=(cfg, "api1", True, a_end, out))
    b = ctx.Process(target=replica_main, args=(cfg, "api2", False, b_end, out))
    a.start()
    b.start()
    results = [out.get(timeout=300), out.get(timeout=300)]
    if cfg["kind"] == "duckdb_host":
        b_end.send("done")
    for p in (a, b):
        p.join(30)
        if p.is_alive():
            p.terminate()
    return {"roles": sorted(results, key=lambda r: str(r["role"]))}


# -- kill -9 ---------------------------------------------------------------------------------


def crash_writer_main(cfg: dict[str, Any], acks: Any) -> None:
    """Create posts as fast as possible; report each id only once its commit returned."""
    import duckdb

    if cfg["kind"] == "duckdb_host":
        con = duckdb.connect(cfg["db_path"])  # the owner, as the host is
        con.execute("SET checkpoint_threshold = '256MB'")
        cur = con.cursor()
        while True:
            post_id = new_post_id("crash")
            duck_create_post(cur, post_id)
            acks.put(post_id)
    else:
        engine = pub_engine(cfg)
        while True:
            post_id = new_post_id("crash")
            sa_create_post(engine, post_id)
            acks.put(post_id)


def crash_check_main(cfg: dict[str, Any], ids: list[str], out: Any) -> None:
    import duckdb

    started = time.perf_counter()
    found: dict[str, int] = {}
    if cfg["kind"] == "duckdb_host":
        con = duckdb.connect(cfg["db_path"])  # replays the WAL the dead owner left
        con.execute("CHECKPOINT")  # what warehouse.store.prepare does first
        opened = time.perf_counter() - started
        for post_id in ids:
            row = con.execute(
                "SELECT count(*) FROM post_destinations WHERE post_id = ?", [post_id]
            ).fetchone()
            found[post_id] = int(row[0]) if row else 0
        con.close()
    else:
        engine = pub_engine(cfg)
        with engine.connect():
            opened = time.perf_counter() - started
        for post_id in ids:
            found[post_id] = sa_post_visible(engine, post_id)
    whole = sum(1 for n in found.values() if n == len(DESTINATIONS))
    out.put({"acknowledged": len(ids), "found_whole": whole, "reopen_ms": round(opened * 1000, 1)})


def crash_publishing(ctx: Any, cfg: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    acks = ctx.Queue()
    proc = ctx.Process(target=crash_writer_main, args=(cfg, acks))
    proc.start()
    target = rng.randint(300, 900)
    ids: list[str] = []
    deadline = time.monotonic() + 120
    while len(ids) < target and time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            ids.append(acks.get(timeout=1))
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)  # mid-transaction: it writes without pause
    proc.join(10)
    while True:  # acks that reached the queue before the kill
        try:
            ids.append(acks.get(timeout=0.5))
        except Exception:
            break
    out = ctx.Queue()
    checker = ctx.Process(target=crash_check_main, args=(cfg, ids, out))
    checker.start()
    result: dict[str, Any] = out.get(timeout=300)
    checker.join(30)
    result["killed_exitcode"] = proc.exitcode
    return result


def crash_pipeline_main(cfg: dict[str, Any], progress: Any) -> None:
    con = lake_session(cfg)
    n = 0
    while True:
        n += 1
        con.execute("BEGIN TRANSACTION")
        for sql in rewrite_day_sql("lake.mart_post_daily", n % DAYS, 1000 + n):
            con.execute(sql)
        con.execute("COMMIT")
        progress.put(n)


def check_mart(cfg: dict[str, Any], table: str, out: Any) -> None:
    """Per-day row counts of a mart in a fresh process: every day must be whole, once."""
    try:
        if cfg["kind"] == "duckdb_host":
            con = quack_client(cfg["uri"])
            rows = on_host(con, cfg["uri"], f"SELECT day, count(*) FROM {table} GROUP BY day")  # noqa: S608
        else:
            con = lake_session(cfg, read_only=True)
            rows = con.execute(f"SELECT day, count(*) FROM lake.{table} GROUP BY day").fetchall()  # noqa: S608
        bad = [str(d) for d, n in rows if n != ROWS_PER_DAY]
        out.put({"days": len(rows), "days_not_whole": bad, "rows": sum(n for _, n in rows)})
    except Exception as exc:
        out.put({"error": f"{type(exc).__name__}: {exc}"[:300]})


def mart_check(ctx: Any, cfg: dict[str, Any], table: str = "mart_post_daily") -> dict[str, Any]:
    out = ctx.Queue()
    p = ctx.Process(target=check_mart, args=(cfg, table, out))
    p.start()
    result: dict[str, Any] = out.get(timeout=300)
    p.join(30)
    return result


def crash_pipeline(ctx: Any, cfg: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    progress = ctx.Queue()
    proc = ctx.Process(target=crash_pipeline_main, args=(cfg, progress))
    proc.start()
    commits = 0
    with contextlib.suppress(Exception):
        commits = progress.get(timeout=120)
    time.sleep(rng.uniform(0.3, 1.5))
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(10)
    while True:
        try:
            commits = progress.get(timeout=0.3)
        except Exception:
            break
    result = mart_check(ctx, cfg)
    result["commits_before_kill"] = commits
    return result


# -- two pipelines on different days of one table --------------------------------------------


def parallel_pipeline_main(
    cfg: dict[str, Any],
    table: str,
    days: list[int],
    retries: int,
    append: bool,
    ready: Any,
    go: Any,
    out: Any,
) -> None:
    rec = Recorder(f"pipeline_days_{days[0]}")
    if cfg["kind"] == "duckdb_host":
        con = quack_client(cfg["uri"])

        def rewrite(day: int, version: int) -> None:
            on_host(con, cfg["uri"], script(rewrite_day_sql(table, day, version, append=append)))

    else:
        con = lake_session(cfg)

        def rewrite(day: int, version: int) -> None:
            in_transaction(con, rewrite_day_sql(f"lake.{table}", day, version, append=append))

    ready.put(rec.role)
    go.wait(180)
    failed = succeeded = 0
    first_failure: str | None = None
    for i, day in enumerate(days):
        start = time.perf_counter()
        for attempt in range(retries + 1):
            try:
                rewrite(day, 5000 + i)
                succeeded += 1
                break
            except Exception as exc:
                failed += 1
                first_failure = first_failure or " ".join(str(exc).split())[:300]
                if attempt == retries:
                    rec.error(exc)
                else:
                    time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
        rec.samples.setdefault("day", []).append((time.perf_counter() - start) * 1000)
    rec.extra.update(
        {
            "days": len(days),
            "failed_commits": failed,
            "days_done": succeeded,
            "first_failure": first_failure,
        }
    )
    out.put(rec.result(0))


def parallel_pipelines(
    ctx: Any, cfg: dict[str, Any], table: str, retries: int, append: bool = False
) -> dict[str, Any]:
    ready, go, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    per = cfg["parallel_days"]
    day_sets = [list(range(0, 2 * per, 2)), list(range(1, 2 * per, 2))]
    procs = [
        ctx.Process(
            target=parallel_pipeline_main, args=(cfg, table, days, retries, append, ready, go, out)
        )
        for days in day_sets
    ]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=180)
    go.set()
    results = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(30)
    return {
        "table": table,
        "shape": "insert only" if append else "delete + insert",
        "retries_allowed": retries,
        "roles": results,
        "failed_commits": sum(r["failed_commits"] for r in results),
        "days_done": sum(r["days_done"] for r in results),
        "days_asked": sum(r["days"] for r in results),
        "mart_after": mart_check(ctx, cfg, table),
    }


# -- setting up each candidate ----------------------------------------------------------------


def seed_duckdb(cfg: dict[str, Any]) -> None:
    import duckdb

    con = duckdb.connect(cfg["db_path"])
    for ddl in PUB_DDL:
        con.execute(ddl)
    seed_posts_duck(con, "")
    con.execute(MART_DDL)
    for day in range(DAYS):
        con.execute(f"INSERT INTO mart_post_daily {mart_rows(day, 0)}")
    con.execute("CHECKPOINT")
    con.close()


def seed_posts_duck(con: Any, prefix: str) -> None:
    con.execute(
        f"INSERT INTO {prefix}posts SELECT 'p' || lpad(r::VARCHAR, 8, '0'), (r % 10)::INTEGER,"  # noqa: S608
        f" 'seed', 0 FROM range({ROWS_PER_DAY}) t(r)"
    )


def seed_split(cfg: dict[str, Any]) -> None:
    """Publishing schema + 25k posts (SQLAlchemy), then the 1M-row mart in DuckLake."""
    from sqlalchemy import text

    engine = pub_engine(cfg)
    with engine.begin() as conn:
        for ddl in (*PUB_DDL, PUB_INDEX):
            conn.execute(text(ddl))
        conn.execute(
            text("INSERT INTO posts VALUES (:id, :ws, 'seed', 0)"),
            [{"id": f"p{r:08d}", "ws": r % 10} for r in range(ROWS_PER_DAY)],
        )
        if cfg["kind"] == "split_scale":
            conn.execute(text("GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst"))
    engine.dispose()
    con = lake_session(cfg)
    con.execute(MART_DDL.replace("mart_post_daily", "lake.mart_post_daily"))
    con.execute("BEGIN TRANSACTION")
    for day in range(DAYS):
        con.execute(f"INSERT INTO lake.mart_post_daily {mart_rows(day, 0)}")
    con.execute("COMMIT")
    # A second copy partitioned by day: the write shape for parallel partitions.
    con.execute(MART_DDL.replace("mart_post_daily", "lake.mart_post_daily_p"))
    con.execute("ALTER TABLE lake.mart_post_daily_p SET PARTITIONED BY (day)")
    con.execute("INSERT INTO lake.mart_post_daily_p SELECT * FROM lake.mart_post_daily")
    # Empty: two pipelines each inserting their days (no delete) into one table.
    con.execute(MART_DDL.replace("mart_post_daily", "lake.mart_post_daily_insert_only"))
    con.close()
    if cfg["kind"] == "split_embedded":
        import sqlite3

        # journal_mode=WAL persists in the file: every later attach uses it.
        cat = sqlite3.connect(cfg["catalog"])
        mode = cat.execute("PRAGMA journal_mode=WAL").fetchone()
        cat.close()
        cfg["catalog_journal_mode"] = mode[0] if mode else None
    else:
        # The analyst's PostgreSQL role may read the DuckLake catalog and nothing more.
        import psycopg

        with psycopg.connect(pg_dsn(cfg, "lake"), autocommit=True) as pg:
            pg.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst")


@contextlib.contextmanager
def postgres_cluster(work: Path) -> Iterator[dict[str, Any]]:
    """A throwaway PostgreSQL cluster (benchmarks/servers.py), the databases and role used here."""
    import psycopg

    with postgres_server(work) as server:
        with psycopg.connect(server.dsn("postgres"), autocommit=True) as pg:
            pg.execute("CREATE DATABASE pub")
            pg.execute("CREATE DATABASE lake")
            pg.execute("CREATE ROLE analyst LOGIN")
        version = subprocess.getoutput(f"{postgres_bin() / 'postgres'} -V")
        yield {"pg_port": server.port, "pg_version": version}


@contextlib.contextmanager
def s3_bucket(work: Path) -> Iterator[dict[str, Any]]:
    """moto's S3-compatible server on loopback (benchmarks/servers.py), with the lake's bucket."""
    with s3_server(work) as endpoint:
        create_bucket(endpoint, BUCKET)
        yield {"s3_port": int(endpoint.rsplit(":", 1)[1])}


def s3_objects(cfg: dict[str, Any]) -> dict[str, Any]:
    """How many objects the lake's bucket holds (the first 1,000 listed): data went to S3."""
    import re

    import httpx

    body = httpx.get(f"http://127.0.0.1:{cfg['s3_port']}/{BUCKET}?list-type=2", timeout=30).text
    keys = re.findall(r"<Key>([^<]+)</Key>", body)
    return {"objects_listed": len(keys), "parquet": sum(k.endswith(".parquet") for k in keys)}


@contextlib.contextmanager
def candidate(kind: str, seconds: float, rate: float) -> Iterator[dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix=f"murmur-adr2-{kind}-"))
    cfg: dict[str, Any] = {
        "kind": kind,
        "seconds": seconds,
        "rate": rate,
        "replica_rounds": 200,
        "parallel_days": 6,
    }
    try:
        with contextlib.ExitStack() as stack:
            if kind == "duckdb_host":
                cfg["db_path"] = str(work / "murmur.duckdb")
                cfg["uri"] = f"quack:127.0.0.1:{_free_port()}"
                seed_duckdb(cfg)
            elif kind == "split_embedded":
                (work / "lake_files").mkdir()
                cfg["pub_path"] = str(work / "publishing.sqlite")
                cfg["catalog"] = str(work / "lake.sqlite")
                cfg["data_path"] = str(work / "lake_files") + "/"
                seed_split(cfg)
            else:
                cfg.update(stack.enter_context(postgres_cluster(work)))
                cfg.update(stack.enter_context(s3_bucket(work)))
                cfg["data_path"] = f"s3://{BUCKET}/data/"
                seed_split(cfg)
            yield cfg
    finally:
        shutil.rmtree(work, ignore_errors=True)


def guarded(name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    print(f"  {name}…", flush=True)
    started = time.monotonic()
    try:
        result = fn()
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"[:400]}
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    return result


def measure(ctx: Any, kind: str, seconds: float, rate: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    print(f"{kind}:", flush=True)
    out: dict[str, Any] = {"candidate": kind}
    with candidate(kind, seconds, rate) as cfg:
        out["setup"] = {
            k: v for k, v in cfg.items() if k in ("pg_version", "catalog_journal_mode", "data_path")
        }
        out["publishing_alone"] = guarded("publishing alone", lambda: publishing_alone(ctx, cfg))
        out["mixed_load"] = guarded("mixed load", lambda: mixed_load(ctx, cfg))
        if kind == "duckdb_host":
            out["replicas"] = guarded("replicas", lambda: replicas(ctx, cfg))
            with host_running(ctx, cfg):
                out["parallel_pipelines_mart_post_daily_retries0"] = guarded(
                    "parallel pipelines",
                    lambda: parallel_pipelines(ctx, cfg, "mart_post_daily", 0),
                )
            out["crash_publishing"] = guarded(
                "kill -9 writer", lambda: crash_publishing(ctx, cfg, rng)
            )
        else:
            out["replicas"] = guarded("replicas", lambda: replicas(ctx, cfg))
            out["crash_publishing"] = guarded(
                "kill -9 writer", lambda: crash_publishing(ctx, cfg, rng)
            )
            out["crash_pipeline"] = guarded(
                "kill -9 pipeline", lambda: crash_pipeline(ctx, cfg, rng)
            )
            for table in ("mart_post_daily", "mart_post_daily_p"):
                for retries in (0, 20):
                    out[f"parallel_pipelines_{table}_retries{retries}"] = guarded(
                        f"parallel pipelines {table} retries={retries}",
                        lambda t=table, r=retries: parallel_pipelines(ctx, cfg, t, r),  # type: ignore[misc]
                    )
            if kind == "split_scale":
                out["s3_objects"] = guarded("s3 objects", lambda: s3_objects(cfg))
            out["parallel_pipelines_insert_only_retries0"] = guarded(
                "parallel pipelines, insert only",
                lambda: parallel_pipelines(ctx, cfg, "mart_post_daily_insert_only", 0, True),
            )
    return out


# -- summary ----------------------------------------------------------------------------------


def headline(run: dict[str, Any]) -> dict[str, Any]:
    """The figures the ADR's table shows."""

    def roles(section: str) -> dict[str, dict[str, Any]]:
        return {str(r.get("role")): r for r in run.get(section, {}).get("roles", [])}

    def stat(r: dict[str, Any], name: str) -> dict[str, Any]:
        s: dict[str, Any] = r.get("samples", {}).get(name, {})
        return s

    mixed = roles("mixed_load")
    h: dict[str, Any] = {"candidate": run["candidate"]}
    for name, r in mixed.items():
        for sample, s in r.get("samples", {}).items():
            h[f"{name}.{sample}"] = {k: s.get(k) for k in ("n", "p50", "p99")} | {
                "per_s": round(s.get("n", 0) / max(float(r.get("seconds") or 0), 1e-9), 1)
            }
        h[f"{name}.errors"] = r.get("errors")
        if r.get("first_error"):
            h[f"{name}.first_error"] = r["first_error"]
        for k in ("posts_per_s", "rows_per_s", "writes"):
            if k in r:
                h[f"{name}.{k}"] = r[k]
    alone = roles("publishing_alone")
    h["publishing_alone"] = {
        n: {**{k: stat(r, "post").get(k) for k in ("p50", "p99")}, "per_s": r.get("posts_per_s")}
        for n, r in alone.items()
    }
    posts = [stat(r, "post") for n, r in mixed.items() if n.startswith("writer")]
    h["posts_per_s_total"] = round(
        sum(float(r.get("posts_per_s", 0)) for n, r in mixed.items() if n.startswith("writer")), 1
    )
    h["post_p99_ms_worst"] = max((float(p.get("p99", 0)) for p in posts), default=None)
    h["mixed_errors"] = sum(int(r.get("errors", 0)) for r in mixed.values())
    h["loadavg"] = [
        run.get("mixed_load", {}).get("loadavg_before"),
        run.get("mixed_load", {}).get("loadavg_after"),
    ]
    rep = roles("replicas")
    h["replicas"] = {
        n: {
            k: r.get(k)
            for k in ("peer_writes_seen_at_once", "peer_writes_missed", "second_process_opens_file")
            if k in r
        }
        for n, r in rep.items()
    }
    for key in ("crash_publishing", "crash_pipeline"):
        if key in run:
            h[key] = {k: v for k, v in run[key].items() if k not in ("wall_s",)}
    for key, val in run.items():
        if key.startswith("parallel_pipelines"):
            h[key] = {
                k: val.get(k) for k in ("failed_commits", "days_done", "days_asked", "error")
            } | {"mart_after": val.get("mart_after")}
            firsts = [
                r.get("first_failure") for r in val.get("roles", []) if r.get("first_failure")
            ]
            if firsts:
                h[key]["first_failure"] = firsts[0]
    return h


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20, help="Mixed-load duration.")
    parser.add_argument(
        "--rate",
        type=float,
        default=160,
        help="Posts/s each of the two publishing writers aims at.",
    )
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--repeats", type=int, default=1, help="Runs of each candidate.")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="Where to write figures.")
    args = parser.parse_args(argv)
    ctx = mp.get_context("spawn")
    import duckdb
    import sqlalchemy

    report: dict[str, Any] = {
        "command": "python -m benchmarks.store_alternatives "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "duckdb": duckdb.__version__,
        "sqlalchemy": sqlalchemy.__version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "seconds": args.seconds,
        "rate_per_writer": args.rate,
        "mart_rows": DAYS * ROWS_PER_DAY,
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "candidates": {},
    }
    started = time.monotonic()
    kinds = [c.strip() for c in args.candidates.split(",") if c.strip()]
    for repeat in range(args.repeats):
        for index, kind in enumerate(kinds):
            run = measure(ctx, kind, args.seconds, args.rate, args.seed + 10 * repeat + index)
            run["repeat"] = repeat + 1
            run["headline"] = headline(run)
            report["candidates"].setdefault(kind, []).append(run)
            print(json.dumps(run["headline"]), flush=True)
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report["wall_s"] = round(time.monotonic() - started, 1)
    args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
