"""The new store's parts under the mixed load of ADR 0002, with Murmur's own code and schema.

``benchmarks/store_alternatives.py`` weighed the designs with tables of its own; this runs
what was built (``warehouse.pubdb`` with the 32 publishing tables, ``synchronous=FULL``, and
``warehouse.lake`` with its retry policy) on each profile, every role an OS process:

* two **publishing writers**, each paced at ``--rate`` posts/s, one transaction per post as
  ``POST /posts`` writes it: look up the idempotency key, insert the post (every column), its
  three destinations and the idempotency record;
* a **pipeline** replacing one day of ``mart_post_daily`` (25,000 rows) per lake transaction,
  round-robin over 28 seeded days;
* a **reader** aggregating the 28 days from the lake;
* an **analyst** joining ``pub.posts`` with ``lake.mart_post_daily`` in one DuckDB session.

First the writers alone, then all roles together, then the two writers back to back with
no pause (saturation: does each get its share of the write lock?). Usage::

    python -m benchmarks.new_store --seconds 20 --profiles embedded scale
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
from sqlalchemy import select

from benchmarks.recording import Recorder
from benchmarks.servers import create_bucket, postgres_server, s3_server
from warehouse.ids import utcnow
from warehouse.lake import S3, Lake, attach_publishing, run
from warehouse.pubdb.engine import PubDB, sqlite_url
from warehouse.pubdb.schema import idempotency_keys, post_destinations, posts

DAYS = 28
DAY_ROWS = 25_000
FIRST_DAY = date(2026, 10, 1)
PLATFORMS = ("x", "linkedin", "bluesky")


def create_post(db: PubDB, number: int, writer: str) -> None:
    """One ``POST /posts`` worth of writes in one transaction."""
    post_id = f"post_{writer}_{number}_{uuid.uuid4().hex[:8]}"
    key = f"key_{post_id}"
    now = utcnow()
    with db.transaction() as conn:
        replay = conn.execute(
            select(idempotency_keys.c.response_status).where(
                idempotency_keys.c.api_key_id == "key_bench",
                idempotency_keys.c.method == "POST",
                idempotency_keys.c.path == "/api/public/v1/posts",
                idempotency_keys.c.key == key,
            )
        ).first()
        if replay is not None:
            return
        conn.execute(
            posts.insert().values(
                id=post_id,
                workspace_id="ws_bench",
                text="Launching today: " + "words " * 20,
                status="scheduled",
                scheduled_at=now + timedelta(hours=1),
                tags=["launch", "q4"],
                media_ids=[],
                platform_options={"x": {"reply_settings": "everyone"}},
                created_by="key_bench",
                created_at=now,
                updated_at=now,
            )
        )
        conn.execute(
            post_destinations.insert(),
            [
                {
                    "id": f"{post_id}_{platform}",
                    "post_id": post_id,
                    "workspace_id": "ws_bench",
                    "account_id": f"acc_{platform}",
                    "platform": platform,
                    "status": "pending",
                    "created_at": now,
                    "updated_at": now,
                }
                for platform in PLATFORMS
            ],
        )
        conn.execute(
            idempotency_keys.insert().values(
                api_key_id="key_bench",
                method="POST",
                path="/api/public/v1/posts",
                key=key,
                fingerprint="f" * 64,
                status="done",
                response_status=201,
                response_body=json.dumps({"id": post_id}),
                locked_until=now,
                created_at=now,
                expires_at=now + timedelta(days=1),
            )
        )


def replace_day(
    con: duckdb.DuckDBPyConnection, day: date, version: int, rows: int = DAY_ROWS
) -> None:
    def work(c: duckdb.DuckDBPyConnection) -> None:
        c.execute("DELETE FROM lake.mart_post_daily WHERE day = ?", [day])
        c.execute(
            "INSERT INTO lake.mart_post_daily SELECT 'ws_bench', ?::DATE, 'x', 'acc_x', NULL,"
            " 'ext_' || i, 'post_' || i, 'own', i + ?, i, i, i, i, i, i, i, i, 0.5"
            " FROM range(?) t(i)",
            [day, version, rows],
        )

    run(con, work)


def _wait_for_go(ready: Any, go: Any, role: str) -> None:
    ready.put(role)
    if not go.wait(600):
        raise SystemExit(f"{role}: never told to start")


def role_writer(cfg: dict[str, Any], role: str, ready: Any, go: Any, out: Any) -> None:
    recorder = Recorder(role)
    with PubDB.open(cfg["pub_url"]) as db:
        create_post(db, -1, role)  # the pool's connection opened before the clock starts
        _wait_for_go(ready, go, role)
        # Rate 0: back to back, as fast as the store lets this writer (saturation).
        interval = 1.0 / cfg["rate"] if cfg["rate"] else 0.0
        start = time.monotonic()
        due = start
        done = 0
        while time.monotonic() < start + cfg["seconds"]:
            done += recorder.timed("post", lambda n=done: create_post(db, n, role))  # type: ignore[misc]
            due += interval
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        recorder.extra["posts_per_s"] = round(done / (time.monotonic() - start), 1)
    out.put(recorder.result(cfg["seconds"]))


def role_pipeline(cfg: dict[str, Any], role: str, ready: Any, go: Any, out: Any) -> None:
    recorder = Recorder(role)
    con = duckdb.connect()
    cfg["lake"].attach(con)
    _wait_for_go(ready, go, role)
    start = time.monotonic()
    version = 0
    while time.monotonic() < start + cfg["seconds"]:
        day = FIRST_DAY + timedelta(days=version % DAYS)
        recorder.timed("day", lambda d=day, v=version: replace_day(con, d, v, cfg["day_rows"]))  # type: ignore[misc]
        version += 1
    out.put(recorder.result(cfg["seconds"]))


def _read_repeatedly(
    cfg: dict[str, Any],
    con: Any,
    role: str,
    ready: Any,
    go: Any,
    out: Any,
    *,
    name: str,
    sql: str,
    pause: float = 0.0,
) -> None:
    """Time ``sql`` over the lake, read-only, again and again for cfg['seconds']."""
    recorder = Recorder(role)
    cfg["lake"].attach(con, read_only=True)
    _wait_for_go(ready, go, role)
    start = time.monotonic()
    while time.monotonic() < start + cfg["seconds"]:
        recorder.timed(name, lambda: con.execute(sql).fetchall())
        if pause:
            time.sleep(pause)
    out.put(recorder.result(cfg["seconds"]))


def role_reader(cfg: dict[str, Any], role: str, ready: Any, go: Any, out: Any) -> None:
    sql = "SELECT day, sum(impressions), sum(engagements) FROM lake.mart_post_daily GROUP BY day"
    _read_repeatedly(cfg, duckdb.connect(), role, ready, go, out, name="aggregate", sql=sql)


def role_analyst(cfg: dict[str, Any], role: str, ready: Any, go: Any, out: Any) -> None:
    con = duckdb.connect()
    attach_publishing(con, cfg["pub_url"])
    sql = (
        "SELECT p.workspace_id, count(*), sum(m.impressions) FROM pub.posts p"
        " JOIN lake.mart_post_daily m ON m.post_id = p.id GROUP BY p.workspace_id"
    )
    # The analyst's pace, as in ADR 0002's load.
    _read_repeatedly(cfg, con, role, ready, go, out, name="join", sql=sql, pause=0.2)


ROLES = {
    "writer_1": role_writer,
    "writer_2": role_writer,
    "pipeline": role_pipeline,
    "reader": role_reader,
    "analyst": role_analyst,
}


def run_roles(cfg: dict[str, Any], names: list[str]) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    ready, go, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    processes = [ctx.Process(target=ROLES[n], args=(cfg, n, ready, go, out)) for n in names]
    for process in processes:
        process.start()
    for _ in names:
        ready.get(timeout=600)
    load = os.getloadavg()[0]
    go.set()
    results = {r["role"]: r for r in (out.get(timeout=cfg["seconds"] + 600) for _ in names)}
    for process in processes:
        process.join(60)
    return {"load_1min": [round(load, 1), round(os.getloadavg()[0], 1)], "roles": results}


def seed(cfg: dict[str, Any]) -> None:
    PubDB.open(cfg["pub_url"]).close()
    con = duckdb.connect()
    cfg["lake"].attach(con)
    for number in range(DAYS):
        replace_day(con, FIRST_DAY + timedelta(days=number), 0, cfg["day_rows"])


@contextlib.contextmanager
def profile(name: str) -> Iterator[dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="murmur-bench-"))
    # A folder of its own: the server runs as the 'postgres' user, who cannot enter ``work``.
    pg_work = Path(tempfile.mkdtemp(prefix="murmur-bench-pg-"))
    try:
        if name == "embedded":
            lake = Lake.under(work)
            yield {"pub_url": sqlite_url(work / "publishing.sqlite"), "lake": lake}
            return
        with postgres_server(pg_work) as pg, s3_server(work) as endpoint:
            for database in ("pub", "lake"):
                pg.create_database(database)
            create_bucket(endpoint, "lake")
            s3 = S3(endpoint=endpoint, key_id="murmur", secret="murmur", use_ssl=False)
            lake = Lake(f"postgres:{pg.dsn('lake')}", "s3://lake/data/", s3)
            yield {"pub_url": pg.url("pub"), "lake": lake}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(pg_work, ignore_errors=True)


def measure(name: str, seconds: float, rate: float, day_rows: int = DAY_ROWS) -> dict[str, Any]:
    """Every phase on one profile (``embedded`` or ``scale``), on a store of its own."""
    with profile(name) as cfg:
        cfg.update(seconds=seconds, rate=rate, day_rows=day_rows)
        seed(cfg)
        alone = run_roles(cfg, ["writer_1", "writer_2"])
        mixed = run_roles(cfg, list(ROLES))
        saturated = run_roles({**cfg, "rate": 0}, ["writer_1", "writer_2"])
    return {
        "profile": name,
        "publishing_alone": alone,
        "mixed_load": mixed,
        "publishing_saturated": saturated,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=160.0, help="posts/s per writer")
    parser.add_argument("--profiles", nargs="+", default=["embedded", "scale"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    results = {
        "measured_at": datetime.now().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "runs": [measure(name, args.seconds, args.rate) for name in args.profiles],
    }
    text = json.dumps(results, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
