"""An own export whose days fall into several rebuilt ranges, against our own count of its posts.

The export's one account snapshot sits on its newest day, so the ranges built before that
day's range do not know the account yet; its posts must count whatever the order. A pass
joins the ranges (their gaps hold no rows), so each is built here as a run of its own, newest
first, as runs over parts of a store's history may come.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
from dagster import DagsterInstance, materialize

from core.settings import Settings
from pipelines.analytics.assets import DAILY_ASSETS
from pipelines.definitions import resources
from pipelines.importers import run_import
from pipelines.partitions import day_ranges, range_tags
from tests.support import new_tenant, start_server

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
# One day dropped in each month: the file's days fall into five ranges.
DROPPED = ["2020-12-20", "2021-01-15", "2021-02-15", "2021-03-15"]


def test_own_tweets_in_several_ranges_count_every_post_and_are_not_stale(tmp_path: Path) -> None:
    tweets = pl.read_csv(DATASETS / "vaccination_tweets.csv", infer_schema=False).filter(
        ~pl.col("date").str.slice(0, 10).is_in(DROPPED)
    )
    path = tmp_path / "tweets.csv"
    tweets.write_csv(path)
    days = [date.fromisoformat(d) for d in tweets["date"].str.slice(0, 10).unique()]
    assert len(day_ranges(days)) == 5
    published = tweets.select(pl.col("date").str.strptime(pl.Datetime("us"), "%Y-%m-%d %H:%M:%S"))
    expected = {
        row["month"]: row["len"]
        for row in published.group_by(pl.col("date").dt.truncate("1mo").alias("month"))
        .len()
        .iter_rows(named=True)
    }

    settings = Settings(data_dir=tmp_path / "data")
    settings.ensure_dirs()
    server = start_server(settings)
    tenant = new_tenant(server)
    try:
        run_import(
            path,
            "tweets",
            settings=settings,
            workspace_id=tenant.workspace_id,
            kind="own",
            progress=False,
        )
        ranges = day_ranges(days)
        with DagsterInstance.ephemeral() as instance:
            for first, last in reversed(ranges):
                built = materialize(
                    DAILY_ASSETS,
                    resources=resources(settings),
                    instance=instance,
                    tags={
                        "murmur/now": datetime(2026, 11, 22, tzinfo=UTC).isoformat(),
                        **range_tags([(first, last)]),
                    },
                )
                assert built.success
                # past days: freshness is not evaluated for them
                checks = built.get_asset_check_evaluations()
                assert all(e.passed for e in checks if e.check_name == "raw_fresh")
        # Totals by month (a series fills only between the readings: the export's day).
        months = sorted(expected)
        got = {}
        for first, last in zip(months, [*months[1:], datetime(2021, 5, 1)], strict=True):
            body = tenant.api.ok(
                tenant.api.get(
                    "/analytics/unified",
                    params={
                        "from": first.isoformat() + "Z",
                        "to": last.isoformat() + "Z",
                        "platform": "x",
                        "limit": 1,
                    },
                )
            )
            got[first] = body["totals"]["posts"]
    finally:
        tenant.api.close()
        server.stop()
    assert got == expected
    assert sum(got.values()) == tweets.height
