"""The non-partitioned marts computed from bounded windows of the partitioned ones.

Each function takes the rows read by warehouse.marts.insights for one workspace and returns the
mart's rows; the assets write them with one server-side transaction per mart.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pipelines.analytics import algorithms as alg
from warehouse.rows import Row

# Windows (all end at the workspace's newest staged hour, see warehouse.marts.insights.Window).
BEST_TIMES_DAYS = 90  # posts published in the last 90 days
TOP_CONTENT_DAYS = 28
TOP_CONTENT_MIN_IMPRESSIONS = 100  # floor: a 3-view post with 2 likes is not "top"
TOP_CONTENT_COUNT = 5
ANOMALY_BASELINE_DAYS = 28
ANOMALY_MIN_BASELINE = 7  # days of baseline needed before a day is judged
ANOMALY_METRICS = ("impressions", "engagements", "engagement_rate", "follower_growth")
TREND_WINDOW_HOURS = 6
TREND_BASELINE_WINDOWS = 4  # the 4 windows before the previous one (12 h to 36 h ago)
TREND_WIDTH = timedelta(hours=TREND_WINDOW_HOURS)
TREND_WINDOWS = 2 + TREND_BASELINE_WINDOWS  # W0 (latest), W1 (previous) and the baseline
TREND_LOOKBACK_DAYS = 7  # hourly history read for trends
TREND_MIN_VELOCITY = 1.0  # engagements per hour, now or just before, to be considered
TREND_TOP = 50  # rows kept per entity type and workspace
RANKING_DAYS = 28
# The hour of a best-times bucket of an account whose data has dates only (a whole weekday).
DATE_ONLY_HOUR = -1
WEEKDAYS = ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays")


def _rate(r: Row) -> float | None:
    return alg.engagement_rate(
        float(r["engagements"] or 0), float(r["impressions"] or 0), float(r["views"] or 0)
    )


def best_times(workspace_id: str, posts: list[Row], computed_at: datetime) -> list[Row]:
    """Weekday x hour buckets per own account, each post's rate over the account's mean."""
    by_account: dict[tuple[str, str], list[tuple[datetime, float]]] = defaultdict(list)
    for p in posts:
        rate = _rate(p)
        # a post whose publication the export does not give (filed at its first reading)
        # says nothing about when to post
        if rate is not None and p.get("first_read") != p["published_at"]:
            by_account[(p["platform"], p["account_external_id"])].append((p["published_at"], rate))
    out: list[Row] = []
    for (platform, account), rated in by_account.items():
        mean = statistics.fmean(r for _, r in rated)
        if mean <= 0 or len(rated) < 2:
            continue
        indices = [(ts, r / mean) for ts, r in rated]
        pooled_sd = statistics.stdev(i for _, i in indices)
        # An account whose every post is at midnight exactly comes from an export with dates
        # only: its hour of day is unknown, so its buckets are whole weekdays (hour -1).
        dates_only = all(ts.time() == datetime.min.time() for ts, _ in indices)
        buckets: dict[tuple[int, int], list[float]] = defaultdict(list)
        for ts, index in indices:
            buckets[(ts.weekday(), DATE_ONLY_HOUR if dates_only else ts.hour)].append(index)
        for (weekday, hour), values in sorted(buckets.items()):
            n = len(values)
            raw = statistics.fmean(values)
            shrunk = alg.shrink(raw, n, 1.0, alg.BEST_TIME_PRIOR_POSTS)
            low, high = alg.best_time_interval(shrunk, n, pooled_sd)
            out.append(
                {
                    "workspace_id": workspace_id,
                    "platform": platform,
                    "account_external_id": account,
                    "weekday": weekday,
                    "hour": hour,
                    "posts": n,
                    "raw_index": raw,
                    "shrunk_index": shrunk,
                    "ci_low": low,
                    "ci_high": high,
                    "confidence": alg.confidence_label(n, low, high),
                    "computed_at": computed_at,
                }
            )
    return out


def best_time_insights(
    workspace_id: str,
    buckets: list[Row],
    handles: dict[tuple[str, str, str], str],
    computed_at: datetime,
) -> list[Row]:
    """Per account, the best supported bucket as a plain recommendation.

    Supported: ≥ 3 posts and an interval wholly above 1.0 (a shrunk index above 1 whose
    interval includes 1 is not told apart from the account's average, so nothing is said).
    """
    best: dict[tuple[str, str], Row] = {}
    for b in buckets:
        if b["posts"] < 3 or b["ci_low"] <= 1.0:
            continue
        k = (b["platform"], b["account_external_id"])
        if k not in best or b["shrunk_index"] > best[k]["shrunk_index"]:
            best[k] = b
    out = []
    for (platform, account), b in sorted(best.items()):
        handle = handles.get((workspace_id, platform, account), account)
        when = (
            f"{WEEKDAYS[b['weekday']]} (the data gives dates only)"
            if b["hour"] == DATE_ONLY_HOUR
            else f"{WEEKDAYS[b['weekday']]} at {b['hour']:02d}:00 UTC"
        )
        body = (
            f"Post on {when}: "
            f"{b['shrunk_index']:.1f}x your average engagement rate, {b['posts']} posts, "
            f"{b['confidence']} confidence"
        )
        evidence = {
            k: b[k]
            for k in (
                "weekday",
                "hour",
                "posts",
                "raw_index",
                "shrunk_index",
                "ci_low",
                "ci_high",
                "confidence",
            )
        }
        for kind in ("best_time", "recommendation"):
            out.append(
                _insight(
                    workspace_id,
                    kind,
                    platform,
                    account,
                    f"Best time to post on {platform} as {handle}",
                    body,
                    b["shrunk_index"],
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
    """Each account's metrics on its latest day vs the median and MAD of the 28 days before."""
    series: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for d in days:
        series[(d["platform"], d["account_external_id"])].append(d)
    out = []
    for (platform, account), rows in series.items():
        rows.sort(key=lambda r: r["day"])
        today = rows[-1]
        if today["day"] != as_of_day:
            continue
        history = [r for r in rows[:-1] if (today["day"] - r["day"]).days <= ANOMALY_BASELINE_DAYS]
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


def anomaly_insights(
    workspace_id: str,
    found: list[Row],
    handles: dict[tuple[str, str, str], str],
    computed_at: datetime,
) -> list[Row]:
    """One 'anomaly' insight per flagged metric, and a recommendation for each drop."""
    out = []
    for a in found:
        handle = handles.get(
            (workspace_id, a["platform"], a["account_external_id"]), a["account_external_id"]
        )
        metric = a["metric"].replace("_", " ")
        verb = "spiked" if a["direction"] == "spike" else "dropped"
        body = (
            f"{metric.capitalize()} of {handle} on {a['platform']} {verb} on {a['day']}: "
            f"{_num(a['value'])} vs a typical {_num(a['baseline_median'])} "
            f"(robust z {a['robust_z']:.1f})"
        )
        evidence = {
            k: (str(v) if k == "day" else v)
            for k, v in a.items()
            if k not in ("workspace_id", "computed_at")
        }
        out.append(
            _insight(
                workspace_id,
                "anomaly",
                a["platform"],
                a["account_external_id"],
                f"{metric.capitalize()} {verb}",
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


def viral_trends(
    workspace_id: str,
    posts: list[Row],
    ages: list[Row],
    window_end: datetime,
    computed_at: datetime,
    width: timedelta = TREND_WIDTH,
) -> list[Row]:
    """Posts, hashtags and topics whose velocity is abnormal against their own baseline.

    Windows of ``width`` end at ``window_end``: W0 the latest, W1 the one before, W2…W5 the
    baseline. A window without any reading of the entity is *missing*, not zero: the
    baseline is the median velocity of its observed baseline windows (those after a
    post's publication), and a post with fewer than 2 is compared with the median velocity
    of its account's other posts at the same age (window index since publication). An
    entity with W0 or W1 unobserved, or no baseline, has insufficient data and is not
    listed. ``posts`` and ``ages`` are the sums read by ``warehouse.marts.insights.trend_posts`` and
    ``trend_ages``: the per-hour rows are added up in the store, not here.
    """
    n_windows = TREND_WINDOWS
    hours = width / timedelta(hours=1)

    # entity → per-window engagements and which windows hold a reading
    sums: dict[tuple[str, str, str | None], list[float]] = defaultdict(lambda: [0.0] * n_windows)
    seen: dict[tuple[str, str, str | None], set[int]] = defaultdict(set)
    post_meta: dict[str, Row] = {}
    for p in posts:
        per_window = [0.0] * n_windows
        for w, eng in zip(p["wins"], p["engagements"], strict=True):
            per_window[w] += float(eng)
        post_meta[p["external_id"]] = p
        keys: list[tuple[str, str, str | None]] = [("post", p["external_id"], p["platform"])]
        tags = {t.lower().lstrip("#") for t in (p["hashtags"] or []) if t}
        keys += [("hashtag", t, None) for t in tags]
        topics = {alg.hashtag_family(t) for t in tags}
        if p["category"]:
            topics.add(str(p["category"]).lower())
        keys += [("topic", t, None) for t in topics if t]
        for k in keys:
            total = sums[k]
            seen[k].update(p["wins"])
            for w in range(n_windows):
                total[w] += per_window[w]
    age_velocity = {
        (a["platform"], a["account_external_id"], a["age"]): [
            float(e) / hours for e in a["engagements"]
        ]
        for a in ages
    }
    # every account's posts of a platform at one age: the peers of a post whose own account
    # has too few (a trending list's channels rarely have three videos on it)
    platform_velocity: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (platform_, _, age_), velocities in age_velocity.items():
        platform_velocity[(platform_, age_)].extend(velocities)

    found: list[Row] = []
    for (etype, entity, platform), per_window in sums.items():
        observed = seen[(etype, entity, platform)]
        vel = [v / hours for v in per_window]
        if 0 not in observed or 1 not in observed:
            continue  # insufficient data: no reading now or just before to compare
        if max(vel[0], vel[1]) < TREND_MIN_VELOCITY:
            continue
        source = "own"
        base_idx = [i for i in range(2, n_windows) if i in observed]
        if etype == "post":
            meta = post_meta[entity]
            pub = meta["published_at"]
            if pub is not None:
                # only windows that start after publication are the post's own history
                base_idx = [i for i in base_idx if window_end - (i + 1) * width >= pub]
        base_windows = [vel[i] for i in base_idx]
        if etype == "post" and len(base_windows) < 2:
            meta = post_meta[entity]
            pub = meta["published_at"]
            if pub is None:
                continue
            age = int((window_end - width - pub) // width)
            peers = age_velocity.get((meta["platform"], meta["account_external_id"], age), [])
            others = _others(peers, vel[0])
            source = "account_same_age"
            if len(others) < 3:
                others = _others(platform_velocity.get((meta["platform"], age), []), vel[0])
                source = "platform_same_age"
            if len(others) < 3:
                continue
            base_windows = others
        if len(base_windows) < 1:
            continue
        baseline = statistics.median(base_windows)
        score_now = alg.velocity_score(vel[0], baseline)
        score_prev = alg.velocity_score(vel[1], baseline)
        status = alg.trend_status(score_now, score_prev, vel[0], vel[1])
        if status is None:
            continue
        evidence = {
            "window_hours": hours,
            "velocity": vel[0],
            "previous_velocity": vel[1],
            "baseline": baseline,
            "baseline_source": source,
            "baseline_velocities": base_windows,
            "baseline_windows": base_idx if source == "own" else [],
            "windows_observed": sorted(observed),
            "score_previous": score_prev,
            "parts": {
                "log2_velocity_plus_1": math.log2(vel[0] + 1),
                "log2_baseline_plus_1": math.log2(baseline + 1),
            },
        }
        if etype == "post":
            evidence["account_external_id"] = post_meta[entity]["account_external_id"]
        found.append(
            {
                "workspace_id": workspace_id,
                "entity_type": etype,
                "entity": entity,
                "platform": platform,
                "score": score_now,
                "status": status,
                "velocity": vel[0],
                "baseline": float(baseline),
                "evidence": json.dumps(evidence),
                "window_end": window_end,
                "computed_at": computed_at,
            }
        )
    return strongest(found)


def strongest(found: list[Row]) -> list[Row]:
    """Each entity once (its highest score, when posts read at different intervals both
    list it), then the top ``TREND_TOP`` of each entity type."""
    best: dict[tuple[str, str, str | None], Row] = {}
    for f in found:
        key = (f["entity_type"], f["entity"], f["platform"])
        if key not in best or f["score"] > best[key]["score"]:
            best[key] = f
    out: list[Row] = []
    for etype in ("post", "hashtag", "topic"):
        kept = sorted(
            (f for f in best.values() if f["entity_type"] == etype),
            key=lambda f: (-f["score"], f["entity"]),
        )
        out += kept[:TREND_TOP]
    return out


def _others(peers: list[float], own: float) -> list[float]:
    """Peers' velocities without the post's own (one equal value removed)."""
    out = list(peers)
    if own in out:
        out.remove(own)
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
        for a in members:
            own = per_account.get((a["platform"], a["account_external_id"]), [])
            eng = sum(float(p["engagements"] or 0) for p in own)
            imp = sum(float(p["impressions"] or 0) for p in own)
            views = sum(float(p["views"] or 0) for p in own)
            rate = alg.engagement_rate(eng, imp, views)
            basis = "impressions" if imp else "views" if views else "posts"
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
        for _, n, rate, _, per_post, _, _ in stats:
            if rate is not None:
                rate_values.append(alg.shrink(rate, n, prior, alg.RANKING_PRIOR_POSTS))
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
            parts["engagement_rate"].update(
                {
                    "raw": rate,
                    "basis": basis,
                    "engagements_per_post": per_post,
                    "posts": n,
                    "prior": prior if rate is not None else prior_pp,
                    "prior_posts": alg.RANKING_PRIOR_POSTS,
                }
            )
            shrunk = rate_values[i] if rate is not None else prior
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
    workspace_id: str, rankings: list[Row], own_posts: list[Row], computed_at: datetime
) -> list[Row]:
    """Each competitor's shrunk engagement rate against the workspace's own on that platform."""
    ours: dict[str, tuple[float, float, float]] = defaultdict(lambda: (0.0, 0.0, 0.0))
    for p in own_posts:
        e, i, v = ours[p["platform"]]
        ours[p["platform"]] = (
            e + float(p["engagements"] or 0),
            i + float(p["impressions"] or 0),
            v + float(p["views"] or 0),
        )
    out = []
    for r in rankings:
        if r["kind"] != "competitor" or r["platform"] not in ours:
            continue
        ours_rate = alg.engagement_rate(*ours[r["platform"]])
        if not ours_rate:
            continue
        ratio = r["engagement_rate_shrunk"] / ours_rate
        body = (
            f"{r['handle']} on {r['platform']}: {r['engagement_rate_shrunk']:.2%} engagement "
            f"rate vs your {ours_rate:.2%} ({ratio:.1f}x), over the last {RANKING_DAYS} days"
        )
        evidence = {
            "competitor_rate": r["engagement_rate_shrunk"],
            "your_rate": ours_rate,
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
