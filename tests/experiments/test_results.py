"""An experiment's figures (issue 52, point 2) over posts really published and read: each
arm's posts and metric, and the lift with its 95 % interval, against an independent
computation from the lake's readings (an analyst's DuckDB session, numpy and scipy)."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.experiments.conftest import Measured
from tests.support import analyst_rows

pytestmark = pytest.mark.xdist_group(__name__)

# The readings an analyst sees, each counter at its running peak.
READINGS = """
WITH posts AS (
    SELECT external_id, arg_max(post_id, captured_at) AS post_id,
           arg_max(published_at, captured_at) AS published_at
    FROM lake.raw_posts WHERE workspace_id = ? AND post_id IS NOT NULL GROUP BY ALL
),
last AS (
    SELECT s.*, row_number() OVER (PARTITION BY s.platform, s.external_id, s.captured_at
                                   ORDER BY s.ingested_at DESC) AS n
    FROM lake.raw_engagement_snapshots s WHERE s.workspace_id = ?
)
SELECT p.post_id, p.published_at, l.captured_at,
       coalesce(l.likes, 0), coalesce(l.comments, 0), coalesce(l.shares, 0),
       coalesce(l.saves, 0), coalesce(l.clicks, 0), coalesce(l.impressions, 0),
       coalesce(l.views, 0)
FROM last l JOIN posts p USING (external_id) WHERE l.n = 1
ORDER BY p.post_id, l.captured_at
"""


def _at(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00").split("+")[0]).timestamp()


def at_age(run: Measured, hours: float) -> dict[str, tuple[float, float]]:
    """Each post's (engagements, impressions else views) ``hours`` after publication, by
    linear interpolation between the readings either side (numpy's)."""
    rows = analyst_rows(run.settings, READINGS, [run.workspace_id, run.workspace_id])
    by_post: dict[str, list[list[Any]]] = defaultdict(list)
    for row in rows:
        by_post[row[0]].append(row)
    out = {}
    for post_id, readings in by_post.items():
        ages = np.array([(_at(r[2]) - _at(r[1])) / 3600 for r in readings])
        peaks = np.maximum.accumulate(np.array([r[3:] for r in readings], dtype=float), axis=0)
        engagements = peaks[:, :5].sum(axis=1)
        basis = peaks[:, 5] if peaks[:, 5].max() > 0 else peaks[:, 6]
        below, above = ages[ages <= hours], ages[ages >= hours]
        if len(below) and len(above) and above.min() - below.max() <= 6:
            out[post_id] = (
                float(np.interp(hours, ages, engagements)),
                float(np.interp(hours, ages, basis)),
            )
    return out


def _arms(run: Measured, experiment: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for post in run.posts[experiment["id"]]:
        found[post["experiment"]["arm"]].append(post)
    return found


def test_one_accounts_lift_is_welchs_interval_on_the_logs(measured: Measured) -> None:
    run = measured
    detail = run.api.ok(run.api.get(f"/experiments/{run.one_account['id']}"))
    values = at_age(run, 24)
    arms = _arms(run, run.one_account)
    logs = {
        arm: np.log1p([values[p["id"]][0] for p in posts if p["id"] in values])
        for arm, posts in arms.items()
    }
    # Every post was published and read either side of 24 h.
    assert {a: len(v) for a, v in logs.items()} == {a: len(p) for a, p in arms.items()}
    test = stats.ttest_ind(logs["evening"], logs["morning"], equal_var=False)
    low, high = test.confidence_interval(0.95)
    difference = logs["evening"].mean() - logs["morning"].mean()
    served = {a["name"]: a for a in detail["results"]["arms"]}
    lift = served["evening"]["lift"]
    assert lift["estimate"] == pytest.approx(math.expm1(difference), rel=1e-9)
    assert lift["low"] == pytest.approx(math.expm1(low), rel=1e-9)
    assert lift["high"] == pytest.approx(math.expm1(high), rel=1e-9)
    assert lift["p_value"] == pytest.approx(test.pvalue, rel=1e-9)
    assert lift["accounts"] == 1
    assert served["morning"]["lift"] is None
    for arm, posts in arms.items():
        counted = served[arm]
        assert counted["posts_assigned"] == counted["posts_published"] == len(posts)
        assert (counted["posts_measured"], counted["posts_pending"]) == (len(posts), 0)
        raw = [values[p["id"]][0] for p in posts]
        assert counted["metric"]["mean"] == pytest.approx(np.mean(raw), rel=1e-9)
        assert counted["metric"]["geometric_mean"] == pytest.approx(
            math.expm1(np.log1p(raw).mean()), rel=1e-9
        )
    # The posts the minimum detectable effect (10 %) needs: 2 s^2 (z_.975 + z_.8)^2 / ln(1.1)^2.
    pooled = sum(((v - v.mean()) ** 2).sum() for v in logs.values()) / sum(
        len(v) - 1 for v in logs.values()
    )
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    per_arm = math.ceil(2 * pooled * z**2 / math.log(1.1) ** 2)
    needed = detail["results"]["posts_needed"]
    assert needed["per_arm"] == per_arm
    assert needed["more"] == sum(max(0, per_arm - len(v)) for v in logs.values())
    assert detail["results"]["enough_data"] is (needed["more"] == 0)
    assert detail["results"]["measured_through"] is not None


def test_several_accounts_compare_within_each_account_weighted_by_its_posts(
    measured: Measured,
) -> None:
    run = measured
    detail = run.api.ok(run.api.get(f"/experiments/{run.accounts['id']}"))
    values = at_age(run, 48)
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    unmeasured: dict[str, int] = defaultdict(int)
    for arm, posts in _arms(run, run.accounts).items():
        for post in posts:
            engagements, basis = values[post["id"]]
            if basis == 0:  # Bluesky reports neither impressions nor views: no rate
                unmeasured[arm] += 1
                continue
            account = post["destinations"][0]["account_id"]
            cells[(arm, account)].append(math.log1p(engagements) - math.log1p(basis))
    assert sum(unmeasured.values()) == 8  # the Bluesky third of the 24
    accounts = sorted(
        {a for _, a in cells if len(cells[("evening", a)]) >= 2 and len(cells[("morning", a)]) >= 2}
    )
    total = sum(len(cells[("evening", a)]) + len(cells[("morning", a)]) for a in accounts)
    d = v = dof = 0.0
    for account in accounts:
        t, c = np.array(cells[("evening", account)]), np.array(cells[("morning", account)])
        w = (len(t) + len(c)) / total
        d += w * (t.mean() - c.mean())
        parts = (w**2 * t.var(ddof=1) / len(t), w**2 * c.var(ddof=1) / len(c))
        v += sum(parts)
        dof += parts[0] ** 2 / (len(t) - 1) + parts[1] ** 2 / (len(c) - 1)
    q = stats.t.ppf(0.975, v**2 / dof)
    served = {a["name"]: a for a in detail["results"]["arms"]}
    for arm, count in served.items():
        assert count["posts_pending"] == unmeasured[arm]
        assert count["posts_measured"] == count["posts_published"] - unmeasured[arm]
    lift = served["evening"]["lift"]
    assert lift["accounts"] == len(accounts) == 2
    assert lift["estimate"] == pytest.approx(math.expm1(d), rel=1e-9)
    assert lift["low"] == pytest.approx(math.expm1(d - q * math.sqrt(v)), rel=1e-9)
    assert lift["high"] == pytest.approx(math.expm1(d + q * math.sqrt(v)), rel=1e-9)
    assert lift["degrees_of_freedom"] == pytest.approx(v**2 / dof, rel=1e-9)
    assert detail["metric"] == "engagement_rate"
    assert "interpolated" in detail["results"]["definitions"]["engagement_rate"]
