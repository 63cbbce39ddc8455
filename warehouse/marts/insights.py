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


@dataclass(frozen=True)
class AccountWindows:
    """Each account's ``days`` before the end of the source that read it last (at most ``now``)."""

    # Found by the read itself: an export's thousands of authors, bound one window each, cost
    # more than the read (5,350: 0.6 CPU-s of 1.0).
    workspace_id: str
    days: int
    now: datetime  # naive UTC


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


# A reading's source: one imported file (its batch), or all of a connector's captures of a
# platform (one batch an hour, read as one stream).
def _source(alias: str) -> str:
    batch, source = f"{alias}.ingest_batch", f"{alias}.source"
    return f"CASE WHEN {source} LIKE 'import:%' THEN {batch} ELSE {source} END"


# Each account's window (AccountWindows); bound in order: workspace, workspace, now, workspace,
# days.
_ACCOUNT_WINDOWS = f"""win AS (
    WITH readings AS (
        SELECT platform, source, ingest_batch, captured_at FROM raw_engagement_snapshots
        WHERE workspace_id = ?
        UNION ALL
        SELECT platform, source, ingest_batch, captured_at FROM raw_account_snapshots
        WHERE workspace_id = ?
    ), ends AS (
        SELECT r.platform, {_source("r")} AS src,
               least(date_trunc('hour', max(r.captured_at)) + INTERVAL 1 HOUR, ?) AS data_end
        FROM readings r GROUP BY ALL
    ), latest AS (
        -- an account read at one instant by two sources goes to the later-ending one
        SELECT a.platform, a.external_id AS account,
               arg_max(e.data_end, (a.captured_at, e.data_end)) AS data_end
        FROM raw_account_snapshots a
        JOIN ends e ON e.platform = a.platform AND e.src = {_source("a")}
        WHERE a.workspace_id = ?
        GROUP BY ALL
    )
    SELECT platform, account, data_end - to_days(CAST(? AS INTEGER)) AS start, data_end AS "end"
    FROM latest
)"""  # noqa: S608 - constant fragments


# The windows of a read, one row each: a bound list of structs. A window names its platform
# (each source ends at its own newest data), or none for all of them.
_WINDOWS = (
    "win AS (SELECT w.platform, w.start, w.end FROM (SELECT unnest("
    'CAST(? AS STRUCT(platform VARCHAR, start TIMESTAMP, "end" TIMESTAMP)[])) AS w))'
)


@dataclass(frozen=True)
class _Windows:
    """A read's windows: CTE, its values, the join picking a row's window, workspace, span."""

    cte: str
    params: list[Any]
    on: str
    workspace_id: str
    first: datetime
    last: datetime


def _windows_params(
    windows: Sequence[Window] | AccountWindows, account_col: str = "account_external_id"
) -> _Windows:
    """``windows`` as a read needs them; ``account_col`` names a row's account (rankings)."""
    if isinstance(windows, AccountWindows):
        ws = windows.workspace_id
        bound = [ws, ws, windows.now, ws, windows.days]
        on = f"x.platform = win.platform AND x.{account_col} = win.account"
        # the span: no later than now; an export's window starts however long ago it ends
        return _Windows(
            _ACCOUNT_WINDOWS, bound, on, windows.workspace_id, datetime(1, 1, 1), windows.now
        )
    if not windows or len({w.workspace_id for w in windows}) != 1:
        raise ValueError("windows of one workspace")
    if len(windows) > 1 and any(w.platform is None for w in windows):
        raise ValueError("each of several windows names its platform")
    rows = [{"platform": w.platform, "start": w.start, "end": w.end} for w in windows]
    # an equality join when each window names its platform: a hash join, not a loop
    on = "x.platform = win.platform" if windows[0].platform is not None else "true"
    return _Windows(
        _WINDOWS,
        [rows],
        on,
        windows[0].workspace_id,
        min(w.start for w in windows),
        max(w.end for w in windows),
    )


def post_rates(
    store: Lakehouse,
    windows: Sequence[Window] | AccountWindows,
    kinds: list[str],
    *,
    published_in_window: bool = True,
) -> list[Row]:
    """Posts with their totals in their window (growth plus first-seen totals) and handle.

    ``windows``: one workspace's; each reads its platform's posts, or every platform's if it
    names none; AccountWindows read each account's posts in its own window.
    ``published_in_window``: only posts published in their window (best times, top content);
    else every post with activity in it, however old (rankings count growth in the window of
    posts published before it).
    """
    w = _windows_params(windows)
    on, workspace_id, first, last = w.on, w.workspace_id, w.first, w.last
    return read(
        store,
        f"WITH {w.cte}, m AS ("  # noqa: S608 - only constant fragments are rendered
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
            *w.params,
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


def account_days(cur: Cursor, w: Window, kinds: Sequence[str]) -> list[Row]:
    """mart_account_daily rows of the window's days for accounts of ``kinds``, oldest first:
    the day holding the window's last instant included (a window ending 07:00 holds that
    day's first seven hours)."""
    return fetch_all(
        cur,
        "SELECT * FROM mart_account_daily WHERE workspace_id = ? AND day >= CAST(? AS DATE)"
        " AND day <= CAST(? AS DATE) AND list_contains(?, kind)"
        " ORDER BY platform, account_external_id, day",
        [w.workspace_id, w.start, w.end - timedelta(microseconds=1), list(kinds)],
    )


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


# Each post's trend windows of ``width`` ending at the window's end (window 0 the latest): its
# growth per window (the bucket [hour, hour + 1 h) lies in the window that contains its
# end), and its first sighting, a first-seen total kept apart by staging
# (mart_post_first_seen), with its window and its age then. Parameters: end, width (µs),
# workspace, start, end, start, end; end, width (µs), workspace, start, end, start, end;
# windows.
_TREND_WINDOWS = """
WITH g AS (
    SELECT platform, external_id, any_value(account_external_id) AS account_external_id,
           CAST(floor((epoch_us(CAST(? AS TIMESTAMP)) - epoch_us(hour) - 3600000000) / ?)
                AS INTEGER) AS win,
           sum(engagements) AS eng
    FROM mart_post_hourly
    WHERE workspace_id = ? AND day >= CAST(? AS DATE) AND day <= CAST(? AS DATE)
      AND hour >= ? AND hour < ?
    GROUP BY ALL
), gp AS (
    SELECT platform, external_id, any_value(account_external_id) AS account_external_id,
           list(win ORDER BY win) AS wins, list(eng ORDER BY win) AS engagements
    FROM g WHERE win >= 0 AND win < ? GROUP BY ALL
), f AS (
    SELECT platform, external_id, arg_min(account_external_id, captured_at) AS account_external_id,
           min(captured_at) AS first_at, arg_min(engagements, captured_at) AS first_engagements,
           CAST(floor((epoch_us(CAST(? AS TIMESTAMP))
                       - epoch_us(date_trunc('hour', min(captured_at))) - 3600000000) / ?)
                AS INTEGER) AS first_win
    FROM mart_post_first_seen
    WHERE workspace_id = ? AND day >= CAST(? AS DATE) AND day <= CAST(? AS DATE)
      AND captured_at >= ? AND captured_at < ?
    GROUP BY ALL
)
SELECT j.platform, j.external_id, j.account_external_id, d.published_at, d.hashtags,
       d.category, j.wins, j.engagements, j.first_win, j.first_engagements,
       -- the first sighting's age in hours; null when the publication is unknown
       (epoch_us(j.first_at) - epoch_us(d.published_at)) / 3600000000.0 AS first_age_hours
FROM (
    SELECT platform, external_id,
           coalesce(gp.account_external_id, f.account_external_id) AS account_external_id,
           gp.wins, gp.engagements, f.first_at, f.first_engagements, f.first_win
    FROM gp FULL OUTER JOIN f USING (platform, external_id)
) j
LEFT JOIN dim_posts d
  ON d.workspace_id = ? AND d.platform = j.platform AND d.external_id = j.external_id
ORDER BY j.platform, j.external_id
"""


def trend_windows(store: Lakehouse, w: Window, width: timedelta, windows: int) -> list[Row]:
    """Per post read in the ``windows`` trend windows of ``width`` ending at ``w.end``.

    ``wins`` and ``engagements`` are parallel lists of its growth per window (window 0 ends
    at ``w.end``; null without growth); ``first_win``, ``first_engagements`` and
    ``first_age_hours`` its first sighting there (its lifetime engagements at that reading and
    its age then), if any; hashtags, category and publication from its dimension row.
    """
    width_us = width // timedelta(microseconds=1)
    start = w.end - windows * width
    span = [w.workspace_id, start, w.end, start, w.end]
    return read(
        store,
        _TREND_WINDOWS,
        [w.end, width_us, *span, windows, w.end, width_us, *span, w.workspace_id],
    )


def ranked_accounts(store: Lakehouse, windows: Sequence[Window] | AccountWindows) -> list[Row]:
    """Competitor, creator and own accounts seen in their window, with first and last followers."""
    w = _windows_params(windows, account_col="external_id")
    return read(
        store,
        f"WITH {w.cte}"  # noqa: S608 - only constant fragments are rendered
        " SELECT x.platform, x.external_id AS account_external_id, any_value(x.kind) AS kind,"
        " arg_max(x.handle, x.captured_at) AS handle,"
        " arg_max(x.category, x.captured_at) AS category,"
        " arg_min(x.followers, x.captured_at) FILTER (WHERE x.followers IS NOT NULL)"
        "   AS followers_first,"
        " arg_max(x.followers, x.captured_at) FILTER (WHERE x.followers IS NOT NULL)"
        "   AS followers_last,"
        " datediff('second', min(x.captured_at), max(x.captured_at)) / 86400.0 AS span_days"
        f" FROM raw_account_snapshots x JOIN win ON {w.on}"
        "  AND x.captured_at >= win.start AND x.captured_at < win.end"
        " WHERE x.workspace_id = ? AND x.captured_at >= ? AND x.captured_at < ?"
        " GROUP BY x.platform, x.external_id",
        [*w.params, w.workspace_id, w.first, w.last],
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
