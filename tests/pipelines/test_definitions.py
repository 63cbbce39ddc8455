"""The Definitions load, and every asset, check, job, schedule and sensor resolves."""

from __future__ import annotations

from pathlib import Path

from dagster import Definitions

from core.settings import Settings
from pipelines.analytics import definitions as analytics
from pipelines.definitions import defs, resources
from pipelines.ingest import definitions as ingest
from pipelines.partitions import DAILY, HOURLY


def test_definitions_load_and_resolve() -> None:
    Definitions.validate_loadable(defs)
    keys = {"/".join(k.path) for k in defs.resolve_all_asset_keys()}
    assert {
        "ingest/raw_youtube",
        "ingest/raw_x",
        "ingest/raw_instagram",
        "ingest/raw_linkedin",
        "ingest/raw_tiktok",
        "ingest/raw_bluesky",
        "ingest/raw_murmur_posts",
        "analytics/stg_engagement_deltas",
        "analytics/mart_post_hourly",
        "analytics/mart_post_daily",
        "analytics/mart_account_daily",
        "analytics/mart_best_times",
        "analytics/mart_anomalies",
        "analytics/mart_viral_trends",
        "analytics/mart_creator_rankings",
        "analytics/mart_insights",
    } <= keys
    checks = {k.name for k in defs.resolve_asset_graph().asset_check_keys}
    assert {
        "counter_drops_reported",
        "raw_snapshot_keys_unique",
        "raw_fresh",
        "mart_post_daily_totals_match",
        "mart_best_times_keys_unique",
    } <= checks
    jobs = {j.name for j in defs.resolve_all_job_defs()}
    assert {"ingest_hourly", "marts_daily", "insights"} <= jobs
    # The jobs take their partitions from their assets (declaring them again is deprecated).
    assert defs.resolve_job_def("ingest_hourly").partitions_def == HOURLY
    assert defs.resolve_job_def("marts_daily").partitions_def == DAILY
    for name in ("hourly_ingest", "hourly_marts", "hourly_insights"):
        assert defs.resolve_schedule_def(name).job_name in jobs
    # resolve_* raise on an unknown name; what they return must be the one asked for.
    assert defs.resolve_sensor_def("import_batches").name == "import_batches"
    for name in jobs:
        assert defs.resolve_job_def(name).name == name


def test_each_domain_holds_its_own_assets_and_loads_alone(tmp_path: Path) -> None:
    domains = {"ingest": ingest.defs, "analytics": analytics.defs}
    seen: set[str] = set()
    for name, domain in domains.items():
        # With the resources only: no other domain's definitions are needed to load one.
        alone = Definitions.merge(
            domain, Definitions(resources=resources(Settings(data_dir=tmp_path)))
        )
        Definitions.validate_loadable(alone)
        keys = {"/".join(k.path) for k in alone.resolve_all_asset_keys() if k.path[0] == name}
        assert keys, f"pipelines/{name} defines no {name}/ asset"
        assert not keys & seen
        seen |= keys
        # A domain's jobs select its own assets only.
        for job in alone.resolve_all_job_defs():
            if job.name.startswith("__"):
                continue  # Dagster's implicit asset job
            selected = {"/".join(k.path) for k in job.asset_layer.selected_asset_keys}
            assert selected <= keys, (job.name, selected - keys)
    assert seen == {"/".join(k.path) for k in defs.resolve_all_asset_keys()}
