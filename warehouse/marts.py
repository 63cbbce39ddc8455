"""The SQL that builds staging and marts from the raw tables, and the reads the pipeline needs.

Partitioned marts are rebuilt per UTC day: each script deletes its days and inserts them
again inside one lake transaction (``Lakehouse.execute_script``), so a re-run gives the
same rows and a reader sees the old or the new day, never half of one. A script is many
statements in one text, which binds no parameters: the only values rendered into them are
dates, timestamps, numbers and paths, and only through :func:`warehouse.sql.literal`.
Every other statement here binds its parameters. The scripts join the connected accounts
as ``pub.accounts`` (the session's copy of the publishing table, warehouse/store.py).

Cost follows the new data: every partition query filters on its time window, plus a
bounded look-back (``LOOKBACK_DAYS``) for the last snapshot before the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from warehouse.rows import Cursor, ResultRow, Row, fetch_all, fetch_rows, fetch_value
from warehouse.sql import literal
from warehouse.store import Lakehouse

# The cumulative counters a platform reports; staging turns them into deltas.
METRICS = ("impressions", "reach", "views", "likes", "comments", "shares", "saves", "clicks")
# What counts as an engagement (docs/pipeline.md): impressions, reach and views do not.
ENGAGEMENT_METRICS = ("likes", "comments", "shares", "saves", "clicks")
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

PARTITIONED_MARTS = (
    "stg_engagement_deltas",
    "mart_post_hourly",
    "mart_post_daily",
    "mart_account_daily",
)

_ENGAGEMENTS = " + ".join(ENGAGEMENT_METRICS)


def _ts(day: date) -> datetime:
    return datetime(day.year, day.month, day.day)


def _rate(eng: str, imp: str, views: str) -> str:
    """Engagement rate: engagements / impressions, else / views; NULL when both are 0."""
    return (
        f"CASE WHEN {imp} > 0 THEN {eng}::DOUBLE / {imp}"
        f" WHEN {views} > 0 THEN {eng}::DOUBLE / {views} ELSE NULL END"
    )


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
      FROM range({literal(_ts(start))}, {literal(_ts(end))}, INTERVAL 1 DAY)) d
LEFT JOIN (SELECT day, count(*) AS n FROM {table}
           WHERE day >= {literal(start)} AND day < {literal(end)} GROUP BY day) c USING (day)
LEFT JOIN (SELECT day, max(captured_at) AS through FROM stg_engagement_deltas
           WHERE day >= {literal(start)} AND day < {literal(end)} GROUP BY day) t USING (day);
"""  # noqa: S608


def staging_script(start: date, end: date, *, run_id: str, computed_at: datetime) -> str:
    """Dimensions upserted from the raw rows, then the days' engagement deltas rebuilt."""
    t0, t1 = literal(_ts(start)), literal(_ts(end))
    lb = literal(_ts(start) - timedelta(days=LOOKBACK_DAYS))
    d1 = literal(_ts(start) - timedelta(days=1))
    day0, day_d1 = literal(start), literal(start - timedelta(days=1))
    day_lb = literal(start - timedelta(days=LOOKBACK_DAYS))
    key = "workspace_id, platform, external_id"
    placeholders = ", ".join(literal(p) for p in PLACEHOLDER_ACCOUNTS)
    last_known = ",\n       ".join(
        f"arg_max({m}, captured_at) FILTER (WHERE {m} IS NOT NULL) AS {m}, max({m}) AS x_{m}"
        for m in METRICS
    )
    staged_peaks = ", ".join(f"peak_{m} AS s_{m}" for m in METRICS)
    prior_cols = ", ".join(f"r.{m}, greatest(r.x_{m}, s.s_{m}) AS x_{m}" for m in METRICS)
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

    # MERGE rather than INSERT … ON CONFLICT: the lake has no keys to conflict on.
    return f"""
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

DELETE FROM stg_engagement_deltas WHERE day >= {day0} AND day < {literal(end)};

INSERT INTO stg_engagement_deltas BY NAME
WITH dup_days AS (
    -- days where two batches saw the same snapshot; counting distinct 64-bit hashes is
    -- far cheaper than the de-duplicating window, and a collision only sends a day there
    SELECT CAST(captured_at AS DATE) AS day FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}
    GROUP BY ALL HAVING count(*) <> count(DISTINCT hash({key}, captured_at))
),
cur AS (
    -- one row per (post, captured_at): the latest ingest wins if two batches saw it
    SELECT {key}, captured_at, {cols}
    FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}
      AND CAST(captured_at AS DATE) NOT IN (SELECT day FROM dup_days)
    UNION ALL
    SELECT {key}, captured_at, {cols}
    FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}
      AND CAST(captured_at AS DATE) IN (SELECT day FROM dup_days)
    QUALIFY row_number() OVER (PARTITION BY {key}, captured_at
                               ORDER BY ingested_at DESC, ingest_batch DESC) = 1
),
-- the same posts as cur's, read from the raw table: with cur used once, DuckDB streams it
-- into the window instead of materializing its 10M rows of a full build first
keys AS (
    SELECT DISTINCT {key} FROM raw_engagement_snapshots
    WHERE captured_at >= {t0} AND captured_at < {t1}
),
known AS (
    -- publication times of the posts described in the look-back and the window
    SELECT {key}, max(published_at) AS published_at FROM raw_posts
    WHERE captured_at >= {lb} AND captured_at < {t1} GROUP BY {key}
),
recent1 AS (
    -- the last known value (and the highest) of each counter in the day before the window:
    -- a tracked post was read there, so the usual partition scans one day of history
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
    SELECT {key}, max(captured_at) AS captured_at,
       {last_known}
    FROM raw_engagement_snapshots SEMI JOIN missing1 USING ({key})
    WHERE captured_at >= {lb} AND captured_at < {d1}
    GROUP BY {key}
),
missing AS (
    -- posts with no snapshot in the look-back that are not known to be newer than it
    SELECT {key} FROM missing1 ANTI JOIN recent2 USING ({key})
    ANTI JOIN (SELECT {key} FROM known WHERE published_at >= {lb}) USING ({key})
),
older AS (
    SELECT {key}, max(captured_at) AS captured_at,
       {last_known}
    FROM raw_engagement_snapshots SEMI JOIN missing USING ({key})
    WHERE captured_at < {lb}
    GROUP BY {key}
),
staged AS (
    -- the running peak staged with the last reading before the window: earlier peaks
    -- without rescanning history (each span is read only for the posts last read there)
    SELECT {key}, {staged_peaks} FROM stg_engagement_deltas SEMI JOIN recent1
        USING ({key}, captured_at) WHERE day >= {day_d1} AND day < {day0}
    UNION ALL
    SELECT {key}, {staged_peaks} FROM stg_engagement_deltas SEMI JOIN recent2
        USING ({key}, captured_at) WHERE day >= {day_lb} AND day < {day_d1}
    UNION ALL
    SELECT {key}, {staged_peaks} FROM stg_engagement_deltas SEMI JOIN older
        USING ({key}, captured_at) WHERE day < {day_lb}
),
prior AS (
    SELECT {", ".join(f"r.{k.strip()}" for k in key.split(","))}, r.captured_at, {prior_cols}
    FROM (SELECT * FROM recent1 UNION ALL BY NAME SELECT * FROM recent2
          UNION ALL BY NAME SELECT * FROM older) r
    LEFT JOIN staged s USING ({key})
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
{_snapshot_rows("stg_engagement_deltas", "stg_engagement_deltas", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def post_hourly_script(start: date, end: date, *, run_id: str, computed_at: datetime) -> str:
    """Rebuild mart_post_hourly for [start, end) from the staged deltas and the dimensions."""
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
DELETE FROM mart_post_hourly WHERE day >= {literal(start)} AND day < {literal(end)};
INSERT INTO mart_post_hourly
WITH multi_days AS (
    -- days where a post has two snapshots in one hour (distinct hashes, as in staging)
    SELECT day FROM stg_engagement_deltas
    WHERE day >= {literal(start)} AND day < {literal(end)} AND NOT first_seen
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
    WHERE day >= {literal(start)} AND day < {literal(end)} AND NOT first_seen
      AND day NOT IN (SELECT day FROM multi_days)
    UNION ALL
    SELECT workspace_id, platform, external_id, date_trunc('hour', captured_at) AS hour,
           {sums}, ({eng})::BIGINT AS engagements
    FROM stg_engagement_deltas
    WHERE day >= {literal(start)} AND day < {literal(end)} AND NOT first_seen
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
DELETE FROM mart_post_first_seen WHERE day >= {literal(start)} AND day < {literal(end)};
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
WHERE s.day >= {literal(start)} AND s.day < {literal(end)} AND s.first_seen
ORDER BY s.captured_at;
{_snapshot_rows("mart_post_hourly", "mart_post_hourly", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def post_daily_script(start: date, end: date, *, run_id: str, computed_at: datetime) -> str:
    """Rebuild mart_post_daily for [start, end) by rolling up mart_post_hourly."""
    sums = ", ".join(f"sum({m})::BIGINT AS {m}" for m in (*METRICS, "engagements"))
    return f"""
DELETE FROM mart_post_daily WHERE day >= {literal(start)} AND day < {literal(end)};
INSERT INTO mart_post_daily
SELECT *, {_rate("engagements", "impressions", "views")} AS engagement_rate
FROM (SELECT workspace_id, day, platform, account_external_id, account_id, external_id,
             post_id, kind, {sums}
      FROM mart_post_hourly
      WHERE day >= {literal(start)} AND day < {literal(end)}
      GROUP BY ALL)
ORDER BY day;
{_snapshot_rows("mart_post_daily", "mart_post_daily", start, end, run_id, computed_at)}
"""  # noqa: S608 - only literal() values are rendered


def account_daily_script(start: date, end: date, *, run_id: str, computed_at: datetime) -> str:
    """Rebuild mart_account_daily for [start, end): followers, growth and engagement."""
    t1 = literal(_ts(end))
    lb = literal(_ts(start) - timedelta(days=LOOKBACK_DAYS))
    d1 = literal(_ts(start) - timedelta(days=1))
    key = "workspace_id, platform, account_external_id"
    # Growth needs each account's last followers before the window: looked for in the day
    # before first (an account is read hourly), and within LOOKBACK_DAYS only for accounts
    # not read that day, so a scheduled run does not rescan the look-back's snapshots.
    return f"""
DELETE FROM mart_account_daily WHERE day >= {literal(start)} AND day < {literal(end)};
INSERT INTO mart_account_daily
WITH snaps AS (
    SELECT workspace_id, platform, external_id AS account_external_id,
           CAST(captured_at AS DATE) AS day, arg_max(followers, captured_at) AS followers
    FROM raw_account_snapshots
    WHERE captured_at >= {d1} AND captured_at < {t1} AND followers IS NOT NULL
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
    SELECT workspace_id, platform, account_external_id, day,
           sum(impressions) AS impressions, sum(views) AS views,
           sum(engagements) AS engagements, any_value(kind) AS kind
    FROM mart_post_daily WHERE day >= {literal(start)} AND day < {literal(end)}
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
       {_rate("act.engagements", "act.impressions", "act.views")} AS engagement_rate
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
    table: str, parquet: Path, *, run_id: str, computed_at: datetime, workspace_ids: list[str]
) -> str:
    """Replace a non-partitioned mart's rows for these workspaces with a computed file's rows.

    The insights are computed in Python (pipelines/analytics/algorithms.py) and handed to
    the store as a Parquet file beside it, so the swap is one server-side transaction.
    """
    if table not in _FILE_MARTS:
        raise ValueError(f"not a file-written mart: {table}")
    ws = ", ".join(literal(w) for w in workspace_ids) or "NULL"
    return f"""
DELETE FROM {table} WHERE workspace_id IN ({ws});
INSERT INTO {table} BY NAME SELECT * FROM read_parquet({literal(parquet)});
DELETE FROM mart_snapshots WHERE mart = {literal(table)} AND partition_key = 'all';
INSERT INTO mart_snapshots (mart, partition_key, computed_at, rows, data_through, run_id)
SELECT {literal(table)}, 'all', {literal(computed_at)}, (SELECT count(*) FROM {table}),
       (SELECT max(data_through) FROM mart_snapshots WHERE mart = 'mart_post_daily'),
       {literal(run_id)};
"""  # noqa: S608 - table is checked against _FILE_MARTS; values go through literal()


_FILE_MARTS = frozenset(
    {
        "mart_best_times",
        "mart_anomalies",
        "mart_insights",
        "mart_viral_trends",
        "mart_creator_rankings",
    }
)


# -- reads that join several tables --------------------------------------------------------------


def read(store: Lakehouse, sql: str, params: list[Any]) -> list[Row]:
    """Run a read of the lake in one transaction."""
    return store.run(lambda cur: fetch_all(cur, sql, params))


# -- reads for the insight assets (bound parameters) --------------------------------------------


@dataclass(frozen=True)
class Window:
    """A workspace's insight window: [start, end) in naive UTC."""

    workspace_id: str
    start: datetime
    end: datetime


_DATA_ENDS = """
SELECT workspace_id, platform, max(data_end) AS data_end FROM (
    SELECT workspace_id, platform, max(hour) + INTERVAL 1 HOUR AS data_end
    FROM mart_post_hourly GROUP BY ALL
    UNION ALL
    -- an export read once (every reading a first-seen total) has data too
    SELECT workspace_id, platform, date_trunc('hour', max(captured_at)) + INTERVAL 1 HOUR
    FROM mart_post_first_seen GROUP BY ALL
) GROUP BY ALL
"""


def workspace_data_ends(cur: Cursor) -> dict[str, datetime]:
    """Per workspace, the end of the newest hour with staged engagement (the insights' 'now')."""
    rows = fetch_all(
        cur,
        f"SELECT workspace_id, max(data_end) AS data_end FROM ({_DATA_ENDS}) GROUP BY ALL",  # noqa: S608 - a constant
    )
    return {r["workspace_id"]: r["data_end"] for r in rows}


def platform_data_ends(cur: Cursor) -> dict[tuple[str, str], datetime]:
    """Per workspace and platform (each source), the end of its newest hour of data."""
    rows = fetch_all(cur, _DATA_ENDS)
    return {(r["workspace_id"], r["platform"]): r["data_end"] for r in rows}


def post_rates(
    store: Lakehouse, w: Window, kinds: list[str], *, published_in_window: bool = True
) -> list[Row]:
    """Posts with their totals in the window (growth plus first-seen totals) and handle.

    ``published_in_window``: only posts published in the window (best times, top content);
    else every post with activity in it, however old (rankings count growth in the window
    of posts published before it).
    """
    return read(
        store,
        "WITH m AS ("
        " SELECT workspace_id, platform, external_id, impressions, reach, views, engagements,"
        " NULL::TIMESTAMP AS first_read"
        " FROM mart_post_daily WHERE workspace_id = ?"
        "  AND day >= CAST(? AS DATE) AND day < CAST(? AS DATE) + 1"
        " UNION ALL"
        " SELECT workspace_id, platform, external_id, impressions, reach, views, engagements,"
        " captured_at AS first_read"
        " FROM mart_post_first_seen WHERE workspace_id = ?"
        "  AND captured_at >= ? AND captured_at < ?)"
        " SELECT p.workspace_id, p.platform, p.account_external_id, p.external_id, p.post_id,"
        " p.kind, p.text, p.media_type, p.url, p.published_at,"
        # an export without publication times files a post as published when first read
        " max(m.first_read) AS first_read,"
        " coalesce(da.handle, acc.handle, p.account_external_id) AS handle,"
        " sum(m.impressions) AS impressions, sum(m.reach) AS reach, sum(m.views) AS views,"
        " sum(m.engagements) AS engagements"
        " FROM dim_posts p JOIN m"
        "  ON m.workspace_id = p.workspace_id AND m.platform = p.platform"
        "  AND m.external_id = p.external_id"
        " LEFT JOIN dim_accounts da ON da.workspace_id = p.workspace_id"
        "  AND da.platform = p.platform AND da.external_id = p.account_external_id"
        " LEFT JOIN pub.accounts acc ON acc.workspace_id = p.workspace_id"
        "  AND acc.platform = p.platform AND acc.external_id = p.account_external_id"
        " WHERE p.workspace_id = ? AND (NOT ? OR (p.published_at >= ? AND p.published_at < ?))"
        " AND list_contains(?, p.kind)"
        " GROUP BY ALL",
        [
            w.workspace_id,
            w.start,
            w.end,
            w.workspace_id,
            w.start,
            w.end,
            w.workspace_id,
            published_in_window,
            w.start,
            w.end,
            kinds,
        ],
    )


def account_days(cur: Cursor, w: Window) -> list[Row]:
    """mart_account_daily rows of the window, oldest first."""
    return fetch_all(
        cur,
        "SELECT * FROM mart_account_daily WHERE workspace_id = ? AND day >= CAST(? AS DATE)"
        " AND day < CAST(? AS DATE) ORDER BY platform, account_external_id, day",
        [w.workspace_id, w.start, w.end],
    )


# The rows of a trend window: each post's hours in [start, end). A post's first reading
# that carries what it gathered before we saw it is not among them (staging keeps it as a
# first-seen total, mart_post_first_seen), so it is never read as a burst.
# Parameters: workspace, start, end, start, end, end, width (µs) twice.
_TREND_ROWS = """
WITH h AS (
    SELECT m.platform, m.account_external_id, m.external_id, m.hour, m.engagements AS eng,
           p.hashtags, p.category, p.published_at
    FROM mart_post_hourly m LEFT JOIN dim_posts p USING (workspace_id, platform, external_id)
    WHERE m.workspace_id = ? AND m.day >= CAST(? AS DATE) AND m.day <= CAST(? AS DATE)
      AND m.hour >= ? AND m.hour < ?
)
SELECT *,
       -- the bucket [hour, hour + 1 h) lies in the window that contains its end
       CAST(floor((epoch_us(CAST(? AS TIMESTAMP)) - epoch_us(hour) - 3600000000) / ?)
            AS INTEGER) AS win,
       CAST(floor((epoch_us(hour) - epoch_us(published_at)) / ?) AS INTEGER) AS age
FROM h
"""


def _trend_params(w: Window, width: timedelta) -> list[Any]:
    width_us = width // timedelta(microseconds=1)
    return [w.workspace_id, w.start, w.end, w.start, w.end, w.end, width_us, width_us]


def capture_cadence_hours(store: Lakehouse, w: Window) -> float | None:
    """The median gap, in hours, between a post's consecutive readings in the window."""
    rows = read(
        store,
        "SELECT median(gap) AS gap FROM ("
        " SELECT date_diff('minute', lag(hour) OVER (PARTITION BY platform, external_id"
        "   ORDER BY hour), hour) / 60.0 AS gap"
        " FROM mart_post_hourly WHERE workspace_id = ? AND day >= CAST(? AS DATE)"
        " AND day <= CAST(? AS DATE) AND hour >= ? AND hour < ?)",
        [w.workspace_id, w.start, w.end, w.start, w.end],
    )
    gap = rows[0]["gap"] if rows else None
    return float(gap) if gap is not None else None


def post_cadences(store: Lakehouse, w: Window) -> dict[tuple[str, str], float]:
    """Per post read at least twice in the window: the median gap, in hours, between its
    last four readings (first sightings included): the interval its latest windows see."""
    rows = read(
        store,
        "SELECT platform, external_id, median(gap) AS gap FROM ("
        " SELECT platform, external_id, date_diff('minute', lag(hour) OVER ("
        "   PARTITION BY platform, external_id ORDER BY hour), hour) / 60.0 AS gap,"
        "  row_number() OVER (PARTITION BY platform, external_id ORDER BY hour DESC) AS nth"
        " FROM ("
        "  SELECT platform, external_id, hour FROM mart_post_hourly"
        "  WHERE workspace_id = ? AND day >= CAST(? AS DATE) AND day <= CAST(? AS DATE)"
        "    AND hour >= ? AND hour < ?"
        "  UNION SELECT platform, external_id, date_trunc('hour', captured_at)"
        "  FROM mart_post_first_seen"
        "  WHERE workspace_id = ? AND day >= CAST(? AS DATE) AND day <= CAST(? AS DATE)"
        "    AND captured_at >= ? AND captured_at < ?))"
        " WHERE gap IS NOT NULL AND nth <= 3 GROUP BY ALL",
        [w.workspace_id, w.start, w.end, w.start, w.end] * 2,
    )
    return {(r["platform"], r["external_id"]): float(r["gap"]) for r in rows}


def trend_posts(store: Lakehouse, w: Window, width: timedelta, windows: int) -> list[Row]:
    """Per post with engagement in the last ``windows`` trend windows: its sums per window.

    ``wins`` and ``engagements`` are parallel lists (window 0 ends at ``w.end``); hashtags,
    category and publication come from the post's dimension row.
    """
    return read(
        store,
        f"""
WITH k AS ({_TREND_ROWS}),
pw AS (
    SELECT external_id, platform, win, any_value(account_external_id) AS account_external_id,
           any_value(published_at) AS published_at, any_value(hashtags) AS hashtags,
           any_value(category) AS category, sum(eng) AS eng
    FROM k WHERE win >= 0 AND win < ? GROUP BY external_id, platform, win
)
SELECT external_id, platform, any_value(account_external_id) AS account_external_id,
       any_value(published_at) AS published_at, any_value(hashtags) AS hashtags,
       any_value(category) AS category, list(win ORDER BY win) AS wins,
       list(eng ORDER BY win) AS engagements
FROM pw GROUP BY external_id, platform ORDER BY external_id, platform
""",  # noqa: S608 - one constant fragment; every value is bound
        [*_trend_params(w, width), windows],
    )


def trend_ages(store: Lakehouse, w: Window, width: timedelta) -> list[Row]:
    """Per account and age (whole trend windows since publication): its posts' engagements."""
    return read(
        store,
        f"""
WITH k AS ({_TREND_ROWS}),
pa AS (
    SELECT external_id, any_value(platform) AS platform,
           any_value(account_external_id) AS account_external_id, age, sum(eng) AS eng
    FROM k WHERE published_at IS NOT NULL AND age >= 0 GROUP BY external_id, age
)
SELECT platform, account_external_id, age, list(eng ORDER BY eng) AS engagements
FROM pa GROUP BY ALL ORDER BY ALL
""",  # noqa: S608 - one constant fragment; every value is bound
        _trend_params(w, width),
    )


def ranked_accounts(cur: Cursor, w: Window, platform: str | None = None) -> list[Row]:
    """Competitor, creator and own accounts seen in the window, with first and last followers."""
    return fetch_all(
        cur,
        "SELECT s.platform, s.external_id AS account_external_id, any_value(s.kind) AS kind,"
        " arg_max(s.handle, s.captured_at) AS handle,"
        " arg_max(s.category, s.captured_at) AS category,"
        " arg_min(s.followers, s.captured_at) FILTER (WHERE s.followers IS NOT NULL)"
        "   AS followers_first,"
        " arg_max(s.followers, s.captured_at) FILTER (WHERE s.followers IS NOT NULL)"
        "   AS followers_last,"
        " datediff('second', min(s.captured_at), max(s.captured_at)) / 86400.0 AS span_days"
        " FROM raw_account_snapshots s WHERE s.workspace_id = ?"
        " AND s.captured_at >= ? AND s.captured_at < ? AND (? IS NULL OR s.platform = ?)"
        " GROUP BY ALL",
        [w.workspace_id, w.start, w.end, platform, platform],
    )


def workspace_handles(cur: Cursor) -> dict[tuple[str, str, str], str]:
    """(workspace, platform, account external id) → handle, for wording insights."""
    rows = fetch_all(cur, "SELECT workspace_id, platform, external_id, handle FROM dim_accounts")
    return {(r["workspace_id"], r["platform"], r["external_id"]): r["handle"] for r in rows}


# -- reads for the asset checks ----------------------------------------------------------------


# A column and the half-open ranges of it a check covers: ("day", [(start, end), ...]).
Spans = tuple[str, Sequence[tuple[Any, Any]]]


# The insight marts' row rules, each a count of the rows that break it (0: the check passes).
BAD_ROWS = {
    "mart_best_times": "SELECT count(*) FROM mart_best_times WHERE NOT (shrunk_index BETWEEN"
    " least(raw_index, 1.0) - 1e-9 AND greatest(raw_index, 1.0) + 1e-9)"
    " OR ci_low > shrunk_index OR ci_high < shrunk_index OR posts <= 0",
    "mart_anomalies": "SELECT count(*) FROM mart_anomalies WHERE abs(robust_z) < 3.5"
    " OR (direction = 'spike') <> (robust_z > 0) OR isnan(robust_z)",
    "mart_insights": "SELECT count(*) FROM mart_insights WHERE kind NOT IN"
    " ('best_time', 'top_content', 'anomaly', 'recommendation', 'benchmark')"
    " OR body = '' OR isnan(score)",
}


def count_bad_rows(cur: Cursor, mart: str) -> int:
    """How many rows of an insight mart break its row rules (:data:`BAD_ROWS`)."""
    return int(fetch_value(cur, BAD_ROWS[mart]))


def count_duplicate_keys(
    cur: Cursor, table: str, keys: tuple[str, ...], span: Spans | None = None
) -> int:
    """How many key values occur more than once in ``table`` (within ``span``)."""
    _check_names(table, (*keys, *([span[0]] if span else [])))
    cols = ", ".join(keys)
    where, params = _span(span)
    # Counting distinct 64-bit hashes is ~2x cheaper than grouping on the key columns; equal
    # counts prove the keys unique, and only otherwise (a duplicate, or a hash collision)
    # does the exact grouping run.
    surplus = fetch_value(
        cur,
        f"SELECT count(*) - count(DISTINCT hash({cols})) FROM {table} {where}",  # noqa: S608
        params,
    )
    if not surplus:
        return 0
    found = fetch_value(
        cur,
        f"SELECT count(*) FROM (SELECT {cols} FROM {table} {where}"  # noqa: S608
        f" GROUP BY {cols} HAVING count(*) > 1)",
        params,
    )
    return int(found or 0)


def count_rows(cur: Cursor, table: str, span: Spans) -> int:
    """Rows of ``table`` within ``span``."""
    _check_names(table, (span[0],))
    where, params = _span(span)
    found = fetch_value(cur, f"SELECT count(*) FROM {table} {where}", params)  # noqa: S608
    return int(found or 0)


def count_negative(
    cur: Cursor, table: str, columns: tuple[str, ...], span: Spans | None = None
) -> int:
    """Rows of ``table`` (within ``span``) with any of ``columns`` below zero."""
    _check_names(table, (*columns, *([span[0]] if span else [])))
    cond = " OR ".join(f"{c} < 0" for c in columns)
    where, params = _span(span)
    where = f"{where} AND ({cond})" if where else f"WHERE {cond}"
    found = fetch_value(cur, f"SELECT count(*) FROM {table} {where}", params)  # noqa: S608
    return int(found or 0)


def _check_names(table: str, columns: tuple[str, ...]) -> None:
    # Identifiers cannot be bound: only the names listed in _CHECKED reach the SQL.
    if table not in _CHECKED or not set(columns) <= _CHECKED[table]:
        raise ValueError(f"unchecked table or column: {table} {columns}")


def _span(span: Spans | None) -> tuple[str, list[Any]]:
    if span is None:
        return "", []
    col, ranges = span
    where, params = _within(col, ranges)
    return f"WHERE {where}", params


def _within(col: str, ranges: Sequence[tuple[Any, Any]]) -> tuple[str, list[Any]]:
    """``col`` in any of the half-open ranges, with the bounds bound."""
    parts = " OR ".join(f"({col} >= ? AND {col} < ?)" for _ in ranges)
    return f"({parts})", [v for r in ranges for v in r]


def counter_drops(cur: Cursor, days: Sequence[tuple[date, date]]) -> tuple[int, int]:
    """(snapshots with a counter that went down, counters that went down) in the days."""
    where, params = _within("day", days)
    row = cur.execute(
        "SELECT count(*) FILTER (WHERE counter_drops > 0), coalesce(sum(counter_drops), 0)"  # noqa: S608 - constant column
        f" FROM stg_engagement_deltas WHERE {where}",
        params,
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def readings_in_several_batches(cur: Cursor, days: Sequence[tuple[date, date]]) -> int:
    """Readings (post, instant) in the days that more than one batch holds: staging keeps the
    latest ingest's, so two exports overlapping count each reading once."""
    lo, hi = _ts(days[0][0]), _ts(days[-1][1])
    where, params = _within("captured_at", [(_ts(a), _ts(b)) for a, b in days])
    value = fetch_value(
        cur,
        "SELECT count(*) FROM (SELECT 1 FROM raw_engagement_snapshots"  # noqa: S608 - constant column
        f" WHERE captured_at >= ? AND captured_at < ? AND {where}"
        " GROUP BY workspace_id, platform, external_id, captured_at"
        " HAVING count(DISTINCT ingest_batch) > 1)",
        [lo, hi, *params],
    )
    return int(value or 0)


def raw_rows_by_day(cur: Cursor, first: date, last: date) -> dict[date, int]:
    """Raw engagement readings per UTC day in [first, last]: what rebuilding a day costs."""
    rows = fetch_all(
        cur,
        "SELECT CAST(captured_at AS DATE) AS day, count(*) AS n FROM raw_engagement_snapshots"
        " WHERE captured_at >= ? AND captured_at < ? GROUP BY ALL",
        [_ts(first), _ts(last + timedelta(days=1))],
    )
    return {r["day"]: int(r["n"]) for r in rows}


def newest_capture(cur: Cursor, table: str) -> datetime | None:
    """The newest captured_at in a raw table (freshness)."""
    if table not in ("raw_engagement_snapshots", "raw_account_snapshots", "raw_posts"):
        raise ValueError(table)
    value: datetime | None = fetch_value(cur, f"SELECT max(captured_at) FROM {table}")  # noqa: S608
    return value


def totals_match(cur: Cursor, days: Sequence[tuple[date, date]]) -> dict[str, int]:
    """Engagements (growth) in staging and the post marts, and first-seen, over the days."""
    # Growth only: first-seen totals are kept apart (mart_post_first_seen).
    parts = " + ".join(f"sum({m}) FILTER (WHERE NOT first_seen)" for m in ENGAGEMENT_METRICS)
    out = {}
    for name, table, expr in (
        ("staging", "stg_engagement_deltas", parts),
        ("hourly", "mart_post_hourly", "sum(engagements)"),
        ("daily", "mart_post_daily", "sum(engagements)"),
        ("first_seen", "mart_post_first_seen", "sum(engagements)"),
    ):
        where, params = _within("day", days)
        value = fetch_value(
            cur,
            f"SELECT coalesce({expr}, 0) FROM {table} WHERE {where}",  # noqa: S608
            params,
        )
        out[name] = int(value or 0)
    return out


def account_engagements(cur: Cursor, days: Sequence[tuple[date, date]]) -> int:
    """mart_account_daily's engagements over the days (its totals check)."""
    where, params = _within("day", days)
    value = fetch_value(
        cur,
        f"SELECT coalesce(sum(engagements), 0) FROM mart_account_daily WHERE {where}",  # noqa: S608
        params,
    )
    return int(value or 0)


def partition_meta(cur: Cursor, mart: str, days: Sequence[tuple[date, date]]) -> dict[str, Any]:
    """A daily mart's rows, days and newest capture over the days (its materialization)."""
    where, params = _within("partition_key", [(a.isoformat(), b.isoformat()) for a, b in days])
    row = cur.execute(
        "SELECT coalesce(sum(rows), 0), max(data_through) FROM mart_snapshots"  # noqa: S608 - constant column
        f" WHERE mart = ? AND {where}",
        [mart, *params],
    ).fetchone()
    return {
        "rows": int(row[0]) if row else 0,
        "days": sum((b - a).days for a, b in days),
        "data_through": str(row[1]) if row and row[1] else "",
    }


# Tables and columns the checks may name (identifiers cannot be bound).
_CHECKED: dict[str, frozenset[str]] = {
    "raw_engagement_snapshots": frozenset(
        {"workspace_id", "platform", "external_id", "captured_at", "ingest_batch", *METRICS}
    ),
    "raw_account_snapshots": frozenset(
        {
            "workspace_id",
            "platform",
            "external_id",
            "captured_at",
            "ingest_batch",
            "followers",
            "following",
            "posts_count",
        }
    ),
    "raw_posts": frozenset({"workspace_id", "platform", "external_id", "captured_at"}),
    "stg_engagement_deltas": frozenset(
        {"workspace_id", "platform", "external_id", "captured_at", *METRICS}
    ),
    "mart_post_hourly": frozenset(
        {"workspace_id", "platform", "external_id", "hour", "day", "engagements", *METRICS}
    ),
    "mart_post_daily": frozenset(
        {"workspace_id", "platform", "external_id", "day", "engagements", *METRICS}
    ),
    "mart_account_daily": frozenset(
        {
            "workspace_id",
            "platform",
            "account_external_id",
            "day",
            "impressions",
            "engagements",
        }
    ),
    "mart_best_times": frozenset(
        {"workspace_id", "platform", "account_external_id", "weekday", "hour", "posts", "ci_low"}
    ),
    "mart_creator_rankings": frozenset(
        {"workspace_id", "kind", "platform", "account_external_id", "posts"}
    ),
    "mart_viral_trends": frozenset({"workspace_id", "entity_type", "entity", "platform"}),
}


# -- reads for the ingest assets, the sensor and run_all ------------------------------------


def ingest_targets(cur: Cursor, platform: str) -> dict[str, dict[str, list[Row]]]:
    """Per workspace: its active connected accounts and tracked competitors on ``platform``.

    A read of the publishing tables (PubDB).
    """
    found: dict[str, dict[str, list[Row]]] = {}
    for row in fetch_all(
        cur,
        "SELECT id, workspace_id, handle, external_id FROM accounts"
        " WHERE platform = ? AND status = 'active' ORDER BY workspace_id, id",
        [platform],
    ):
        found.setdefault(row["workspace_id"], {"own": [], "competitor": []})["own"].append(row)
    for row in fetch_all(
        cur,
        "SELECT id, workspace_id, handle FROM tracked_competitors"
        " WHERE platform = ? AND deleted_at IS NULL ORDER BY workspace_id, id",
        [platform],
    ):
        found.setdefault(row["workspace_id"], {"own": [], "competitor": []})["competitor"].append(
            row
        )
    return found


@dataclass(frozen=True, slots=True)
class PublishedDestination(ResultRow):
    """One of Murmur's own posts as published on a platform, with its account."""

    workspace_id: str
    post_id: str
    account_id: str
    platform: str
    platform_post_id: str
    platform_url: str | None
    published_at: datetime
    text: str
    account_external_id: str


def published_destinations(
    cur: Cursor, since: datetime, until: datetime
) -> list[PublishedDestination]:
    """Murmur's own posts published in [since, until), with their account (PubDB's tables)."""
    return fetch_rows(
        cur,
        "SELECT d.workspace_id, d.post_id, d.account_id, d.platform, d.platform_post_id,"
        " d.platform_url, coalesce(d.published_at, p.published_at) AS published_at,"
        " p.text, a.external_id AS account_external_id"
        " FROM post_destinations d JOIN posts p ON p.id = d.post_id"
        " JOIN accounts a ON a.id = d.account_id"
        " WHERE d.platform_post_id IS NOT NULL AND d.status = 'published'"
        " AND coalesce(d.published_at, p.published_at) >= ?"
        " AND coalesce(d.published_at, p.published_at) < ?"
        " ORDER BY d.workspace_id, d.id",
        [since, until],
        PublishedDestination.make,
    )


def import_batches_after(cur: Cursor, after: tuple[datetime, str] | None) -> list[Row]:
    """Import batches (source import:*) finished after ``after`` (finished_at, id), oldest first."""
    sql = (
        "SELECT id, source, workspace_id, finished_at FROM ingest_batches"
        " WHERE source LIKE 'import:%'"
    )
    if after is None:
        return fetch_all(cur, f"{sql} ORDER BY finished_at, id")
    return fetch_all(
        cur,
        f"{sql} AND (finished_at > ? OR (finished_at = ? AND id > ?)) ORDER BY finished_at, id",
        [after[0], after[0], after[1]],
    )


def batch_days(cur: Cursor, batch_id: str) -> list[date]:
    """Capture days of one batch's rows: the days its import changes.

    A post's publication day is not among them: the marts hold no count of posts
    published (the read API counts ``dim_posts``), so an import of posts published over
    years rebuilds only the days its readings were captured on.
    """
    captured = fetch_all(
        cur,
        "SELECT DISTINCT CAST(captured_at AS DATE) AS day FROM ("
        " SELECT captured_at FROM raw_engagement_snapshots WHERE ingest_batch = ?"
        " UNION ALL SELECT captured_at FROM raw_account_snapshots WHERE ingest_batch = ?"
        " UNION ALL SELECT captured_at FROM raw_posts WHERE ingest_batch = ?)",
        [batch_id, batch_id, batch_id],
    )
    return sorted(r["day"] for r in captured)


RUN_MARKER = "pipeline_run"


def last_run(cur: Cursor) -> datetime | None:
    """When the last complete pipeline run (run_all) started."""
    value: datetime | None = fetch_value(
        cur,
        "SELECT computed_at FROM mart_snapshots WHERE mart = ? AND partition_key = 'all'",
        [RUN_MARKER],
    )
    return value


def mark_run_script(started_at: datetime, run_id: str, rows: int) -> str:
    """Record a complete run_all, the watermark for the next run's due days."""
    values = f"{literal(RUN_MARKER)}, 'all', {literal(started_at)}, {literal(rows)}, NULL"
    columns = "mart, partition_key, computed_at, rows, data_through, run_id"
    return (
        f"DELETE FROM mart_snapshots WHERE mart = {literal(RUN_MARKER)} AND partition_key = 'all';"  # noqa: S608 - literal() values only
        f"\nINSERT INTO mart_snapshots ({columns}) VALUES ({values}, {literal(run_id)});"
    )


def days_with_new_raw(cur: Cursor, since: datetime | None) -> list[date]:
    """UTC days of raw rows ingested after ``since`` (all days when None)."""
    days: set[date] = set()
    for table in ("raw_engagement_snapshots", "raw_account_snapshots", "raw_posts"):
        # A plain comparison, not `? IS NULL OR …`: only then do the row groups' zone maps
        # on ingested_at skip the history ingested before the last run.
        sql = f"SELECT DISTINCT CAST(captured_at AS DATE) AS day FROM {table}"  # noqa: S608
        rows = (
            fetch_all(cur, sql)
            if since is None
            else fetch_all(cur, f"{sql} WHERE ingested_at > ?", [since])
        )
        days.update(r["day"] for r in rows)
    return sorted(days)


def mart_rows(cur: Cursor, table: str, workspace_id: str) -> list[Row]:
    """A non-partitioned mart's rows for one workspace (insights read their inputs)."""
    if table not in _FILE_MARTS:
        raise ValueError(table)
    return fetch_all(cur, f"SELECT * FROM {table} WHERE workspace_id = ?", [workspace_id])  # noqa: S608
