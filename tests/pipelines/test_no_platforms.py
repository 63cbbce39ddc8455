"""A store of imports reads no platform it was not told to; a refused connection fails fast."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, DagsterInstance

from connectors.registry import SUPPORTED
from core.settings import Settings
from pipelines.importers import run_import
from pipelines.run import run_all
from tests.importers.test_importers import US_HEADER, query
from tests.support import free_port, serving
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor

MURMUR = [sys.executable, "-m", "murmur"]
ROWS = "".join(
    f"{vid}bcdefghijk,17.{day}.11,Video {vid},22,{100 * day},10,1,5\n"
    for vid in "ab"
    for day in (14, 15)
)


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request 404 and remembers its path: a platform that must not be read."""

    seen: list[str]

    def _answer(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads ``seen``."""


@pytest.fixture
def platforms() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server of the test's own: its URL and the requests it got."""
    seen: list[str] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen


def _export(tmp_path: Path) -> Path:
    path = tmp_path / "trending.csv"
    path.write_text(US_HEADER + ROWS, encoding="utf-8")
    return path


def _marts_videos(settings: Settings) -> list[tuple[str]]:
    return [
        (str(v),)
        for (v,) in query(
            settings, "SELECT DISTINCT external_id FROM mart_post_daily ORDER BY external_id"
        )
    ]


def test_a_refused_connection_reports_each_account_once_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    nothing_listens = f"http://127.0.0.1:{free_port()}"
    settings = Settings(data_dir=tmp_path / "data", platforms_url=nothing_listens)
    run_import(_export(tmp_path), "youtube-trending", settings=settings, workspace_id=None)
    instance = DagsterInstance.ephemeral()
    try:
        summary = run_all(settings, instance=instance)
        per_platform: dict[str, dict[str, Any]] = {}
        for platform in SUPPORTED:
            event = instance.get_latest_materialization_event(
                AssetKey(["ingest", f"raw_{platform}"])
            )
            assert event is not None, platform
            assert event.asset_materialization is not None, platform
            per_platform[platform] = {
                k: v.value for k, v in event.asset_materialization.metadata.items()
            }
        # Dagster's runs are the product's jobs, each saying who started it (issue 54, 4).
        runs = sorted(instance.get_runs(), key=lambda r: r.run_id)
        assert {r.job_name for r in runs} == {"ingest_hourly", "marts_rebuild", "insights"}
        assert {r.tags.get("murmur/started_by") for r in runs} == {"murmur pipeline run"}
    finally:
        instance.dispose()
    # The test workspace's one account per platform: read once each, refused, reported.
    for platform, meta in per_platform.items():
        failed = [e for e in meta["error_sample"] if e["kind"] == "own"]
        assert len(failed) == 1, (platform, meta)
        assert failed[0]["code"] == "connection_refused", (platform, failed)
        # Every call was refused once and never retried: one attempt per failed call.
        assert meta["requests"] == meta["errors"], (platform, meta)
    steps = {s.name: s for s in summary.steps}
    assert steps["ingest"].success
    assert steps["ingest"].read_failures == sum(m["errors"] for m in per_platform.values())
    # The other steps still ran and built the marts from the import.
    assert [s.name for s in summary.steps][-1] == "insights"
    assert all(s.success for s in summary.steps if s.name != "ingest")
    assert "marts" in steps
    assert _marts_videos(settings) == [("abcdefghijk",), ("bbcdefghijk",)]


def test_no_ingest_reads_no_platform_and_builds_the_marts_from_an_import(
    tmp_path: Path, platforms: tuple[str, list[str]]
) -> None:
    url, seen = platforms
    data_dir = tmp_path / "data"
    env = {
        **os.environ,
        "MURMUR_DATA_DIR": str(data_dir),
        "MURMUR_PORT": str(free_port()),
        "MURMUR_PLATFORMS_URL": url,
    }
    for args in (
        ["import", str(_export(tmp_path)), "--format", "youtube-trending"],
        ["pipeline", "run", "--no-ingest"],
    ):
        done = subprocess.run(
            [*MURMUR, *args], env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert seen == []
    assert "  ingest " not in done.stdout
    assert "Pipeline ok" in done.stdout
    assert _marts_videos(Settings(data_dir=data_dir)) == [("abcdefghijk",), ("bbcdefghijk",)]


def test_a_workspace_with_nothing_connected_reads_no_platform(
    tmp_path: Path, platforms: tuple[str, list[str]]
) -> None:
    url, seen = platforms
    settings = Settings(data_dir=tmp_path / "data", platforms_url=url)

    def bare_workspace(cur: Cursor) -> str:
        org = ws_repo.create_organization(cur, "Analysts")
        return ws_repo.create_workspace(cur, org, "Imports only")

    with settings.open_store() as store:
        ws_id = store.run(bare_workspace)
    run_import(_export(tmp_path), "youtube-trending", settings=settings, workspace_id=ws_id)
    summary = run_all(settings)
    assert summary.success, summary.steps
    assert seen == []
    assert _marts_videos(settings) == [("abcdefghijk",), ("bbcdefghijk",)]
