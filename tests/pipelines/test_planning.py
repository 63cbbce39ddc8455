"""How due days become the ranges of one pass, and how a run carries them."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
from dagster import DagsterEventType, DagsterInstance, materialize

from core.settings import Settings
from pipelines.analytics.assets import DAILY_ASSETS
from pipelines.definitions import resources
from pipelines.importers import run_import
from pipelines.partitions import (
    DayRange,
    day_ranges,
    due_days,
    plan_ranges,
    range_tags,
    tagged_ranges,
)
from pipelines.run import run_all
from tests.servers import StoreSettings
from tests.support import embedded_settings
from warehouse import analytics
from warehouse.marts.runs import days_with_new_raw
from warehouse.rows import fetch_value

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
D = date(2024, 1, 1)


def _d(n: int) -> date:
    return D + timedelta(days=n)


def test_gaps_without_rows_join_and_heavy_gaps_split() -> None:
    days = [_d(0), _d(1), _d(10), _d(40), _d(41)]
    # nothing between: one range over all of them
    assert plan_ranges(days, {}) == [(_d(0), _d(41))]
    # the gap 11..39 holds more rows than a pass costs: two ranges
    heavy = {_d(20): 150_000, _d(30): 60_000}
    assert plan_ranges(days, heavy, gap_rows=200_000) == [(_d(0), _d(10)), (_d(40), _d(41))]
    # rows on the due days themselves are rebuilt anyway and do not count
    assert plan_ranges(days, {_d(10): 10**9}, gap_rows=200_000) == [(_d(0), _d(41))]
    # an empty gap longer than gap_days costs more in Dagster's per-day events than a pass
    assert plan_ranges(days, {}, gap_days=20) == [(_d(0), _d(10)), (_d(40), _d(41))]
    # a store's import of 2018 and today's ingest: two passes, not a pass over 8 years
    assert plan_ranges([date(2018, 3, 1), date(2026, 11, 26)], {}) == [
        (date(2018, 3, 1), date(2018, 3, 1)),
        (date(2026, 11, 26), date(2026, 11, 26)),
    ]


def test_the_ranges_tag_round_trips_and_clips_to_the_partition_window() -> None:
    ranges = [(_d(0), _d(1)), (_d(10), _d(10))]
    tags = range_tags(ranges)
    assert tags["dagster/asset_partition_range_start"] == "2024-01-01"
    assert tags["dagster/asset_partition_range_end"] == "2024-01-11"
    # half-open within the window [start, end)
    assert tagged_ranges(tags, _d(0), _d(11)) == [(_d(0), _d(2)), (_d(10), _d(11))]
    assert tagged_ranges(tags, _d(1), _d(5)) == [(_d(1), _d(2))]
    # one range needs no tag: the partition window is the range
    assert "murmur/day_ranges" not in range_tags([(_d(0), _d(3))])
    assert tagged_ranges({}, _d(0), _d(4)) == [(_d(0), _d(4))]


def test_due_days_add_the_day_after_each_capture_day_never_after_today() -> None:
    assert due_days([_d(0), _d(5)], today=_d(5)) == {_d(0), _d(1), _d(5)}
    assert due_days([_d(9)], today=_d(5)) == set()


def test_an_exports_publication_days_are_not_partitions_and_its_posts_all_count(
    tmp_path: Path,
) -> None:
    # Three months' tweets, read once (a tweets export's readings are dated at its newest
    # tweet): the run rebuilds that day and the next, not the months of publication days.
    tweets = (
        pl.read_csv(DATASETS / "vaccination_tweets.csv", infer_schema=False)
        .filter(pl.col("date").str.slice(0, 10).is_in(["2020-12-20", "2021-01-15"]))
        .with_columns(
            pl.when(pl.col("date").str.starts_with("2021-01-15"))
            .then(pl.col("date").str.replace("^2021-01-15", "2021-03-15"))
            .otherwise(pl.col("date"))
        )
    )
    path = tmp_path / "tweets.csv"
    tweets.write_csv(path)
    settings = embedded_settings(tmp_path / "data")
    settings.ensure_dirs()
    run_import(path, "tweets", settings=settings, workspace_id=None, kind="own", progress=False)
    summary = run_all(settings, now=datetime(2026, 11, 22, tzinfo=UTC), ingest=False)
    assert summary.success
    assert summary.days == [(date(2021, 3, 15), date(2021, 3, 16))]
    # what /analytics/unified counts, against the file's own count per month
    expected = {
        datetime.strptime(month, "%Y-%m"): n
        for month, n in tweets.group_by(pl.col("date").str.slice(0, 7)).len().iter_rows()
    }
    with settings.open_store() as store:
        workspace_id = store.read(lambda cur: fetch_value(cur, "SELECT id FROM workspaces"))
    where = analytics.UnifiedFilter(
        workspace_id=str(workspace_id),
        start=datetime(2020, 12, 1),
        end=datetime(2021, 4, 1),
        platform=None,
        account_id=None,
        granularity="month",
        group_by="total",
    )
    with settings.open_lakehouse() as lake:
        series = lake.run(lambda cur: analytics.unified_series(cur, where))
    assert {row["bucket"]: row["posts"] for row in series if row["posts"]} == expected


COMPARED = (
    "stg_engagement_deltas",
    "mart_post_hourly",
    "mart_post_first_seen",
    "mart_post_daily",
    "mart_account_daily",
    "dim_posts",
    "dim_accounts",
)


def _built(settings: Settings, runs: list[list[DayRange]]) -> dict[str, list[tuple[object, ...]]]:
    with DagsterInstance.ephemeral() as instance:
        for ranges in runs:
            done = materialize(
                DAILY_ASSETS,
                resources=resources(settings),
                instance=instance,
                tags={"murmur/now": "2026-11-22T00:00:00+00:00", **range_tags(ranges)},
            )
            assert done.success
            # One planned event per asset, not one per day and asset (pipelines/__init__.py).
            planned = instance.all_logs(
                done.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION_PLANNED
            )
            assert len(planned) == len(DAILY_ASSETS)
    with settings.open_lakehouse() as lake, lake.cursor() as cur:
        return {
            table: cur.execute(
                f"SELECT * EXCLUDE (workspace_id) FROM {table} ORDER BY ALL"  # noqa: S608
            ).fetchall()
            for table in COMPARED
        }


def test_one_pass_over_several_ranges_equals_a_run_per_range(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    """The US trending file with two of every seven days dropped: videos trend across the gaps, so
    each range's first deltas depend on readings in the ranges before it."""
    us = pl.read_csv(
        DATASETS / "youtube_trending_us.csv", infer_schema=False, encoding="utf8-lossy"
    )
    day = pl.col("trending_date").str.strptime(pl.Date, "%y.%d.%m")
    days = sorted(us.select(day)["trending_date"].unique())
    # two days in a row: the day after a capture day is due too, so one would be refilled
    dropped = [d for i, d in enumerate(days) if i % 7 in (3, 4)]
    kept = us.filter(~day.is_in(dropped))
    path = tmp_path / "us.csv"
    kept.write_csv(path)
    stores = []
    for name in ("per-range", "one-pass"):
        settings = store_settings(tmp_path / name)
        settings.ensure_dirs()
        run_import(path, "youtube-trending", settings=settings, workspace_id=None, progress=False)
        stores.append(settings)
    with stores[0].open_lakehouse() as lake:
        captured = lake.run(lambda cur: days_with_new_raw(cur, None))
    ranges = day_ranges(sorted(due_days(captured, today=date(2026, 11, 22))))
    assert len(ranges) >= 8
    separately = _built(stores[0], [[r] for r in ranges])
    together = _built(stores[1], [ranges])
    for table in COMPARED:
        assert together[table] == separately[table], table
    assert len(together["mart_post_daily"]) > 1000
