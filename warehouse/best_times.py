"""Best times to post, in a time zone: cells, blocks and a recommendation, from mart_best_times.

The mart holds one row per post of each platform's 90-day window (pipelines/analytics): its
publication and its index (the post's engagement rate over its account's mean). Everything
else is computed here, in SQL, for the zone asked (docs/api/analytics.md, "GET
/insights/best-times"):

- the **platform's pattern**: every account's posts on the platform (own, competitors',
  creators'), per block of 4 local hours of weekdays or weekends, shrunk toward 1.0;
- the account's **blocks**, shrunk toward the platform's pattern of the same block;
- the account's **cells** (weekday x hour), shrunk toward the account's block holding them;
- a **recommendation**: the best slot at the finest resolution with medium confidence or
  more, else the best block, with its interval and the posts that would make it confident.

Every estimate is ``w·raw + (1 - w)·prior`` with ``w = n / (n + PRIOR_POSTS)``, its interval
``estimate ± 1.96 · w · s / √n`` (``s`` the account's standard deviation of the index).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from warehouse.rows import Cursor, Row, fetch_all

PRIOR_POSTS = 5.0  # a slot of n posts keeps n / (n + 5) of its own index
MEDIUM_POSTS = 8  # medium confidence: at least 8 posts
HIGH_POSTS = 20  # high: at least 20 posts and an interval excluding 1.0
MIN_POSTS = 3  # no recommendation rests on fewer posts
BLOCK_HOURS = 4
Z = 1.96  # a 95 % normal-approximation interval
# posts_needed looks this far: beyond it, "no number of posts" (an index at 1.0 stays at 1.0)
MAX_POSTS = 10_000
DATES_ONLY = -1  # the hour (and block) of a post whose export gives its date only


@dataclass(frozen=True)
class BestTimeRows:
    """One account's cells and blocks (posts only), its recommendation, the rows' computation."""

    cells: list[Row]
    blocks: list[Row]
    recommendation: Row | None
    computed_at: datetime | None


# Each target is one account: posts of its ids (on its platform) are its own. Bound, in order:
# the targets (platform, account id, target), the zone, the workspace, then the constants.
_SQL = f"""
WITH t AS (
    SELECT x.platform, x.account, x.target FROM (SELECT unnest(
        CAST(? AS STRUCT(platform VARCHAR, account VARCHAR, target VARCHAR)[])) AS x)
),
p AS (
    SELECT m.platform, t.target, m.rate_index AS idx, m.dates_only,
           -- a date-only export's posts stay on their date: no hour to move to another zone
           CASE WHEN m.dates_only THEN m.published_at
                ELSE timezone(?, timezone('UTC', m.published_at)) END AS lt,
           m.computed_at
    FROM mart_best_times m
    LEFT JOIN t ON t.platform = m.platform AND t.account = m.account_external_id
    WHERE m.workspace_id = ? AND m.platform IN (SELECT platform FROM t)
      AND m.rate_index IS NOT NULL AND m.published_at IS NOT NULL
),
q AS (
    SELECT *, isodow(lt) - 1 AS weekday, isodow(lt) >= 6 AS weekend,
           CASE WHEN dates_only THEN {DATES_ONLY} ELSE hour(lt) END AS hour,
           CASE WHEN dates_only THEN {DATES_ONLY} ELSE hour(lt) // {BLOCK_HOURS} END AS block
    FROM p
),
k AS (SELECT CAST(? AS DOUBLE) AS k, CAST(? AS DOUBLE) AS z),
sd AS (
    SELECT target, coalesce(stddev_samp(idx), 0) AS s FROM q
    WHERE target IS NOT NULL GROUP BY target
),
-- the platform's pattern: every account's posts on it (own, competitors', creators')
plat AS (
    SELECT platform, weekend, block, count(*) AS n, (sum(idx) + any_value(k.k))
           / (count(*) + any_value(k.k)) AS est
    FROM q, k GROUP BY platform, weekend, block
),
b0 AS (
    SELECT target, any_value(platform) AS platform, weekend, block, count(*) AS n,
           avg(idx) AS raw
    FROM q WHERE target IS NOT NULL GROUP BY target, weekend, block
),
blocks AS (
    SELECT b0.*, pl.est AS prior, pl.n AS prior_posts, b0.n / (b0.n + k.k) AS w, sd.s, k.z
    FROM b0 JOIN plat pl USING (platform, weekend, block) JOIN sd USING (target), k
),
c0 AS (
    SELECT target, weekday, hour, any_value(weekend) AS weekend, any_value(block) AS block,
           count(*) AS n, avg(idx) AS raw
    FROM q WHERE target IS NOT NULL GROUP BY target, weekday, hour
),
cells AS (
    SELECT c0.*, b.w * b.raw + (1 - b.w) * b.prior AS prior, NULL::BIGINT AS prior_posts,
           c0.n / (c0.n + k.k) AS w, b.s, k.z
    FROM c0 JOIN blocks b USING (target, weekend, block), k
),
slots AS (
    SELECT 'cell' AS level, target, weekday, hour, weekend, block, n, raw, prior,
           prior_posts, w, s, z
    FROM cells
    UNION ALL
    SELECT 'block', target, NULL, NULL, weekend, block, n, raw, prior, prior_posts, w, s, z
    FROM blocks
),
rated AS (
    SELECT *, greatest(0, shrunk - half) AS ci_low, shrunk + half AS ci_high,
           CASE WHEN n >= {HIGH_POSTS} AND (shrunk - half > 1 OR shrunk + half < 1) THEN 'high'
                WHEN n >= {MEDIUM_POSTS} THEN 'medium' ELSE 'low' END AS confidence
    FROM (SELECT *, w * raw + (1 - w) * prior AS shrunk, z * w * s / sqrt(n) AS half
          FROM slots)
),
-- Each target's recommendation: above average on at least MIN_POSTS posts; medium confidence
-- or more before low; then the finer slot (a cell) before a block; then the higher estimate.
rec AS (
    SELECT * FROM rated
    WHERE shrunk > 1 AND n >= {MIN_POSTS} AND (level = 'block' OR confidence <> 'low')
    QUALIFY row_number() OVER (
        PARTITION BY target
        ORDER BY confidence <> 'low' DESC, level = 'cell' DESC, shrunk DESC,
                 weekday NULLS LAST, hour NULLS LAST, weekend, block) = 1
),
-- more posts in the slot, as they are (same raw index and spread): the fewest that put its
-- interval wholly above 1.0 with HIGH_POSTS posts or more (null: none up to MAX_POSTS)
needed AS (
    SELECT rec.target, min(m.m) AS total
    FROM rec, k, range({HIGH_POSTS}, {MAX_POSTS} + 1) m(m)
    WHERE m.m >= rec.n
      AND m.m / (m.m + k.k) * (rec.raw - rec.prior) + rec.prior
          - k.z * m.m / (m.m + k.k) * rec.s / sqrt(m.m) > 1
    GROUP BY rec.target
)
SELECT r.*, NULL::BIGINT AS more_for_medium, NULL::BIGINT AS more_for_high,
       false AS recommended
FROM rated r
UNION ALL
SELECT rec.*, greatest(0, {MEDIUM_POSTS} - rec.n), needed.total - rec.n, true
FROM rec LEFT JOIN needed USING (target)
ORDER BY target, recommended, level, weekday, hour, weekend, block
"""  # noqa: S608 - only this module's integer constants are rendered


def _read(cur: Cursor, workspace_id: str, targets: list[dict[str, str]], tz: str) -> list[Row]:
    return fetch_all(cur, _SQL, [targets, tz, workspace_id, PRIOR_POSTS, Z])


def _rows(rows: list[Row], computed_at: datetime | None) -> BestTimeRows:
    found = [r for r in rows if not r["recommended"]]
    return BestTimeRows(
        cells=[r for r in found if r["level"] == "cell"],
        blocks=[r for r in found if r["level"] == "block"],
        recommendation=next((r for r in rows if r["recommended"]), None),
        computed_at=computed_at,
    )


def best_times(
    cur: Cursor, workspace_id: str, platform: str, external_ids: list[str], tz: str
) -> BestTimeRows:
    """One account's best times in ``tz`` (an IANA name): posts of any of its ids are its own."""
    targets = [{"platform": platform, "account": e, "target": "account"} for e in external_ids]
    return _rows(_read(cur, workspace_id, targets, tz), _computed_at(cur, workspace_id, platform))


def own_best_times(cur: Cursor, workspace_id: str, tz: str) -> dict[tuple[str, str], BestTimeRows]:
    """Every own account's best times in ``tz``, by (platform, account external id), at once."""
    accounts = fetch_all(
        cur,
        "SELECT DISTINCT platform, account_external_id FROM mart_best_times"
        " WHERE workspace_id = ? AND kind = 'own' AND rate_index IS NOT NULL ORDER BY ALL",
        [workspace_id],
    )
    targets = {
        f"{a['platform']}/{a['account_external_id']}": (a["platform"], a["account_external_id"])
        for a in accounts
    }
    if not targets:
        return {}
    rows = _read(
        cur,
        workspace_id,
        [{"platform": p, "account": a, "target": key} for key, (p, a) in targets.items()],
        tz,
    )
    by_target: dict[str, list[Row]] = {}
    for r in rows:
        by_target.setdefault(r["target"], []).append(r)
    return {account: _rows(by_target.get(key, []), None) for key, account in targets.items()}


def _computed_at(cur: Cursor, workspace_id: str, platform: str) -> datetime | None:
    """When the platform's rows were computed (an account without rated posts has none)."""
    found = fetch_all(
        cur,
        "SELECT max(computed_at) AS at FROM mart_best_times WHERE workspace_id = ?"
        " AND platform = ?",
        [workspace_id, platform],
    )
    return found[0]["at"] if found else None
