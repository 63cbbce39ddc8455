"""Provenance: each answer names its lake snapshot, its readings' sources and its definitions.

The expected sources are counted here from the shared exports with polars (one reading per
video and trending day, as the file has them), never from Murmur's marts; the snapshot id
from the lake's own catalog.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from domain.analytics.definitions import DEFINITIONS, RANKING_DAYS, TREND_LOOKBACK_DAYS
from tests.analytics_truth.test_shared_exports import _youtube
from tests.analytics_truth.world import GROUP, World
from tests.support import Tenant

pytestmark = pytest.mark.xdist_group(GROUP)

FR = "youtube_trending_fr.csv"


@pytest.fixture(scope="module")
def world(exports_world: World) -> World:
    return exports_world


@pytest.fixture(scope="module")
def fr() -> pl.DataFrame:
    """The FR file's readings: one per video and trending day (a repeated row is one)."""
    return _youtube(FR, "utf-8").unique(["key", "at"])


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)


def _only_source(answer: dict[str, Any], tenant: Tenant) -> dict[str, Any]:
    """The answer's one source: the FR file, named by its file and the import's batch id."""
    [source] = answer["provenance"]["sources"]
    assert isinstance(source, dict)
    assert source["kind"] == "import"
    assert source["platform"] == "youtube"
    assert source["origin"] == FR
    assert source["import_id"].startswith(f"import:youtube-trending:{tenant.workspace_id}:")
    return source


def _expect(source: dict[str, Any], readings: pl.DataFrame) -> None:
    assert source["readings"] == readings.height
    assert _at(source["first_read_at"]) == readings["at"].min()
    assert _at(source["last_read_at"]) == readings["at"].max()


def test_unified_names_the_file_its_readings_and_the_lake_snapshot(
    world: World, fr: pl.DataFrame
) -> None:
    tenant = world.tenants["fr_own"]
    start, end = datetime(2017, 11, 20), datetime(2017, 12, 1)
    answer = tenant.api.ok(
        tenant.api.get(
            "/analytics/unified",
            params={"from": f"{start.isoformat()}Z", "to": f"{end.isoformat()}Z", "limit": 1},
        )
    )
    source = _only_source(answer, tenant)
    _expect(source, fr.filter((pl.col("at") >= start) & (pl.col("at") < end)))
    window = answer["provenance"]["window"]
    assert (_at(window["from"]), _at(window["to"])) == (start, end)
    # the lake's snapshot, as its catalog says (nothing has written since the world's run)
    current = world.server.lake.run(
        lambda cur: cur.execute("SELECT id FROM lake.current_snapshot()").fetchone()
    )
    assert current is not None
    assert answer["provenance"]["snapshot_id"] == current[0]
    definitions = answer["provenance"]["definitions"]
    assert definitions["engagement_rate"] == DEFINITIONS["engagement_rate"]
    assert {"impressions", "views", "engagements", "posts", "first_seen"} <= set(definitions)


def test_trends_and_creators_count_the_readings_of_their_windows(
    world: World, fr: pl.DataFrame
) -> None:
    tenant = world.tenants["fr_creator"]
    trends = tenant.api.ok(tenant.api.get("/viral-trends", params={"limit": 100}))
    assert trends["items"]
    end = _at(trends["items"][0]["window_end"])
    # daily windows: 6 of them read back (6 days), under the trends' 7-day look-back
    span = max(timedelta(days=TREND_LOOKBACK_DAYS), 6 * timedelta(days=1))
    _expect(
        _only_source(trends, tenant),
        fr.filter((pl.col("at") >= end - span) & (pl.col("at") < end)),
    )
    assert set(trends["provenance"]["definitions"]) == {"velocity", "baseline", "score"}

    creators = tenant.api.ok(tenant.api.get("/creators", params={"platform": "youtube"}))
    # the rankings' window: the 28 days before the end of the file's newest hour
    newest = fr["at"].max()
    assert isinstance(newest, datetime)
    since = newest + timedelta(hours=1) - timedelta(days=RANKING_DAYS)
    _expect(_only_source(creators, tenant), fr.filter(pl.col("at") >= since))
    assert "engagement_rate_estimate" in creators["provenance"]["definitions"]


def test_an_answer_of_no_readings_names_no_source(world: World) -> None:
    tenant = world.tenants["fr_own"]
    answer = tenant.api.ok(
        tenant.api.get(
            "/analytics/unified",
            params={"from": "2030-01-01T00:00:00Z", "to": "2030-01-02T00:00:00Z"},
        )
    )
    assert answer["provenance"]["sources"] == []
    assert answer["provenance"]["snapshot_id"] is not None


def test_the_docs_define_each_figure_as_the_answers_do() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "api" / "analytics.md").read_text()
    missing = [k for k, v in DEFINITIONS.items() if f"| `{k}` | {v} |" not in docs]
    assert missing == []
