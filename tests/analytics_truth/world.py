"""The shared exports imported once into one store, for the modules that check against them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from murmur.settings import Settings
from pipelines.importers import run_import
from pipelines.run import run_all
from tests.support import LiveServer, Tenant, new_tenant, start_server

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
# The modules that read the world run on one xdist worker, so it is built once.
GROUP = "shared_exports_world"
# Each export in a workspace of its own, under the kind it is imported as.
PLAN = {
    "us_own": ("youtube_trending_us.csv", "youtube-trending", "own"),
    "fr_own": ("youtube_trending_fr.csv", "youtube-trending", "own"),
    "fr_creator": ("youtube_trending_fr.csv", "youtube-trending", "creator"),
    "tweets_own": ("vaccination_tweets.csv", "tweets", "own"),
    "tweets_creator": ("vaccination_tweets.csv", "tweets", "creator"),
    "instagram_own": ("instagram_posts.csv", "instagram-insights", "own"),
}


@dataclass
class World:
    server: LiveServer
    tenants: dict[str, Tenant]


@contextmanager
def imported_world(root: Path) -> Iterator[World]:
    """A served store holding every export of ``PLAN``, after one pipeline run."""
    settings = Settings(data_dir=root / "data")
    settings.ensure_dirs()
    server = start_server(settings)
    tenants = {}
    try:
        for name, (file, fmt, kind) in PLAN.items():
            tenant = new_tenant(server)
            run_import(
                DATASETS / file,
                fmt,
                settings=settings,
                workspace_id=tenant.workspace_id,
                kind=kind,
                progress=False,
            )
            tenants[name] = tenant
        summary = run_all(settings, now=datetime(2026, 11, 22, tzinfo=UTC), ingest=False)
        assert summary.success, summary
        yield World(server, tenants)
    finally:
        for tenant in tenants.values():
            tenant.api.close()
        server.stop()
