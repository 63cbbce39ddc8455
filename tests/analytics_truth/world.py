"""The shared exports imported once into one store, for the modules that check against them."""

from __future__ import annotations

import collections
import csv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from connectors.base import AccountSnapshot, EngagementSnapshot, PostRecord
from core.settings import Settings
from pipelines.importers import run_import
from pipelines.run import run_all
from tests.support import LiveServer, Tenant, new_tenant, start_server
from warehouse.ingest import IngestBatch, write_batches

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
NOW = datetime(2026, 11, 22, tzinfo=UTC)
# The last records of the tweets export (its newest tweets, to 2021-04-21), in a workspace
# beside newer X captures (CAPTURES), as a `make up` store holds an import beside the
# simulator's captures.
BESIDE_TWEETS = 600
# X captures, as the connector writes them (an hourly batch each): "newsdesk" read twice on
# the Instagram export's reading day (followers 1,000 then 1,100; one post, first read at
# 1,000 impressions and 40 likes, then 3,000 and 100); "gone" read once, on the tweets'
# export day, more than a year before the captures' newest reading. Their days are the other
# exports' (the run builds no day for them alone).
FRESH, STALE = "newsdesk", "gone"
CAPTURED = datetime(2022, 6, 4, 10, tzinfo=UTC)
CAPTURES = [
    (CAPTURED - timedelta(hours=9), FRESH, 1000, 1000, 40),
    (CAPTURED, FRESH, 1100, 3000, 100),
    (datetime(2021, 4, 21, 10, tzinfo=UTC), STALE, 500, 800, 30),
]


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
        tenant = new_tenant(server)
        run_import(
            _tail(DATASETS / "vaccination_tweets.csv", BESIDE_TWEETS, root),
            "tweets",
            settings=settings,
            workspace_id=tenant.workspace_id,
            progress=False,
        )
        _capture_x(settings, tenant.workspace_id)
        tenants["tweets_beside_captures"] = tenant
        summary = run_all(settings, now=NOW, ingest=False)
        assert summary.success, summary
        yield World(server, tenants)
    finally:
        for tenant in tenants.values():
            tenant.api.close()
        server.stop()


def _capture_x(settings: Settings, workspace_id: str) -> None:
    """``CAPTURES`` written as the X connector's hourly batches (source ``connector:x``)."""
    batches = []
    for at, handle, followers, impressions, likes in CAPTURES:
        post = f"{handle}-1"
        published = datetime(2021, 1, 1, tzinfo=UTC)
        batches.append(
            IngestBatch(
                id=f"connector:x:{workspace_id}:{at:%Y-%m-%d-%H:00}",
                workspace_id=workspace_id,
                source="connector:x",
                partition_key=f"{at:%Y-%m-%d-%H:00}",
                started_at=at,
                accounts=[
                    (
                        AccountSnapshot("x", handle, handle, handle, followers, 1, 1, at),
                        "creator",
                        None,
                    )
                ],
                posts=[(PostRecord("x", post, handle, "news", published), "creator", None)],
                snapshots=[EngagementSnapshot("x", post, at, impressions=impressions, likes=likes)],
            )
        )
    with settings.open_lakehouse() as lake:
        write_batches(lake, batches)


def _tail(path: Path, records: int, folder: Path) -> Path:
    """The file's header and last ``records`` records, as a file of their own in ``folder``."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        rows = [next(reader), *collections.deque(reader, maxlen=records)]
    out = folder / f"tail-{records}-{path.name}"
    with out.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return out
