"""The raw ingest writer: a batch of accounts, posts and snapshots into the raw tables, atomically.

Connectors (through their Dagster assets) and the file importers both land data here. A
batch's frames go to the lake as Arrow in ONE lake transaction that deletes the batch's
previous rows and inserts the new ones, so re-running a partition or re-importing a file
replaces its rows and a failure leaves nothing half-written. Several batches (one capture
of every platform) may share that transaction (:func:`write_batches`): each keeps its own
id, rows and ``ingest_batches`` row; only the commit, and the lake's files, are shared.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from connectors.base import AccountSnapshot, EngagementSnapshot, Kind, PostRecord
from warehouse.errors import StoreError
from warehouse.extensions import ArrowStream
from warehouse.files import sync_new_files
from warehouse.ids import naive_utc
from warehouse.rows import Cursor
from warehouse.store import Lakehouse, StoreCursor

_TS = pl.Datetime("us")

# Columns of the raw tables (warehouse/lake/migrations) that a caller supplies; the writer
# adds workspace_id, source, ingest_batch and ingested_at itself.
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
    "thumbnail_url": pl.String(),
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
    "url": pl.String(),
    "thumbnail_url": pl.String(),
}
_REQUIRED = {
    "raw_posts": ("platform", "external_id", "account_external_id", "kind", "published_at"),
    "raw_engagement_snapshots": ("platform", "external_id", "captured_at"),
    "raw_account_snapshots": ("platform", "external_id", "kind", "handle", "captured_at"),
}


@dataclass(frozen=True)
class BatchMeta:
    """What identifies a batch and what it says about itself (the ingest_batches row)."""

    id: str  # deterministic: the same partition or file gives the same id
    workspace_id: str
    source: str  # 'connector:<platform>' or 'import:<format>'
    partition_key: str | None
    started_at: datetime
    errors: list[dict[str, str]] = field(default_factory=list)
    # where the readings came from: the platform API's base URL, or the imported file's name
    origin: str | None = None


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
    origin: str | None = None

    def meta(self) -> BatchMeta:
        """The batch's identity and errors, without its rows."""
        return BatchMeta(
            self.id,
            self.workspace_id,
            self.source,
            self.partition_key,
            self.started_at,
            list(self.errors),
            self.origin,
        )


@dataclass(frozen=True)
class BatchCounts:
    """Rows the batch now holds in each raw table."""

    posts: int
    snapshots: int
    accounts: int


def write_batch(store: Lakehouse, batch: IngestBatch) -> BatchCounts:
    """Write a batch of record objects (connectors' volume) through :func:`write_frames`."""
    return write_batches(store, [batch])[0]


def write_batches(store: Lakehouse, batches: list[IngestBatch]) -> list[BatchCounts]:
    """Write several batches in ONE lake transaction: each replaces its own rows and has its
    own ``ingest_batches`` row, as if written alone, but they share one commit and one file
    per table (a capture of nine platforms: one commit, not nine; docs/pipeline.md)."""
    if not batches:
        return []
    ids = [batch.id for batch in batches]
    if len(set(ids)) != len(ids):
        raise ValueError(f"batches written together need distinct ids: {ids}")
    ingested_at = naive_utc(datetime.now(UTC))
    prepared = [_batch_frames(batch, ingested_at) for batch in batches]
    frames = {
        table: pl.concat([f[table] for f, _ in prepared], how="vertical")
        for table in prepared[0][0]
    }
    # Handed to DuckDB as Arrow (zero copy) rather than a Parquet round trip, which cost a
    # write and a read of every row (docs/performance.md, "Pipeline and import").
    _load(store, ids, frames)
    return [counts for _, counts in prepared]


def _batch_frames(
    batch: IngestBatch, ingested_at: datetime
) -> tuple[dict[str, pl.DataFrame], BatchCounts]:
    """A batch of record objects as the frames :func:`_stamped` makes of them."""
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
                "thumbnail_url": p.thumbnail_url,
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
                "url": a.url,
                "thumbnail_url": a.thumbnail_url,
            }
            for a, kind, account_id in batch.accounts
        ],
        schema=ACCOUNT_COLUMNS,
    )
    return _stamped(batch.meta(), posts, snapshots, accounts, ingested_at)


def write_frames(
    store: Lakehouse,
    meta: BatchMeta,
    posts: pl.DataFrame,
    snapshots: pl.DataFrame,
    accounts: pl.DataFrame,
) -> BatchCounts:
    """Replace the batch's rows in the raw tables with these frames, in one transaction.

    Frames carry the columns of POST_COLUMNS / SNAPSHOT_COLUMNS / ACCOUNT_COLUMNS (absent
    optional ones become NULL; timestamps may be naive UTC or aware).
    """
    frames, counts = _stamped(meta, posts, snapshots, accounts, naive_utc(datetime.now(UTC)))
    _load(store, [meta.id], frames)
    return counts


def _stamped(
    meta: BatchMeta,
    posts: pl.DataFrame,
    snapshots: pl.DataFrame,
    accounts: pl.DataFrame,
    ingested_at: datetime,
) -> tuple[dict[str, pl.DataFrame], BatchCounts]:
    """The batch's frames for the raw tables and its ``ingest_batches`` row, stamped."""
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
            "origin": [meta.origin],
        },
        schema_overrides={
            "partition_key": pl.String(),
            "started_at": _TS,
            "finished_at": _TS,
            "origin": pl.String(),
        },
    )
    return frames, counts


_RAW_TABLES = ("raw_posts", "raw_engagement_snapshots", "raw_account_snapshots")


def _forget_batch(cur: StoreCursor, batch_id: str) -> None:
    """Delete the rows an earlier write of this batch left, if there was one."""
    _forget_batches(cur, [batch_id])


def _forget_batches(cur: StoreCursor, batch_ids: list[str]) -> None:
    """Delete the rows earlier writes of these batches left, if there were any."""
    # A batch's rows and its ingest_batches row commit together, so a batch id absent from
    # ingest_batches has no rows anywhere: the four deletes, each a scan of its table's file
    # list (~40 % of a small batch's write), are paid only when a partition is written again.
    # One look-up for all the batches of a write (~30 ms each, measured, when one a batch).
    seen = cur.execute(
        "SELECT id FROM ingest_batches WHERE list_contains(?, id)", [batch_ids]
    ).fetchall()
    for (batch_id,) in seen:
        for table in _RAW_TABLES:
            # table names are our constants; the batch id is bound
            cur.execute(f"DELETE FROM {table} WHERE ingest_batch = ?", [batch_id])  # noqa: S608
        cur.execute("DELETE FROM ingest_batches WHERE id = ?", [batch_id])


def _load(store: Lakehouse, batch_ids: list[str], frames: dict[str, pl.DataFrame]) -> None:
    """Replace the batches' rows with the frames' in one lake transaction (again if refused)."""
    views = {table: f"_landing_{table}" for table in frames}

    def work(cur: StoreCursor) -> None:
        for table, frame in frames.items():
            cur.register(views[table], ArrowStream(frame))
        _forget_batches(cur, batch_ids)
        for table, view in views.items():
            cur.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view}")  # noqa: S608

    try:
        store.run(work)
    finally:
        with store.cursor() as cur:
            for view in views.values():
                with contextlib.suppress(StoreError):
                    cur.unregister(view)


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


# -- youtube-trending CSV straight into DuckDB ---------------------------------------------------

_YT_OPTIONAL = (
    "channel_title",
    "publish_time",
    "tags",
    "video_error_or_removed",
    "thumbnail_link",
)
_CSV_OPTIONS = "header = true, all_varchar = true, delim = ',', quote = '\"', escape = '\"'"
_PUBLISH_FORMATS = "['%Y-%m-%dT%H:%M:%S.%fZ', '%Y-%m-%dT%H:%M:%SZ', '%Y-%m-%d %H:%M:%S']"
# Repeated (video, day) keys are found with one bit per day in a 64-bit mask (day number
# mod 64; exact while a video's days span fewer than 64, else the path declines): the
# count(DISTINCT day) it replaces was half of the aggregation's time (0.7 of 1.4 s, 2M rows).
_DAY_BITS = 64


@dataclass(frozen=True)
class CsvLoad:
    """What the direct CSV load wrote: records read and the batch's rows."""

    rows: int
    counts: BatchCounts
    # the first and last captured_at of the snapshots written (:func:`batch_overlap`'s span)
    span: tuple[datetime, datetime]


def youtube_csv_columns(store: Lakehouse, path: Path) -> list[str] | None:
    """The header of a CSV file as DuckDB reads it; None when DuckDB cannot read it."""
    try:
        with store.cursor() as cur:
            found = cur.execute(
                f"DESCRIBE SELECT * FROM read_csv(?, {_CSV_OPTIONS})",  # noqa: S608 - constant
                [str(path)],
            ).fetchall()
    except StoreError:
        return None
    return [str(r[0]) for r in found]


def _padded(expr: str) -> str:
    """True when the value has surrounding whitespace (the careful path strips it)."""
    # Rather than copy every string to strip it, a padded value makes the path decline.
    return f"coalesce(regexp_matches({expr}, '^\\s|\\s$'), false)"


def _youtube_sql(have: set[str]) -> dict[str, str]:
    """The direct path's statements for a file with these columns (identifiers are ours)."""

    def src(name: str) -> str:
        # Identifiers are our constants (REQUIRED and _YT_OPTIONAL), present in the header.
        return f'f."{name}"' if name in have or name not in _YT_OPTIONAL else "NULL::VARCHAR"

    day = f"try_strptime({src('trending_date')}, '%y.%d.%m')"
    # A record's check, on the columns of the read below: the day parses and is written
    # the one way it prints back ('18.01.12', not '18.1.12' nor ' 18.01.12'), which is what
    # the careful path's pattern [0-9]{2}.[0-9]{2}.[0-9]{2} accepts; the round trip costs
    # less than the regular expression per record (1M rows, one thread: 0.97 vs 1.04 CPU-s,
    # minimum of 5; no difference measured with two).
    row_bad = "coalesce(strftime(day, '%y.%d.%m') <> day_text, true)"
    removed = (
        f"coalesce(lower(trim({src('video_error_or_removed')})) = 'true', false)"
        if "video_error_or_removed" in have
        else "false"
    )
    day_bit = f"1::UBIGINT << CAST(((CAST(day AS DATE) - DATE '2000-01-01') % {_DAY_BITS}"
    day_bit += f" + {_DAY_BITS}) % {_DAY_BITS} AS INTEGER)"
    # One read of the file, grouped by video: the strings a post needs as of its newest day,
    # the checks of every record. Grouped by (video, category id), the posts needed a second
    # grouping of the groups (1.75 of the posts insert's 3.6 operator-seconds, 2M rows); a
    # category is NULL-free here since the careful path files NULL and '' alike (as '').
    # publish_time stays text here (min and max): parsed once per video, and a video whose
    # records disagree on it declines.
    videos = f"""
CREATE TEMP TABLE _yt_v AS
WITH r AS (
    SELECT {src("video_id")} AS video_id, coalesce({src("category_id")}, '') AS category_id,
           {src("channel_title")} AS channel, {src("title")} AS title, {src("tags")} AS tags,
           {day} AS day, {src("publish_time")} AS publish_time, {removed} AS removed,
           {src("trending_date")} AS day_text, {src("thumbnail_link")} AS thumb
    FROM read_csv($path, {_CSV_OPTIONS}, strict_mode = true) f
)
SELECT video_id, count(*) AS n, count(channel) AS n_channel,
       min(channel) AS channel, max(channel) AS channel_max,
       max(day) FILTER (WHERE channel IS NOT NULL) AS channel_day,
       arg_max_null(category_id, day) AS category_id,
       min(category_id) AS category_min, max(category_id) AS category_max,
       arg_max_null(title, day) AS title, arg_max_null(tags, day) AS tags,
       arg_max_null(thumb, day) AS thumb,
       min(publish_time) AS publish_time, max(publish_time) AS publish_max,
       min(day) AS first_day, max(day) AS last_day,
       min(day) FILTER (WHERE removed) AS deleted_day,
       bit_or({day_bit}) AS day_bits,
       bool_or({row_bad}) AS bad
FROM r GROUP BY video_id;
"""  # noqa: S608 - identifiers are our constants; the path is bound
    # The few videos filed under several categories: their records per category (a channel's
    # category is the one most of its records name), from a third read of the file, run only
    # when there are such videos.
    moved = f"""
CREATE TEMP TABLE _yt_moved AS
SELECT {src("video_id")} AS video_id, coalesce({src("category_id")}, '') AS category_id,
       count({src("channel_title")}) AS n_channel,
       bool_or({_padded(src("category_id"))}) AS bad
FROM read_csv($path, {_CSV_OPTIONS}, strict_mode = true) f
WHERE {src("video_id")} IN (SELECT video_id FROM _yt_v WHERE category_min <> category_max)
GROUP BY ALL;
"""  # noqa: S608 - identifiers are our constants; the path is bound
    # The posts straight from the video groups into the table (no grouping left to do).
    # A video that fails a check aborts the statement (the transaction is rolled back).
    posts = f"""
INSERT INTO raw_posts (workspace_id, platform, external_id, account_external_id, post_id, kind,
    text, hashtags, media_type, url, category, published_at, deleted_at, captured_at, source,
    ingest_batch, ingested_at, thumbnail_url)
WITH p AS (
    SELECT v.video_id, coalesce(v.title, '') AS text, v.channel,
           coalesce(c.name, v.category_id) AS category,
           list_filter(list_transform(string_split(coalesce(v.tags, ''), '|'),
                                      x -> trim(x, '" ' || chr(9))),
                       x -> x <> '' AND lower(x) <> '[none]') AS l,
           try_strptime(v.publish_time, {_PUBLISH_FORMATS}) AS publish_time,
           v.first_day, v.last_day, v.deleted_day,
           nullif(v.thumb, '') AS thumbnail_url,
           {_padded("v.category_min")} OR {_padded("v.category_max")}
             OR NOT coalesce(regexp_full_match(v.video_id, '[A-Za-z0-9_-]{{11}}'), false)
             OR {_padded("v.channel")}
             OR {_padded("v.thumb")}
             OR coalesce(v.channel <> v.channel_max, false)
             OR coalesce(v.publish_time <> v.publish_max, false)
             OR (v.publish_time IS NOT NULL
                 AND try_strptime(v.publish_time, {_PUBLISH_FORMATS}) IS NULL)
             OR v.last_day - v.first_day >= INTERVAL {_DAY_BITS} DAY
             OR v.n <> bit_count(v.day_bits) AS bad
    FROM _yt_v v LEFT JOIN _yt_cat c ON c.id = v.category_id
)
SELECT $ws, 'youtube', CASE WHEN bad THEN error('video needs the careful path') ELSE video_id END,
       coalesce(channel, '(unknown channel)'), NULL, $kind, text,
       list_filter(l, (x, i) -> list_position(l, x) = i), 'video',
       'https://www.youtube.com/watch?v=' || video_id, category,
       coalesce(publish_time, first_day), deleted_day, last_day, $source, $batch, $at,
       thumbnail_url
FROM p;
"""  # noqa: S608 - identifiers and formats are our constants; values are bound
    numbers = {
        n: f"CASE WHEN coalesce(regexp_full_match({src(n)}, '[0-9]{{1,18}}'), true)"
        f" THEN CAST({src(n)} AS BIGINT) ELSE error('not a whole number') END"
        for n in ("views", "likes", "comment_count")
    }
    # Second read of the file, straight into the table in the file's order (so zone maps on
    # captured_at keep pruning). Keeping every record in a temporary table for both
    # statements cost the same (2M rows: 3.8 vs 3.9 s of CPU); collecting the counters in
    # the groups would save ~0.6 s but write the rows clustered by video, not by day.
    snapshots = f"""
INSERT INTO raw_engagement_snapshots (workspace_id, platform, external_id, captured_at,
    views, likes, comments, source, ingest_batch, ingested_at)
SELECT $ws, 'youtube', {src("video_id")}, strptime({src("trending_date")}, '%y.%d.%m'),
       {numbers["views"]}, {numbers["likes"]}, {numbers["comment_count"]},
       $source, $batch, $at
FROM read_csv($path, {_CSV_OPTIONS}, strict_mode = true) f;
"""  # noqa: S608 - identifiers are our constants; the path is bound
    # Records per channel and category name: a video's own category, or its records per
    # category when it moved (their channel is the video's: a video with two declines).
    accounts = """
INSERT INTO raw_account_snapshots (workspace_id, platform, external_id, kind, handle,
    display_name, category, captured_at, source, ingest_batch, ingested_at)
WITH vc AS (
    SELECT channel, category_id, n_channel, channel_day FROM _yt_v
    WHERE channel IS NOT NULL AND category_min = category_max
    UNION ALL
    SELECT v.channel, m.category_id, m.n_channel, v.channel_day
    FROM _yt_moved m JOIN _yt_v v USING (video_id)
    WHERE v.channel IS NOT NULL AND m.n_channel > 0
), c AS (
    SELECT v.channel, coalesce(k.name, v.category_id) AS category,
           sum(v.n_channel) AS n, max(v.channel_day) AS last_day
    FROM vc v LEFT JOIN _yt_cat k ON k.id = v.category_id
    GROUP BY ALL
)
SELECT $ws, 'youtube', channel, $kind, channel, channel, arg_min(category, (-n, category)),
       max(last_day), $source, $batch, $at
FROM c GROUP BY channel;
"""
    return {
        "videos": videos,
        "moved": moved,
        "posts": posts,
        "snapshots": snapshots,
        "accounts": accounts,
    }


def load_youtube_csv(
    store: Lakehouse,
    path: Path,
    columns: list[str],
    required: tuple[str, ...],
    categories: dict[str, str],
    kind: str,
    meta: Callable[[], BatchMeta],
) -> CsvLoad | None:
    """Load a clean UTF-8 youtube-trending export with DuckDB alone, in one transaction.

    DuckDB reads the file twice where it lives (no Python per row, no frames, no landing
    files): once into per-video groups, once straight into the snapshots (and once more
    for the records of videos filed under several categories, if any). It declines
    (None, nothing written) on anything the careful path must explain or repair: bad
    encoding or structure, a value that does not parse, repeated (video, day) keys, ids
    Excel mangled (docs/importers.md lists them). ``meta`` is called once the records
    pass their checks (the batch id needs the file's digest, computed meanwhile).
    """
    if any(c not in columns for c in required):
        return None
    have = set(columns)
    sql = _youtube_sql(have)
    with store.cursor() as cur:
        began = time.time() - 1.0  # the kernel's file clock is coarser (warehouse/lake)
        try:
            cur.execute("BEGIN TRANSACTION")
            cur.execute(
                "CREATE TEMP TABLE _yt_cat AS SELECT unnest(?::VARCHAR[]) AS id,"
                " unnest(?::VARCHAR[]) AS name",
                [list(categories), list(categories.values())],
            )
            cur.execute(sql["videos"], {"path": str(path)})
            row = cur.execute(
                "SELECT coalesce(sum(n), 0), coalesce(bool_or(bad), false),"
                " count(*) FILTER (WHERE category_min <> category_max),"
                " min(first_day), max(last_day) FROM _yt_v"
            ).fetchone()
            assert row is not None
            rows, bad, moved = int(row[0]), bool(row[1]), int(row[2])
            # a snapshot per record, captured on its day: the batch's span, known without
            # scanning the snapshots written (batch_overlap)
            span = (row[3], row[4])
            if moved and not bad:
                cur.execute(sql["moved"], {"path": str(path)})
                row = cur.execute("SELECT coalesce(bool_or(bad), false) FROM _yt_moved").fetchone()
                bad = row is None or bool(row[0])
            elif not bad:
                # the accounts statement reads it: empty when no video moved
                cur.execute(
                    "CREATE TEMP TABLE _yt_moved (video_id VARCHAR, category_id VARCHAR,"
                    " n_channel BIGINT, bad BOOLEAN)"
                )
            if rows == 0 or bad:
                cur.execute("ROLLBACK")
                return None
            # Only now the batch id: the file's digest was computed meanwhile.
            batch = meta()
            ingested_at = naive_utc(datetime.now(UTC))
            stamp = {
                "ws": batch.workspace_id,
                "source": batch.source,
                "batch": batch.id,
                "at": ingested_at,
            }
            _forget_batch(cur, batch.id)
            posts = _inserted(cur, sql["posts"], {**stamp, "kind": kind})
            snapshots = _inserted(cur, sql["snapshots"], {**stamp, "path": str(path)})
            if snapshots != rows:
                cur.execute("ROLLBACK")
                return None
            accounts = 0
            if "channel_title" in have:
                accounts = _inserted(cur, sql["accounts"], {**stamp, "kind": kind})
            counts = BatchCounts(posts=posts, snapshots=snapshots, accounts=accounts)
            cur.execute(
                "INSERT INTO ingest_batches (id, workspace_id, source, partition_key, rows_posts,"
                " rows_snapshots, rows_accounts, errors, started_at, finished_at, origin)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    batch.id,
                    batch.workspace_id,
                    batch.source,
                    batch.partition_key,
                    counts.posts,
                    counts.snapshots,
                    counts.accounts,
                    json.dumps(batch.errors),
                    naive_utc(batch.started_at),
                    ingested_at,
                    batch.origin,
                ],
            )
            folder = store.store.lake.local_data
            if folder is not None:
                sync_new_files(folder, began)
            cur.execute("COMMIT")
        except StoreError:
            with contextlib.suppress(StoreError):
                cur.execute("ROLLBACK")
            return None
        finally:
            for temp in ("_yt_v", "_yt_moved", "_yt_cat"):
                with contextlib.suppress(StoreError):
                    cur.execute(f"DROP TABLE IF EXISTS {temp}")
    return CsvLoad(rows, counts, span)


def _inserted(cur: Cursor, sql: str, params: dict[str, Any]) -> int:
    """Run an INSERT; the number of rows it wrote."""
    row = cur.execute(sql, params).fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True)
class Overlap:
    """A batch's engagement readings that other batches hold too (the same post and instant)."""

    shared: int
    differing: int  # of those, readings whose counters differ in some other batch


_COUNTERS = ("impressions", "reach", "views", "likes", "comments", "shares", "saves", "clicks")


def batch_overlap(
    store: Lakehouse, batch_id: str, span: tuple[datetime, datetime] | None = None
) -> Overlap:
    """How many of the batch's readings another batch holds, and how many of those differ.

    ``span``: the batch's first and last captured_at when the caller knows them (the direct
    CSV load does), which saves a scan of the batch's snapshots.
    """
    differs = " OR ".join(f"o.{m} IS DISTINCT FROM m.{m}" for m in _COUNTERS)

    def work(cur: StoreCursor) -> Overlap:
        found = span
        if found is None:
            row = cur.execute(
                "SELECT min(captured_at), max(captured_at) FROM raw_engagement_snapshots"
                " WHERE ingest_batch = ?",
                [batch_id],
            ).fetchone()
            if row is None or row[0] is None:
                return Overlap(0, 0)
            found = (row[0], row[1])
        others = cur.execute(
            "SELECT count(*) FROM raw_engagement_snapshots"
            " WHERE captured_at >= ? AND captured_at <= ? AND ingest_batch <> ?",
            [found[0], found[1], batch_id],
        ).fetchone()
        if not others or not others[0]:
            return Overlap(0, 0)  # nothing else in the batch's span: no join needed
        row = cur.execute(
            "SELECT count(*), count(*) FILTER (WHERE differs) FROM ("  # noqa: S608 - constant columns
            " SELECT bool_or(" + differs + ") AS differs"
            " FROM raw_engagement_snapshots m JOIN raw_engagement_snapshots o"
            "   USING (workspace_id, platform, external_id, captured_at)"
            " WHERE m.ingest_batch = ? AND o.ingest_batch <> ?"
            "   AND o.captured_at >= ? AND o.captured_at <= ?"
            " GROUP BY m.workspace_id, m.platform, m.external_id, m.captured_at)",
            [batch_id, batch_id, found[0], found[1]],
        ).fetchone()
        return Overlap(int(row[0]), int(row[1])) if row else Overlap(0, 0)

    return store.run(work)
