"""Ingest assets: per UTC hour, what each platform says about our accounts, competitors, creators.

One asset per platform, so a platform that is down fails (and retries) alone; inside it,
one failed account or metric is recorded in the batch's errors and the asset's metadata
and never fails the run. Engagement lands as a new snapshot each hour (never overwritten).
"""

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset,
)

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    AuthExpiredError,
    Connector,
    ConnectorError,
    EngagementSnapshot,
    Kind,
    PostRecord,
)
from connectors.http import hashtags_in
from connectors.registry import SUPPORTED
from pipelines.partitions import HOURLY
from pipelines.resources import PlatformsResource, StoreResource
from warehouse import workspaces as ws_repo
from warehouse.marts.runs import PublishedDestination, ingest_targets, published_destinations
from warehouse.store import Lakehouse

if TYPE_CHECKING:
    from warehouse.ingest import BatchCounts, IngestBatch

# Posts whose engagement is re-measured each hour: those published in the last 14 days
# (velocity and trends need the young ones; older posts barely move).
TRACK_DAYS = 14
# Creator discovery: a few category queries per platform, a few accounts each.
CREATOR_QUERIES = ("tech", "food", "travel", "fitness", "music")
CREATORS_PER_QUERY = 5
MAX_ERRORS_SHOWN = 20
# Accounts of one platform read at once.
READERS = 4


@dataclass
class _Tally:
    accounts: int = 0
    posts: int = 0
    snapshots: int = 0
    requests: int = 0  # HTTP attempts made to the platform, retries included
    errors: list[dict[str, str]] = field(default_factory=list)
    reconnect: list[str] = field(default_factory=list)


def _now(context: AssetExecutionContext) -> datetime:
    tag = context.run.tags.get("murmur/now")
    return datetime.fromisoformat(tag) if tag else datetime.now(UTC)


def _error(ref: AccountRef | None, exc: Exception | str, where: str) -> dict[str, str]:
    return {
        "platform": ref.platform if ref else "",
        "external_id": ref.external_id if ref else "",
        "handle": ref.handle if ref else "",
        "kind": ref.kind if ref else "",
        "stage": where,
        "code": getattr(exc, "code", None) or type(exc).__name__,
        "message": str(exc)[:500],
    }


def _drain(connector: Connector) -> list[dict[str, str]]:
    take = getattr(connector, "take_errors", None)
    return list(take()) if callable(take) else []


def ingest_platform(
    store: Lakehouse,
    platforms: PlatformsResource,
    platform: str,
    partition_key: str,
    now: datetime,
    landing_dir: Any,
) -> _Tally:
    """Fetch every workspace's accounts, competitors and creators on one platform into batches,
    and write them in one transaction."""
    from warehouse.ingest import write_batches

    tally, batches = read_platform(store, platforms, platform, partition_key, now)
    _tally_written(tally, write_batches(store, batches))
    return tally


def _tally_written(tally: _Tally, counts: "list[BatchCounts]") -> None:
    for c in counts:
        tally.accounts += c.accounts
        tally.posts += c.posts
        tally.snapshots += c.snapshots


def read_platform(
    store: Lakehouse,
    platforms: PlatformsResource,
    platform: str,
    partition_key: str,
    now: datetime,
) -> "tuple[_Tally, list[IngestBatch]]":
    """Every workspace's accounts, competitors and creators on one platform, as batches (one
    a workspace) not yet written; the tally counts requests and failures, not rows."""
    from warehouse.ingest import IngestBatch

    tally = _Tally()
    batches: list[IngestBatch] = []
    targets = store.publishing.read(lambda cur: ingest_targets(cur, platform))
    if not targets:
        return tally, batches
    since = now - timedelta(days=TRACK_DAYS)
    until = now.replace(tzinfo=None) + timedelta(hours=1)
    ours = store.publishing.read(
        lambda cur: published_destinations(cur, since.replace(tzinfo=None), until)
    )
    ours_by_account: dict[str, dict[str, str]] = {}
    for d in ours:
        if d.platform == platform:
            ours_by_account.setdefault(d.account_id, {})[d.platform_post_id] = d.post_id
    creators: list[AccountRef] = []
    readers = _Readers(platforms, platform)
    try:
        for query in CREATOR_QUERIES:
            try:
                creators += list(readers.connector().search_creators(query, CREATORS_PER_QUERY))
            except ConnectorError as exc:
                tally.errors.append(_error(None, exc, f"search_creators:{query}"))
        tally.errors += _drain(readers.connector())
        creators = list({c.external_id: c for c in creators}.values())  # a query may repeat one
        read = partial(readers.read, since=since, ours=ours_by_account)
        with ThreadPoolExecutor(READERS, thread_name_prefix=f"ingest-{platform}") as pool:
            for workspace_id, groups in sorted(targets.items()):
                batch = IngestBatch(
                    id=f"connector:{platform}:{workspace_id}:{partition_key}",
                    workspace_id=workspace_id,
                    source=f"connector:{platform}",
                    partition_key=partition_key,
                    started_at=now,
                    origin=platforms.base_url(platform),
                )
                refs = [
                    AccountRef(
                        platform,
                        a["external_id"],
                        a["handle"],
                        "own",
                        account_id=a["id"],
                        access_token=platforms.account_token(platform, a["external_id"]),
                    )
                    for a in groups["own"]
                ]
                refs += [
                    AccountRef(platform, c["handle"], c["handle"], "competitor")
                    for c in groups["competitor"]
                ]
                refs += [AccountRef(platform, c.external_id, c.handle, "creator") for c in creators]
                for got in pool.map(read, refs):  # in the order of ``refs``
                    batch.accounts += got.accounts
                    batch.posts += got.posts
                    batch.snapshots += got.snapshots
                    batch.errors += got.errors
                    if got.expired is not None:
                        store.publishing.run(
                            partial(
                                ws_repo.set_account_status,
                                account_id=got.expired,
                                status="needs_reconnection",
                            )
                        )
                        tally.reconnect.append(got.expired)
                batches.append(batch)
                tally.errors += batch.errors
    finally:
        tally.requests = readers.requests()
        readers.close()
    return tally, batches


@dataclass
class _Read:
    """What one account's reads gave: rows for the batch, failures, an expired connection."""

    accounts: list[tuple[AccountSnapshot, Kind, str | None]] = field(default_factory=list)
    posts: list[tuple[PostRecord, Kind, str | None]] = field(default_factory=list)
    snapshots: list[EngagementSnapshot] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    expired: str | None = None


class _Readers:
    """Connectors of one platform, one per thread: the platform, not this process, is what
    an account's reads wait on, so a few accounts are read at once. A connector keeps the
    last response's clock and its per-item failures, hence one each."""

    def __init__(self, platforms: PlatformsResource, platform: str) -> None:
        self._platforms = platforms
        self._platform = platform
        self._local = threading.local()
        self._opened: list[Connector] = []
        self._lock = threading.Lock()

    def connector(self) -> Connector:
        """This thread's connector."""
        found: Connector | None = getattr(self._local, "connector", None)
        if found is None:
            found = self._platforms.connector(self._platform)
            self._local.connector = found
            with self._lock:
                self._opened.append(found)
        return found

    def read(self, ref: AccountRef, *, since: datetime, ours: dict[str, dict[str, str]]) -> _Read:
        """One account's profile, its posts since ``since`` and their counters."""
        connector = self.connector()
        got = _Read()
        try:
            snap = connector.fetch_account(ref)
            # A competitor is tracked by handle: read its posts by the id the platform gave.
            ref = replace(ref, external_id=snap.external_id)
            got.accounts.append((snap, ref.kind, ref.account_id))
            posts: list[PostRecord] = list(connector.list_posts(ref, since))
            links = ours.get(ref.account_id or "", {})
            got.posts += [(p, ref.kind, links.get(p.external_id)) for p in posts]
            ids = sorted({p.external_id for p in posts if not p.deleted} | set(links))
            if ids:
                got.snapshots += list(connector.fetch_metrics(ref, ids))
        except AuthExpiredError as exc:
            got.errors.append(_error(ref, exc, "auth"))
            got.expired = ref.account_id
        except ConnectorError as exc:
            got.errors.append(_error(ref, exc, "fetch"))
        got.errors += _drain(connector)
        return got

    def requests(self) -> int:
        """HTTP attempts made by this platform's connectors so far."""
        return sum(getattr(getattr(c, "http", None), "attempts", 0) for c in self._opened)

    def close(self) -> None:
        for connector in self._opened:
            close = getattr(connector, "close", None)
            if callable(close):
                close()


def _result(tally: _Tally, workspaces: int | None = None) -> MaterializeResult[Any]:
    meta: dict[str, Any] = {
        "accounts": tally.accounts,
        "posts": tally.posts,
        "snapshots": tally.snapshots,
        "requests": tally.requests,
        "errors": len(tally.errors),
        "needs_reconnection": MetadataValue.json(tally.reconnect),
        "error_sample": MetadataValue.json(tally.errors[:MAX_ERRORS_SHOWN]),
    }
    if workspaces is not None:
        meta["workspaces"] = workspaces
    return MaterializeResult(metadata=meta)


def platform_asset(platform: str) -> AssetsDefinition:
    """The hourly ingest asset of one platform."""

    @asset(
        name=f"raw_{platform}",
        key_prefix=["ingest"],
        group_name="ingest",
        partitions_def=HOURLY,
        description=f"Accounts, posts and engagement snapshots from {platform}, each hour.",
        kinds={"python", "duckdb"},
    )
    def _ingest(
        context: AssetExecutionContext, store: StoreResource, platforms: PlatformsResource
    ) -> MaterializeResult[Any]:
        with store.open() as s:
            tally = ingest_platform(
                s, platforms, platform, context.partition_key, _now(context), store.landing_dir
            )
        if tally.errors:
            context.log.warning(f"{platform}: {len(tally.errors)} failures recorded, run goes on")
        return _result(tally)

    return _ingest


@asset(
    key=["ingest", "raw_murmur_posts"],
    group_name="ingest",
    partitions_def=HOURLY,
    description="Murmur's own published posts (post_destinations), linked to raw_posts.post_id.",
    kinds={"python", "duckdb"},
)
def raw_murmur_posts(
    context: AssetExecutionContext, store: StoreResource
) -> MaterializeResult[Any]:
    """Describe the posts Murmur published as raw posts, so they appear in analytics."""
    from warehouse.ingest import write_batches

    with store.open() as s:
        tally, batches, workspaces = read_murmur_posts(s, context.partition_key, _now(context))
        _tally_written(tally, write_batches(s, batches))
    return _result(tally, workspaces=workspaces)


def read_murmur_posts(
    store: Lakehouse, partition_key: str, now: datetime
) -> "tuple[_Tally, list[IngestBatch], int]":
    """Murmur's own published posts as batches (one a workspace), not yet written."""
    from warehouse.ingest import IngestBatch

    since = (now - timedelta(days=TRACK_DAYS)).replace(tzinfo=None)
    until = now.replace(tzinfo=None) + timedelta(hours=1)
    rows = store.publishing.read(lambda cur: published_destinations(cur, since, until))
    by_ws: dict[str, list[PublishedDestination]] = {}
    for r in rows:
        by_ws.setdefault(r.workspace_id, []).append(r)
    batches: list[IngestBatch] = []
    for workspace_id, dests in sorted(by_ws.items()):
        batch = IngestBatch(
            id=f"murmur:posts:{workspace_id}:{partition_key}",
            workspace_id=workspace_id,
            source="murmur:posts",
            partition_key=partition_key,
            started_at=now,
        )
        for d in dests:
            record = PostRecord(
                platform=d.platform,
                external_id=d.platform_post_id,
                account_external_id=d.account_external_id,
                text=d.text,
                published_at=d.published_at.replace(tzinfo=UTC),
                hashtags=hashtags_in(d.text),
                url=d.platform_url,
            )
            batch.posts.append((record, "own", d.post_id))
        batches.append(batch)
    return _Tally(), batches, len(by_ws)


INGEST_ASSETS: list[AssetsDefinition] = [*(platform_asset(p) for p in SUPPORTED), raw_murmur_posts]


# Platforms of one capture read at once (each with READERS accounts at once).
PLATFORMS_AT_ONCE = 3


def capture_assets() -> AssetsDefinition:
    """The ingest assets as ONE step: every selected platform (and Murmur's own posts) read,
    a few platforms at once, then written in one lake transaction.

    The assets, their keys and what each records are those of :data:`INGEST_ASSETS`
    (one ``ingest_batches`` row a platform and workspace, its own errors); only the commit
    is shared: one commit, and one file a raw table, per capture rather than per platform
    (a capture wrote ten transactions, ~2.5 s of its ~5.5 s on two cores). A platform whose
    read fails unexpectedly fails the step, after the others are written and materialized.
    """
    platforms_of = {AssetKey(["ingest", f"raw_{p}"]): p for p in SUPPORTED}
    posts_key = AssetKey(["ingest", "raw_murmur_posts"])
    # The very specs of INGEST_ASSETS (keys, descriptions, group, kinds, partitions), each
    # skippable since a run may select some of them.
    specs = [spec.replace_attributes(skippable=True) for a in INGEST_ASSETS for spec in a.specs]

    @multi_asset(name="capture", specs=specs, can_subset=True)
    def _capture(
        context: AssetExecutionContext, store: StoreResource, platforms: PlatformsResource
    ) -> Iterator[MaterializeResult[Any]]:
        from warehouse.ingest import write_batches

        now = _now(context)
        key = context.partition_key
        wanted = [k for k in platforms_of if k in context.selected_asset_keys]
        read: dict[AssetKey, tuple[_Tally, list[IngestBatch]]] = {}
        failed: dict[AssetKey, BaseException] = {}
        with store.open() as s:
            with ThreadPoolExecutor(PLATFORMS_AT_ONCE, thread_name_prefix="capture") as pool:
                futures = {
                    k: pool.submit(read_platform, s, platforms, platforms_of[k], key, now)
                    for k in wanted
                }
                for k, future in futures.items():
                    try:
                        read[k] = future.result()
                    except Exception as exc:
                        failed[k] = exc
            workspaces = None
            if posts_key in context.selected_asset_keys:
                tally, batches, workspaces = read_murmur_posts(s, key, now)
                read[posts_key] = (tally, batches)
            order = list(read)
            counts = write_batches(s, [b for k in order for b in read[k][1]])
        written = iter(counts)
        for k in order:
            tally, batches = read[k]
            _tally_written(tally, [next(written) for _ in batches])
            if tally.errors:
                context.log.warning(
                    f"{k.path[-1]}: {len(tally.errors)} failures recorded, run goes on"
                )
            result = _result(tally, workspaces=workspaces if k == posts_key else None)
            yield MaterializeResult(asset_key=k, metadata=result.metadata)
        if failed:
            names = ", ".join(f"{k.path[-1]}: {exc!r}" for k, exc in failed.items())
            raise RuntimeError(f"capture failed on {names}") from next(iter(failed.values()))

    return _capture


#: What ``murmur pipeline run`` materializes for a moment: INGEST_ASSETS in one step.
CAPTURE = capture_assets()
