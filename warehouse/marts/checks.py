"""Reads for the asset checks: counts over a mart's days that a check compares or asserts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from warehouse.marts.definitions import ENGAGEMENT_METRICS, METRICS, NewRows, day_start
from warehouse.rows import Cursor, fetch_value

# A column and the half-open ranges of it a check covers: ("day", [(start, end), ...]).
Spans = tuple[str, Sequence[tuple[Any, Any]]]


# The insight marts' row rules, each a count of the rows that break it (0: the check passes).
BAD_ROWS = {
    "mart_best_times": "SELECT count(*) FROM mart_best_times WHERE published_at IS NULL"
    " OR external_id IS NULL OR NOT (engagement_rate >= 0) OR NOT (rate_index >= 0)",
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
    lo, hi = day_start(days[0][0]), day_start(days[-1][1])
    where, params = _within("captured_at", [(day_start(a), day_start(b)) for a, b in days])
    value = fetch_value(
        cur,
        "SELECT count(*) FROM (SELECT 1 FROM raw_engagement_snapshots"  # noqa: S608 - constant column
        f" WHERE captured_at >= ? AND captured_at < ? AND {where}"
        " GROUP BY workspace_id, platform, external_id, captured_at"
        " HAVING count(DISTINCT ingest_batch) > 1)",
        [lo, hi, *params],
    )
    return int(value or 0)


def newest_capture(cur: Cursor, table: str, since: datetime | None = None) -> datetime | None:
    """The newest captured_at in a raw table, of those at or after ``since`` (freshness)."""
    if table not in ("raw_engagement_snapshots", "raw_account_snapshots", "raw_posts"):
        raise ValueError(table)
    where, params = (" WHERE captured_at >= ?", [since]) if since is not None else ("", [])
    value: datetime | None = fetch_value(
        cur,
        f"SELECT max(captured_at) FROM {table}{where}",  # noqa: S608
        params,
    )
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


def later_rows(cur: Cursor, later: Sequence[tuple[date, date]], new: NewRows) -> tuple[int, int]:
    """(staged rows, posts) of the later ranges rebuilt for the new rows' posts alone."""
    cond, params = new.bound()
    where, spans = _within("s.day", later)
    # a later range's posts are those read anew before it (scripts.later_posts); no later
    # day holds a new reading, so before the range is before the row's day
    row = cur.execute(
        "SELECT count(*), count(DISTINCT (s.workspace_id, s.platform, s.external_id))"  # noqa: S608 - constant columns
        " FROM stg_engagement_deltas s JOIN (SELECT workspace_id, platform, external_id,"
        f" min(captured_at) AS first FROM raw_engagement_snapshots WHERE {cond} GROUP BY ALL)"
        f" n USING (workspace_id, platform, external_id) WHERE {where}"
        " AND n.first < CAST(s.day AS TIMESTAMP)",
        [*params, *spans],
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


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
        {"workspace_id", "platform", "account_external_id", "external_id"}
    ),
    "mart_creator_rankings": frozenset(
        {"workspace_id", "kind", "platform", "account_external_id", "posts"}
    ),
    "mart_viral_trends": frozenset(
        {"workspace_id", "entity_type", "entity", "platform", "window_end"}
    ),
    "mart_breakouts": frozenset({"workspace_id", "id"}),
}
