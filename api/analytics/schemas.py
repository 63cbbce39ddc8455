"""Analytics as the API shows it: unified metrics, trends, insights, rankings, competitors."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import Model, Page, UtcDatetime
from api.workspaces.schemas import Platform

Granularity = Literal["day", "hour"]
EntityType = Literal["post", "hashtag", "topic"]
TrendStatus = Literal["emerging", "peaking", "declining"]
InsightKind = Literal["best_time", "top_content", "anomaly", "recommendation", "benchmark"]


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
    """Lifetime totals of posts first read in the range, as they were at that first reading."""

    posts: int = Field(description="Posts whose first reading (a lifetime total) is in the range.")
    impressions: int
    reach: int
    views: int
    likes: int
    comments: int
    shares: int
    saves: int
    clicks: int
    engagements: int


class Metrics(BaseModel):
    """Summed counters over a range; rates recomputed from the sums."""

    impressions: int
    reach: int = Field(description="Summed per post and day: an upper bound on unique reach.")
    views: int
    likes: int
    comments: int
    shares: int
    saves: int
    clicks: int
    engagements: int = Field(description="likes + comments + shares + saves + clicks.")
    engagement_rate: float | None = Field(
        description="engagements / impressions; engagements / views when impressions are 0; "
        "null when both are 0."
    )
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(
        description="Which denominator `engagement_rate` used."
    )
    posts: int = Field(description="Posts published in the range (own accounts).")
    active_posts: int = Field(description="Distinct posts with any activity in the range.")
    followers: int | None = Field(
        description="Latest follower count in the range, summed over accounts."
    )
    follower_growth: int | None = Field(description="Net new followers over the range.")
    first_seen: FirstSeen | None = Field(
        default=None,
        description="Totals and per platform only: what posts had gathered before Murmur first "
        "read them (in the range); not part of the growth counters above. Null in the series.",
    )


class PlatformMetrics(Metrics):
    platform: str


class SeriesPoint(Metrics):
    bucket: UtcDatetime = Field(description="Start of the UTC day or hour.")
    platform: str
    account_id: str | None = Field(description="Our `acc_…`, when the account is connected.")
    account_external_id: str = Field(description="The platform's id of the account.")


class Range(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    from_: UtcDatetime = Field(alias="from", description="As requested (inclusive).")
    to: UtcDatetime = Field(description="As requested (exclusive).")
    first_bucket: UtcDatetime = Field(description="Start of the first day or hour covered.")
    last_bucket: UtcDatetime = Field(description="Start of the last day or hour covered.")


class UnifiedAnalytics(BaseModel):
    range: Range
    granularity: Granularity
    totals: Metrics = Field(description="The whole range and filter, whatever the page.")
    by_platform: list[PlatformMetrics] = Field(description="Same, per platform.")
    series: Page[SeriesPoint] = Field(description="Per bucket, platform and account; paged.")
    snapshot: Snapshot


class ViralTrend(BaseModel):
    id: str = Field(description="Stable id of the (entity_type, entity, platform).")
    entity_type: EntityType | str
    entity: str = Field(description="A post's platform id, a #hashtag, or a topic.")
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
    totals: PostTotals
    series: list[DayPoint]


class PostAnalytics(BaseModel):
    post_id: str
    totals: PostTotals
    destinations: list[DestinationAnalytics]
    snapshot: Snapshot
