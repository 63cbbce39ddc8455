"""`murmur up` on a new data directory: the simulated past, read from the dashboard's seed.

The seed is what `up` does (tests/dashboard/conftest.py): `murmur pipeline run --history`
against the bundled simulator, then the next run. Read here rather than captured again: the
capture is the suite's most expensive step, and the dashboard's tests need it anyway.
"""

from __future__ import annotations

import itertools
import math
import statistics
from datetime import UTC, timedelta

import pytest

from connectors.registry import SUPPORTED
from pipelines.run import HISTORY_DAYS, history_moments
from tests.dashboard.conftest import SEED_TIMEOUT, Seeded
from tests.support import PIPELINE_STEP
from warehouse.rows import fetch_value

# The same worker as the browser tests: the seed is made once, by whichever asks first.
pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group("dashboard-browser")]


def _steps(output: str) -> list[tuple[str, str]]:
    """(step, partition) of each step a `murmur pipeline run` printed, all of them ok."""
    steps = [m.groups() for m in map(PIPELINE_STEP.match, output.splitlines()) if m]
    assert steps, output
    assert {step[3] for step in steps} == {"ok"}, output
    return [(step[0], step[1]) for step in steps]


def test_a_new_store_starts_with_the_simulated_past(seeded: Seeded) -> None:
    """The first run captures the past, moment by moment; the dashboards have it at once."""
    runs = seeded.seed.pipeline_runs
    assert len(runs) == 2, "a seed kept from an older suite (MURMUR_DASHBOARD_STORE): seed again"
    first, second = (_steps(output) for output in runs)
    workspace_id = seeded.seed.workspace_id
    # Each capture is stamped with the moment it was asked for (the simulator's Date), and
    # a post's counters never fall from one capture to the next: the past as it was.
    captured, falls = seeded.server.lake.run(
        lambda cur: (
            [
                r[0]
                for r in cur.execute(
                    "SELECT DISTINCT captured_at FROM raw_engagement_snapshots"
                    " WHERE workspace_id = ? ORDER BY 1",
                    [workspace_id],
                ).fetchall()
            ],
            fetch_value(
                cur,
                "SELECT count(*) FROM (SELECT likes < lag(likes) OVER w AS fell"
                " FROM raw_engagement_snapshots WHERE workspace_id = ?"
                " WINDOW w AS (PARTITION BY platform, external_id ORDER BY captured_at))"
                " WHERE fell",
                [workspace_id],
            ),
        )
    )
    # The run's moment is the oldest capture's plus the history's length (Dates are whole
    # seconds); the live captures follow the past (each platform's stamped with its own Date).
    moments = history_moments(captured[0] + timedelta(days=HISTORY_DAYS))
    assert captured[: len(moments)] == moments
    assert [name for name, _ in first] == ["history"] * len(moments) + [
        "ingest",
        "marts",
        "insights",
    ]
    assert [p for name, p in first if name == "history"] == [
        m.strftime("%Y-%m-%d-%H:00") for m in moments
    ]
    live = captured[len(moments) :]
    assert live, captured
    assert live[0] > moments[-1]
    assert falls == 0

    end = max(live).replace(tzinfo=UTC) + timedelta(hours=1)  # captured_at is naive UTC
    params = {"from": (end - timedelta(days=14)).isoformat(), "to": end.isoformat()}
    api = seeded.api
    unified = api.ok(api.get("/analytics/unified", params=params))
    assert unified["totals"]["engagements"] > 0  # growth between captures, not only first sightings
    # Every platform the test workspace connects is read, Facebook, Threads and Pinterest too.
    grew = {p["platform"] for p in unified["by_platform"] if p["engagements"] > 0}
    assert grew == set(SUPPORTED)
    trends = api.ok(api.get("/viral-trends", params={"limit": 100}))
    assert trends["items"]
    # Windows as long as each post's own reading interval (docs/api/analytics.md): 6 hours
    # where the 6-hourly past read a post each time; longer for a post the simulator lists
    # only now and then (a trending list's videos), as that interval is at the moment.
    assert 6 in {i["evidence"]["window_hours"] for i in trends["items"]}
    readings = seeded.server.lake.run(
        lambda cur: {
            (platform, external_id): hours
            for platform, external_id, hours in cur.execute(
                "SELECT platform, external_id, list(DISTINCT date_trunc('hour', captured_at))"
                " FROM raw_engagement_snapshots WHERE workspace_id = ? GROUP BY ALL",
                [workspace_id],
            ).fetchall()
        }
    )
    checked = 0
    for item in trends["items"]:
        last = sorted(readings.get((item["platform"], item["entity"]), []))[-4:]
        # a post's readings near the trends' 7-day edge may fall either side of it
        if item["entity_type"] != "post" or last[0] < max(live) - timedelta(days=6):
            continue
        gap = statistics.median((b - a) / timedelta(hours=1) for a, b in itertools.pairwise(last))
        assert item["evidence"]["window_hours"] == max(6, math.ceil(gap)), (item, last)
        checked += 1
    assert checked, trends["items"]
    competitors = api.ok(api.get("/competitors"))
    assert {c["handle"] for c in competitors["items"]} == {
        "chirply",
        "buzzhive",
        "postpilot.bsky.social",
    }
    # Every account of every capture was read: no failure recorded for any of them.
    failed = seeded.server.lake.run(
        lambda cur: cur.execute(
            "SELECT err FROM ingest_batches, unnest(CAST(errors AS JSON[])) AS e(err)"
            " WHERE workspace_id = ? AND json_extract_string(err, '$.stage') IS NOT NULL",
            [workspace_id],
        ).fetchall()
    )
    assert failed == []

    # The past is captured once: the next run reads only the current hour.
    assert [name for name, _ in second if name == "history"] == []
    assert second[0][0] == "ingest"
