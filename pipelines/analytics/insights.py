"""The non-partitioned marts computed from bounded windows of the partitioned ones.

Each function takes the rows read by warehouse.marts.insights for one workspace and returns the
mart's rows; the assets write them with one server-side transaction per mart.
"""

from __future__ import annotations

import bisect
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from domain.analytics import definitions, rates
from domain.analytics.schemas import BestTimeRecommendation
from pipelines.analytics import algorithms as alg
from warehouse.rows import Row

# Windows (all end at the workspace's newest staged hour, see warehouse.marts.insights.Window;
# their lengths are domain.analytics.definitions', which provenance counts readings over).
ANOMALY_BASELINE_DAYS = definitions.ANOMALY_BASELINE_DAYS
ANOMALY_DAYS = definitions.ANOMALY_DAYS
BEST_TIMES_DAYS = definitions.BEST_TIMES_DAYS
RANKING_DAYS = definitions.RANKING_DAYS
TREND_BASELINE_WINDOWS = definitions.TREND_BASELINE_WINDOWS
TREND_LOOKBACK_DAYS = definitions.TREND_LOOKBACK_DAYS
TREND_WINDOWS = definitions.TREND_WINDOWS
TOP_CONTENT_DAYS = 28
TOP_CONTENT_MIN_IMPRESSIONS = 100  # floor: a 3-view post with 2 likes is not "top"
TOP_CONTENT_COUNT = 5
ANOMALY_MIN_BASELINE = 7  # days of baseline needed before a day is judged
ANOMALY_METRICS = ("impressions", "engagements", "engagement_rate", "follower_growth")
# Whose days are judged: the workspace's own accounts and the competitors it tracks (the
# creators a workspace discovers are ranked, not watched: 477 flagged days of 150 creators in
# a `make up` store would bury its own 27).
ANOMALY_KINDS = ("own", "competitor")
TREND_WINDOW_HOURS = 6
TREND_WIDTH = timedelta(hours=TREND_WINDOW_HOURS)
TREND_MIN_VELOCITY = 1.0  # engagements per hour, now or just before, to be considered
TREND_TOP = 50  # rows kept per entity type, workspace and judged window
# Judged windows kept: one ending each day (each window, for windows longer than a day) over
# the last 28 windows: 7 days of 6-hour windows, 28 days of a daily export's.
TREND_HISTORY_WINDOWS = 28
TREND_HISTORY_DAYS = 28  # and never more than 28 days back (windows of 2 days: 14 of them)
# The list's order: what is rising or at its peak before what is falling.
TREND_STATUS_ORDER = {"emerging": 0, "peaking": 0, "declining": 1}
# A first sighting is a window of a post at most this old: a young post's lifetime rate is
# its recent activity, an old one's (an account connected today, its posts a year old) is not
# (it would jump into its hashtags' windows the hour it is first read).
TREND_FIRST_SIGHTING_HOURS = 24 * TREND_LOOKBACK_DAYS


def _rate(r: Row) -> float | None:
    return alg.engagement_rate(
        float(r["engagements"] or 0), float(r["impressions"] or 0), float(r["views"] or 0)
    )


def best_times(workspace_id: str, posts: list[Row], computed_at: datetime) -> list[Row]:
    """Each rated post of the window with its index: its rate over its account's mean.

    Own, competitors' and creators' posts alike: the others' are the platform's pattern that
    an own account's estimates shrink toward (warehouse/best_times.py reads them per zone).
    """
    by_account: dict[tuple[str, str], list[tuple[Row, float]]] = defaultdict(list)
    for p in posts:
        rate = _rate(p)
        # a post whose publication the export does not give (filed at its first reading)
        # says nothing about when to post
        if rate is not None and p.get("first_read") != p["published_at"]:
            by_account[(p["platform"], p["account_external_id"])].append((p, rate))
    out: list[Row] = []
    for (platform, account), rated in by_account.items():
        mean = statistics.fmean(r for _, r in rated)
        if mean <= 0 or len(rated) < 2:
            continue
        # An account whose every post is at midnight exactly comes from an export with dates
        # only: its hour of day is unknown, so its slots are whole days.
        dates_only = all(p["published_at"].time() == datetime.min.time() for p, _ in rated)
        out += [
            {
                "workspace_id": workspace_id,
                "platform": platform,
                "account_external_id": account,
                "kind": p["kind"],
                "external_id": p["external_id"],
                "published_at": p["published_at"],
                "engagement_rate": rate,
                "rate_index": rate / mean,
                "dates_only": dates_only,
                "computed_at": computed_at,
            }
            for p, rate in rated
        ]
    return out


def best_time_insights(
    workspace_id: str,
    recommended: list[tuple[str, str, BestTimeRecommendation]],
    handles: dict[tuple[str, str, str], str],
    computed_at: datetime,
) -> list[Row]:
    """Per own account, its recommendation in UTC (``recommended``: platform, account, it)."""
    out = []
    for platform, account, rec in recommended:
        handle = handles.get((workspace_id, platform, account), account)
        evidence = rec.model_dump(exclude={"text"}) | {"tz": "UTC"}
        for kind in ("best_time", "recommendation"):
            out.append(
                _insight(
                    workspace_id,
                    kind,
                    platform,
                    account,
                    f"Best time to post on {platform} as {handle}",
                    rec.text,
                    rec.shrunk_index,
                    evidence,
                    computed_at,
                )
            )
    return out


def top_content(workspace_id: str, posts: list[Row], computed_at: datetime) -> list[Row]:
    """The workspace's best own posts by engagement rate, above an impressions floor."""
    eligible = []
    for p in posts:
        reach = float(p["impressions"] or 0) or float(p["views"] or 0)
        rate = _rate(p)
        if rate is not None and reach >= TOP_CONTENT_MIN_IMPRESSIONS:
            eligible.append((rate, p))
    eligible.sort(key=lambda t: (-t[0], t[1]["external_id"]))
    out = []
    for rate, p in eligible[:TOP_CONTENT_COUNT]:
        text = (p["text"] or "").strip().replace("\n", " ")
        snippet = text[:80] + ("…" if len(text) > 80 else "")
        body = (
            f"“{snippet}” on {p['platform']}: {rate:.1%} engagement rate "
            f"({int(p['engagements'] or 0)} engagements)"
        )
        evidence = {
            "external_id": p["external_id"],
            "post_id": p["post_id"],
            "url": p["url"],
            "engagements": int(p["engagements"] or 0),
            "impressions": int(p["impressions"] or 0),
            "views": int(p["views"] or 0),
            "engagement_rate": rate,
            "published_at": p["published_at"].isoformat(),
            "media_type": p["media_type"],
        }
        out.append(
            _insight(
                workspace_id,
                "top_content",
                p["platform"],
                p["account_external_id"],
                f"Top post on {p['platform']}",
                body,
                rate,
                evidence,
                computed_at,
            )
        )
    return out


def anomalies(
    workspace_id: str, days: list[Row], as_of_day: Any, computed_at: datetime
) -> list[Row]:
    """Each account's metrics on every day of the ``ANOMALY_DAYS`` up to ``as_of_day``, each
    day against the median and MAD of the 28 days before it."""
    series: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for d in days:
        series[(d["platform"], d["account_external_id"])].append(d)
    first_judged = as_of_day - timedelta(days=ANOMALY_DAYS - 1)
    out = []
    for (platform, account), rows in series.items():
        rows.sort(key=lambda r: r["day"])
        for i, today in enumerate(rows):
            if not first_judged <= today["day"] <= as_of_day:
                continue
            history = [
                r for r in rows[:i] if (today["day"] - r["day"]).days <= ANOMALY_BASELINE_DAYS
            ]
            out += _judged_day(workspace_id, platform, account, today, history, computed_at)
    return out


def _judged_day(
    workspace_id: str,
    platform: str,
    account: str,
    today: Row,
    history: list[Row],
    computed_at: datetime,
) -> list[Row]:
    """The metrics of one account's day that lie 3.5 robust z or more from its baseline."""
    out = []
    for metric in ANOMALY_METRICS:
        value = today[metric]
        baseline = [float(r[metric]) for r in history if r[metric] is not None]
        if value is None or len(baseline) < ANOMALY_MIN_BASELINE:
            continue
        judged = alg.robust_z(float(value), baseline)
        if judged is None:
            continue
        z, med, mad = judged
        direction = alg.anomaly_direction(z)
        if direction is None:
            continue
        out.append(
            {
                "workspace_id": workspace_id,
                "day": today["day"],
                "platform": platform,
                "account_external_id": account,
                "metric": metric,
                "value": float(value),
                "baseline_median": med,
                "baseline_mad": mad,
                "robust_z": z,
                "direction": direction,
                "computed_at": computed_at,
            }
        )
    return out


def anomaly_multiple(value: float, median: float) -> float | None:
    """The day's figure as a multiple of its baseline's median; None over a median of 0."""
    return value / median if median else None


def anomaly_insights(
    workspace_id: str,
    found: list[Row],
    handles: dict[tuple[str, str, str], str],
    computed_at: datetime,
) -> list[Row]:
    """One 'anomaly' insight per flagged metric and day, and a recommendation for each drop."""
    out = []
    for a in found:
        handle = handles.get(
            (workspace_id, a["platform"], a["account_external_id"]), a["account_external_id"]
        )
        metric = a["metric"].replace("_", " ")
        verb = "spiked" if a["direction"] == "spike" else "dropped"
        multiple = anomaly_multiple(a["value"], a["baseline_median"])
        times = f"{multiple:.3g}x" if multiple is not None else "against"
        body = (
            f"{metric.capitalize()} of {handle} on {a['platform']} {verb} on {a['day']}: "
            f"{_num(a['value'])}, {times} the median day ({_num(a['baseline_median'])}) of "
            f"the {ANOMALY_BASELINE_DAYS} before (robust z {a['robust_z']:.1f})"
        )
        evidence = {
            k: (str(v) if k == "day" else v)
            for k, v in a.items()
            if k not in ("workspace_id", "computed_at")
        }
        evidence["multiple"] = multiple
        evidence["baseline_days"] = ANOMALY_BASELINE_DAYS
        out.append(
            _insight(
                workspace_id,
                "anomaly",
                a["platform"],
                a["account_external_id"],
                f"{metric.capitalize()} {verb} on {a['day']}",
                body,
                abs(a["robust_z"]),
                evidence,
                computed_at,
            )
        )
        if a["direction"] == "drop":
            advice = (
                f"{metric.capitalize()} of {handle} on {a['platform']} fell well below "
                f"its usual level on {a['day']}: check the account's connection and "
                f"recent posts."
            )
            out.append(
                _insight(
                    workspace_id,
                    "recommendation",
                    a["platform"],
                    a["account_external_id"],
                    f"Look into {handle}",
                    advice,
                    abs(a["robust_z"]),
                    evidence,
                    computed_at,
                )
            )
    return out


def trend_width(cadence_hours: float | None) -> timedelta:
    """The trend window for data read every ``cadence_hours``: 6 h, or one reading interval.

    Hourly captures keep 6-hour windows; a daily export gets day-long windows, so that each
    window holds one reading and like is compared with like (not a day with readings to
    hours without any).
    """
    if cadence_hours is None or cadence_hours <= TREND_WINDOW_HOURS:
        return TREND_WIDTH
    return timedelta(hours=math.ceil(cadence_hours))


def post_widths(
    cadences: Mapping[tuple[str, str], float], usual: float | None
) -> Callable[[Row], timedelta]:
    """Each post's trend window: its own reading interval's (``cadences``, per platform and
    post); for a post read once in the window, its platform's median interval, else the
    workspace's (``usual``)."""
    by_platform: dict[str, list[float]] = defaultdict(list)
    for (platform, _), hours in cadences.items():
        by_platform[platform].append(hours)
    typical = {p: statistics.median(h) for p, h in by_platform.items()}

    def width(post: Row) -> timedelta:
        own = cadences.get((post["platform"], post["external_id"]))
        return trend_width(own if own is not None else typical.get(post["platform"], usual))

    return width


def trend_ends(width: timedelta) -> list[int]:
    """The judged window ends, in windows back from the newest: one a day (every window when
    windows are longer than a day) over the last ``TREND_HISTORY_WINDOWS`` windows, within
    the last ``TREND_HISTORY_DAYS`` days."""
    step = max(1, timedelta(days=1) // width)
    history = timedelta(days=TREND_HISTORY_DAYS)
    return [j for j in range(0, TREND_HISTORY_WINDOWS, step) if j * width < history]


def trend_span(width: timedelta) -> int:
    """Windows a judgment reads back from its end: max(7 days, W0…W5) (peers' ages too)."""
    return max(TREND_WINDOWS, math.ceil(timedelta(days=TREND_LOOKBACK_DAYS) / width))


def trend_reach(width: timedelta) -> int:
    """Windows read for every judged end: the oldest end's span."""
    return trend_ends(width)[-1] + trend_span(width)


@dataclass
class _Read:
    """One post's velocities (engagements per hour) per window index, and which of them
    are its first sighting's (lifetime over age) rather than growth."""

    row: Row
    velocity: dict[int, float]
    first: set[int]


def _post_velocities(p: Row, hours: float, reach: int) -> _Read:
    """A post's windows: growth over the window's hours; a window holding only its first
    sighting, its lifetime engagements then over its age (hours since publication)."""
    velocity = {
        int(w): float(e) / hours
        for w, e in zip(p["wins"] or [], p["engagements"] or [], strict=True)
    }
    first: set[int] = set()
    win, age = p["first_win"], p["first_age_hours"]
    # a first sighting without a publication (age unknown) or at it (age 0) is no window
    young = age is not None and 0 < age <= TREND_FIRST_SIGHTING_HOURS
    if win is not None and 0 <= win < reach and win not in velocity and young:
        velocity[int(win)] = float(p["first_engagements"] or 0) / float(age)
        first.add(int(win))
    return _Read(p, velocity, first)


def _entity_keys(
    p: Row, hashtag_words: set[str], family: Callable[[str], str]
) -> set[tuple[str, str, str | None]]:
    """What a post trends as: itself, its hashtags and its topics, one key per word.

    ``#Coffee`` is the hashtag ``coffee``; a topic (a hashtag's family, or the category) that
    some post carries as a hashtag is that hashtag, not a second row with the same word.
    """
    keys: set[tuple[str, str, str | None]] = {("post", p["external_id"], p["platform"])}
    tags = hashtag_word_set(p["hashtags"])
    keys |= {("hashtag", t, None) for t in tags}
    topics = {family(t) for t in tags}
    if p["category"]:
        topics.add(str(p["category"]).lower())
    keys |= {("hashtag" if t in hashtag_words else "topic", t, None) for t in topics if t}
    return keys


def hashtag_word_set(hashtags: list[str] | None) -> set[str]:
    """A post's hashtags as words: lower case, without ``#``."""
    return {t.lower().lstrip("#") for t in (hashtags or []) if t and t.lstrip("#")}


# Peers: per platform and age, per window, the velocities of the posts read then (with their
# account and id).
Peers = dict[tuple[str, int], dict[int, list[tuple[float, str, str]]]]


def viral_trends(
    workspace_id: str,
    posts: list[Row],
    window_end: datetime,
    computed_at: datetime,
    width: timedelta = TREND_WIDTH,
    judged: set[tuple[str, str]] | None = None,
) -> list[Row]:
    """Posts, hashtags and topics whose velocity is abnormal against their baseline, judged
    at each of ``trend_ends`` (window ends back from ``window_end``).

    At a judged end, W0 is the window ending there, W1 the one before, W2…W5 the baseline. A
    window without any reading of the entity is *missing*, not zero; a post's first sighting
    is a reading of its window, at its lifetime velocity (engagements over its age). The
    baseline is the median velocity of the observed baseline windows (those after a post's
    publication); a post with fewer than 2 is compared with the median velocity of its
    account's other posts at the same age (whole windows from publication to the window's
    start) in the span ending at the judged end, else of its platform's (3 or more). An
    entity with W0 or W1 unobserved, or no baseline, has insufficient data and is not
    listed. ``posts``: ``warehouse.marts.insights.trend_windows`` over ``trend_reach``
    windows, every post of the workspace (the peers); ``judged``: the (platform, id) of the
    posts trended here (those read at this ``width``), all of them if None.
    """
    hours = width / timedelta(hours=1)
    reach = trend_reach(width)
    ends = set(trend_ends(width))
    # the words some post carries as a hashtag: a topic of one of them is that hashtag
    words = set().union(*(hashtag_word_set(p["hashtags"]) for p in posts))

    def peers() -> Peers:
        """Every post's windows by platform and age: the same-age baselines' peers."""
        found: Peers = defaultdict(lambda: defaultdict(list))
        for p in posts:
            if p["published_at"] is None:
                continue
            for win, vel in _post_velocities(p, hours, reach).velocity.items():
                age = _age(window_end, win, width, p["published_at"])
                if age >= 0:
                    found[(p["platform"], age)][win].append(
                        (vel, p["account_external_id"], p["external_id"])
                    )
        return found

    # entity → velocity per window (sums of its posts'), and its first sightings' windows
    last = max(ends) + TREND_WINDOWS
    sums: dict[tuple[str, str, str | None], dict[int, float]] = defaultdict(dict)
    firsts: dict[tuple[str, str, str | None], set[int]] = defaultdict(set)
    meta: dict[str, Row] = {}
    families: dict[str, str] = {}

    # a tag's family, once per tag: an export's thousands of videos share their tags
    def family(tag: str) -> str:
        if tag not in families:
            families[tag] = alg.hashtag_family(tag)
        return families[tag]

    for p in posts:
        if judged is not None and (p["platform"], p["external_id"]) not in judged:
            continue
        r = _post_velocities(p, hours, reach)
        meta[p["external_id"]] = p
        windows = [(w, v) for w, v in r.velocity.items() if w < last]
        for key in _entity_keys(p, words, family):
            total = sums[key]
            for win, vel in windows:
                total[win] = total.get(win, 0.0) + vel
            firsts[key] |= r.first

    judge = _Judge(window_end, width, meta, peers)
    found: list[Row] = []
    for key, per_window in sums.items():
        for j in sorted(per_window):
            if j not in ends or j + 1 not in per_window:
                continue  # not a judged end, or no reading just before to compare
            if max(per_window[j], per_window[j + 1]) < TREND_MIN_VELOCITY:
                continue
            row = judge.row(key, per_window, j)
            if row is not None:
                found.append({"workspace_id": workspace_id, "computed_at": computed_at, **row})
    kept = strongest(found)
    for row in kept:
        evidence = row["evidence"]
        evidence["first_sightings"] = sorted(
            i for i in (w - row["_j"] for w in firsts[row["_key"]]) if 0 <= i < TREND_WINDOWS
        )
        row["evidence"] = json.dumps(evidence)
        del row["_j"], row["_key"]
    return kept


def _age(window_end: datetime, win: int, width: timedelta, pub: datetime) -> int:
    """Whole windows from publication to the start of window ``win``."""
    return int((window_end - (win + 1) * width - pub) // width)


@dataclass(frozen=True)
class _Baseline:
    """What an entity is compared with: its own windows, or its same-age peers' median."""

    source: str  # own, account_same_age, platform_same_age
    value: float
    windows: list[int]  # own: the baseline windows (relative to W0)
    velocities: list[float]  # own: their velocities
    age: int | None = None  # same age: whole windows from publication to W0's start
    peers: int = 0  # same age: how many peers' windows the median is of


@dataclass
class _Cohort:
    """Same-age windows' velocities, sorted: all of them, and per account."""

    all: list[float]
    by_account: dict[str, list[float]]


def _median_without(ordered: list[float], value: float) -> tuple[float, int] | None:
    """The median of ``ordered`` (sorted) without one ``value`` (if it holds one), and how
    many values that is; None under 3 values."""
    i = bisect.bisect_left(ordered, value)
    drop = i if i < len(ordered) and ordered[i] == value else None
    n = len(ordered) - (drop is not None)
    if n < 3:
        return None

    def nth(k: int) -> float:
        return ordered[k + 1 if drop is not None and k >= drop else k]

    mid = n // 2
    return (nth(mid) if n % 2 else (nth(mid - 1) + nth(mid)) / 2), n


@dataclass
class _Judge:
    """Scores an entity at one judged end against its own windows or its same-age peers."""

    window_end: datetime
    width: timedelta
    meta: dict[str, Row]
    read_peers: Callable[[], Peers]  # called once, when a post first needs its peers

    def __post_init__(self) -> None:
        self.hours = self.width / timedelta(hours=1)
        self.span = trend_span(self.width)
        self._cohorts: dict[tuple[str, int, int], _Cohort] = {}
        self._peers: Peers | None = None

    def cohort(self, platform: str, age: int, j: int) -> _Cohort:
        """Posts' windows at ``age`` that end by the judged end ``j``, within its span."""
        key = (platform, age, j)
        if key not in self._cohorts:
            if self._peers is None:
                self._peers = self.read_peers()
            by_win = self._peers.get((platform, age), {})
            found = [peer for win in range(j, j + self.span) for peer in by_win.get(win, ())]
            by_account: dict[str, list[float]] = defaultdict(list)
            for v, acc, _ in found:
                by_account[acc].append(v)
            self._cohorts[key] = _Cohort(
                sorted(v for v, _, _ in found), {a: sorted(v) for a, v in by_account.items()}
            )
        return self._cohorts[key]

    def baseline(
        self, key: tuple[str, str, str | None], vel: dict[int, float], j: int
    ) -> _Baseline | None:
        """An entity's baseline at the end ``j`` windows back; None: insufficient data."""
        etype, entity, platform = key
        at = self.window_end - j * self.width
        base_idx = [i for i in range(2, TREND_WINDOWS) if j + i in vel]
        pub = self.meta[entity]["published_at"] if etype == "post" else None
        if pub is not None:
            # only windows that start after publication are the post's own history
            base_idx = [i for i in base_idx if at - (i + 1) * self.width >= pub]
        base_windows = [vel[j + i] for i in base_idx]
        if etype != "post" or len(base_windows) >= 2:
            if not base_windows:
                return None
            return _Baseline("own", statistics.median(base_windows), base_idx, base_windows)
        if pub is None:
            return None
        age = int((at - self.width - pub) // self.width)
        cohort = self.cohort(str(platform), age, j)
        # the post's own W0 is in its cohort (same age, same window): left out, once
        mine = cohort.by_account.get(self.meta[entity]["account_external_id"], [])
        for source, values in (("account_same_age", mine), ("platform_same_age", cohort.all)):
            found = _median_without(values, vel[j])
            if found is not None:
                return _Baseline(source, found[0], [], [], age, found[1])
        return None

    def row(self, key: tuple[str, str, str | None], vel: dict[int, float], j: int) -> Row | None:
        """The mart row of an entity trending at the end ``j`` windows back, if it is."""
        base = self.baseline(key, vel, j)
        if base is None:
            return None
        etype, entity, platform = key
        v0, v1 = vel[j], vel[j + 1]
        baseline = base.value
        score_now = alg.velocity_score(v0, baseline)
        score_prev = alg.velocity_score(v1, baseline)
        status = alg.trend_status(score_now, score_prev, v0, v1)
        if status is None:
            return None
        evidence: dict[str, Any] = {
            "window_hours": self.hours,
            "velocity": v0,
            "previous_velocity": v1,
            "baseline": baseline,
            "baseline_source": base.source,
            # a same-age baseline's hundreds of peers are counted, not listed
            "baseline_velocities": base.velocities,
            "baseline_windows": base.windows,
            "windows_observed": [i - j for i in sorted(vel) if j <= i < j + TREND_WINDOWS],
            "score_previous": score_prev,
            "parts": {
                "log2_velocity_plus_1": math.log2(v0 + 1),
                "log2_baseline_plus_1": math.log2(baseline + 1),
            },
        }
        if base.age is not None:
            evidence["age_windows"] = base.age
            evidence["baseline_peers"] = base.peers
        if etype == "post":
            evidence["account_external_id"] = self.meta[entity]["account_external_id"]
        return {
            "entity_type": etype,
            "entity": entity,
            "platform": platform,
            "score": score_now,
            "status": status,
            "velocity": v0,
            "baseline": float(baseline),
            "evidence": evidence,
            "window_end": self.window_end - j * self.width,
            "_j": j,
            "_key": key,
        }


def trend_order(row: Row) -> tuple[int, float, str]:
    """The list's order: rising or peaking before declining, then score, then entity."""
    return (TREND_STATUS_ORDER.get(str(row["status"]), 1), -float(row["score"]), row["entity"])


def strongest(found: list[Row]) -> list[Row]:
    """Each entity once per judged window (its highest score, when posts read at different
    intervals both list it), then the first ``TREND_TOP`` of each entity type in the list's
    order (``trend_order``)."""
    best: dict[tuple[str, str, str | None, datetime], Row] = {}
    for f in found:
        key = (f["entity_type"], f["entity"], f["platform"], f["window_end"])
        if key not in best or f["score"] > best[key]["score"]:
            best[key] = f
    groups: dict[tuple[datetime, str], list[Row]] = defaultdict(list)
    for f in best.values():
        groups[(f["window_end"], f["entity_type"])].append(f)
    out: list[Row] = []
    for _, rows in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1]), reverse=True):
        out += sorted(rows, key=trend_order)[:TREND_TOP]
    return out


def _group_z(values: list[float | None]) -> list[float | None]:
    """Z-scores of the known values (None stays None: the part is missing for that member)."""
    known = [v for v in values if v is not None]
    zs = iter(alg.zscores(known))
    return [None if v is None else next(zs) for v in values]


def creator_rankings(
    workspace_id: str, accounts: list[Row], posts: list[Row], computed_at: datetime
) -> list[Row]:
    """Creators and competitors ranked per kind by a weighted composite of standardised parts.

    Parts: the engagement rate (per impression, else per view) shrunk toward the group mean
    with a prior of m posts, or engagements per post for members whose posts report no
    exposure at all (z-scored among those members); the follower growth rate over the
    window; log(1 + average reach per post). A part nobody in the group can measure (an
    export with one follower reading, or no reach) gets weight 0 and the others share its
    weight; a member missing a part the others have scores 0 (the mean) on it.
    """
    per_account: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for p in posts:
        per_account[(p["platform"], p["account_external_id"])].append(p)
    out: list[Row] = []
    for kind in ("creator", "competitor"):
        members = [a for a in accounts if a["kind"] == kind]
        if not members:
            continue
        stats = []
        # each member's rate over its posts with impressions (else views), as the API's
        # rates divide (domain.analytics.rates): the posts it covers are its sample size
        member_rates: list[rates.Rate] = []
        for a in members:
            own = per_account.get((a["platform"], a["account_external_id"]), [])
            eng = sum(float(p["engagements"] or 0) for p in own)
            sums = rates.post_sums(own)
            found = rates.measure(sums, parts=[{"platform": a["platform"], **sums}])
            member_rates.append(found)
            rate = found.value
            basis: str = found.basis or "posts"
            per_post = eng / len(own) if own else None
            reached = [
                float(p["reach"] or 0) or float(p["impressions"] or 0) or float(p["views"] or 0)
                for p in own
            ]
            reach = statistics.fmean(reached) if reached and any(reached) else None
            first, last = a["followers_first"], a["followers_last"]
            # growth needs two readings apart in time; one reading says nothing about it
            measured = first and last is not None and float(a["span_days"] or 0) > 0
            growth = (last - first) / first if measured else None
            stats.append((a, len(own), rate, basis, per_post, growth, reach))
        rated = [s[2] for s in stats if s[2] is not None]
        prior = statistics.fmean(rated) if rated else 0.0
        # rates shrink toward the mean rate; members without exposure metrics are compared
        # by engagements per post, shrunk toward their own mean, in a group of their own
        counted = [s[4] for s in stats if s[2] is None and s[4] is not None]
        prior_pp = statistics.fmean(counted) if counted else 0.0
        rate_values: list[float | None] = []
        for (_, n, rate, _, per_post, _, _), found in zip(stats, member_rates, strict=True):
            if rate is not None:
                rated_posts = found.coverage.posts if found.coverage else None
                rate_values.append(
                    alg.shrink(rate, rated_posts or n, prior, alg.RANKING_PRIOR_POSTS)
                )
            elif per_post is not None:
                rate_values.append(alg.shrink(per_post, n, prior_pp, alg.RANKING_PRIOR_POSTS))
            else:
                rate_values.append(None)
        z_by_basis: dict[str, list[float | None]] = {}
        for basis in ("rate", "posts"):
            chosen = [
                v if (s[2] is not None) == (basis == "rate") else None
                for v, s in zip(rate_values, stats, strict=True)
            ]
            z_by_basis[basis] = _group_z(chosen)
        z_rate = [
            z_by_basis["rate"][i] if s[2] is not None else z_by_basis["posts"][i]
            for i, s in enumerate(stats)
        ]
        z_growth = _group_z([s[5] for s in stats])
        z_reach = _group_z([None if s[6] is None else math.log1p(s[6]) for s in stats])
        columns = {"engagement_rate": z_rate, "growth_rate": z_growth, "reach": z_reach}
        available = {n for n, zs in columns.items() if any(z is not None for z in zs)}
        total = sum(w for n, w in alg.RANKING_WEIGHTS.items() if n in available)
        weights = {
            n: (w / total if n in available and total else 0.0)
            for n, w in alg.RANKING_WEIGHTS.items()
        }
        scored = []
        for i, (a, n, rate, basis, per_post, growth, reach) in enumerate(stats):
            zs = {name: columns[name][i] or 0.0 for name in columns}
            score = alg.composite(zs, weights)
            values = {
                "engagement_rate": rate_values[i],
                "growth_rate": growth,
                "reach": reach,
            }
            parts = {
                name: {
                    "value": values[name],
                    "z": zs[name],
                    "weight": weights[name],
                    "contribution": weights[name] * zs[name],
                    "measured": columns[name][i] is not None,
                }
                for name in columns
            }
            coverage = member_rates[i].coverage
            parts["engagement_rate"].update(
                {
                    "raw": rate,
                    "basis": basis,
                    "engagements_per_post": per_post,
                    "posts": n,
                    # the posts the rate divides (with its basis) and what it leaves out
                    "rated_posts": None if coverage is None else coverage.posts,
                    "coverage": None if coverage is None else coverage.model_dump(),
                    "prior": prior if rate is not None else prior_pp,
                    "prior_posts": alg.RANKING_PRIOR_POSTS,
                }
            )
            # unmeasured: no estimate (the prior alone says nothing of the account)
            shrunk = rate_values[i] if rate is not None else None
            scored.append((score, a, n, rate, shrunk, growth, reach, parts))
        scored.sort(key=lambda t: (-t[0], t[1]["account_external_id"]))
        for rank, (score, a, n, rate, sh, growth, reach, parts) in enumerate(scored, start=1):
            out.append(
                {
                    "workspace_id": workspace_id,
                    "kind": kind,
                    "platform": a["platform"],
                    "account_external_id": a["account_external_id"],
                    "handle": a["handle"] or a["account_external_id"],
                    "category": a["category"],
                    "followers": a["followers_last"],
                    "posts": n,
                    "engagement_rate": rate,
                    "engagement_rate_shrunk": sh,
                    "growth_rate": growth or 0.0,
                    "avg_reach": reach or 0.0,
                    "score": score,
                    "rank": rank,
                    "parts": json.dumps(parts),
                    "computed_at": computed_at,
                }
            )
    return out


def benchmarks(
    workspace_id: str, rankings: list[Row], ours: rates.OwnRates, computed_at: datetime
) -> list[Row]:
    """Each competitor's measured engagement rate against ours on that platform."""
    # Theirs is its ranking's measured rate (its estimate, shrunk toward the group's mean, is
    # evidence beside it, never the figure); ours is what GET /analytics/unified answers for
    # the platform over ``ours.window`` (rates.own_rates, as /competitors reads it). Rates of
    # different bases (impressions, views) are not compared.
    window = ours.window
    out = []
    for r in rankings:
        mine = ours.by_platform.get(r["platform"], rates.Rate())
        theirs = r["engagement_rate"]
        if r["kind"] != "competitor" or theirs is None or window is None or not mine.value:
            continue
        basis = rates.ranking_basis(theirs, r["parts"])
        if basis != mine.basis:
            continue
        ratio = theirs / mine.value
        last_day = (window.to - timedelta(days=1)).date()
        body = (
            f"{r['handle']} on {r['platform']}: {theirs:.2%} of {basis} (measured, "
            f"{r['posts']} posts, their last {RANKING_DAYS} days) vs your {mine.value:.2%} "
            f"({window.from_.date()} to {last_day} UTC): {ratio:.1f}x"
        )
        estimate = rates.estimate_of(theirs, r["engagement_rate_shrunk"], r["parts"])
        evidence = {
            "competitor_rate": theirs,
            "competitor_rate_basis": basis,
            "competitor_rate_estimate": None if estimate is None else estimate.model_dump(),
            "your_rate": mine.value,
            "your_rate_basis": mine.basis,
            "your_rate_coverage": None if mine.coverage is None else mine.coverage.model_dump(),
            "window": window.model_dump(mode="json"),
            "ratio": ratio,
            "competitor_posts": r["posts"],
            "days": RANKING_DAYS,
        }
        out.append(
            _insight(
                workspace_id,
                "benchmark",
                r["platform"],
                r["account_external_id"],
                f"Benchmark: {r['handle']}",
                body,
                ratio,
                evidence,
                computed_at,
            )
        )
    return out


def _insight(
    workspace_id: str,
    kind: str,
    platform: str | None,
    account: str | None,
    title: str,
    body: str,
    score: float,
    evidence: dict[str, Any],
    computed_at: datetime,
) -> Row:
    return {
        "workspace_id": workspace_id,
        "kind": kind,
        "platform": platform,
        "account_external_id": account,
        "title": title,
        "body": body,
        "score": float(score),
        "evidence": json.dumps(evidence, default=str),
        "computed_at": computed_at,
    }


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.3g}"
