"""Each analytics figure's formula in words: what ``data.provenance.definitions`` says.

One text per figure, the same on every answer that shows it (REST, MCP, the dashboard's
"where from"); docs/api/analytics.md lists them verbatim (a test holds the two together).
"""

from __future__ import annotations

# The windows the pipeline computes over (pipelines/analytics/insights.py reads them here),
# which an answer's provenance counts its readings in.
BEST_TIMES_DAYS = 90  # posts published in the last 90 days
RANKING_DAYS = 28  # a ranked account's last 28 days of data
ANOMALY_BASELINE_DAYS = 28
ANOMALY_DAYS = 28  # every day of the last 28 is judged, each against the 28 before it
TREND_LOOKBACK_DAYS = 7  # hourly history read for trends
TREND_BASELINE_WINDOWS = 4  # the 4 windows before the previous one
TREND_WINDOWS = 2 + TREND_BASELINE_WINDOWS  # W0 (latest), W1 (previous) and the baseline

DEFINITIONS: dict[str, str] = {
    "impressions": "Times the posts were shown: growth between readings (above each counter's "
    "running peak), summed per post and bucket.",
    "reach": "Per-post, per-day reach summed: an upper bound on unique accounts reached.",
    "views": "Video or post views: growth between readings, summed.",
    "engagements": "likes + comments + shares + saves + clicks: growth between readings, summed.",
    "engagement_rate": "Measured: the engagements of the posts that have the basis "
    "(impressions, else views) in scope, divided by that basis summed over the same posts; "
    "posts without it are left out of both (engagement_rate_coverage); null when no post "
    "has either.",
    "engagement_rate_estimate": "An estimate, not a measurement: weight x measured rate + "
    "(1 - weight) x the group's mean rate, weight = posts / (posts + prior_posts).",
    "posts": "Own posts published by the accounts in scope during the range.",
    "active_posts": "Distinct posts with a growth reading in the range.",
    "followers": "Per account, the last follower count within the range, summed over accounts; "
    "null when none reported one.",
    "follower_growth": "Net change in followers over the range, summed over accounts.",
    "first_seen": "What posts first read in the range had gathered before that first reading "
    "(a lifetime total), kept apart from growth.",
    "velocity": "Engagements per hour in the judged window: growth over the window's hours, or "
    "a young post's first sighting, its lifetime engagements over its age.",
    "baseline": "The median velocity of the entity's own earlier windows (2 to 5 back), else "
    "of posts of the same age on its account, else on its platform.",
    "score": "log2((velocity + 1) / (baseline + 1)): doublings above the baseline; 1 and "
    "above is abnormal.",
    "robust_z": "0.6745 x (the day's value - the median of the 28 days before) / their median "
    "absolute deviation; flagged at 3.5 or more either way.",
    "rate_index": "A post's engagement rate divided by its account's mean rate over the window "
    "(1.0 is average).",
    "shrunk_index": "An estimate: weight x raw index + (1 - weight) x prior (the block's, or "
    "the platform's pattern), weight = posts / (posts + 5).",
    "composite_score": "0.5 x z(engagement rate estimate) + 0.25 x z(growth rate) + 0.25 x "
    "z(log(1 + average reach)), z within the platform and kind; a member without a part "
    "scores 0 on it, a part nobody has is left out and the weights renormalised.",
    "growth_rate": "(followers at the last reading - at the first) / followers at the first, "
    "over the ranking's 28 days; null from a single reading.",
    "ratio": "Their measured engagement rate divided by ours on the platform, when both divide "
    "by the same basis.",
    "observed": "Engagements the post gained in the window (growth between two readings, or "
    "from publication to a young post's first reading).",
    "expected": "An estimate: the window's predicted engagements, from a line through the "
    "post's own last 4 windows' ln(1 + velocity) against age (slope at most 0), else the "
    "median of its account's (else platform's) posts at the same age; a post's first window "
    "is not judged.",
    "band": "A prediction interval: expected ln velocity +/- 3.5 robust standard deviations "
    "of the same prediction's errors on the platform's own posts in the look-back "
    "(1.4826 x MAD, at least 0.15), the top widened by 3.5 x sqrt(top + 1) for whole counts.",
}

UNIFIED = (
    "impressions",
    "reach",
    "views",
    "engagements",
    "engagement_rate",
    "posts",
    "active_posts",
    "followers",
    "follower_growth",
    "first_seen",
)
TRENDS = ("velocity", "baseline", "score")
INSIGHTS = ("engagement_rate", "robust_z", "rate_index", "shrunk_index", "ratio")
BEST_TIMES = ("engagement_rate", "rate_index", "shrunk_index")
RANKINGS = (
    "engagement_rate",
    "engagement_rate_estimate",
    "growth_rate",
    "reach",
    "composite_score",
)
COMPETITORS = (*RANKINGS, "ratio")
POST = ("impressions", "reach", "views", "engagements", "engagement_rate")
BREAKOUTS = ("observed", "expected", "band")
BREAKOUT_LOOKBACK_DAYS = 7  # posts published in the 7 days before the run are judged


def of(names: tuple[str, ...]) -> dict[str, str]:
    """The definitions of ``names``, in that order."""
    return {name: DEFINITIONS[name] for name in names}
