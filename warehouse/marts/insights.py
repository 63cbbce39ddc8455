"""Reads for the insight assets: a workspace's window of the marts, every value bound."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from warehouse.marts.definitions import FILE_MARTS
from warehouse.rows import Cursor, Row, fetch_all
from warehouse.store import Lakehouse


def read(store: Lakehouse, sql: str, params: list[Any]) -> list[Row]:
    """Run a read of the lake in one transaction."""
    return store.run(lambda cur: fetch_all(cur, sql, params))


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
    store: Lakehouse,
    w: Window,
    kinds: list[str],
    *,
    published_in_window: bool = True,
    platform: str | None = None,
) -> list[Row]:
    """Posts with their totals in the window (growth plus first-seen totals) and handle.

    ``published_in_window``: only posts published in the window (best times, top content);
    else every post with activity in it, however old (rankings count growth in the window
    of posts published before it). ``platform``: that platform's posts only (each platform
    has a window of its own).
    """
    return read(
        store,
        "WITH m AS ("
        " SELECT workspace_id, platform, external_id, impressions, reach, views, engagements,"
        " NULL::TIMESTAMP AS first_read"
        " FROM mart_post_daily WHERE workspace_id = ?"
        "  AND day >= CAST(? AS DATE) AND day < CAST(? AS DATE) + 1"
        "  AND coalesce(platform = ?, true)"
        " UNION ALL"
        " SELECT workspace_id, platform, external_id, impressions, reach, views, engagements,"
        " captured_at AS first_read"
        " FROM mart_post_first_seen WHERE workspace_id = ?"
        "  AND captured_at >= ? AND captured_at < ? AND coalesce(platform = ?, true))"
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
            platform,
            w.workspace_id,
            w.start,
            w.end,
            platform,
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


def mart_rows(cur: Cursor, table: str, workspace_id: str) -> list[Row]:
    """A non-partitioned mart's rows for one workspace (insights read their inputs)."""
    if table not in FILE_MARTS:
        raise ValueError(table)
    return fetch_all(cur, f"SELECT * FROM {table} WHERE workspace_id = ?", [workspace_id])  # noqa: S608
