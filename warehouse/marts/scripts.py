"""The SQL that builds staging and marts from the raw tables.

Partitioned marts are rebuilt per UTC day: each script deletes its days and inserts them
again inside one lake transaction (``Lakehouse.execute_script``), so a re-run gives the
same rows and a reader sees the old or the new day, never half of one. A script is many
statements in one text, which binds no parameters: the only values rendered into them are
dates, timestamps, numbers and paths, and only through :func:`warehouse.sql.literal`.
The reads beside this module (insights.py, checks.py, runs.py) bind theirs. The scripts
join the connected accounts as ``pub.accounts`` (the session's copy of the publishing
table, warehouse/store.py).

Cost follows the new data: every partition query filters on its time window, plus a
bounded look-back (``LOOKBACK_DAYS``) for the last snapshot before the window.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

from warehouse.marts.definitions import (
    ENGAGEMENT_METRICS,
    FILE_MARTS,
    METRICS,
    NewRows,
    day_start,
)
from warehouse.sql import literal

# How far before a partition staging looks for a post's previous snapshot. A post with no
# snapshot in that span is looked up further back only when it is known to be older (see
# ``staging_script``), so a new post costs nothing extra.
LOOKBACK_DAYS = 35
# Account ids that mean "not in this file" (a youtube-trending export without channels):
# they never replace a known account in the post dimension.
PLACEHOLDER_ACCOUNTS = ("(unknown channel)",)
# A post's first reading counts as growth when the post was published that UTC day or
# within this many hours before it (one hourly capture); otherwise it is a first-seen total.
FIRST_READING_GRACE_HOURS = 1


def _rate(eng: str, imp: str, views: str) -> str:
    """Engagement rate: engagements / impressions, else / views; NULL when both are 0."""
    return (
        f"CASE WHEN {imp} > 0 THEN {eng}::DOUBLE / {imp}"
        f" WHEN {views} > 0 THEN {eng}::DOUBLE / {views} ELSE NULL END"
    )


POST_KEY = "workspace_id, platform, external_id"


def later_posts(new: NewRows, start: date) -> str:
    """The posts a later range from ``start`` is rebuilt for: those new rows read before it."""
    # A post first read anew on or after ``start`` is not changed there: later days hold no
    # new reading (those days are rebuilt whole), so only a new reading before them counts.
    return (
        f"SELECT {POST_KEY} FROM raw_engagement_snapshots WHERE {new.rendered()}"  # noqa: S608
        f" GROUP BY ALL HAVING min(captured_at) < {literal(day_start(start))}"
    )


def _later_accounts(new: NewRows, start: date) -> str:
    """The accounts a later range from ``start`` is rebuilt for: its posts' and new followers'."""
    # A post's account as labelled now and by any description captured since ``start`` (a
    # later day may have counted it under the account an older label named).
    t0 = literal(day_start(start))
    posts = later_posts(new, start)
    return f"""
SELECT p.workspace_id, p.platform, coalesce(d.account_external_id, 'unknown')
FROM ({posts}) p LEFT JOIN dim_posts d USING ({POST_KEY})
UNION
SELECT workspace_id, platform, account_external_id FROM raw_posts
WHERE captured_at >= {t0} AND ({POST_KEY}) IN ({posts})
UNION
SELECT workspace_id, platform, external_id FROM raw_account_snapshots
WHERE {new.rendered()} AND followers IS NOT NULL
GROUP BY ALL HAVING min(captured_at) < {t0}"""  # noqa: S608 - only literal() values are rendered


def _only(cols: str, scope: str | None) -> str:
    """`` AND (cols) IN (scope)``: a later range's rows only; nothing for a whole day."""
    return f" AND ({cols}) IN ({scope})" if scope is not None else ""


def _snapshot_rows(
    mart: str, table: str, start: date, end: date, run_id: str, computed_at: datetime
) -> str:
    """Replace the mart_snapshots rows of [start, end): one per day, with its row count."""
    # table is one of our constants; every value goes through literal()
    return f"""
DELETE FROM mart_snapshots WHERE mart = {literal(mart)}
    AND partition_key >= {literal(start.isoformat())}
    AND partition_key < {literal(end.isoformat())};
INSERT INTO mart_snapshots (mart, partition_key, computed_at, rows, data_through, run_id)
SELECT {literal(mart)}, strftime(d.day, '%Y-%m-%d'), {literal(computed_at)},
       coalesce(c.n, 0), t.through, {literal(run_id)}
FROM (SELECT CAST(range AS DATE) AS day
      FROM range({literal(day_start(start))}, {literal(day_start(end))}, INTERVAL 1 DAY)) d
LEFT JOIN (SELECT day, count(*) AS n FROM {table}
           WHERE day >= {literal(start)} AND day < {literal(end)} GROUP BY day) c USING (day)
LEFT JOIN (SELECT day, max(captured_at) AS through FROM stg_engagement_deltas
           WHERE day >= {literal(start)} AND day < {literal(end)} GROUP BY day) t USING (day);
"""  # noqa: S608


def staging_script(
    start: date, end: date, *, run_id: str, computed_at: datetime, later: NewRows | None = None
) -> str:
    """Dimensions upserted from the raw rows, then the deltas rebuilt (``later``: its posts)."""
    t0, t1 = literal(day_start(start)), literal(day_start(end))
    lb = literal(day_start(start) - timedelta(days=LOOKBACK_DAYS))
    d1 = literal(day_start(start) - timedelta(days=1))
    day0, day_d1 = literal(start), literal(start - timedelta(days=1))
    day_lb = literal(start - timedelta(days=LOOKBACK_DAYS))
    key = "workspace_id, platform, external_id"
    placeholders = ", ".join(literal(p) for p in PLACEHOLDER_ACCOUNTS)
    last_known = ",\n       ".join(
        f"arg_max({m}, captured_at) FILTER (WHERE {m} IS NOT NULL) AS {m}, max({m}) AS x_{m}"
        for m in METRICS
    )
    staged_peaks = ", ".join(f"peak_{m} AS s_{m}" for m in METRICS)
    recent_cols = ", ".join(f"r.{m}, greatest(r.x_{m}, s.s_{m}) AS x_{m}" for m in METRICS)
    # Over several days of stg_post_days: each counter's last known value, and the highest
    # of the days' and of the peak staged at the last of them (one row a day: captured_at
    # is distinct).
    days_prior = ",\n       ".join(
        f"arg_max(last_{m}, captured_at) FILTER (WHERE last_{m} IS NOT NULL) AS {m},"
        f" greatest(max(max_{m}), arg_max_null(peak_{m}, captured_at)) AS x_{m}"
        for m in METRICS
    )
    in_window_peaks = ", ".join(f"{m} AS x_{m}" for m in METRICS)
    prev_cols = ",\n       ".join(
        f"last_value({m} IGNORE NULLS) OVER w AS p_{m}, max(x_{m}) OVER w AS k_{m}" for m in METRICS
    )
    # Deltas against the running peak (the highest reading so far): a reading below it
    # adds nothing, and a recovery adds only what exceeds the peak, so a counter that
    # drops and grows back is counted once (docs/api/analytics.md, "Counter corrections").
    deltas = ",\n       ".join(
        f"CASE WHEN {m} IS NULL THEN 0 WHEN k_{m} IS NULL THEN greatest({m}, 0)"
        f" WHEN {m} > k_{m} THEN {m} - k_{m} ELSE 0 END AS {m}"
        for m in METRICS
    )
    peaks = ", ".join(f"greatest(k_{m}, {m}) AS peak_{m}" for m in METRICS)
    # A drop is a reading below the previous reading (not below the peak: a counter that
    # stays under its old peak for a while dropped once).
    drops = " + ".join(f"coalesce(({m} < p_{m})::INTEGER, 0)" for m in METRICS)
    cols = ", ".join(METRICS)
    described = (
        "account_external_id, post_id, kind, text, hashtags, media_type, url, category,"
        " published_at, deleted_at, captured_at"
    )
    newest_struct = ", ".join(f"'{c}': {c}" for c in described.replace(" ", "").split(","))
    order = "{'c': captured_at, 'i': ingested_at, 'b': ingest_batch}"

    def newer(col: str) -> str:
        return f"CASE WHEN x.captured_at >= d.captured_at THEN x.{col} ELSE d.{col} END"

    dim_post_columns = (
        "workspace_id, platform, external_id, account_external_id, post_id, kind, text,"
        " hashtags, media_type, url, category, published_at, deleted_at, captured_at,"
        " thumbnail_url"
    )
    dim_account_columns = (
        "workspace_id, platform, external_id, account_id, kind, handle, display_name,"
        " category, followers, captured_at, url, thumbnail_url"
    )
    on_key = (
        "d.workspace_id = x.workspace_id AND d.platform = x.platform"
        " AND d.external_id = x.external_id"
    )

    # A later range's posts were described by the whole days of their new rows, rebuilt
    # before it: the dimensions are as they need to be, and the deltas read only its posts.
    scope = later_posts(later, start) if later is not None else None
    only = _only(key, scope)
    # MERGE rather than INSERT … ON CONFLICT: the lake has no keys to conflict on.
    dimensions = f"""
MERGE INTO dim_posts AS d USING (
WITH measured AS (
    SELECT DISTINCT {key} FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}
),
later AS (SELECT * FROM raw_posts WHERE captured_at >= {t0}),
src AS (
    -- Every description captured in the window or after it: whatever ranges a history is
    -- built in, and in whatever order, a post measured in these days is labelled with its
    -- newest description (a scheduled run reads only today's rows: zone maps skip the rest).
    SELECT * FROM later
    UNION ALL BY NAME
    -- posts measured here whose every description is older and not known yet
    SELECT * FROM raw_posts SEMI JOIN (
        SELECT {key} FROM measured ANTI JOIN dim_posts USING ({key})
        ANTI JOIN later USING ({key})
    ) USING ({key})
    WHERE captured_at < {t0}
),
newest AS (
    SELECT {key}, arg_max({{{newest_struct}}}, {order}) AS r,
           -- a placeholder (a file without the channel) never hides a known account
           arg_max(account_external_id, {order})
               FILTER (WHERE account_external_id NOT IN ({placeholders})) AS known_account,
           -- a description without a picture (Murmur's own record of what it published)
           -- never hides the one the platform gave
           arg_max(thumbnail_url, {order}) FILTER (WHERE thumbnail_url IS NOT NULL)
               AS thumbnail_url
    FROM src GROUP BY {key}
)
SELECT workspace_id, platform, external_id,
       coalesce(known_account, r.account_external_id) AS account_external_id,
       r.post_id AS post_id, r.kind AS kind, r.text AS text, r.hashtags AS hashtags,
       r.media_type AS media_type, r.url AS url, r.category AS category,
       r.published_at AS published_at, r.deleted_at AS deleted_at, r.captured_at AS captured_at,
       thumbnail_url
FROM newest
) AS x ON {on_key}
WHEN MATCHED AND (x.captured_at >= d.captured_at
   OR (d.account_external_id IN ({placeholders})
       AND x.account_external_id NOT IN ({placeholders}))) THEN UPDATE SET
    account_external_id = CASE
        WHEN x.account_external_id IN ({placeholders}) THEN d.account_external_id
        WHEN d.account_external_id IN ({placeholders}) THEN x.account_external_id
        ELSE {newer("account_external_id")} END,
    post_id = coalesce({newer("post_id")}, d.post_id, x.post_id),
    kind = {newer("kind")}, text = {newer("text")}, hashtags = {newer("hashtags")},
    media_type = {newer("media_type")}, url = {newer("url")}, category = {newer("category")},
    published_at = {newer("published_at")},
    deleted_at = coalesce({newer("deleted_at")}, d.deleted_at, x.deleted_at),
    thumbnail_url = coalesce({newer("thumbnail_url")}, d.thumbnail_url, x.thumbnail_url),
    captured_at = greatest(x.captured_at, d.captured_at)
WHEN NOT MATCHED THEN INSERT ({dim_post_columns})
    VALUES ({", ".join("x." + c.strip() for c in dim_post_columns.split(","))});

MERGE INTO dim_accounts AS d USING (
    -- each account's newest snapshot (latest capture, then ingest, then batch): one
    -- aggregate over the hourly snapshots, ~4x cheaper than a row_number() window
    SELECT {key}, r.account_id AS account_id, r.kind AS kind, r.handle AS handle,
           r.display_name AS display_name, r.category AS category, r.followers AS followers,
           r.captured_at AS captured_at, url, thumbnail_url
    FROM (
        SELECT {key},
               arg_max({{'account_id': account_id, 'kind': kind, 'handle': handle,
                         'display_name': display_name, 'category': category,
                         'followers': followers, 'captured_at': captured_at}},
                       {order}) AS r,
               -- a snapshot that does not know the page or picture (an export's) keeps them
               arg_max(url, {order}) FILTER (WHERE url IS NOT NULL) AS url,
               arg_max(thumbnail_url, {order}) FILTER (WHERE thumbnail_url IS NOT NULL)
                   AS thumbnail_url
        FROM raw_account_snapshots WHERE captured_at >= {t0} AND captured_at < {t1}
        GROUP BY {key}
    )
) AS x ON {on_key}
WHEN MATCHED AND x.captured_at >= d.captured_at THEN UPDATE SET
    account_id = coalesce(x.account_id, d.account_id),
    kind = x.kind, handle = x.handle, display_name = x.display_name,
    category = coalesce(x.category, d.category),
    url = coalesce(x.url, d.url), thumbnail_url = coalesce(x.thumbnail_url, d.thumbnail_url),
    followers = x.followers, captured_at = x.captured_at
WHEN NOT MATCHED THEN INSERT ({dim_account_columns})
    VALUES ({", ".join("x." + c.strip() for c in dim_account_columns.split(","))});
"""  # noqa: S608 - only literal() values are rendered
    return f"""{dimensions if later is None else ""}
DELETE FROM stg_engagement_deltas WHERE day >= {day0} AND day < {literal(end)}{only};

INSERT INTO stg_engagement_deltas BY NAME
WITH dup_days AS (
    -- days where two batches saw the same snapshot; counting distinct 64-bit hashes is
    -- far cheaper than the de-duplicating window, and a collision only sends a day there
    SELECT CAST(captured_at AS DATE) AS day FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}{only}
    GROUP BY ALL HAVING count(*) <> count(DISTINCT hash({key}, captured_at))
),
cur AS (
    -- one row per (post, captured_at): the latest ingest wins if two batches saw it
    SELECT {key}, captured_at, {cols}
    FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}{only}
      AND CAST(captured_at AS DATE) NOT IN (SELECT day FROM dup_days)
    UNION ALL
    SELECT {key}, captured_at, {cols}
    FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}{only}
      AND CAST(captured_at AS DATE) IN (SELECT day FROM dup_days)
    QUALIFY row_number() OVER (PARTITION BY {key}, captured_at
                               ORDER BY ingested_at DESC, ingest_batch DESC) = 1
),
-- the same posts as cur's, read from the raw table: with cur used once, DuckDB streams it
-- into the window instead of materializing its 10M rows of a full build first
keys AS (
    SELECT DISTINCT {key} FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}{only}
),
known AS (
    -- publication times of the posts described in the look-back and the window
    SELECT {key}, max(published_at) AS published_at FROM raw_posts
    WHERE captured_at >= {lb} AND captured_at < {t1}{only} GROUP BY {key}
),
recent1 AS (
    -- the last known value (and the highest) of each counter in the day before the window:
    -- a tracked post was read there, so the usual partition scans one day of history, raw
    -- (a day built before the one before it was staged still sees its readings)
    SELECT {key}, max(captured_at) AS captured_at,
       {last_known}
    FROM raw_engagement_snapshots SEMI JOIN keys USING ({key})
    WHERE captured_at >= {d1} AND captured_at < {t0}
    GROUP BY {key}
),
missing1 AS (
    -- posts not read that day and not known to be newer than it
    SELECT {key} FROM keys ANTI JOIN recent1 USING ({key})
    ANTI JOIN (SELECT {key} FROM known WHERE published_at >= {d1}) USING ({key})
),
recent2 AS (
    -- a post read again after a gap: one row for each day it was read in the look-back
    SELECT {key}, max(captured_at) AS captured_at,
       {days_prior}
    FROM stg_post_days SEMI JOIN missing1 USING ({key})
    WHERE day >= {day_lb} AND day < {day_d1}
    GROUP BY {key}
),
missing AS (
    -- posts with no snapshot in the look-back that are not known to be newer than it
    SELECT {key} FROM missing1 ANTI JOIN recent2 USING ({key})
    ANTI JOIN (SELECT {key} FROM known WHERE published_at >= {lb}) USING ({key})
),
older AS (
    SELECT {key}, max(captured_at) AS captured_at,
       {days_prior}
    FROM stg_post_days SEMI JOIN missing USING ({key})
    WHERE day < {day_lb}
    GROUP BY {key}
),
prior AS (
    -- with the running peak staged with that reading (the day's summary holds it)
    SELECT {", ".join(f"r.{k.strip()}" for k in key.split(","))}, r.captured_at, {recent_cols}
    FROM recent1 r LEFT JOIN (
        SELECT {key}, captured_at, {staged_peaks} FROM stg_post_days
        WHERE day = {day_d1}
    ) s USING ({key}, captured_at)
    UNION ALL BY NAME SELECT * FROM recent2
    UNION ALL BY NAME SELECT * FROM older
),
seq AS (
    SELECT *, {in_window_peaks}, true AS in_window FROM cur
    UNION ALL BY NAME SELECT *, false AS in_window FROM prior
),
lagged AS (
    SELECT *,
       {prev_cols},
       count(*) OVER w AS earlier
    FROM seq
    WINDOW w AS (PARTITION BY {key} ORDER BY captured_at
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
pub AS (SELECT {key}, published_at FROM dim_posts SEMI JOIN keys USING ({key}))
SELECT l.workspace_id, l.platform, l.external_id, l.captured_at,
       CAST(l.captured_at AS DATE) AS day,
       {deltas},
       {drops} AS counter_drops,
       -- a post's first reading is a lifetime total unless the post was published shortly
       -- before it (that UTC day, or within the hour): then it is growth we saw happen
       l.earlier = 0 AND NOT coalesce(p.published_at < l.captured_at
           AND (CAST(p.published_at AS DATE) = CAST(l.captured_at AS DATE)
                OR l.captured_at - p.published_at <= INTERVAL {FIRST_READING_GRACE_HOURS} HOUR),
           false) AS first_seen,
       {peaks}
FROM lagged l LEFT JOIN pub p USING ({key})
WHERE l.in_window
-- capture order: each row group then holds a few days, so zone maps let a later day's
-- delete, rebuild and checks skip the rest of history (and the insert runs batched)
ORDER BY l.captured_at;
{post_days_script(start, end, only)}
{_snapshot_rows("stg_engagement_deltas", "stg_engagement_deltas", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def post_days_script(start: date | None = None, end: date | None = None, only: str = "") -> str:
    """Replace stg_post_days of [start, end) (of all days: None) from the raw and staged rows."""
    # The same rows as migration 0009's: each post's readings of a day, summed up in one row.
    window = (
        f"captured_at >= {literal(day_start(start))} AND captured_at < {literal(day_start(end))}"
        if start is not None and end is not None
        else "true"
    )
    days = (
        f"day >= {literal(start)} AND day < {literal(end)}"
        if start is not None and end is not None
        else "true"
    )
    last = ",\n           ".join(
        f"arg_max({m}, captured_at) FILTER (WHERE {m} IS NOT NULL) AS last_{m}, max({m}) AS max_{m}"
        for m in METRICS
    )
    peaks = ", ".join(f"s.peak_{m}" for m in METRICS)
    return f"""
DELETE FROM stg_post_days WHERE {days}{only};
INSERT INTO stg_post_days BY NAME
SELECT r.*, {peaks}
FROM (
    SELECT {POST_KEY}, CAST(captured_at AS DATE) AS day, max(captured_at) AS captured_at,
           {last}
    FROM raw_engagement_snapshots WHERE {window}{only}
    GROUP BY ALL
) r
LEFT JOIN (SELECT * FROM stg_engagement_deltas WHERE {days}{only}) s
    USING ({POST_KEY}, captured_at)
ORDER BY r.day;
"""  # noqa: S608 - only literal() values are rendered


def post_hourly_script(
    start: date, end: date, *, run_id: str, computed_at: datetime, later: NewRows | None = None
) -> str:
    """Rebuild mart_post_hourly for [start, end) from the staged deltas and the dimensions."""
    scope = later_posts(later, start) if later is not None else None
    only, only_s = _only(POST_KEY, scope), _only("s.workspace_id, s.platform, s.external_id", scope)
    sums = ", ".join(f"sum({m})::BIGINT AS {m}" for m in METRICS)
    eng = " + ".join(f"sum({m})" for m in ENGAGEMENT_METRICS)
    cols = ", ".join(f"h.{m}" for m in (*METRICS, "engagements"))
    singles = ", ".join(f"{m}::BIGINT AS {m}" for m in METRICS)
    # HUGEINT like sum()'s, so one snapshot overflows exactly where its sum would
    eng_single = " + ".join(f"{m}::HUGEINT" for m in ENGAGEMENT_METRICS)
    first_cols = ", ".join(f"s.{m}::BIGINT AS {m}" for m in METRICS)
    # Grouping on the four key columns and joining the dimensions to the groups (one row
    # each: dim keys are primary keys) is ~2x cheaper than grouping on the joined columns.
    return f"""
DELETE FROM mart_post_hourly WHERE day >= {literal(start)} AND day < {literal(end)}{only};
INSERT INTO mart_post_hourly
WITH multi_days AS (
    -- days where a post has two snapshots in one hour (distinct hashes, as in staging)
    SELECT day FROM stg_engagement_deltas
    WHERE day >= {literal(start)} AND day < {literal(end)} AND NOT first_seen{only}
    GROUP BY day
    HAVING count(*) <> count(DISTINCT hash(workspace_id, platform, external_id,
                                           date_trunc('hour', captured_at)))
),
h AS (
    -- a post is usually read once an hour: those days' snapshots are their hours as they
    -- are, and only the other days pay for grouping
    SELECT workspace_id, platform, external_id, date_trunc('hour', captured_at) AS hour,
           {singles}, ({eng_single})::BIGINT AS engagements
    FROM stg_engagement_deltas
    WHERE day >= {literal(start)} AND day < {literal(end)} AND NOT first_seen{only}
      AND day NOT IN (SELECT day FROM multi_days)
    UNION ALL
    SELECT workspace_id, platform, external_id, date_trunc('hour', captured_at) AS hour,
           {sums}, ({eng})::BIGINT AS engagements
    FROM stg_engagement_deltas
    WHERE day >= {literal(start)} AND day < {literal(end)} AND NOT first_seen{only}
      AND day IN (SELECT day FROM multi_days)
    GROUP BY ALL
)
SELECT h.workspace_id, CAST(h.hour AS DATE) AS day, h.hour, h.platform,
       coalesce(p.account_external_id, 'unknown') AS account_external_id,
       coalesce(a.account_id, acc.id) AS account_id,
       h.external_id, p.post_id, coalesce(p.kind, a.kind, 'unknown') AS kind,
       {cols}
FROM h
LEFT JOIN dim_posts p USING (workspace_id, platform, external_id)
LEFT JOIN dim_accounts a ON a.workspace_id = h.workspace_id AND a.platform = h.platform
     AND a.external_id = p.account_external_id
LEFT JOIN pub.accounts acc ON acc.workspace_id = h.workspace_id AND acc.platform = h.platform
     AND acc.external_id = p.account_external_id
ORDER BY h.hour;

-- First-seen totals: the first readings that carry what a post gathered before we saw it,
-- labelled like the growth rows, kept apart from them (docs/api/analytics.md).
DELETE FROM mart_post_first_seen
WHERE day >= {literal(start)} AND day < {literal(end)}{only};
INSERT INTO mart_post_first_seen
SELECT s.workspace_id, s.day, s.captured_at, s.platform,
       coalesce(p.account_external_id, 'unknown') AS account_external_id,
       coalesce(a.account_id, acc.id) AS account_id,
       s.external_id, p.post_id, coalesce(p.kind, a.kind, 'unknown') AS kind, p.published_at,
       {first_cols}, ({eng_single})::BIGINT AS engagements
FROM stg_engagement_deltas s
LEFT JOIN dim_posts p USING (workspace_id, platform, external_id)
LEFT JOIN dim_accounts a ON a.workspace_id = s.workspace_id AND a.platform = s.platform
     AND a.external_id = p.account_external_id
LEFT JOIN pub.accounts acc ON acc.workspace_id = s.workspace_id AND acc.platform = s.platform
     AND acc.external_id = p.account_external_id
WHERE s.day >= {literal(start)} AND s.day < {literal(end)} AND s.first_seen{only_s}
ORDER BY s.captured_at;
{_snapshot_rows("mart_post_hourly", "mart_post_hourly", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def post_daily_script(
    start: date, end: date, *, run_id: str, computed_at: datetime, later: NewRows | None = None
) -> str:
    """Rebuild mart_post_daily for [start, end) by rolling up mart_post_hourly."""
    sums = ", ".join(f"sum({m})::BIGINT AS {m}" for m in (*METRICS, "engagements"))
    only = _only(POST_KEY, later_posts(later, start) if later is not None else None)
    return f"""
DELETE FROM mart_post_daily WHERE day >= {literal(start)} AND day < {literal(end)}{only};
INSERT INTO mart_post_daily
SELECT *, {_rate("engagements", "impressions", "views")} AS engagement_rate
FROM (SELECT workspace_id, day, platform, account_external_id, account_id, external_id,
             post_id, kind, {sums}
      FROM mart_post_hourly
      WHERE day >= {literal(start)} AND day < {literal(end)}{only}
      GROUP BY ALL)
ORDER BY day;
{_snapshot_rows("mart_post_daily", "mart_post_daily", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def account_daily_script(
    start: date, end: date, *, run_id: str, computed_at: datetime, later: NewRows | None = None
) -> str:
    """Rebuild mart_account_daily for [start, end): followers, growth and engagement."""
    accounts = _later_accounts(later, start) if later is not None else None
    only = _only("workspace_id, platform, account_external_id", accounts)
    raw_only = _only("workspace_id, platform, external_id", accounts)
    t1 = literal(day_start(end))
    lb = literal(day_start(start) - timedelta(days=LOOKBACK_DAYS))
    d1 = literal(day_start(start) - timedelta(days=1))
    key = "workspace_id, platform, account_external_id"
    # Growth needs each account's last followers before the window: looked for in the day
    # before first (an account is read hourly), and within LOOKBACK_DAYS only for accounts
    # not read that day, so a scheduled run does not rescan the look-back's snapshots.
    return f"""
DELETE FROM mart_account_daily WHERE day >= {literal(start)} AND day < {literal(end)}{only};
INSERT INTO mart_account_daily
WITH snaps AS (
    SELECT workspace_id, platform, external_id AS account_external_id,
           CAST(captured_at AS DATE) AS day, arg_max(followers, captured_at) AS followers
    FROM raw_account_snapshots
    WHERE captured_at >= {d1} AND captured_at < {t1} AND followers IS NOT NULL{raw_only}
    GROUP BY ALL
),
missing AS (
    SELECT DISTINCT {key} FROM snaps WHERE day >= {literal(start)}
    EXCEPT SELECT {key} FROM snaps WHERE day < {literal(start)}
),
older AS (
    SELECT r.workspace_id, r.platform, r.external_id AS account_external_id,
           CAST(max(r.captured_at) AS DATE) AS day,
           arg_max(r.followers, r.captured_at) AS followers
    FROM raw_account_snapshots r SEMI JOIN missing m ON m.workspace_id = r.workspace_id
         AND m.platform = r.platform AND m.account_external_id = r.external_id
    WHERE r.captured_at >= {lb} AND r.captured_at < {d1} AND r.followers IS NOT NULL
    GROUP BY r.workspace_id, r.platform, r.external_id
),
growth AS (
    SELECT *, followers - lag(followers) OVER (PARTITION BY {key} ORDER BY day) AS growth
    FROM (SELECT * FROM snaps UNION ALL BY NAME SELECT * FROM older)
),
activity AS (
    -- the rate's numerator: engagements of the posts with its basis that day (a reel's
    -- likes are not divided by a photo's impressions: domain.analytics.rates)
    SELECT workspace_id, platform, account_external_id, day,
           sum(impressions) AS impressions, sum(views) AS views,
           sum(engagements) AS engagements, any_value(kind) AS kind,
           coalesce(sum(engagements) FILTER (WHERE impressions > 0), 0) AS engagements_shown,
           coalesce(sum(engagements) FILTER (WHERE views > 0), 0) AS engagements_viewed
    FROM mart_post_daily WHERE day >= {literal(start)} AND day < {literal(end)}{only}
    GROUP BY ALL
),
days AS (
    SELECT {key}, day FROM growth WHERE day >= {literal(start)}
    UNION SELECT {key}, day FROM activity
)
SELECT k.workspace_id, k.day, k.platform, k.account_external_id,
       coalesce(a.account_id, acc.id) AS account_id,
       -- an account not known yet (its snapshot in a range built later) takes its posts'
       -- kind, which the post marts take from dim_posts whatever order days are built in
       coalesce(a.kind, act.kind, CASE WHEN acc.id IS NOT NULL THEN 'own' END, 'unknown'),
       coalesce(a.handle, acc.handle, k.account_external_id) AS handle,
       g.followers, g.growth AS follower_growth,
       coalesce(act.impressions, 0)::BIGINT AS impressions,
       coalesce(act.engagements, 0)::BIGINT AS engagements,
       CASE WHEN act.impressions > 0 THEN act.engagements_shown::DOUBLE / act.impressions
            WHEN act.views > 0 THEN act.engagements_viewed::DOUBLE / act.views
       END AS engagement_rate
FROM days k
LEFT JOIN growth g USING ({key}, day)
LEFT JOIN activity act USING ({key}, day)
LEFT JOIN dim_accounts a ON a.workspace_id = k.workspace_id AND a.platform = k.platform
     AND a.external_id = k.account_external_id
LEFT JOIN pub.accounts acc ON acc.workspace_id = k.workspace_id AND acc.platform = k.platform
     AND acc.external_id = k.account_external_id
ORDER BY k.day;
{_snapshot_rows("mart_account_daily", "mart_account_daily", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def replace_from_parquet_script(
    table: str,
    parquet: Path,
    *,
    run_id: str,
    computed_at: datetime,
    workspace_ids: list[str],
    data_through: datetime | None = None,
) -> str:
    """Replace a non-partitioned mart's rows for these workspaces with a computed file's rows.

    The insights are computed in Python (pipelines/analytics/algorithms.py) and handed to
    the store as a Parquet file beside it, so the swap is one server-side transaction.
    """
    if table not in FILE_MARTS:
        raise ValueError(f"not a file-written mart: {table}")
    ws = ", ".join(literal(w) for w in workspace_ids) or "NULL"
    # what the rows were computed from: the daily marts', unless the caller read further (the
    # breakouts read the raw readings, before the daily marts have them)
    through = (
        literal(data_through)
        if data_through is not None
        else "(SELECT max(data_through) FROM mart_snapshots WHERE mart = 'mart_post_daily')"
    )
    return f"""
DELETE FROM {table} WHERE workspace_id IN ({ws});
INSERT INTO {table} BY NAME SELECT * FROM read_parquet({literal(parquet)});
DELETE FROM mart_snapshots WHERE mart = {literal(table)} AND partition_key = 'all';
INSERT INTO mart_snapshots (mart, partition_key, computed_at, rows, data_through, run_id)
SELECT {literal(table)}, 'all', {literal(computed_at)}, (SELECT count(*) FROM {table}),
       {through}, {literal(run_id)};
"""  # noqa: S608 - table is checked against FILE_MARTS; values go through literal()
