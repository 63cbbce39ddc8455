"""The pure computations behind the insights: shrinkage, robust z, trend status, composites.

Each is a small function of plain numbers so that it can be unit-tested against values
worked out by hand (tests/pipelines/test_algorithms.py). Their parameters are documented
in docs/pipeline.md.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

# Creator rankings: prior weight (in posts) of the population's mean engagement rate.
RANKING_PRIOR_POSTS = 10.0
# Creator rankings: weights of the standardised parts (they sum to 1).
RANKING_WEIGHTS = {"engagement_rate": 0.5, "growth_rate": 0.25, "reach": 0.25}
# Anomalies: |robust z| at or above this is flagged (Iglewicz and Hoaglin's 3.5).
ANOMALY_THRESHOLD = 3.5
# 0.6745 = the 0.75 quantile of the standard normal: makes MAD comparable to a sd.
MAD_CONSTANT = 0.6745
# When MAD is 0, the mean absolute deviation scaled by sqrt(pi/2) stands in for it.
MEANAD_CONSTANT = 1.253314
# Viral trends: a score (log2 velocity ratio) at or above this is "abnormal" (2x baseline).
TREND_THRESHOLD = 1.0
# Viral trends: velocity change that counts as rising or falling between two windows.
TREND_CHANGE = 0.10

TrendStatus = Literal["emerging", "peaking", "declining"]


def engagement_rate(
    engagements: float, impressions: float | None, views: float | None
) -> float | None:
    """Engagements / impressions, else / views; None when neither is known (> 0)."""
    if impressions:
        return engagements / impressions
    if views:
        return engagements / views
    return None


def credibility(n: float, k: float) -> float:
    """The weight n / (n + k) a group of n observations gets against a prior worth k."""
    return n / (n + k) if n + k > 0 else 0.0


def shrink(value: float, n: float, prior: float, k: float) -> float:
    """Empirical-Bayes shrinkage of a group mean toward ``prior`` with prior weight ``k``."""
    w = credibility(n, k)
    return w * value + (1 - w) * prior


def median_mad(values: Sequence[float]) -> tuple[float, float]:
    """The median and the median absolute deviation from it."""
    med = statistics.median(values)
    return med, statistics.median(abs(v - med) for v in values)


def robust_z(value: float, baseline: Sequence[float]) -> tuple[float, float, float] | None:
    """(robust z, median, MAD) of ``value`` against ``baseline``; None if it has no spread.

    z = 0.6745 (x - median) / MAD. When MAD is 0 (more than half the baseline equal), the
    mean absolute deviation x 1.253314 replaces MAD / 0.6745; a constant baseline has no
    spread to measure against and gives None.
    """
    if not baseline:
        return None
    med, mad = median_mad(baseline)
    if mad > 0:
        return MAD_CONSTANT * (value - med) / mad, med, mad
    mean_ad = statistics.fmean(abs(v - med) for v in baseline)
    if mean_ad > 0:
        return (value - med) / (MEANAD_CONSTANT * mean_ad), med, mad
    return None


def anomaly_direction(z: float, threshold: float = ANOMALY_THRESHOLD) -> str | None:
    """'spike' or 'drop' when |z| reaches the threshold, else None."""
    if z >= threshold:
        return "spike"
    if z <= -threshold:
        return "drop"
    return None


def velocity_score(velocity: float, baseline: float) -> float:
    """log2((v + 1) / (b + 1)): how many doublings above its baseline (1/h pseudo-count)."""
    return math.log2((max(velocity, 0.0) + 1.0) / (max(baseline, 0.0) + 1.0))


def trend_status(
    score_now: float,
    score_prev: float,
    velocity_now: float,
    velocity_prev: float,
    threshold: float = TREND_THRESHOLD,
    change: float = TREND_CHANGE,
) -> TrendStatus | None:
    """emerging (high and rising), peaking (high, flat or slowing), declining (was high, falling).

    Rising: the latest window's velocity exceeds the previous one by more than ``change``;
    falling: it is below it by more than ``change``. None: not abnormal now or just before.
    """
    rising = velocity_now > velocity_prev * (1 + change)
    falling = velocity_now < velocity_prev * (1 - change)
    high_now, high_before = score_now >= threshold, score_prev >= threshold
    if high_now and rising:
        return "emerging"
    if high_now and not falling:
        return "peaking"
    if (high_now or high_before) and falling:
        return "declining"
    return None


def zscores(values: Sequence[float]) -> list[float]:
    """Population z-scores; all 0 when the values do not vary (or there is one)."""
    if len(values) < 2:
        return [0.0 for _ in values]
    mean = statistics.fmean(values)
    sd = statistics.pstdev(values)
    if sd == 0:
        return [0.0 for _ in values]
    return [(v - mean) / sd for v in values]


def composite(parts: dict[str, float], weights: dict[str, float] = RANKING_WEIGHTS) -> float:
    """Σ weight x standardised part."""
    return sum(weights[name] * parts[name] for name in weights)


def hashtag_family(tag: str) -> str:
    """A topic key for a hashtag: lower case, letters and digits only, trailing digits cut.

    '#WorldCup2026' and 'worldcup' are one family; a tag of digits only keeps them.
    """
    text = "".join(ch for ch in tag.lower() if ch.isalnum())
    stem = text.rstrip("0123456789")
    return stem or text
