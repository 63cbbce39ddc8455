"""Reads for the ingest assets, the import sensor and run_all, and the run marker they keep.

``ingest_targets`` and ``published_destinations`` read the publishing tables (PubDB); the
rest read the lake: which days have new raw rows, what rebuilding them costs, and when the
last complete run started.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from warehouse.marts.definitions import NewRows, day_start
from warehouse.rows import Cursor, ResultRow, Row, fetch_all, fetch_rows, fetch_value
from warehouse.sql import literal


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


def later_days(cur: Cursor, new: NewRows) -> list[date]:
    """Days after new rows that they change: their posts' later readings, their accounts' next."""
    cond, params = new.bound()
    key = "workspace_id, platform, external_id"
    days: set[date] = set()
    for table, extra in (
        ("raw_engagement_snapshots", ""),
        ("raw_account_snapshots", " AND followers IS NOT NULL"),
    ):
        # The bound is a constant, so the zone maps skip what was captured before the new
        # rows: an hourly run's new rows are its newest, and it scans nothing more.
        first = fetch_value(
            cur,
            f"SELECT min(captured_at) FROM {table} WHERE {cond}{extra}",  # noqa: S608
            params,
        )
        if first is None:
            continue
        bound = day_start(first.date())
        if table == "raw_engagement_snapshots":
            # a post's every later reading: each delta depends on the readings before it
            # (first sighting, running peak)
            sql = (
                f"WITH new AS (SELECT {key}, CAST(min(captured_at) AS DATE) AS first_day"  # noqa: S608
                f" FROM {table} WHERE {cond} GROUP BY ALL)"
                f" SELECT DISTINCT CAST(r.captured_at AS DATE) AS day FROM {table} r"
                f" JOIN new n USING ({key})"
                " WHERE r.captured_at >= ? AND CAST(r.captured_at AS DATE) > n.first_day"
            )
            found = fetch_all(cur, sql, [*params, bound + timedelta(days=1)])
        else:
            # an account's follower growth is against its previous reading only
            sql = (
                f"WITH touched AS (SELECT DISTINCT {key} FROM {table} WHERE {cond}{extra}),"  # noqa: S608
                f" readings AS (SELECT {key}, CAST(captured_at AS DATE) AS day,"
                f" bool_or({cond}) AS new FROM {table} SEMI JOIN touched USING ({key})"
                f" WHERE captured_at >= ?{extra} GROUP BY ALL)"
                " SELECT day FROM (SELECT day, new, lag(new) OVER"
                f" (PARTITION BY {key} ORDER BY day) AS after_new FROM readings)"
                " WHERE after_new AND NOT new"
            )
            found = fetch_all(cur, sql, [*params, *params, bound])
        days.update(r["day"] for r in found)
    return sorted(days)


def raw_rows_by_day(cur: Cursor, first: date, last: date) -> dict[date, int]:
    """Raw engagement readings per UTC day in [first, last]: what rebuilding a day costs."""
    rows = fetch_all(
        cur,
        "SELECT CAST(captured_at AS DATE) AS day, count(*) AS n FROM raw_engagement_snapshots"
        " WHERE captured_at >= ? AND captured_at < ? GROUP BY ALL",
        [day_start(first), day_start(last + timedelta(days=1))],
    )
    return {r["day"]: int(r["n"]) for r in rows}
