"""An experiment's metric for one published post, read off its readings: at a fixed age.

Engagements at 24 h (or 48 h) after publication are interpolated, linearly, between the two
readings either side of that age (an estimate, named so in the definitions), and only when they
are at most MAX_GAP_HOURS apart: a post read too sparsely there is not measured (null), never
filled in. The engagement rate is the engagements at 48 h over the impressions at 48 h (views
where the platform gives no impressions), interpolated alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from domain.experiments.stats import log_value

MAX_GAP_HOURS = 6.0


class Metric(StrEnum):
    """What an experiment compares its arms on."""

    ENGAGEMENT_RATE = "engagement_rate"
    ENGAGEMENTS_24H = "engagements_24h"
    ENGAGEMENTS_48H = "engagements_48h"


AGE_HOURS = {
    Metric.ENGAGEMENT_RATE: 48.0,
    Metric.ENGAGEMENTS_24H: 24.0,
    Metric.ENGAGEMENTS_48H: 48.0,
}


@dataclass(frozen=True)
class Reading:
    """A post's counters at one capture (each at its running peak)."""

    captured_at: datetime
    engagements: float
    impressions: float
    views: float


@dataclass(frozen=True)
class Measured:
    """A post's metric: the figure shown, and its ``z`` for the comparison."""

    value: float
    z: float


def _at_age(readings: Sequence[Reading], published_at: datetime, hours: float) -> Reading | None:
    """The counters at ``hours`` after publication, interpolated between the readings either
    side (None: no reading yet past that age, or the two too far apart)."""
    before: tuple[float, Reading] | None = None
    for reading in readings:
        age = (reading.captured_at - published_at).total_seconds() / 3600
        if age == hours:
            return reading
        if age < hours:
            before = (age, reading)
            continue
        if before is None or age - before[0] > MAX_GAP_HOURS:
            return None
        return _between(before[1], reading, (hours - before[0]) / (age - before[0]))
    return None


def _between(low: Reading, high: Reading, share: float) -> Reading:
    """The counters ``share`` of the way from ``low`` to ``high``."""
    return Reading(
        captured_at=high.captured_at,
        engagements=low.engagements + (high.engagements - low.engagements) * share,
        impressions=low.impressions + (high.impressions - low.impressions) * share,
        views=low.views + (high.views - low.views) * share,
    )


def measure(metric: Metric, readings: Sequence[Reading], published_at: datetime) -> Measured | None:
    """The post's metric, or None while it is not measured (see the module's docstring)."""
    point = _at_age(readings, published_at, AGE_HOURS[metric])
    if point is None:
        return None
    if metric is not Metric.ENGAGEMENT_RATE:
        return Measured(value=point.engagements, z=log_value(point.engagements))
    basis = point.impressions if point.impressions > 0 else point.views
    if basis <= 0:
        return None  # neither impressions nor views: no rate to give
    return Measured(value=point.engagements / basis, z=log_value(point.engagements, basis))


DEFINITIONS = {
    "engagements": "likes + comments + shares + saves + clicks, each at its running peak.",
    Metric.ENGAGEMENTS_24H.value: "An estimate: the engagements 24 h after publication,"
    f" interpolated between the readings either side (at most {MAX_GAP_HOURS:g} h apart).",
    Metric.ENGAGEMENTS_48H.value: "An estimate: the engagements 48 h after publication,"
    f" interpolated between the readings either side (at most {MAX_GAP_HOURS:g} h apart).",
    Metric.ENGAGEMENT_RATE.value: "An estimate: the engagements over the impressions (views"
    " where the platform gives no impressions) 48 h after publication, both interpolated alike.",
    "posts_measured": "Published destinations (one post to two accounts is two) with the metric.",
    "lift": "exp(d) - 1: d the difference of mean ln(1 + metric) between the arm and the control"
    " within each account, weighted by the account's measured posts.",
}
