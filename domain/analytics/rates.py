"""Engagement rates that divide the engagements and the denominator of the same posts.

docs/api/analytics.md (``engagement_rate``): a rate's basis is impressions where any post of
its scope has impressions, else views; its numerator is the engagements of the posts that
have that denominator in the scope, and its coverage says which posts and platforms it
leaves out and what share of the scope's engagements that is. Every rate the API, the MCP
tools and the pipeline's insights show is computed here, from sums read in the same SQL
(warehouse/analytics.py, ``COVERAGE``) or from per-post rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

from domain.analytics.schemas import RateCoverage, RateEstimate, Window
from warehouse import analytics as repo
from warehouse.rows import Cursor

RateBasis = Literal["impressions", "views"]
# How a ranking's estimate is made (pipelines/analytics/insights.py, creator_rankings).
ESTIMATE_METHOD = "shrunk_toward_group_mean"
# Our own rate in a benchmark: the unified answer over the 28 UTC days ending with our
# newest day of data, the default range of a daily read on that day.
BENCHMARK_DAYS = 28
_EXPOSURE = ("impressions", "views")


def basis_of(impressions: int, views: int) -> RateBasis | None:
    """Impressions where there are any, else views, else none."""
    if impressions > 0:
        return "impressions"
    if views > 0:
        return "views"
    return None


@dataclass(frozen=True)
class Rate:
    """A measured rate, its basis and its coverage (all None when nothing is measured)."""

    value: float | None = None
    basis: RateBasis | None = None
    coverage: RateCoverage | None = None


def _int(row: Mapping[str, Any], name: str) -> int:
    return int(row.get(name) or 0)


def measure(
    row: Mapping[str, Any],
    *,
    basis: RateBasis | None = None,
    parts: Sequence[Mapping[str, Any]] | None = None,
) -> Rate:
    """``row``'s rate over the posts with its basis (``basis``, else chosen from ``row``)."""
    # ``row``: the scope's engagements, impressions, views and the cov_* sums of
    # warehouse.analytics.COVERAGE (post counts optional: a series bucket has none); ``parts``:
    # the per-platform rows it sums, which name the platforms covered and left out.
    chosen = basis or basis_of(_int(row, "impressions"), _int(row, "views"))
    if chosen is None:
        return Rate()
    denominator = _int(row, chosen)
    if denominator <= 0:
        return Rate()
    engagements = _int(row, "engagements")
    covered = _int(row, f"cov_eng_{chosen}")
    excluded = engagements - covered
    posts = excluded_posts = None
    if f"cov_posts_{chosen}" in row:
        posts = _int(row, f"cov_posts_{chosen}")
        excluded_posts = _int(row, f"cov_left_{chosen}")
    platforms = excluded_platforms = None
    if parts is not None:
        platforms = sorted(str(p["platform"]) for p in parts if _int(p, f"cov_posts_{chosen}"))
        excluded_platforms = sorted(
            str(p["platform"])
            for p in parts
            if _int(p, "engagements") and not _int(p, f"cov_posts_{chosen}")
        )
    coverage = RateCoverage(
        engagements=covered,
        denominator=denominator,
        excluded_engagements=excluded,
        excluded_engagements_share=excluded / engagements if engagements else 0.0,
        posts=posts,
        excluded_posts=excluded_posts,
        platforms=platforms,
        excluded_platforms=excluded_platforms,
    )
    return Rate(covered / denominator, chosen, coverage)


def post_sums(posts: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The sums ``measure`` reads, from rows of one post each, as the unified SQL sums them."""
    sums = dict.fromkeys(("engagements", "impressions", "views", *repo.COVERAGE), 0)
    for p in posts:
        engagements, impressions, views = (_int(p, c) for c in ("engagements", *_EXPOSURE))
        sums["engagements"] += engagements
        sums["impressions"] += impressions
        sums["views"] += views
        for basis, value in (("impressions", impressions), ("views", views)):
            if value > 0:
                sums[f"cov_eng_{basis}"] += engagements
                sums[f"cov_posts_{basis}"] += 1
            elif engagements > 0:
                sums[f"cov_left_{basis}"] += 1
    return sums


def _parts(parts: Any) -> dict[str, Any]:
    """A ranking's ``parts.engagement_rate`` (JSON text or a dict), else empty."""
    if isinstance(parts, str):
        try:
            parts = json.loads(parts)
        except ValueError:
            return {}
    found = parts.get("engagement_rate") if isinstance(parts, dict) else None
    return found if isinstance(found, dict) else {}


def ranking_basis(rate: float | None, parts: Any) -> RateBasis | None:
    """The basis a ranking's measured rate divides by (null with no measured rate)."""
    basis = _parts(parts).get("basis")
    return basis if rate is not None and basis in ("impressions", "views") else None


def ranking_coverage(rate: float | None, parts: Any) -> RateCoverage | None:
    """The coverage the pipeline kept with a ranking's measured rate, if it kept one."""
    found = _parts(parts).get("coverage")
    if rate is None or not isinstance(found, dict):
        return None
    return RateCoverage.model_validate(found)


def estimate_of(rate: float | None, shrunk: float | None, parts: Any) -> RateEstimate | None:
    """A ranking's shrunk rate as an estimate, with its prior and weight; none unmeasured."""
    # Without a measured rate the "shrunk" value is the group's prior alone: it says nothing
    # of the account, so there is no estimate to show.
    if rate is None or shrunk is None:
        return None
    er = _parts(parts)
    posts = _number(er.get("rated_posts", er.get("posts")))
    prior_posts = _number(er.get("prior_posts"))
    weight = None
    if posts is not None and prior_posts is not None and posts + prior_posts > 0:
        weight = posts / (posts + prior_posts)
    return RateEstimate(
        value=shrunk,
        prior=_number(er.get("prior")),
        weight=weight,
        posts=None if posts is None else int(posts),
        prior_posts=prior_posts,
        method=ESTIMATE_METHOD,
    )


def _number(value: Any) -> float | None:
    """A JSON number as a float (an older ranking's parts may lack the field)."""
    return float(value) if isinstance(value, int | float) else None


@dataclass(frozen=True)
class OwnRates:
    """Our own rate per platform over the benchmark's window (None: no own data)."""

    window: Window | None = None
    by_platform: dict[str, Rate] = field(default_factory=dict)


def benchmark_window(last_day: date) -> tuple[datetime, datetime]:
    """The 28 UTC days ending with ``last_day``, as [from, to)."""
    end = datetime.combine(last_day + timedelta(days=1), time(), tzinfo=UTC)
    return end - timedelta(days=BENCHMARK_DAYS), end


def own_rates(cur: Cursor, workspace_id: str) -> OwnRates:
    """Our rate per platform as ``GET /analytics/unified`` answers it for the benchmark window."""
    # The one computation behind a benchmark's "your rate": the benchmark insight (pipeline)
    # and /competitors (API) both call it, and it reads what the unified answer reads.
    last_day = repo.newest_own_day(cur, workspace_id)
    if last_day is None:
        return OwnRates()
    start, end = benchmark_window(last_day)
    where = repo.UnifiedFilter(
        workspace_id=workspace_id,
        start=start.replace(tzinfo=None),
        end=end.replace(tzinfo=None),
        platform=None,
        account_id=None,
        granularity="day",
        group_by="platform",
    )
    rows = repo.unified_by_platform(cur, where)
    return OwnRates(
        window=Window(from_=start, to=end),
        by_platform={str(r["platform"]): measure(r, parts=[r]) for r in rows},
    )
