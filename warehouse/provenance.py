"""Where an analytics answer's figures came from: the lake snapshot and the readings' sources.

A source is what the pipeline's windows call one (warehouse/marts/insights.py): an imported
file (its batch), or all of a connector's captures of a platform (a batch an hour, one
stream). Its readings are the engagement readings of the answer's posts in the answer's
window, counted in the lake's raw table: what was read, not what a mart kept of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from warehouse.cursor import Cursor
from warehouse.rows import Row, fetch_all, fetch_one


def endpoint(url: str) -> str:
    """A platform API's base URL as an answer may show it: without credentials or query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def snapshot_id(cur: Cursor) -> int | None:
    """The lake snapshot ``cur`` reads (its catalog's, as attached: now or ``as_of``)."""
    found = fetch_one(cur, "SELECT current_database() AS db")
    db = str(found["db"]) if found else ""
    if not db.isidentifier():  # an alias Murmur attached: never anything else
        return None
    row = fetch_one(cur, f"SELECT id FROM {db}.current_snapshot()")  # noqa: S608 - an identifier
    return None if row is None else int(row["id"])


@dataclass(frozen=True)
class Scope:
    """The readings behind an answer: a workspace's posts, narrowed, in a window.

    ``since``/``until`` bound the readings' ``captured_at`` (naive UTC; None: unbounded);
    ``published_from``/``published_to`` the posts' publication (a lifetime read).
    """

    workspace_id: str
    since: datetime | None = None
    until: datetime | None = None
    kinds: tuple[str, ...] | None = None
    platform: str | None = None
    accounts: tuple[str, ...] | None = None  # account external ids
    account_id: str | None = None  # a connected account (acc_…), through dim_accounts
    posts: tuple[str, ...] | None = None  # post external ids
    published_from: datetime | None = None
    published_to: datetime | None = None
    source_days: int | None = None  # only each source's last days (a ranking's window)


_SOURCES = """
WITH args AS (
    SELECT $ws::VARCHAR AS ws, $kinds::VARCHAR[] AS kinds, $platform::VARCHAR AS platform,
           $accounts::VARCHAR[] AS accounts, $account_id::VARCHAR AS account_id,
           $posts::VARCHAR[] AS posts, $pub_from::TIMESTAMP AS pub_from,
           $pub_to::TIMESTAMP AS pub_to, $since::TIMESTAMP AS since,
           $until::TIMESTAMP AS until, $source_days::INTEGER AS source_days
), posts AS (
    SELECT p.platform, p.external_id FROM dim_posts p, args
    WHERE p.workspace_id = args.ws
      AND (args.kinds IS NULL OR list_contains(args.kinds, p.kind))
      AND (args.platform IS NULL OR p.platform = args.platform)
      AND (args.accounts IS NULL OR list_contains(args.accounts, p.account_external_id))
      AND (args.account_id IS NULL OR p.account_external_id IN (
          SELECT a.external_id FROM dim_accounts a
          WHERE a.workspace_id = args.ws AND a.account_id = args.account_id))
      AND (args.posts IS NULL OR list_contains(args.posts, p.external_id))
      AND (args.pub_from IS NULL OR p.published_at >= args.pub_from)
      AND (args.pub_to IS NULL OR p.published_at < args.pub_to)
), readings AS (
    SELECT s.platform, s.source, s.ingest_batch, s.captured_at,
           CASE WHEN s.source LIKE 'import:%' THEN s.ingest_batch ELSE s.source END AS src
    FROM raw_engagement_snapshots s
    JOIN posts p ON p.platform = s.platform AND p.external_id = s.external_id, args
    WHERE s.workspace_id = args.ws
      AND (args.platform IS NULL OR s.platform = args.platform)
      AND (args.since IS NULL OR s.captured_at >= args.since)
      AND (args.until IS NULL OR s.captured_at < args.until)
), windowed AS (
    -- a ranking's window: the days before its own source's newest hour (insights' windows)
    SELECT r.*, date_trunc('hour', max(r.captured_at) OVER (PARTITION BY r.platform, r.src))
                + INTERVAL 1 HOUR AS data_end
    FROM readings r
), grouped AS (
    SELECT w.platform, w.src, any_value(w.source) AS source,
           arg_max(w.ingest_batch, w.captured_at) AS newest_batch,
           min(w.captured_at) AS first_read_at, max(w.captured_at) AS last_read_at,
           count(*) AS readings
    FROM windowed w, args
    WHERE args.source_days IS NULL OR w.captured_at >= w.data_end - to_days(args.source_days)
    GROUP BY w.platform, w.src
)
SELECT g.platform, g.source, g.newest_batch, g.first_read_at, g.last_read_at, g.readings,
       b.origin
FROM grouped g LEFT JOIN ingest_batches b ON b.id = g.newest_batch
ORDER BY g.platform, g.first_read_at, g.src
"""


def sources(cur: Cursor, scope: Scope) -> list[Row]:
    """Per source of ``scope``'s readings: platform, source, newest batch, origin, first and
    last reading, how many."""
    params: dict[str, Any] = {
        "ws": scope.workspace_id,
        "kinds": list(scope.kinds) if scope.kinds is not None else None,
        "platform": scope.platform,
        "accounts": list(scope.accounts) if scope.accounts is not None else None,
        "account_id": scope.account_id,
        "posts": list(scope.posts) if scope.posts is not None else None,
        "pub_from": scope.published_from,
        "pub_to": scope.published_to,
        "since": scope.since,
        "until": scope.until,
        "source_days": scope.source_days,
    }
    return fetch_all(cur, _SOURCES, params)
