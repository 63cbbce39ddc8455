"""Day partitions computed by parallel runs, each in its own process, into the lake.

Issue 13, points 1 and 6, on today's store: Dagster runs in processes of their own commit
through the API process that hosts the store. Three runs at once give what the same days
computed one after the other give (nothing lost, nothing counted twice), and a run killed
with SIGKILL mid-write leaves each day of each table whole: all of it or none.
"""

from __future__ import annotations

import multiprocessing
import random
import signal
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.settings import Settings
from tests.servers import StoreSettings
from tests.store import children
from tests.support import LiveServer, start_server
from warehouse.store import Lakehouse

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

DAYS = [f"2025-06-0{day}" for day in range(1, 7)]
TABLES = ("stg_engagement_deltas", "mart_post_hourly", "mart_post_daily", "mart_account_daily")
TAGS = {"murmur/now": "2025-06-07T00:00:00+00:00"}
WS = "ws_parallel"
DEADLINE = 600.0  # seconds: turns a hang into a failure; nothing waits for it to pass
Rows = dict[str, list[tuple[Any, ...]]]


def _post(number: int, published: datetime) -> dict[str, Any]:
    return {
        "external_id": f"p{number}",
        "account_external_id": f"acc{number % 2}",
        "kind": "own",
        "text": f"post {number} #AI",
        "hashtags": ["AI"],
        "media_type": "text",
        "published_at": published,
        "captured_at": published,
    }


def _seed(settings: Settings) -> None:
    """Six days of posts, snapshots and follower counts for two accounts (seeded: the same
    rows every time)."""
    rng = random.Random(13)
    end = datetime(2025, 6, 7)
    posts, snapshots = [], []
    for number in range(24):
        published = datetime(2025, 6, 1 + number % 6, number % 12)
        posts.append(_post(number, published))
        impressions = likes = 0
        for step in range(1, 10):
            at = published + timedelta(hours=5 * step, minutes=15)  # some cross midnight
            if at >= end:
                break
            impressions += rng.randint(0, 400)
            likes = max(0, likes + rng.randint(-3, 30))  # now and then a drop, counted
            snapshots.append(
                {
                    "external_id": f"p{number}",
                    "captured_at": at,
                    "impressions": impressions,
                    "likes": likes,
                    "comments": step,
                }
            )
    accounts = [
        {
            "external_id": account,
            "kind": "own",
            "handle": account,
            "followers": 1000 + 37 * day + 5 * index,
            "captured_at": datetime(2025, 6, day, 12),
        }
        for day in range(1, 7)
        for index, account in enumerate(("acc0", "acc1"))
    ]

    def seed(cur: Any) -> None:
        for table, rows in (
            ("raw_posts", posts),
            ("raw_engagement_snapshots", snapshots),
            ("raw_account_snapshots", accounts),
        ):
            names = ["workspace_id", "platform", "source", "ingest_batch", "ingested_at", *rows[0]]
            marks = ", ".join("?" for _ in names)
            cur.executemany(
                f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",  # noqa: S608 - constants
                [[WS, "x", "seed", "b", end, *row.values()] for row in rows],
            )

    with settings.open_lakehouse() as store:
        store.run(seed)


def materialize_days(settings: Settings, days: list[str]) -> None:
    """Materialise the daily assets, one run per day, in this process."""
    children.materialize_days(settings, days, TAGS)


def _in_a_process(
    ctx: multiprocessing.context.SpawnContext, settings: Settings, days: list[str]
) -> multiprocessing.context.SpawnProcess:
    """A process of its own that materialises ``days``: it imports tests/store/children.py,
    not this module (and so not the test support's API app, ~0.5 CPU-s a process)."""
    return ctx.Process(target=children.materialize_days, args=(settings, days, TAGS))


def _tables(store: Lakehouse) -> Rows:
    with store.cursor() as cur:
        return {
            table: cur.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()  # noqa: S608
            for table in TABLES
        }


def _day_column(store: Lakehouse, table: str) -> int:
    with store.cursor() as cur:
        names = [d[0] for d in cur.execute(f"SELECT * FROM {table} LIMIT 0").description]  # noqa: S608
    return names.index("day")


def _of_day(rows: list[tuple[Any, ...]], column: int, day: str) -> list[Any]:
    return [row for row in rows if row[column] == date.fromisoformat(day)]


def _landed(store: Lakehouse, table: str, day: str) -> bool:
    with store.cursor() as cur:
        found = cur.execute(f"SELECT count(*) FROM {table} WHERE day = ?", [day]).fetchone()  # noqa: S608
    return bool(found and found[0])


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings) -> Rows:
    """The tables after the six days computed one after the other, the store opened directly."""
    settings = store_settings(tmp_path_factory.mktemp("serial"))
    _seed(settings)
    materialize_days(settings, DAYS)
    with settings.open_lakehouse() as store:
        tables = _tables(store)
    assert all(tables.values()), {table: len(rows) for table, rows in tables.items()}
    return tables


@pytest.fixture
def hosted(tmp_path: Path, store_settings: StoreSettings) -> Iterator[LiveServer]:
    """A seeded store, with the API serving it (no owner: the runs open it too)."""
    settings = store_settings(tmp_path / "data")
    _seed(settings)
    server = start_server(settings)
    yield server
    server.stop()


def test_parallel_day_runs_commit_what_serial_runs_do(hosted: LiveServer, expected: Rows) -> None:
    ctx = multiprocessing.get_context("spawn")
    shares = [DAYS[0::3], DAYS[1::3], DAYS[2::3]]
    runs = [_in_a_process(ctx, hosted.settings, share) for share in shares]
    try:
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=DEADLINE)
        assert [run.exitcode for run in runs] == [0, 0, 0]
    finally:
        for run in runs:
            if run.is_alive():
                run.kill()
    got = _tables(hosted.lake)
    for table in TABLES:
        assert len(got[table]) == len(expected[table]), table
        assert got[table] == expected[table], table


def test_a_run_killed_mid_write_leaves_each_day_whole(hosted: LiveServer, expected: Rows) -> None:
    ctx = multiprocessing.get_context("spawn")
    run = _in_a_process(ctx, hosted.settings, DAYS)
    run.start()
    try:
        # Kill it once its second day has begun to land: days before are done, days after
        # are not started, and the second day's tables are being written one by one.
        deadline = time.monotonic() + DEADLINE
        while not _landed(hosted.lake, TABLES[0], DAYS[1]):
            assert run.is_alive(), f"the run ended (exit {run.exitcode}) before it was killed"
            assert time.monotonic() < deadline, "the run wrote nothing of its second day"
            time.sleep(0.02)  # polling the store, not waiting for a time to pass
        run.kill()
        run.join(timeout=DEADLINE)
    finally:
        if run.is_alive():
            run.kill()
    assert run.exitcode == -signal.SIGKILL  # killed, not finished
    got = _tables(hosted.lake)
    whole = absent = 0
    for table in TABLES:
        column = _day_column(hosted.lake, table)
        for day in DAYS:
            have = _of_day(got[table], column, day)
            want = _of_day(expected[table], column, day)
            assert have in ([], want), (table, day, len(have), len(want))
            whole, absent = whole + (have == want), absent + (have != want)
    assert whole >= len(TABLES)  # the first day, at least, landed
    assert absent >= len(TABLES)  # the last day, at least, did not
    # Re-running what the killed run left undone completes the tables as if nothing happened.
    materialize_days(hosted.settings, DAYS)
    assert _tables(hosted.lake) == expected
