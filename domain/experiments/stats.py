"""An experiment's arithmetic: lifts with their 95 % interval, posts a lift needs, the stop rule.

Each measured post contributes ``z = ln(1 + metric)`` (for the engagement rate, ``ln(1 +
engagements) - ln(1 + basis)``): engagement figures are skewed (a few posts many times the
rest), and on the log scale an arm that multiplies engagements by ``m`` moves every post by
``ln m``. An arm's lift against the control is ``exp(d) - 1``, where ``d`` is the difference of
mean ``z`` within each account, weighted by the account's share of the measured posts (posts
of a large and a small account are never compared with each other), and its interval is
Welch's t interval on ``d`` (Welch-Satterthwaite degrees of freedom), turned back the same way.
docs/api/experiments.md states the method and its limits; tests/experiments check it against
an independent computation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CONFIDENCE = 0.95
POWER = 0.8
#: Haybittle-Peto: an experiment may stop before its plan only on |t| at least this (two-sided
#: p < 0.001), and only with at least half its planned posts measured; the 95 % level of the
#: planned end then holds within a hair (the error spent early is at most 0.001).
EARLY_STOP_T = 3.2905
EARLY_STOP_FRACTION = 0.5
#: The fewest measured posts of an arm in an account for that account to take part.
MIN_PER_CELL = 2


def _scipy() -> Any:
    # Imported on first use: every process that loads the posts' schemas would pay for it.
    from scipy import stats as scipy_stats

    return scipy_stats


Cells = Mapping[str, Sequence[float]]  # account -> the z of an arm's measured posts there


def log_value(engagements: float, basis: float | None = None) -> float:
    """A post's ``z``: ``ln(1 + engagements)``, less ``ln(1 + basis)`` for a rate."""
    value = math.log1p(engagements)
    return value if basis is None else value - math.log1p(basis)


@dataclass(frozen=True)
class Comparison:
    """One arm against the control."""

    lift: float
    low: float
    high: float
    difference: float  # d, on the log scale
    std_error: float
    degrees_of_freedom: float | None
    t: float | None
    p_value: float | None
    accounts: int  # accounts with both arms measured (MIN_PER_CELL each)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _variance(values: Sequence[float]) -> float:
    mean = _mean(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def _shared(arm: Cells, control: Cells) -> list[str]:
    return sorted(
        a for a in arm if len(arm[a]) >= MIN_PER_CELL and len(control.get(a, ())) >= MIN_PER_CELL
    )


def compare(arm: Cells, control: Cells) -> Comparison | None:
    """The arm's lift over the control, or None while no account has both arms measured."""
    accounts = _shared(arm, control)
    if not accounts:
        return None
    total = sum(len(arm[a]) + len(control[a]) for a in accounts)
    difference = variance = dof_denominator = 0.0
    for account in accounts:
        t, c = arm[account], control[account]
        weight = (len(t) + len(c)) / total
        difference += weight * (_mean(t) - _mean(c))
        parts = (weight**2 * _variance(t) / len(t), weight**2 * _variance(c) / len(c))
        variance += sum(parts)
        dof_denominator += parts[0] ** 2 / (len(t) - 1) + parts[1] ** 2 / (len(c) - 1)
    std_error = math.sqrt(variance)
    if std_error == 0:
        # Every post of both arms alike: no spread to judge the difference by.
        return Comparison(
            lift=math.expm1(difference),
            low=math.expm1(difference),
            high=math.expm1(difference),
            difference=difference,
            std_error=0.0,
            degrees_of_freedom=None,
            t=None,
            p_value=None,
            accounts=len(accounts),
        )
    dof = variance**2 / dof_denominator
    quantile = float(_scipy().t.ppf(0.5 + CONFIDENCE / 2, dof))
    t_value = difference / std_error
    return Comparison(
        lift=math.expm1(difference),
        low=math.expm1(difference - quantile * std_error),
        high=math.expm1(difference + quantile * std_error),
        difference=difference,
        std_error=std_error,
        degrees_of_freedom=dof,
        t=t_value,
        p_value=float(2 * _scipy().t.sf(abs(t_value), dof)),
        accounts=len(accounts),
    )


def pooled_variance(arms: Sequence[Cells]) -> float | None:
    """The variance of ``z`` within an arm and account, pooled over all of them (None: no
    cell with two posts yet)."""
    squares = 0.0
    dof = 0
    for cells in arms:
        for values in cells.values():
            if len(values) >= MIN_PER_CELL:
                squares += _variance(values) * (len(values) - 1)
                dof += len(values) - 1
    return squares / dof if dof else None


def posts_per_arm(variance: float, min_detectable_effect: float) -> int:
    """Measured posts each arm needs to find a lift of ``min_detectable_effect`` (0.1: 10 %) at
    the 95 % level with 80 % power: ``2 s^2 (z_0.975 + z_0.8)^2 / ln(1 + mde)^2``."""
    norm = _scipy().norm
    z = float(norm.ppf(0.5 + CONFIDENCE / 2) + norm.ppf(POWER))
    return max(
        MIN_PER_CELL, math.ceil(2 * variance * z**2 / math.log1p(min_detectable_effect) ** 2)
    )


def may_stop_early(comparisons: Sequence[Comparison | None], fraction_done: float) -> bool:
    """The documented rule: half the plan done, and some arm's |t| at least EARLY_STOP_T."""
    if fraction_done < EARLY_STOP_FRACTION:
        return False
    return any(c is not None and c.t is not None and abs(c.t) >= EARLY_STOP_T for c in comparisons)
