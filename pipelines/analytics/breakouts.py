"""Breakouts: an own post's growth above the band its own history predicts (docs/api/analytics.md).

Each window between two readings of a post is judged against a prediction made without it:

- ``own``: with 2 or more earlier windows as long (within a factor of 2; the last 4 used), a
  straight line through their log velocities (ln(1 + engagements per hour)) against age,
  its slope held at or below 0
  (a post's growth decays or holds; it is not forecast to rise), read at the window's age;
- ``account_same_age`` / ``platform_same_age``: otherwise, the median log velocity of the
  account's other posts (3 windows or more), else the platform's, at the same age (ages in
  doubling bins: 0-1 h, 1-3 h, 3-7 h, …) over windows about as long (doubling bins too).
  A post's first window (nothing of its own before it) is not judged.

The band is the prediction ± ``BAND_Z`` robust standard deviations of the same predictor's
errors on the platform's own posts in the look-back (1.4826 * their MAD, at least
``MIN_SIGMA``, widened by √(1 + 1/n) for a line through n windows): a split-conformal band,
calibrated on the posts it will judge beside, robust to the surges among them. A window
above the band that gained at least ``MIN_EXCESS`` engagements more than predicted is a
breakout window. Consecutive breakout windows, and those less than ``COOLDOWN`` after the
last, are one breakout; its id is stable (the post and its first window), so a later run
that sees it again writes the same row and sends nothing.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from domain.analytics import definitions

LOOKBACK_DAYS = definitions.BREAKOUT_LOOKBACK_DAYS  # posts published this long before a run
FIT_WINDOWS = 4  # earlier windows the own line is drawn through
MIN_FIT_WINDOWS = 2
MIN_PEERS = 3  # windows a same-age median needs
MIN_CALIBRATION = 20  # errors a band's spread needs (fewer: the workspace's, else no band)
BAND_Z = 3.5
MIN_SIGMA = 0.15  # ln units: a band never narrower than ±BAND_Z * 15 %
MIN_EXCESS = 3.0  # engagements above the prediction a breakout window gains at least
COOLDOWN = timedelta(hours=24)
QUIET = math.log1p(0.5)  # ln velocity under half an engagement an hour: a spent post
FIRST_WINDOW_HOURS = 48  # a first reading this young counts as a window from publication
ALERT_HOURS = 24  # breakouts starting this close to the run's data end are pushed (webhooks)


@dataclass(frozen=True)
class Window:
    """Growth between two readings of one post (or from its publication to its first)."""

    start: datetime
    end: datetime
    growth: float  # engagements gained
    age_hours: float  # at the window's midpoint

    @property
    def hours(self) -> float:
        return (self.end - self.start) / timedelta(hours=1)

    @property
    def log_velocity(self) -> float:
        return math.log1p(self.growth / self.hours)


@dataclass
class Post:
    """An own post's identity and its windows, oldest first."""

    workspace_id: str
    platform: str
    external_id: str
    account_external_id: str
    post_id: str | None
    published_at: datetime
    windows: list[Window] = field(default_factory=list)


@dataclass(frozen=True)
class Prediction:
    """What a window was expected to gain, in ln velocity, and from what."""

    log_velocity: float
    source: str  # own, account_same_age, platform_same_age
    fit_windows: int  # own: windows the line went through; same age: peers' windows
    slope: float | None = None  # own: ln velocity per hour of age


def posts_of(rows: Iterable[dict[str, Any]]) -> list[Post]:
    """Posts and their windows from ``warehouse.marts.breakouts.own_post_readings`` rows."""
    found: dict[tuple[str, str, str], Post] = {}
    last: dict[tuple[str, str, str], tuple[datetime, float]] = {}
    for r in rows:
        key = (r["workspace_id"], r["platform"], r["external_id"])
        post = found.get(key)
        if post is None:
            post = found[key] = Post(
                r["workspace_id"],
                r["platform"],
                r["external_id"],
                r["account_external_id"],
                r["post_id"],
                r["published_at"],
            )
        at, total = r["captured_at"], float(r["engagements"])
        if key in last:
            start, before = last[key]
            if at > start:
                post.windows.append(_window(post, start, at, total - before))
        else:
            age = (at - post.published_at) / timedelta(hours=1)
            if 0 < age <= FIRST_WINDOW_HOURS:
                post.windows.append(_window(post, post.published_at, at, total))
        last[key] = (at, total)
    return list(found.values())


def _window(post: Post, start: datetime, end: datetime, growth: float) -> Window:
    mid = start + (end - start) / 2
    return Window(start, end, max(growth, 0.0), (mid - post.published_at) / timedelta(hours=1))


def age_bin(age_hours: float) -> int:
    """Doubling age bins: 0 for 0-1 h, 1 for 1-3 h, 2 for 3-7 h, …"""
    return int(math.log2(1 + max(age_hours, 0.0)))


def length_bin(window: Window) -> int:
    """Windows of about the same length share a bin (doubling: 1 h, 2 h, 4 h, …): a mean over
    a day is compared with other days' means, not with hours."""
    return round(math.log2(max(window.hours, 1 / 60)))


def own_prediction(earlier: Sequence[Window], window: Window) -> Prediction | None:
    """The line through the last ``FIT_WINDOWS`` earlier windows as long as ``window`` (within
    a factor of 2), read at its age."""
    # A mean over 14 hours since publication is no point on an hourly curve: it sits far
    # above the hours that follow and would tilt the line down.
    fit: list[Window] = []
    for w in reversed(earlier):  # the newest first: only the last few are needed
        if window.hours / 2 <= w.hours <= window.hours * 2:
            fit.insert(0, w)
            if len(fit) == FIT_WINDOWS:
                break
    if len(fit) < MIN_FIT_WINDOWS:
        return None
    xs = [w.age_hours for w in fit]
    ys = [w.log_velocity for w in fit]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    slope = min(slope, 0.0)
    return Prediction(my + slope * (window.age_hours - mx), "own", len(fit), slope)


class SameAge:
    """Same-age medians of log velocity per account and per platform (each post left out)."""

    def __init__(self, posts: Sequence[Post]) -> None:
        self._by: dict[tuple[Any, ...], list[tuple[float, str]]] = defaultdict(list)
        for p in posts:
            for w in p.windows:
                b = (age_bin(w.age_hours), length_bin(w))
                entry = (w.log_velocity, p.external_id)
                self._by[(p.workspace_id, p.platform, p.account_external_id, b)].append(entry)
                self._by[(p.workspace_id, p.platform, b)].append(entry)

    def predict(self, post: Post, window: Window) -> Prediction | None:
        b = (age_bin(window.age_hours), length_bin(window))
        keys = (
            ("account_same_age", (post.workspace_id, post.platform, post.account_external_id, b)),
            ("platform_same_age", (post.workspace_id, post.platform, b)),
        )
        for source, key in keys:
            values = [v for v, pid in self._by.get(key, ()) if pid != post.external_id]
            if len(values) >= MIN_PEERS:
                return Prediction(statistics.median(values), source, len(values))
        return None


def predict(post: Post, k: int, same_age: SameAge) -> Prediction | None:
    """Window ``k``'s prediction from what came before it (own), else its same-age peers; a
    post's first window has nothing of its own before it and is not judged."""
    # A new post of a big account beats its peers from birth (sizes vary tenfold): that is
    # its size, not a breakout (every false alarm of the simulator's hourly captures was one).
    if k == 0:
        return None
    window = post.windows[k]
    return own_prediction(post.windows[:k], window) or same_age.predict(post, window)


@dataclass(frozen=True)
class Band:
    """The spread of the predictor's errors on a platform's own posts."""

    sigma: float  # robust standard deviation of the errors, ln units (floored)
    errors: int  # how many errors it was measured on
    scope: str  # platform, or workspace when the platform had too few


def method_of(prediction: Prediction) -> str:
    """The band a prediction is judged with: its own line's, or the same-age medians'."""
    return "own" if prediction.source == "own" else "same_age"


BandKey = tuple[str, str, str]  # workspace, platform, method


Predicted = list[list[Prediction | None]]  # per post, per window


def calibrate(posts: Sequence[Post], predicted: Predicted) -> dict[BandKey, list[float]]:
    """Per workspace, platform and method, every window's prediction error (observed -
    predicted): a post's own line errs far less than a median of other posts."""
    errors: dict[BandKey, list[float]] = defaultdict(list)
    for p, found_of in zip(posts, predicted, strict=True):
        for w, found in zip(p.windows, found_of, strict=True):
            # a spent post that gained nothing where nothing was expected says nothing of the
            # spread (a week of them would shrink every band to its floor)
            if found is not None and (w.growth > 0 or found.log_velocity >= QUIET):
                key = (p.workspace_id, p.platform, method_of(found))
                errors[key].append(w.log_velocity - found.log_velocity)
    return errors


def robust_sigma(errors: Sequence[float]) -> float:
    """1.4826 * the MAD of ``errors``, at least ``MIN_SIGMA``."""
    med = statistics.median(errors)
    mad = statistics.median(abs(e - med) for e in errors)
    return max(1.4826 * mad, MIN_SIGMA)


def bands(errors: dict[BandKey, list[float]]) -> dict[BandKey, Band]:
    """Each platform's band per method, from its own errors or, with too few, its
    workspace's of the same method."""
    by_ws: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (ws, _, method), errs in errors.items():
        by_ws[(ws, method)] += errs
    out: dict[BandKey, Band] = {}
    for (ws, platform, method), errs in errors.items():
        pooled = by_ws[(ws, method)]
        if len(errs) >= MIN_CALIBRATION:
            out[(ws, platform, method)] = Band(robust_sigma(errs), len(errs), "platform")
        elif len(pooled) >= MIN_CALIBRATION:
            out[(ws, platform, method)] = Band(robust_sigma(pooled), len(pooled), "workspace")
    return out


@dataclass(frozen=True)
class Judged:
    """One window judged: its figures in engagements over the window."""

    window: Window
    prediction: Prediction
    band: Band
    expected: float
    low: float
    high: float
    half_width: float  # ln units

    @property
    def is_breakout(self) -> bool:
        observed = self.window.growth
        return observed > self.high and observed - self.expected >= MIN_EXCESS


def judge(window: Window, prediction: Prediction, band: Band) -> Judged:
    """The window against its prediction and band, in engagements over its hours."""
    widen = math.sqrt(1 + 1 / prediction.fit_windows) if prediction.source == "own" else 1.0
    half = BAND_Z * band.sigma * widen
    hours = window.hours

    def growth(log_velocity: float) -> float:
        return max(math.expm1(log_velocity), 0.0) * hours

    centre = prediction.log_velocity
    high = growth(centre + half)
    # counts are whole: a slow post's hour gains 0, 1 or 5 (five counters ticking at once), so
    # the band's top also holds a count's own noise (Poisson: BAND_Z * √(high + 1) more)
    high += BAND_Z * math.sqrt(high + 1)
    return Judged(window, prediction, band, growth(centre), growth(centre - half), high, half)


def breakout_id(post: Post, first: Window) -> str:
    """Stable: the same post's breakout starting at the same window is the same one."""
    key = f"{post.workspace_id}|{post.platform}|{post.external_id}|{first.end.isoformat()}"
    return "brk_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def _window_evidence(j: Judged) -> dict[str, Any]:
    return {
        "start": j.window.start.isoformat() + "Z",
        "end": j.window.end.isoformat() + "Z",
        "hours": j.window.hours,
        "age_hours": j.window.age_hours,
        "observed": j.window.growth,
        "expected": j.expected,
        "band": [j.low, j.high],
    }


def episodes(post: Post, judged: Sequence[Judged], data_end: datetime) -> list[dict[str, Any]]:
    """The post's breakouts: runs of breakout windows, a gap shorter than ``COOLDOWN`` kept in
    one; each a mart row."""
    out: list[dict[str, Any]] = []
    current: list[Judged] = []

    def close() -> None:
        first, peak = current[0], max(current, key=lambda j: j.window.growth - j.expected)
        p, band = first.prediction, first.band
        evidence = {
            "method": p.source,
            "fit_windows": p.fit_windows,
            "slope_per_hour": p.slope,
            "band_z": BAND_Z,
            "sigma": band.sigma,
            "calibration_errors": band.errors,
            "calibration_scope": band.scope,
            "windows": [_window_evidence(j) for j in current],
        }
        last = current[-1].window.end
        out.append(
            {
                "id": breakout_id(post, first.window),
                "workspace_id": post.workspace_id,
                "platform": post.platform,
                "account_external_id": post.account_external_id,
                "external_id": post.external_id,
                "post_id": post.post_id,
                "published_at": post.published_at,
                "started_at": first.window.end,
                "last_breakout_at": last,
                "ongoing": data_end - last < COOLDOWN,
                "window_start": first.window.start,
                "observed": first.window.growth,
                "expected": first.expected,
                "band_low": first.low,
                "band_high": first.high,
                "peak_observed": peak.window.growth,
                "peak_expected": peak.expected,
                "evidence": evidence,
            }
        )

    for j in judged:
        if not j.is_breakout:
            continue
        if current and j.window.end - current[-1].window.end >= COOLDOWN:
            close()
            current = []
        current.append(j)
    if current:
        close()
    return out


def breakouts(posts: Sequence[Post], data_end: dict[str, datetime]) -> list[dict[str, Any]]:
    """Every breakout of ``posts`` (each workspace's data ending at ``data_end``), newest first."""
    same_age = SameAge(posts)
    # each window predicted once: the same predictions calibrate the bands and are judged
    predicted = [[predict(p, k, same_age) for k in range(len(p.windows))] for p in posts]
    spread = bands(calibrate(posts, predicted))
    out: list[dict[str, Any]] = []
    for p, found_of in zip(posts, predicted, strict=True):
        judged = []
        for w, found in zip(p.windows, found_of, strict=True):
            band = spread.get((p.workspace_id, p.platform, method_of(found))) if found else None
            if found is not None and band is not None:
                judged.append(judge(w, found, band))
        out += episodes(p, judged, data_end[p.workspace_id])
    out.sort(key=lambda r: (r["started_at"], r["id"]), reverse=True)
    return out
