"""``instagram-insights``: one account's per-post insights export (a row per post)."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from connectors.platforms import profile_url
from pipelines.importers.common import Context, Parsed, dedupe
from pipelines.importers.csvfile import ROW, CsvTable, Problems, timestamp, whole_number
from warehouse.ingest import md5_hex

REQUIRED = ("Date", "Impressions", "Likes")
# Counters mapped to raw_engagement_snapshots; absent columns stay NULL (not reported).
METRICS = {
    "Impressions": "impressions",
    "Likes": "likes",
    "Comments": "comments",
    "Shares": "shares",
    "Saves": "saves",
}
FALLBACK_ACCOUNT = "instagram-insights"


def parse(table: CsvTable, ctx: Context) -> Parsed:
    """Posts of the workspace's Instagram account with their lifetime counters."""
    frame = table.frame
    raw_cols = [c for c in frame.columns if c != ROW]
    problems = Problems()
    present = {src: dst for src, dst in METRICS.items() if src in frame.columns}
    exprs = [timestamp(frame, "Date", ["%Y-%m-%d", "%d/%m/%Y"], problems, required=True)]
    exprs += [whole_number(frame, src, problems) for src in present]
    problems.raise_first(table)
    caption = pl.col("Caption") if "Caption" in frame.columns else pl.lit("", dtype=pl.String)
    tags = pl.col("Hashtags") if "Hashtags" in frame.columns else pl.lit("", dtype=pl.String)
    typed = frame.with_columns(*exprs, caption.alias("caption"), tags.alias("tags"))

    # The export has no post id: a post is its day and caption, hashed so re-imports match.
    key = typed.select(pl.col("Date").dt.strftime("%Y-%m-%d") + "\n" + pl.col("caption"))
    typed = typed.with_columns(
        (pl.lit("ig-") + md5_hex(key.to_series()).str.slice(0, 16)).alias("external_id")
    )
    typed, exact, conflicts = dedupe(typed, ["external_id"], raw_cols, "Impressions")
    notes = []
    if conflicts:
        notes.append(
            f"{conflicts} rows repeated a post (same day and caption) with other counters; "
            "kept the one with the most impressions"
        )
    # Counters are lifetime totals read when the file was exported, some time after its
    # newest day: taken as the end of that day.
    newest = typed.get_column("Date").max()
    exported = newest + timedelta(days=1) if isinstance(newest, datetime) else ctx.now
    url = None
    if ctx.own_account is not None:
        account_id, account_ext, handle = ctx.own_account
        url = profile_url("instagram", handle)  # the connected account's own handle
    else:
        account_id, account_ext, handle = None, FALLBACK_ACCOUNT, FALLBACK_ACCOUNT
        notes.append(f"the workspace has no Instagram account; posts filed under {handle!r}")
    kind = ctx.kind or "own"

    posts = typed.select(
        pl.lit("instagram").alias("platform"),
        "external_id",
        pl.lit(account_ext).alias("account_external_id"),
        pl.lit(kind).alias("kind"),
        pl.col("caption").alias("text"),
        pl.col("tags")
        .str.extract_all(r"#\w+")
        .list.eval(pl.element().str.slice(1))
        .list.unique(maintain_order=True)
        .alias("hashtags"),
        pl.col("Date").alias("published_at"),
        pl.lit(exported).alias("captured_at"),
    )
    snapshots = typed.select(
        pl.lit("instagram").alias("platform"),
        "external_id",
        pl.lit(exported).alias("captured_at"),
        *[pl.col(src).alias(dst) for src, dst in present.items()],
    )
    accounts = pl.DataFrame(
        {
            "platform": ["instagram"],
            "external_id": [account_ext],
            "account_id": [account_id],
            "kind": [kind],
            "handle": [handle],
            "captured_at": [exported],
            "url": [url],
        },
        schema_overrides={
            "account_id": pl.String,
            "captured_at": pl.Datetime("us"),
            "url": pl.String,
        },
    )
    return Parsed(posts, snapshots, accounts, exact, conflicts, notes)
