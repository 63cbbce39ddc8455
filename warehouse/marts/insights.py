"""Reads for the insight assets: a workspace's window of the marts, every value bound."""

from __future__ import annotations

from collections.abc import Sequence
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
    platform: str | None = None  # one platform's window (each source ends at its own data)


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


# The windows of a read, one row each: a bound list of structs. A window names its platform
# (each source ends at its own newest data), or none for all of them.
_WINDOWS = (
    "win AS (SELECT w.platform, w.start, w.end FROM (SELECT unnest("
    'CAST(? AS STRUCT(platform VARCHAR, start TIMESTAMP, "end" TIMESTAMP)[])) AS w))'
)


def _windows_params(
    windows: Sequence[Window],
) -> tuple[list[dict[str, Any]], str, datetime, datetime]:
    """The bound windows, the join that picks a row's window, and the windows' overall span."""
    if not windows or len({w.workspace_id for w in windows}) != 1:
        raise ValueError("windows of one workspace")
    if len(windows) > 1 and any(w.platform is None for w in windows):
        raise ValueError("each of several windows names its platform")
    rows = [{"platform": w.platform, "start": w.start, "end": w.end} for w in windows]
    # an equality join when each window names its platform: a hash join, not a loop
    on = "x.platform = win.platform" if windows[0].platform is not None else "true"
    return rows, on, min(w.start for w in windows), max(w.end for w in windows)


def post_rates(
    store: Lakehouse,
    windows: Sequence[Window],
    kinds: list[str],
    *,
    published_in_window: bool = True,
) -> list[Row]:
    """Posts with their totals in their window (growth plus first-seen totals) and handle.

    ``windows``: one workspace's; each reads its platform's posts, or every platform's if it
    names none. ``published_in_window``: only posts published in their window (best times,
    top content); else every post with activity in it, however old (rankings count growth
    in the window of posts published before it).
    """
    bound, on, first, last = _windows_params(windows)
    workspace_id = windows[0].workspace_id
    return read(
        store,
        f"WITH {_WINDOWS}, m AS ("  # noqa: S608 - only constant fragments are rendered
        " SELECT x.workspace_id, x.platform, x.external_id, x.impressions, x.reach, x.views,"
        " x.engagements, NULL::TIMESTAMP AS first_read, win.start AS win_start, win.end AS win_end"
        f" FROM mart_post_daily x JOIN win ON {on}"
        "  AND x.day >= CAST(win.start AS DATE) AND x.day < CAST(win.end AS DATE) + 1"
        " WHERE x.workspace_id = ? AND x.day >= CAST(? AS DATE) AND x.day < CAST(? AS DATE) + 1"
        " UNION ALL"
        " SELECT x.workspace_id, x.platform, x.external_id, x.impressions, x.reach, x.views,"
        " x.engagements, x.captured_at AS first_read, win.start, win.end"
        f" FROM mart_post_first_seen x JOIN win ON {on}"
        "  AND x.captured_at >= win.start AND x.captured_at < win.end"
        " WHERE x.workspace_id = ? AND x.captured_at >= ? AND x.captured_at < ?)"
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
        " WHERE p.workspace_id = ?"
        " AND (NOT ? OR (p.published_at >= m.win_start AND p.published_at < m.win_end))"
        " AND list_contains(?, p.kind)"
        " GROUP BY ALL",
        [
            bound,
            workspace_id,
            first,
            last,
            workspace_id,
            first,
            last,
            workspace_id,
            published_in_window,
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


def ranked_accounts(store: Lakehouse, windows: Sequence[Window]) -> list[Row]:
    """Competitor, creator and own accounts seen in their window, with first and last followers."""
    bound, on, first, last = _windows_params(windows)
    return read(
        store,
        f"WITH {_WINDOWS}"  # noqa: S608 - only constant fragments are rendered
        " SELECT x.platform, x.external_id AS account_external_id, any_value(x.kind) AS kind,"
        " arg_max(x.handle, x.captured_at) AS handle,"
        " arg_max(x.category, x.captured_at) AS category,"
        " arg_min(x.followers, x.captured_at) FILTER (WHERE x.followers IS NOT NULL)"
        "   AS followers_first,"
        " arg_max(x.followers, x.captured_at) FILTER (WHERE x.followers IS NOT NULL)"
        "   AS followers_last,"
        " datediff('second', min(x.captured_at), max(x.captured_at)) / 86400.0 AS span_days"
        f" FROM raw_account_snapshots x JOIN win ON {on}"
        "  AND x.captured_at >= win.start AND x.captured_at < win.end"
        " WHERE x.workspace_id = ? AND x.captured_at >= ? AND x.captured_at < ?"
        " GROUP BY x.platform, x.external_id",
        [bound, windows[0].workspace_id, first, last],
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
