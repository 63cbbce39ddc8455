"""What the store tests run in processes of their own: light to import, for each child.

A spawned child imports the module of the function it runs. A test module imports the whole
test support (the API app, FastAPI, benchmarks' servers): ~1 s of CPU per child, where this
module's imports take ~0.3 s.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from datetime import date, datetime, timedelta
from multiprocessing.synchronize import Barrier, Event
from typing import TYPE_CHECKING

import duckdb
from sqlalchemy import Connection

from warehouse.extensions import connect
from warehouse.lake import S3, Lake, run
from warehouse.pubdb.engine import PubDB
from warehouse.pubdb.schema import post_destinations, posts

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from core.settings import Settings

DAY_ROWS = 2_000
AT = datetime(2026, 11, 25, 12, 0, 0)


# -- the lake -----------------------------------------------------------------------------


def attached(lake: Lake, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A new DuckDB session with ``lake`` attached as ``lake``."""
    con = connect()
    lake.attach(con, read_only=read_only)
    return con


def lake_as_json(lake: Lake) -> str:
    return json.dumps(dataclasses.asdict(lake))


def lake_from_json(text: str) -> Lake:
    fields = json.loads(text)
    return Lake(fields["catalog"], fields["data"], fields["s3"] and S3(**fields["s3"]))


def rewrite_days(lake: Lake, days: list[date], *, announce: bool = False) -> None:
    """A run of its own: replace each day of ``mart_post_daily`` with DAY_ROWS rows of that day."""
    con = attached(lake)
    for number, day in enumerate(days):

        def replace(c: duckdb.DuckDBPyConnection, day: date = day, n: int = number) -> None:
            c.execute("DELETE FROM lake.mart_post_daily WHERE day = ?", [day])
            c.execute(
                "INSERT INTO lake.mart_post_daily SELECT 'ws_1', ?::DATE, 'x', 'acc_1', NULL,"
                " 'ext_' || i, 'post_' || i, 'own', i + ?, i, i, i, i, i, i, i, i, 0.5"
                " FROM range(?) t(i)",
                [day, n, DAY_ROWS],
            )

        run(con, replace)
        if announce:
            print(day.isoformat(), flush=True)


def attach_new_lake(lake: Lake, barrier: Barrier, timeout: float) -> None:
    """A process of its own: attach (and so create and migrate) a lake at the same moment."""
    barrier.wait(timeout)
    attached(lake).close()


# -- the publishing database ---------------------------------------------------------------


def new_post(conn: Connection, post_id: str, *, tags: list[str] | None = None) -> None:
    """A scheduled post with a destination on each of three platforms."""
    conn.execute(
        posts.insert().values(
            id=post_id,
            workspace_id="ws_1",
            text=f"post {post_id}",
            status="scheduled",
            scheduled_at=AT + timedelta(hours=1),
            tags=tags or [],
            media_ids=[],
            created_at=AT,
            updated_at=AT,
        )
    )
    conn.execute(
        post_destinations.insert(),
        [
            {
                "id": f"{post_id}_{platform}",
                "post_id": post_id,
                "workspace_id": "ws_1",
                "account_id": f"acc_{platform}",
                "platform": platform,
                "status": "pending",
                "created_at": AT,
                "updated_at": AT,
            }
            for platform in ("x", "linkedin", "bluesky")
        ],
    )


def open_and_write(url: str, worker: int, count: int, barrier: Barrier, timeout: float) -> None:
    """A process of its own: open the database (migrating it if new), write ``count`` posts."""
    barrier.wait(timeout=timeout)
    with PubDB.open(url) as db:
        for number in range(count):
            post_id = f"post_{worker}_{number}"
            db.run(lambda conn: new_post(conn, post_id))  # noqa: B023 - run before the next


def write_until_killed(url: str) -> None:
    """A process of its own: create posts without pause, printing each id once committed."""
    with PubDB.open(url) as db:
        number = 0
        while True:
            post_id = f"post_{number}"
            with db.transaction() as conn:
                new_post(conn, post_id)
            print(post_id, flush=True)
            number += 1


def write_back_to_back(url: str, started: Event, stop: Event, *, queued: bool = True) -> None:
    """A process of its own: commit posts one after another, no pause, until told to stop."""
    with PubDB.open(url) as db:
        if not queued:
            db.write_queue = None
        number = 0
        while not stop.is_set():
            with db.transaction() as conn:
                new_post(conn, f"busy_{number}")
            number += 1
            started.set()


# -- the pipeline ---------------------------------------------------------------------------


@functools.cache
def _instance() -> DagsterInstance:
    """One ephemeral Dagster instance a process, as a `murmur pipeline run` has: each new one
    migrates its run storage (~0.15 CPU-s a run)."""
    from dagster import DagsterInstance

    return DagsterInstance.ephemeral()


def materialize_days(settings: Settings, days: list[str], tags: dict[str, str]) -> None:
    """Materialise the daily assets, one run per day (in a process of its own, or the test's).

    Dagster and the pipelines are imported here, not by the store tests' children.
    """
    from dagster import materialize

    from pipelines.analytics.assets import DAILY_ASSETS
    from pipelines.definitions import resources

    # One resources dict for the runs, as `murmur pipeline run` has (each run still opens and
    # closes its own session): a new one per run cost ~0.2 CPU-s more.
    given = resources(settings)
    for day in days:
        result = materialize(
            DAILY_ASSETS, partition_key=day, resources=given, tags=tags, instance=_instance()
        )
        if not result.success:
            raise SystemExit(f"the run of {day} failed")
