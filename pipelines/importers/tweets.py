"""``tweets``: a tweet export with author columns (Kaggle "Pfizer Vaccine Tweets" shape)."""

from __future__ import annotations

import polars as pl

from pipelines.importers.common import Context, Parsed, dedupe
from pipelines.importers.csvfile import (
    ROW,
    CsvTable,
    Problems,
    required_text,
    timestamp,
    whole_number,
)

REQUIRED = (
    "id", "user_name", "user_followers", "user_friends", "date", "text", "hashtags",
    "retweets", "favorites",
)  # fmt: skip
_DATE_FORMATS = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%SZ"]
# The hashtags column holds a Python list literal of strings, e.g. ['PfizerBioNTech', 'Covid19'];
# read it as text (never evaluated): the quoted items are the tags.
_LIST_LITERAL = r"^\[\s*(?:(?:'[^']*'|\"[^\"]*\")\s*(?:,\s*(?:'[^']*'|\"[^\"]*\")\s*)*)?\]$"
_LIST_ITEM = r"'[^']*'|\"[^\"]*\""


def parse(table: CsvTable, ctx: Context) -> Parsed:
    """Tweets → posts with one snapshot each (at the export moment); authors → accounts."""
    frame = table.frame
    raw_cols = [c for c in frame.columns if c != ROW]
    problems = Problems()
    tag_text = pl.col("hashtags").str.strip_chars()
    problems.check(
        frame,
        (tag_text != "") & ~tag_text.str.contains(_LIST_LITERAL),
        lambda v: f"column 'hashtags': {v!r} is not a list like ['tag', 'other']",
        "hashtags",
    )
    problems.check(
        frame,
        ~pl.col("id").str.strip_chars().str.contains(r"^\d+$"),
        lambda v: f"column 'id': {v!r} is not a tweet id (digits only)",
        "id",
    )
    typed = frame.with_columns(
        pl.col("id").str.strip_chars(),
        required_text(frame, "user_name", problems),
        whole_number(frame, "user_followers", problems),
        whole_number(frame, "user_friends", problems),
        whole_number(frame, "retweets", problems),
        whole_number(frame, "favorites", problems),
        timestamp(frame, "date", _DATE_FORMATS, problems, required=True),
    )
    problems.raise_first(table)
    typed, exact, conflicts = dedupe(typed, ["id"], raw_cols, "favorites")
    notes: list[str] = []
    if conflicts:
        notes.append(f"{conflicts} rows repeated a tweet id with other values; kept the most liked")
    kind = ctx.kind or "creator"
    # The export holds one reading of each counter, taken when the file was made; the newest
    # tweet is the best lower bound we have for that moment.
    exported = typed.get_column("date").max()

    from_column = tag_text.str.extract_all(_LIST_ITEM).list.eval(
        pl.element().str.slice(1).str.head(-1)
    )
    from_text = pl.col("text").str.extract_all(r"#\w+").list.eval(pl.element().str.slice(1))
    posts = typed.select(
        pl.lit("x").alias("platform"),
        pl.col("id").alias("external_id"),
        pl.col("user_name").alias("account_external_id"),
        pl.lit(kind).alias("kind"),
        "text",
        pl.when(tag_text != "")
        .then(from_column)
        .otherwise(from_text)
        .list.eval(pl.element().str.strip_chars().filter(pl.element().str.strip_chars() != ""))
        .list.unique(maintain_order=True)
        .alias("hashtags"),
        (pl.lit("https://twitter.com/i/web/status/") + pl.col("id")).alias("url"),
        pl.col("date").alias("published_at"),
        pl.lit(exported).alias("captured_at"),
    )
    snapshots = typed.select(
        pl.lit("x").alias("platform"),
        pl.col("id").alias("external_id"),
        pl.lit(exported).alias("captured_at"),
        pl.col("favorites").alias("likes"),
        pl.col("retweets").alias("shares"),
    )
    # One snapshot per author at the export moment: their counts on their newest tweet.
    accounts = (
        typed.sort(["date", ROW])
        .group_by("user_name")
        .agg(pl.col("user_followers").last(), pl.col("user_friends").last())
        .select(
            pl.lit("x").alias("platform"),
            pl.col("user_name").alias("external_id"),
            pl.lit(kind).alias("kind"),
            pl.col("user_name").alias("handle"),
            pl.col("user_name").alias("display_name"),
            pl.col("user_followers").alias("followers"),
            pl.col("user_friends").alias("following"),
            pl.lit(exported).alias("captured_at"),
        )
        .sort("external_id")
    )
    return Parsed(posts, snapshots, accounts, exact, conflicts, notes)
