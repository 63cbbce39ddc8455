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
    "Measured: the engagements of the posts with impressions in the scope / their impressions; "
    "where no post of the scope has impressions, the engagements of the posts with views / "
    "their views; null when neither. Its numerator and denominator are of the same posts: "
    "`engagement_rate_coverage` says which it leaves out."
)
_RATE_BASIS = "Which denominator `engagement_rate` divides by; null with a null rate."
_RATE_COVERAGE = (
    "What `engagement_rate` divides: its numerator and denominator, and the engagements, "
    "posts and platforms of the scope it leaves out (no such denominator); null with a null "
    "rate."
)


class RateCoverage(BaseModel):
    """Which posts an engagement rate divides: those with its basis in the scope."""

    engagements: int = Field(
        description="The rate's numerator: engagements of the posts with the basis (impressions, "
        "or views) above 0 in the scope."
    )
    denominator: int = Field(description="The rate's denominator: the basis summed over them.")
    excluded_engagements: int = Field(
        description="Engagements of the scope's other posts, not in the rate."
    )
    excluded_engagements_share: float = Field(
        description="`excluded_engagements` / all engagements of the scope (0 without any)."
    )
    posts: int | None = Field(
        description="Posts the rate covers; null in a series bucket (the group's are in "
        "`totals` and `by_platform`)."
    )
    excluded_posts: int | None = Field(
        description="Posts of the scope with engagements but without the basis: left out of "
        "the rate; null in a series bucket."
    )
    platforms: list[str] | None = Field(
        description="Platforms with posts the rate covers; null in a series bucket."
    )
    excluded_platforms: list[str] | None = Field(
        description="Platforms with engagements in the scope but no post with the basis (e.g. "
        "a platform reporting views beside others reporting impressions); null in a series "
        "bucket."
    )


class RateEstimate(BaseModel):
    """An estimate of a rate (not a measurement): the measured rate shrunk toward a prior."""

    value: float = Field(description="weight * measured + (1 - weight) * prior.")
    prior: float | None = Field(
        description="What it shrinks toward: the unweighted mean of the group's measured rates."
    )
    weight: float | None = Field(
        description="The measured rate's weight: posts / (posts + prior_posts)."
    )
    posts: int | None = Field(description="Posts the measured rate covers.")
    prior_posts: float | None = Field(description="The prior's weight, in posts.")
    method: str = Field(description="`shrunk_toward_group_mean` (empirical Bayes).")


class Window(BaseModel):
    """A span of time a figure covers, [from, to)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    from_: UtcDatetime = Field(alias="from", description="Inclusive.")
    to: UtcDatetime = Field(description="Exclusive.")


class Source(BaseModel):
    """Readings behind an answer: one platform's captures, or one imported file."""

    kind: Literal["capture", "import"] = Field(
        description="`capture`: a connector's readings of a platform API, hour by hour; "
        "`import`: one imported file."
    )
    platform: str
    origin: str | None = Field(
        description="A capture's platform API (its base URL); an import's file name. Null for "
        "batches written before Murmur recorded it."
    )
    import_id: str | None = Field(
        description="An import's batch id (`murmur import` prints it); null for a capture."
    )
    first_read_at: UtcDatetime = Field(description="Its first reading in the answer's window.")
    last_read_at: UtcDatetime = Field(description="Its last reading in the answer's window.")
    readings: int = Field(
        description="Engagement readings of the answer's posts in its window (raw readings, "
        "one per post and capture or file row)."
    )


class Provenance(BaseModel):
    """Where an answer's figures came from and what each one is: enough to reproduce it."""

    snapshot_id: int | None = Field(
        description="The lake snapshot the answer was read at: pass it as `as_of` to read "
        "exactly this answer again; null on an empty lake."
    )
    window: Window | None = Field(
        default=None,
        description="The readings' window the sources are counted over (null: every reading "
        "of the answer's posts).",
    )
    sources: list[Source] = Field(
        description="Each source of the readings behind the figures, by platform and first reading."
    )
    definitions: dict[str, str] = Field(
        description="Each figure of the answer and its formula in words (docs/api/analytics.md, "
        "Provenance)."
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
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(description=_RATE_BASIS)
    engagement_rate_coverage: RateCoverage | None = Field(default=None, description=_RATE_COVERAGE)
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


_NO_READING = " Null where no reading of the group falls in the bucket."


class SeriesPoint(BaseModel):
    """One bucket of one group: its counters where it was read (0: no change), else null."""

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
    covers_from: UtcDatetime | None = Field(
        default=None,
        description="`basis=activity`, a bucket the group was read in: its growth accrued since "
        "the group's previous reading, from the end of the bucket holding it (the buckets "
        "between, not read, are null). Null when unknown (no earlier reading in the 35 days "
        "before the range), with `basis=published`, and in a bucket not read.",
    )
    covers_hours: float | None = Field(
        default=None,
        description="`bucket_end` - `covers_from`, in hours: 6 for a reading every 6 hours in an "
        "hourly series, 1 for hourly readings. Null as `covers_from` is.",
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
    engagement_rate: float | None = Field(
        description=_ENGAGEMENT_RATE + " The group's basis and posts over the whole range, "
        "so that every bucket of a line divides alike." + _NO_READING
    )
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(description=_RATE_BASIS)
    engagement_rate_coverage: RateCoverage | None = Field(
        default=None, description=_RATE_COVERAGE + " Posts and platforms are null here."
    )
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
    provenance: Provenance


class ViralTrend(BaseModel):
    id: str = Field(description="Stable id of the (entity_type, entity, platform).")
    entity_type: EntityType | str
    entity: str = Field(
        description="A post's platform id, a hashtag's word (lower case, no #), or a topic."
    )
    label: str = Field(description=LABEL)
    url: str | None = Field(description=URL)
    thumbnail_url: str | None = Field(description=THUMBNAIL_URL)
    platform: str | None
    score: float = Field(description="How abnormal the velocity is against its own baseline.")
    status: TrendStatus | str
    velocity: float = Field(description="Engagements per hour in the judged window (W0).")
    baseline: float = Field(description="Its typical engagements per hour (own or same age).")
    window_end: UtcDatetime = Field(description="The end of the judged window.")
    computed_at: UtcDatetime
    evidence: Any = Field(description="What the score was computed from (JSON).")


class ViralTrends(Page[ViralTrend]):
    snapshot: Snapshot
    provenance: Provenance


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
    provenance: Provenance


_CONFIDENCE = (
    "`high`: at least 20 posts and an interval excluding 1.0; `medium`: at least 8 posts; else "
    "`low`; `none`: no post in this slot."
)
_SHRUNK = "An estimate: `weight` x `raw_index` + (1 - `weight`) x `prior` (empirical Bayes)."


class BestTimeCell(BaseModel):
    weekday: int = Field(description="0 Monday … 6 Sunday, in `tz`.")
    hour: int = Field(description="0 to 23, in `tz`.")
    label: str = Field(description="e.g. `Mon 09:00 UTC`, `Tue 18:00 Europe/Paris`.")
    posts: int = Field(description="Posts published in this slot that the index averages.")
    raw_index: float | None = Field(
        description="Measured: the mean over the slot's posts of the post's engagement rate / "
        "the account's mean rate (1.0 is average)."
    )
    shrunk_index: float | None = Field(
        description=_SHRUNK + " The prior: the account's block holding the slot."
    )
    prior: float | None = Field(
        default=None, description="What the cell shrinks toward: its block's `shrunk_index`."
    )
    weight: float | None = Field(
        default=None, description="The raw index's weight: posts / (posts + 5)."
    )
    ci_low: float | None = Field(description="95 % interval: shrunk ± 1.96 · weight · s / √posts.")
    ci_high: float | None
    confidence: Literal["low", "medium", "high", "none"] | str = Field(description=_CONFIDENCE)


class BestTimeBlock(BaseModel):
    """Four local hours of weekdays (Monday to Friday) or of weekends: the pooled resolution."""

    day_type: Literal["weekday", "weekend"]
    start_hour: int | None = Field(
        description="0, 4, 8, 12, 16 or 20, in `tz`; null for an account whose export gives "
        "dates only (the block is the whole day)."
    )
    end_hour: int | None = Field(description="`start_hour` + 4 (24: midnight); null likewise.")
    label: str = Field(description="e.g. `Weekdays 12:00-16:00 UTC`.")
    posts: int
    raw_index: float = Field(description="Measured, as a cell's.")
    shrunk_index: float = Field(
        description=_SHRUNK + " The prior: the platform's pattern for the block."
    )
    prior: float = Field(
        description="The platform's pattern: the block's mean index over every account's posts "
        "on the platform (own, competitors', creators'), shrunk toward 1.0 the same way."
    )
    prior_posts: int = Field(description="The posts the platform's pattern rests on.")
    weight: float = Field(description="posts / (posts + 5).")
    ci_low: float
    ci_high: float
    confidence: Literal["low", "medium", "high"] | str = Field(description=_CONFIDENCE)


class PostsNeeded(BaseModel):
    """More posts in the slot, as they are (same index and spread), for more confidence."""

    medium: int = Field(description="For medium confidence (8 posts); 0 when reached.")
    high: int | None = Field(
        description="For high confidence with the interval wholly above 1.0 (at least 20 posts); "
        "0 when reached; null when no number of posts would (an index too close to 1.0)."
    )


class BestTimeRecommendation(BaseModel):
    """When to post: the best slot at the resolution the account's posts support."""

    resolution: Literal["hour", "block", "day", "day_type"] = Field(
        description="`hour` (a cell: weekday and hour), `block` (4 hours of weekdays or "
        "weekends); for an export with dates only, `day` (a weekday) and `day_type`."
    )
    label: str = Field(description="e.g. `Weekdays 12:00-16:00 UTC`.")
    weekday: int | None = Field(description="A cell's or day's; null for a block.")
    hour: int | None = Field(description="A cell's; null otherwise.")
    day_type: Literal["weekday", "weekend"] | None = Field(description="A block's.")
    start_hour: int | None
    end_hour: int | None
    posts: int
    raw_index: float
    shrunk_index: float = Field(description="The estimate (see the cell and block fields).")
    prior: float
    weight: float
    ci_low: float
    ci_high: float
    confidence: Literal["low", "medium", "high"] | str
    told_apart: bool = Field(
        description="Whether the interval lies wholly above 1.0: told apart from the account's "
        "average. False: the slot looks better but the posts do not show it yet."
    )
    posts_needed: PostsNeeded
    text: str = Field(description="The recommendation in plain words (the `best_time` insight's).")


class BestTimes(BaseModel):
    account_id: str
    platform: str
    tz: str = Field(description="The zone of every weekday, hour and block, as IANA spells it.")
    grid: list[BestTimeCell] = Field(description="All 168 cells, Monday 00:00 first.")
    blocks: list[BestTimeBlock] = Field(
        default_factory=list,
        description="The blocks with posts: weekdays then weekends, by start hour.",
    )
    best: list[BestTimeCell] = Field(
        description="Up to 3 cells with the highest shrunk index, low confidence excluded."
    )
    recommendation: BestTimeRecommendation | None = Field(
        default=None,
        description="Null when no slot of at least 3 posts is above the account's average.",
    )
    computed_at: UtcDatetime | None
    snapshot: Snapshot
    provenance: Provenance


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
    engagement_rate: float | None = Field(
        description="Measured over the ranking's window: the engagements of its posts with "
        "impressions (else views) / those impressions (views); null when none has either."
    )
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(
        default=None, description=_RATE_BASIS
    )
    engagement_rate_coverage: RateCoverage | None = Field(default=None, description=_RATE_COVERAGE)
    engagement_rate_estimate: RateEstimate | None = Field(
        default=None,
        description="An estimate, not a measurement: the measured rate shrunk toward the "
        "group's mean (what the score's rate part uses); null when the rate is not measured.",
    )
    engagement_rate_shrunk: float | None = Field(
        description="Deprecated: `engagement_rate_estimate.value`; null when the rate is not "
        "measured (it never stands in for one)."
    )
    growth_rate: float
    avg_reach: float
    score: float = Field(description="The composite the rank orders by.")
    rank: int
    parts: Any = Field(description="The composite's parts (JSON).")
    computed_at: UtcDatetime


class Creators(Page[Ranking]):
    snapshot: Snapshot
    provenance: Provenance


class Benchmark(BaseModel):
    their_engagement_rate: float | None = Field(
        description="The competitor's measured rate: its ranking's `engagement_rate` (null "
        "when not measured; its estimate is the ranking's `engagement_rate_estimate`)."
    )
    their_engagement_rate_basis: Literal["impressions", "views"] | None = Field(
        default=None, description="Which denominator their rate divides by."
    )
    our_engagement_rate: float | None = Field(
        description="Our own accounts on the platform: `GET /analytics/unified`'s rate for it "
        "over `our_window` (the benchmark insight's `your_rate`)."
    )
    our_engagement_rate_basis: Literal["impressions", "views"] | None = Field(
        default=None, description="Which denominator our rate divides by."
    )
    our_engagement_rate_coverage: RateCoverage | None = Field(
        default=None, description=_RATE_COVERAGE
    )
    our_window: Window | None = Field(
        default=None,
        description="The 28 UTC days ending with our newest day of data; null without own data.",
    )
    ratio: float | None = Field(
        description="Theirs / ours; null when either is missing, ours is 0, or they divide by "
        "different bases (impressions against views)."
    )
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
    provenance: Provenance


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
    engagement_rate: float | None = Field(
        description="As the destination's totals divide (their basis and posts), for the day."
    )
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(
        default=None, description=_RATE_BASIS
    )


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
    engagement_rate: float | None = Field(description=_ENGAGEMENT_RATE)
    engagement_rate_basis: Literal["impressions", "views"] | None = Field(description=_RATE_BASIS)
    engagement_rate_coverage: RateCoverage | None = Field(default=None, description=_RATE_COVERAGE)


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
    provenance: Provenance
