"""The pipeline through the API host over Quack (remote mode), as it runs beside the API."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from murmur.settings import Settings
from pipelines.run import run_all
from tests.pipelines.test_marts import _random_seed
from tests.support import start_server
from warehouse.store import Secrets, Store


def test_run_all_through_the_api_host(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", quack_port=0, store_lock_timeout_seconds=10)
    live = start_server(settings)
    try:
        _random_seed(live.store)
        with Store.connect(
            settings.store_path,
            host_file=settings.host_file,
            quack_token=Secrets.load(settings.data_dir).quack_token,
        ) as probe:
            assert probe.mode == "remote"
        summary = run_all(settings, now=datetime(2025, 3, 7, tzinfo=UTC), ingest=False)
        assert summary.success, summary
        with live.store.cursor() as cur:
            # growth only: first-seen totals are kept apart (mart_post_first_seen)
            staged = cur.execute(
                "SELECT sum(likes) FROM stg_engagement_deltas WHERE NOT first_seen"
            ).fetchone()
            daily = cur.execute("SELECT sum(likes) FROM mart_post_daily").fetchone()
            best = cur.execute("SELECT count(*) FROM mart_best_times").fetchone()
        assert staged == daily
        assert best is not None
        assert best[0] > 0
    finally:
        live.stop()
