"""Analytics as the API shows it: unified metrics, trends, insights, rankings, competitors."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.schemas import Model, Page, UtcDatetime
from domain.workspaces.schemas import Platform

Granularity = Literal["hour", "day", "week", "month"]
Basis = Literal["activity", "published"]
GroupBy = Literal["total", "platform", "account"]
EntityType = Literal["post", "hashtag", "topic"]
TrendStatus = Literal["emerging", "peaking", "declining"]
InsightKind = Literal["best_time", "top_content", "anomaly", "recommendation", "benchmark"]

# What a person recognises a post, an account, a hashtag or a topic by (docs/api/analytics.md,
# "Labels"): on every item that names one.
LABEL = (
    "What a person recognises it by: a post's title (YouTube) or the first non-blank line of "
    "its text, cut to 100 characters; an account's display name, else its @handle; a "
    "`#hashtag`; a topic. Never empty: a post or account the data describe no further is "
    "named by its platform id. Text from platforms and exports: show it as text, never as "
    "markup."
)
URL = (
    "Its page on the platform (a post's permalink, an account's profile), http(s) only; null "
    "where there is none (a hashtag or topic spans platforms)."
)
THUMBNAIL_URL = (
    "Its picture as the platform or export gives it (an image, a video's cover, an avatar), "
    "http(s) only; null where it gives none."
)


class Snapshot(BaseModel):
    """Which mart computation a response was read from, and how fresh its data is."""

    computed_at: UtcDatetime | None = Field(
        description="Newest computation among the marts (and partitions) read; null if none."
    )
    data_through: UtcDatetime | None = Field(
        description="Newest platform observation (captured_at) those computations saw."
    )
    freshness_seconds: float | None = Field(description="Now minus `data_through`, in seconds.")
    partitions: int = Field(description="How many mart partitions the response drew on.")
    marts: list[str] = Field(description="The marts read.")


class FirstSeen(BaseModel):
    """First readings that were lifetime totals: what posts had before Murmur first read them."""

    posts: int = Field(
        description="`activity`: posts whose first reading (a lifetime total) is in the range. "
        "`published`: posts published in the range whose first reading was a lifetime total."
    )
    impressions: int
    reach: int
    views: int
    likes: int
    comments: int
    shares: int
    saves: int
    clicks: int
    engagements: int


_ENGAGEMENT_RATE = (
    "engagements / impressions; engagements / views when impressions are 0; null when both are 0."
)
_POSTS = (
    "`activity`: own posts published in the range. `published`: own posts published in the "
    "range that Murmur has read (those the counters sum)."
)
_ACTIVE_POSTS = (
    "`activity`: distinct posts with a growth reading in the range. `published`: of `posts`, "
    "those with a growth reading (not only a first-seen total)."
)
_FOLLOWERS = "Latest follower count in the range, summed over accounts (either basis)."


class Metrics(BaseModel):
    """Summed counters over a range; rates recomputed from the sums."""

    impressions: int = Field(
        description="`activity`: growth in the range. `published`: the lifetime totals (peaks) "
        "of the posts published in the range. Likewise every counter."
    )
    reach: int = Field(description="Summed per post and day: an upper bound on unique reach.")
    views: int
    likes: int
    comments: int
    shares: int
    saves: int
    clicks: int
    engagements: int = Field(description="likes + comments + shares + saves + clicks.")
    engagement_rate: float | None = Field(description=_ENGAGEMENT_RATE)
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(
        description="Which denominator `engagement_rate` used."
    )
    posts: int = Field(description=_POSTS)
    active_posts: int = Field(description=_ACTIVE_POSTS)
    followers: int | None = Field(description=_FOLLOWERS)
    follower_growth: int | None = Field(description="Net new followers over the range.")
    first_seen: FirstSeen | None = Field(
        default=None,
        description="`activity`: what posts first read in the range had gathered before that "
        "first reading, apart from the counters. `published`: the part of the counters that "
        "such first readings hold.",
    )


class PlatformMetrics(Metrics):
    platform: str


_NO_READING = " Null where no reading covers the bucket."


class SeriesPoint(BaseModel):
    """One bucket of one group: its counters, 0 where readings show no change, else null."""

    bucket: UtcDatetime = Field(
        description="Start of the bucket (local, in `tz`) as a UTC instant."
    )
    bucket_end: UtcDatetime = Field(description="End of the bucket (exclusive) as a UTC instant.")
    platform: str | None = Field(description="Null with `group_by=total`.")
    account_id: str | None = Field(
        description="Our `acc_…`, when the account is connected; null unless `group_by=account`."
    )
    account_external_id: str | None = Field(
        description="The platform's id of the account; null unless `group_by=account`."
    )
    impressions: int | None = Field(description="As in `totals`, for this bucket." + _NO_READING)
    reach: int | None
    views: int | None
    likes: int | None
    comments: int | None
    shares: int | None
    saves: int | None
    clicks: int | None
    engagements: int | None
    engagement_rate: float | None = Field(description=_ENGAGEMENT_RATE + _NO_READING)
    engagement_rate_basis: Literal["impressions", "views"] | None
    posts: int | None = Field(description=_POSTS.replace("range", "bucket") + _NO_READING)
    active_posts: int | None = Field(
        description=_ACTIVE_POSTS.replace("range", "bucket") + _NO_READING
    )
    followers: int | None = Field(
        description="Latest follower count in the bucket, summed over the group's accounts; "
        "null without a follower reading in it, and with `granularity=hour`."
    )
    follower_growth: int | None = Field(
        description="Net new followers in the bucket; null as `followers` is."
    )
    first_seen: FirstSeen | None = Field(default=None, description="Always null in the series.")


class Range(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    from_: UtcDatetime = Field(
        alias="from",
        description="As requested (inclusive); by default the first bucket's start.",
    )
    to: UtcDatetime = Field(description="As requested (exclusive); by default now.")
    first_bucket: UtcDatetime = Field(description="Start of the first bucket `from` falls in.")
    last_bucket: UtcDatetime = Field(
        description="Start of the last bucket: the one holding the last instant before `to`."
    )


class UnifiedAnalytics(BaseModel):
    range: Range
    granularity: Granularity
    tz: str = Field(description="The IANA time zone the buckets follow, as spelled by IANA.")
    basis: Basis
    group_by: GroupBy
    totals: Metrics = Field(
        description="The range's buckets and the filter, whatever the page (not gap-filled)."
    )
    by_platform: list[PlatformMetrics] = Field(description="Same, per platform with any data.")
    series: Page[SeriesPoint] = Field(
        description="Every bucket of the range for every group whose readings span meets the "
        "range: ordered by `bucket`, `platform`, `account_external_id`; paged."
    )
    snapshot: Snapshot


class ViralTrend(BaseModel):
    id: str = Field(description="Stable id of the (entity_type, entity, platform).")
    entity_type: EntityType | str
    entity: str = Field(description="A post's platform id, a #hashtag, or a topic.")
    label: str = Field(description=LABEL)
    url: str | None = Field(description=URL)
    thumbnail_url: str | None = Field(description=THUMBNAIL_URL)
    platform: str | None
    score: float = Field(description="How abnormal the velocity is against its own baseline.")
    status: TrendStatus | str
    velocity: float = Field(description="Engagements per hour in the latest window.")
    baseline: float = Field(description="Its own typical engagements per hour.")
    window_end: UtcDatetime
    computed_at: UtcDatetime
    evidence: Any = Field(description="What the score was computed from (JSON).")


class ViralTrends(Page[ViralTrend]):
    snapshot: Snapshot


class Insight(BaseModel):
    id: str = Field(description="Stable id derived from the insight's content.")
    kind: InsightKind | str
    platform: str | None
    account_external_id: str | None
    label: str | None = Field(
        description="What it names: top content's post, else the account it is about; null "
        "when it names neither. " + LABEL
    )
    url: str | None = Field(description=URL)
    thumbnail_url: str | None = Field(description=THUMBNAIL_URL)
    title: str
    body: str
    score: float
    evidence: Any
    computed_at: UtcDatetime


class Insights(Page[Insight]):
    snapshot: Snapshot


class BestTimeCell(BaseModel):
    weekday: int = Field(description="0 Monday … 6 Sunday (UTC).")
    hour: int = Field(description="0 to 23 (UTC).")
    label: str = Field(description="e.g. `Mon 09:00 UTC`.")
    posts: int = Field(description="Posts published in this slot that the index averages.")
    raw_index: float | None = Field(description="Mean of post rate / the account's mean rate.")
    shrunk_index: float | None = Field(description="Raw index shrunk toward 1.0 by sample size.")
    ci_low: float | None
    ci_high: float | None
    confidence: Literal["low", "medium", "high", "none"] | str = Field(
        description="`none`: no post in this slot."
    )


class BestTimes(BaseModel):
    account_id: str
    platform: str
    grid: list[BestTimeCell] = Field(description="All 168 cells, Monday 00:00 first.")
    best: list[BestTimeCell] = Field(
        description="Up to 3 cells with the highest shrunk index, low confidence excluded."
    )
    computed_at: UtcDatetime | None
    snapshot: Snapshot


class Ranking(BaseModel):
    kind: str = Field(description="creator | competitor")
    platform: str
    account_external_id: str
    handle: str
    label: str = Field(description=LABEL)
    url: str | None = Field(description=URL)
    thumbnail_url: str | None = Field(description=THUMBNAIL_URL)
    category: str | None
    followers: int | None
    posts: int
    engagement_rate: float | None
    engagement_rate_shrunk: float
    growth_rate: float
    avg_reach: float
    score: float = Field(description="The composite the rank orders by.")
    rank: int
    parts: Any = Field(description="The composite's parts (JSON).")
    computed_at: UtcDatetime


class Creators(Page[Ranking]):
    snapshot: Snapshot


class Benchmark(BaseModel):
    their_engagement_rate: float | None = Field(
        description="The competitor's engagement rate from its ranking row."
    )
    our_engagement_rate: float | None = Field(
        description="Our own accounts on the same platform over the last 28 days."
    )
    ratio: float | None = Field(description="Theirs / ours; null when either is missing or 0.")
    their_followers: int | None
    our_followers: int | None


class Competitor(BaseModel):
    id: str = Field(examples=["cmp_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    platform: Platform
    handle: str
    label: str = Field(
        description="Its ranking's label once ranked, else its @handle as tracked. " + LABEL
    )
    url: str | None = Field(
        description="Its profile: as read from the platform once ranked, else built from the "
        "handle as tracked. " + URL
    )
    thumbnail_url: str | None = Field(description=THUMBNAIL_URL)
    created_at: UtcDatetime
    ranking: Ranking | None = Field(description="The latest ranking row; null until one exists.")
    benchmark: Benchmark


class Competitors(Page[Competitor]):
    snapshot: Snapshot


class CompetitorCreate(Model):
    platform: Platform
    handle: str = Field(
        min_length=1,
        max_length=100,
        description="The account's handle; a leading @ is dropped and case is ignored.",
    )


class DayPoint(BaseModel):
    day: UtcDatetime = Field(description="Start of the UTC day.")
    impressions: int
    reach: int
    views: int
    likes: int
    comments: int
    shares: int
    saves: int
    clicks: int
    engagements: int
    engagement_rate: float | None


class PostTotals(BaseModel):
    impressions: int
    reach: int
    views: int
    likes: int
    comments: int
    shares: int
    saves: int
    clicks: int
    engagements: int
    engagement_rate: float | None
    engagement_rate_basis: Literal["impressions", "views"] | None


class DestinationAnalytics(BaseModel):
    destination_id: str | None = Field(description="The post's destination; null if unmatched.")
    account_id: str | None
    platform: str
    platform_post_id: str | None
    label: str = Field(
        description="The post on this platform as read from it, else our post's text. " + LABEL
    )
    url: str | None = Field(description=URL)
    thumbnail_url: str | None = Field(description=THUMBNAIL_URL)
    totals: PostTotals
    series: list[DayPoint]


class PostAnalytics(BaseModel):
    post_id: str
    totals: PostTotals
    destinations: list[DestinationAnalytics]
    snapshot: Snapshot
