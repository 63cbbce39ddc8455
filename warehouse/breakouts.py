"""Breakouts' SQL: own posts' readings for the pipeline, the mart's pages for the API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from warehouse.rows import Cursor, Row, fetch_all

# One row per own post and reading: its engagements so far (each counter at its running peak,
# summed: a counter that dips and comes back counts its growth once, as the marts do).
_READINGS = """
WITH posts AS (
    SELECT workspace_id, platform, external_id,
           arg_max(account_external_id, captured_at) AS account_external_id,
           arg_max(post_id, captured_at) AS post_id,
           arg_max(published_at, captured_at) AS published_at
    FROM raw_posts
    WHERE kind = 'own' AND published_at >= ? AND published_at <= ?
    GROUP BY ALL
),
readings AS (
    SELECT s.workspace_id, s.platform, s.external_id, s.captured_at,
           coalesce(s.likes, 0) AS likes, coalesce(s.comments, 0) AS comments,
           coalesce(s.shares, 0) AS shares, coalesce(s.saves, 0) AS saves,
           coalesce(s.clicks, 0) AS clicks
    FROM raw_engagement_snapshots s
    JOIN posts p USING (workspace_id, platform, external_id)
    WHERE s.captured_at <= ?
    QUALIFY row_number() OVER (
        PARTITION BY s.workspace_id, s.platform, s.external_id, s.captured_at
        ORDER BY s.ingested_at DESC) = 1
)
SELECT r.workspace_id, r.platform, r.external_id, p.account_external_id, p.post_id,
       p.published_at, r.captured_at,
       max(r.likes) OVER w + max(r.comments) OVER w + max(r.shares) OVER w
         + max(r.saves) OVER w + max(r.clicks) OVER w AS engagements
FROM readings r JOIN posts p USING (workspace_id, platform, external_id)
WINDOW w AS (PARTITION BY r.workspace_id, r.platform, r.external_id ORDER BY r.captured_at
             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
ORDER BY r.workspace_id, r.platform, r.external_id, r.captured_at
"""


def own_post_readings(cur: Cursor, published_from: datetime, until: datetime) -> list[Row]:
    """Every own post published in [published_from, until] with its readings up to
    ``until``, oldest first per post (naive UTC)."""
    return fetch_all(cur, _READINGS, [published_from, until, until])


def list_breakouts(
    cur: Cursor,
    workspace_id: str,
    *,
    platform: str | None,
    external_ids: list[str] | None,
    since: datetime | None,
    after: list[Any] | None,
    limit: int,
) -> list[Row]:
    """The workspace's breakouts, newest first (started_at, then id, descending), after
    ``after``; ``external_ids``: only those accounts' posts."""
    position = after or [None, None]
    return fetch_all(
        cur,
        "SELECT * FROM mart_breakouts WHERE workspace_id = ?"
        " AND (? IS NULL OR platform = ?)"
        " AND (?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], account_external_id))"
        " AND (?::TIMESTAMP IS NULL OR started_at >= ?::TIMESTAMP)"
        " AND (?::TIMESTAMP IS NULL OR (started_at, id) < (?::TIMESTAMP, ?))"
        " ORDER BY started_at DESC, id DESC LIMIT ?",
        [
            workspace_id,
            platform,
            platform,
            external_ids,
            external_ids,
            since,
            since,
            position[0],
            position[0],
            position[1],
            limit,
        ],
    )


def judged_workspaces(cur: Cursor) -> list[str]:
    """Workspaces the mart holds breakouts of (a run replaces theirs, read or not)."""
    return [
        str(r["workspace_id"])
        for r in fetch_all(cur, "SELECT DISTINCT workspace_id FROM mart_breakouts")
    ]
