"""``youtube-trending``: Kaggle's "Trending YouTube Video Statistics" daily snapshots."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from connectors.platforms import profile_url
from pipelines.importers.common import Context, Parsed, dedupe
from pipelines.importers.csvfile import (
    ROW,
    CsvTable,
    Problems,
    required_text,
    timestamp,
    whole_number,
)
from warehouse.ingest import md5_hex

# Kaggle's 2017-18 shape (US: 8 columns; FR and other countries: 16), by its own names.
REQUIRED = ("video_id", "trending_date", "title", "category_id", "views", "likes", "comment_count")
# The current public shape ("YouTube Trending Video Dataset", updated daily) names the same
# fields in camelCase, with ISO times and the channel's id: its names → the 2017-18 ones.
CURRENT_NAMES = {
    "publishedAt": "publish_time",
    "channelId": "channel_id",
    "channelTitle": "channel_title",
    "categoryId": "category_id",
    "view_count": "views",
}
CURRENT_REQUIRED = (
    "video_id", "trending_date", "title", "categoryId", "view_count", "likes", "comment_count",
)  # fmt: skip
_TRENDING_FORMATS = {
    "kaggle": ["%y.%d.%m"],
    "current": ["%Y-%m-%dT%H:%M:%S%.fZ", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"],
}
_PUBLISH_FORMATS = ["%Y-%m-%dT%H:%M:%S%.fZ", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d %H:%M:%S"]
_CHANNEL_ID = r"^UC[A-Za-z0-9_-]{22}$"
UNKNOWN_CHANNEL = "(unknown channel)"
# YouTube Data API v3 videoCategories (regionCode US/FR); unknown ids are kept as the id.
CATEGORIES = {
    "1": "Film & Animation", "2": "Autos & Vehicles", "10": "Music", "15": "Pets & Animals",
    "17": "Sports", "18": "Short Movies", "19": "Travel & Events", "20": "Gaming",
    "21": "Videoblogging", "22": "People & Blogs", "23": "Comedy", "24": "Entertainment",
    "25": "News & Politics", "26": "Howto & Style", "27": "Education",
    "28": "Science & Technology", "29": "Nonprofits & Activism", "30": "Movies",
    "31": "Anime/Animation", "32": "Action/Adventure", "33": "Classics", "34": "Comedy",
    "35": "Documentary", "36": "Drama", "37": "Family", "38": "Foreign", "39": "Horror",
    "40": "Sci-Fi/Fantasy", "41": "Thriller", "42": "Shorts", "43": "Shows", "44": "Trailers",
}  # fmt: skip
_VIDEO_ID = r"^[A-Za-z0-9_-]{11}$"


def is_current(header: Sequence[str]) -> bool:
    """Whether a header is the current public shape's (camelCase), not Kaggle's 2017-18 one."""
    return "views" not in header and any(c in header for c in ("view_count", "categoryId"))


def required(header: Sequence[str]) -> tuple[str, ...]:
    """The columns a file of this header's shape must hold, by the file's own names."""
    return CURRENT_REQUIRED if is_current(header) else REQUIRED


def parse(table: CsvTable, ctx: Context) -> Parsed:
    """Videos → posts, (video, trending day) → snapshots, channels → accounts."""
    frame = table.frame
    raw_cols = [c for c in frame.columns if c != ROW]
    shape = "current" if is_current(raw_cols) else "kaggle"
    # Read by the file's own column names (problems name them), typed under the 2017-18 ones.
    names = {v: k for k, v in CURRENT_NAMES.items() if k in raw_cols} if shape == "current" else {}

    def src(name: str) -> str:
        return names.get(name, name)

    has = {CURRENT_NAMES.get(c, c) for c in raw_cols} if shape == "current" else set(raw_cols)
    problems = Problems()
    exprs = [
        required_text(frame, "video_id", problems),
        timestamp(frame, "trending_date", _TRENDING_FORMATS[shape], problems, required=True).alias(
            "day"
        ),
        pl.col("title").alias("title"),
        pl.col(src("category_id")).str.strip_chars().alias("category_id"),
        whole_number(frame, src("views"), problems).alias("views"),
        whole_number(frame, "likes", problems),
        whole_number(frame, "comment_count", problems),
    ]
    if "publish_time" in has:
        exprs.append(
            timestamp(frame, src("publish_time"), _PUBLISH_FORMATS, problems, required=False).alias(
                "publish_time"
            )
        )
    if "channel_title" in has and src("channel_title") != "channel_title":
        exprs.append(pl.col(src("channel_title")).alias("channel_title"))
    problems.raise_first(table)
    typed = frame.with_columns(exprs)
    kind = ctx.kind or "creator"

    # Excel turns ids starting with '-' into formulas ('#NAME?'): such rows are told apart
    # by their title, hashed so that re-imports give the same id.
    bad_id = ~pl.col("video_id").str.contains(_VIDEO_ID)
    repaired = typed.filter(bad_id)
    notes: list[str] = []
    typed = typed.with_columns(pl.col("video_id").alias("external_id"))
    if repaired.height:
        titles = repaired.get_column("title").unique()
        ids = pl.DataFrame({"title": titles, "h": md5_hex(titles)})
        typed = (
            typed.join(ids, on="title", how="left")
            .with_columns(
                pl.when(bad_id)
                .then(pl.lit("title-") + pl.col("h").str.slice(0, 16))
                .otherwise(pl.col("external_id"))
                .alias("external_id")
            )
            .drop("h")
        )
        examples = ", ".join(repr(v) for v in repaired["video_id"].unique().head(3).to_list())
        notes.append(
            f"{repaired.height} rows had no usable video_id ({examples}); "
            "identified by a hash of their title"
        )

    typed, exact, conflicts = dedupe(typed, ["external_id", "day"], raw_cols, "views")
    if conflicts:
        notes.append(
            f"{conflicts} rows disagreed with another row for the same video and day; "
            "kept the one with the most views"
        )

    channel = (
        pl.when(pl.col("channel_title").str.strip_chars() != "").then(
            pl.col("channel_title").str.strip_chars()
        )
        if "channel_title" in has
        else pl.lit(None, dtype=pl.String)
    )
    # The current shape names each channel by its id too: the id is the account (a title can
    # change, or be another channel's); the 2017-18 shape has only the title.
    channel_id = (
        pl.when(pl.col(src("channel_id")).str.strip_chars() != "").then(
            pl.col(src("channel_id")).str.strip_chars()
        )
        if "channel_id" in has
        else pl.lit(None, dtype=pl.String)
    )
    removed = (
        pl.col("video_error_or_removed").str.strip_chars().str.to_lowercase() == "true"
        if "video_error_or_removed" in has
        else pl.lit(False)
    )
    tags = pl.col("tags") if "tags" in has else pl.lit(None, dtype=pl.String)
    # The video's picture as the export links it (i.ytimg.com); blank is none.
    thumbnail = (
        pl.when(pl.col("thumbnail_link").str.strip_chars() != "").then(
            pl.col("thumbnail_link").str.strip_chars()
        )
        if "thumbnail_link" in has
        else pl.lit(None, dtype=pl.String)
    )
    typed = typed.with_columns(
        channel.alias("channel"),
        pl.coalesce(channel_id, channel).alias("channel_key"),
        removed.alias("removed"),
        tags.alias("tags"),
        thumbnail.alias("thumbnail_url"),
        pl.col("category_id")
        .replace_strict(CATEGORIES, default=pl.col("category_id"), return_dtype=pl.String)
        .alias("category"),
        (
            pl.col("publish_time")
            if "publish_time" in has
            else pl.lit(None, dtype=pl.Datetime("us"))
        ).alias("publish_time"),
    )

    latest = pl.col("day") == pl.col("day").max()
    posts = (
        typed.group_by("external_id")
        .agg(
            pl.col("video_id").first(),
            pl.col("title").filter(latest).first().alias("text"),
            pl.col("channel_key").drop_nulls().first().alias("channel"),
            pl.col("category").filter(latest).first().alias("category"),
            pl.col("tags").filter(latest).first().alias("tags"),
            pl.col("thumbnail_url").filter(latest).first().alias("thumbnail_url"),
            pl.col("publish_time").min().alias("publish_time"),
            pl.col("day").min().alias("first_day"),
            pl.col("day").max().alias("captured_at"),
            pl.col("day").filter(pl.col("removed")).min().alias("deleted_at"),
        )
        .with_columns(
            pl.lit("youtube").alias("platform"),
            pl.lit(kind).alias("kind"),
            pl.lit("video").alias("media_type"),
            pl.coalesce(pl.col("channel"), pl.lit(UNKNOWN_CHANNEL)).alias("account_external_id"),
            pl.coalesce(pl.col("publish_time"), pl.col("first_day")).alias("published_at"),
            pl.when(pl.col("video_id").str.contains(_VIDEO_ID))
            .then(pl.lit("https://www.youtube.com/watch?v=") + pl.col("video_id"))
            .alias("url"),
            pl.col("tags")
            .fill_null("")
            .str.split("|")
            .list.eval(pl.element().str.strip_chars('" \t'))
            .list.eval(
                pl.element().filter(
                    (pl.element() != "") & (pl.element().str.to_lowercase() != "[none]")
                )
            )
            .list.unique(maintain_order=True)
            .alias("hashtags"),
        )
        .sort("external_id")
    )
    snapshots = typed.select(
        pl.lit("youtube").alias("platform"),
        "external_id",
        pl.col("day").alias("captured_at"),
        "views",
        "likes",
        pl.col("comment_count").alias("comments"),
    )
    if kind == "own" and ctx.own_account is not None:
        # The user's own channel: its videos belong to the connected YouTube account, so
        # that they reach /analytics/unified under it (docs/importers.md, "Whose data").
        account_id, account_ext, handle = ctx.own_account
        posts = posts.with_columns(pl.lit(account_ext).alias("account_external_id"))
        accounts = pl.DataFrame(
            {
                "platform": ["youtube"],
                "external_id": [account_ext],
                "account_id": [account_id],
                "kind": [kind],
                "handle": [handle],
                "captured_at": [typed.get_column("day").max()],
                "url": [profile_url("youtube", handle)],
            },
            schema_overrides={"account_id": pl.String, "captured_at": pl.Datetime("us")},
        )
    elif "channel_title" in has or "channel_id" in has:
        # A channel's title as of its newest day names it; a channel id links its page.
        url = (
            pl.when(pl.col("channel_key").str.contains(_CHANNEL_ID)).then(
                pl.lit("https://www.youtube.com/channel/") + pl.col("channel_key")
            )
            if "channel_id" in has
            else pl.lit(None, dtype=pl.String)
        )
        accounts = (
            typed.filter(pl.col("channel_key").is_not_null())
            .group_by("channel_key")
            .agg(
                pl.col("day").max().alias("captured_at"),
                pl.col("category").mode().sort().first().alias("category"),
                pl.col("channel").sort_by("day", ROW).drop_nulls().last().alias("title"),
            )
            .with_columns(pl.coalesce("title", "channel_key").alias("title"))
            .select(
                pl.lit("youtube").alias("platform"),
                pl.col("channel_key").alias("external_id"),
                pl.lit(kind).alias("kind"),
                pl.col("title").alias("handle"),
                pl.col("title").alias("display_name"),
                "category",
                "captured_at",
                url.alias("url"),
            )
            .sort("external_id")
        )
    else:
        accounts = pl.DataFrame()
    return Parsed(posts, snapshots, accounts, exact, conflicts, notes)
