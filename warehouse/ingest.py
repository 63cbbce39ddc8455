"""The raw ingest writer: a batch of accounts, posts and snapshots into the raw tables, atomically.

Connectors (through their Dagster assets) and the file importers both land data here. A
batch is written as Parquet files under a landing directory, then loaded by ONE script
that deletes the batch's previous rows and inserts the new ones in a single transaction
(server-side over Quack when the API hosts the store), so re-running a partition or
re-importing a file replaces its rows and a failure leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from connectors.base import AccountSnapshot, EngagementSnapshot, Kind, PostRecord
from warehouse.sql import literal
from warehouse.store import Store

_TS = pl.Datetime("us")

# Columns of the raw tables (0003_analytics.sql) that a caller supplies; the writer adds
# workspace_id, source, ingest_batch and ingested_at itself.
POST_COLUMNS: dict[str, pl.DataType] = {
    "platform": pl.String(),
    "external_id": pl.String(),
    "account_external_id": pl.String(),
    "post_id": pl.String(),
    "kind": pl.String(),
    "text": pl.String(),
    "hashtags": pl.List(pl.String()),
    "media_type": pl.String(),
    "url": pl.String(),
    "category": pl.String(),
    "published_at": _TS,
    "deleted_at": _TS,
    "captured_at": _TS,
}
SNAPSHOT_COLUMNS: dict[str, pl.DataType] = {
    "platform": pl.String(),
    "external_id": pl.String(),
    "captured_at": _TS,
    "impressions": pl.Int64(),
    "reach": pl.Int64(),
    "views": pl.Int64(),
    "likes": pl.Int64(),
    "comments": pl.Int64(),
    "shares": pl.Int64(),
    "saves": pl.Int64(),
    "clicks": pl.Int64(),
}
ACCOUNT_COLUMNS: dict[str, pl.DataType] = {
    "platform": pl.String(),
    "external_id": pl.String(),
    "account_id": pl.String(),
    "kind": pl.String(),
    "handle": pl.String(),
    "display_name": pl.String(),
    "followers": pl.Int64(),
    "following": pl.Int64(),
    "posts_count": pl.Int64(),
    "category": pl.String(),
    "captured_at": _TS,
}
_REQUIRED = {
    "raw_posts": ("platform", "external_id", "account_external_id", "kind", "published_at"),
    "raw_engagement_snapshots": ("platform", "external_id", "captured_at"),
    "raw_account_snapshots": ("platform", "external_id", "kind", "handle", "captured_at"),
}
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class BatchMeta:
    """What identifies a batch and what it says about itself (the ingest_batches row)."""

    id: str  # deterministic: the same partition or file gives the same id
    workspace_id: str
    source: str  # 'connector:<platform>' or 'import:<format>'
    partition_key: str | None
    started_at: datetime
    errors: list[dict[str, str]] = field(default_factory=list)


@dataclass
class IngestBatch:
    """One connector partition or one imported file, as record objects."""

    id: str
    workspace_id: str
    source: str
    partition_key: str | None
    started_at: datetime
    accounts: list[tuple[AccountSnapshot, Kind, str | None]] = field(default_factory=list)
    posts: list[tuple[PostRecord, Kind, str | None]] = field(default_factory=list)
    snapshots: list[EngagementSnapshot] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    def meta(self) -> BatchMeta:
        """The batch's identity and errors, without its rows."""
        return BatchMeta(
            self.id,
            self.workspace_id,
            self.source,
            self.partition_key,
            self.started_at,
            list(self.errors),
        )


@dataclass(frozen=True)
class BatchCounts:
    """Rows the batch now holds in each raw table."""

    posts: int
    snapshots: int
    accounts: int


def naive_utc(moment: datetime) -> datetime:
    """The store keeps timestamps as naive UTC."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def write_batch(store: Store, batch: IngestBatch, landing_dir: Path) -> BatchCounts:
    """Write a batch of record objects (connectors' volume) through :func:`write_frames`."""
    posts = pl.DataFrame(
        [
            {
                "platform": p.platform,
                "external_id": p.external_id,
                "account_external_id": p.account_external_id,
                "post_id": post_id,
                "kind": kind,
                "text": p.text,
                "hashtags": list(p.hashtags),
                "media_type": p.media_type,
                "url": p.url,
                "category": p.category,
                "published_at": naive_utc(p.published_at),
                # The record says only that it was seen deleted: when is this batch's start.
                "deleted_at": naive_utc(batch.started_at) if p.deleted else None,
                "captured_at": naive_utc(batch.started_at),
            }
            for p, kind, post_id in batch.posts
        ],
        schema=POST_COLUMNS,
    )
    snapshots = pl.DataFrame(
        [
            {
                "platform": s.platform,
                "external_id": s.external_id,
                "captured_at": naive_utc(s.captured_at),
                "impressions": s.impressions,
                "reach": s.reach,
                "views": s.views,
                "likes": s.likes,
                "comments": s.comments,
                "shares": s.shares,
                "saves": s.saves,
                "clicks": s.clicks,
            }
            for s in batch.snapshots
        ],
        schema=SNAPSHOT_COLUMNS,
    )
    accounts = pl.DataFrame(
        [
            {
                "platform": a.platform,
                "external_id": a.external_id,
                "account_id": account_id,
                "kind": kind,
                "handle": a.handle,
                "display_name": a.display_name,
                "followers": a.followers,
                "following": a.following,
                "posts_count": a.posts_count,
                "category": a.category,
                "captured_at": naive_utc(a.captured_at),
            }
            for a, kind, account_id in batch.accounts
        ],
        schema=ACCOUNT_COLUMNS,
    )
    return write_frames(store, batch.meta(), posts, snapshots, accounts, landing_dir)


def write_frames(
    store: Store,
    meta: BatchMeta,
    posts: pl.DataFrame,
    snapshots: pl.DataFrame,
    accounts: pl.DataFrame,
    landing_dir: Path,
) -> BatchCounts:
    """Replace the batch's rows in the raw tables with these frames, in one transaction.

    Frames carry the columns of POST_COLUMNS / SNAPSHOT_COLUMNS / ACCOUNT_COLUMNS (absent
    optional ones become NULL; timestamps may be naive UTC or aware). The Parquet files
    are removed after a successful load and kept for inspection when it fails.
    """
    ingested_at = naive_utc(datetime.now(UTC))
    stamp = {
        "workspace_id": meta.workspace_id,
        "source": meta.source,
        "ingest_batch": meta.id,
        "ingested_at": ingested_at,
    }
    frames = {
        "raw_posts": _conform(posts, POST_COLUMNS, "raw_posts", stamp),
        "raw_engagement_snapshots": _conform(
            snapshots, SNAPSHOT_COLUMNS, "raw_engagement_snapshots", stamp
        ),
        "raw_account_snapshots": _conform(
            accounts, ACCOUNT_COLUMNS, "raw_account_snapshots", stamp
        ),
    }
    counts = BatchCounts(
        posts=frames["raw_posts"].height,
        snapshots=frames["raw_engagement_snapshots"].height,
        accounts=frames["raw_account_snapshots"].height,
    )
    frames["ingest_batches"] = pl.DataFrame(
        {
            "id": [meta.id],
            "workspace_id": [meta.workspace_id],
            "source": [meta.source],
            "partition_key": [meta.partition_key],
            "rows_posts": [counts.posts],
            "rows_snapshots": [counts.snapshots],
            "rows_accounts": [counts.accounts],
            "errors": [json.dumps(meta.errors)],
            "started_at": [naive_utc(meta.started_at)],
            "finished_at": [ingested_at],
        },
        schema_overrides={"partition_key": pl.String(), "started_at": _TS, "finished_at": _TS},
    )

    # The store host reads these files itself over Quack, so the paths must be absolute.
    batch_dir = (landing_dir / safe_name(meta.id)).resolve()
    if batch_dir.exists():
        shutil.rmtree(batch_dir)
    batch_dir.mkdir(parents=True)
    files: dict[str, Path] = {}
    for table, frame in frames.items():
        files[table] = batch_dir / f"{table}.parquet"
        # The files live for seconds: favour write speed over size.
        frame.write_parquet(files[table], compression="lz4", statistics=False)

    # execute_script cannot bind parameters over Quack: the batch id and the landing paths
    # are rendered through warehouse.sql.literal, the only values in this script.
    batch = literal(meta.id)
    statements = [
        f"DELETE FROM {table} WHERE ingest_batch = {batch};"  # noqa: S608 - see above
        for table in ("raw_posts", "raw_engagement_snapshots", "raw_account_snapshots")
    ]
    statements.append(f"DELETE FROM ingest_batches WHERE id = {batch};")  # noqa: S608
    statements.extend(
        f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet({literal(path)});"  # noqa: S608
        for table, path in files.items()
    )
    store.execute_script("\n".join(statements))
    shutil.rmtree(batch_dir, ignore_errors=True)
    return counts


def safe_name(batch_id: str) -> str:
    """A batch id as a single directory name."""
    return _SAFE.sub("_", batch_id).strip("._") or "batch"


def md5_hex(values: pl.Series) -> pl.Series:
    """The MD5 hex digest of each string, stable across runs and versions (unlike Expr.hash).

    Called on the few rows that need a derived id (unique values only), so the Python
    call per value is not on the bulk path.
    """
    unique = values.cast(pl.String).fill_null("").unique()
    digests = pl.Series([hashlib.md5(v.encode()).hexdigest() for v in unique], dtype=pl.String)
    mapping = dict(zip(unique.to_list(), digests.to_list(), strict=True))
    return values.cast(pl.String).fill_null("").replace_strict(mapping, return_dtype=pl.String)


def _conform(
    frame: pl.DataFrame, columns: dict[str, pl.DataType], table: str, stamp: dict[str, object]
) -> pl.DataFrame:
    if frame.width == 0:
        frame = pl.DataFrame(schema=columns)
    missing = [c for c in _REQUIRED[table] if c not in frame.columns]
    if missing:
        raise ValueError(f"{table} frame lacks required columns {missing}")
    exprs: list[pl.Expr] = []
    for name, dtype in columns.items():
        if name not in frame.columns:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
            continue
        col = pl.col(name)
        current = frame.schema[name]
        if isinstance(current, pl.Datetime) and current.time_zone is not None:
            col = col.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        exprs.append(col.cast(dtype).alias(name))
    out = frame.select(exprs)
    nulls = out.select(pl.col(c).null_count() for c in _REQUIRED[table]).row(0)
    for name, count in zip(_REQUIRED[table], nulls, strict=True):
        if count:
            raise ValueError(f"{table}: {count} rows have no {name}")
    return out.with_columns(
        pl.lit(stamp["workspace_id"], dtype=pl.String).alias("workspace_id"),
        pl.lit(stamp["source"], dtype=pl.String).alias("source"),
        pl.lit(stamp["ingest_batch"], dtype=pl.String).alias("ingest_batch"),
        pl.lit(stamp["ingested_at"], dtype=_TS).alias("ingested_at"),
    )
