"""The store's answers to readiness probes and metric scrapes: one small statement each."""

# Both run often on every API replica (a load balancer probes every few seconds, Prometheus
# scrapes every 15 s), so each is one statement that returns one row, reads a few columns
# of a few tables, and binds every value.

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from warehouse.marts import RUN_MARKER
from warehouse.posts import LIVE, sql_in
from warehouse.rows import Cursor


def ping(cur: Cursor) -> None:
    """A trivial query that needs the store's catalog and a table to answer."""
    cur.execute("SELECT count(*) FROM (SELECT 1 FROM workspaces LIMIT 1)")
    cur.fetchall()


@dataclass(frozen=True)
class Figures:
    """What a scrape reads from the store; ``None`` where nothing is recorded."""

    oldest_due_at: datetime | None  # when the longest-waiting claimable destination became due
    last_ingest_at: datetime | None  # the newest finished ingest or import batch
    last_mart_at: datetime | None  # the newest mart build


# A destination is claimable by a publishing worker when its post is live and its time has
# come, and it is waiting (pending, past its retry time) or held by a lease that expired: the
# predicate of warehouse/publishing.py's claim_due. It became due at the latest of its post's
# scheduled_at and its retry time, or when its lease expired.
_FIGURES = (
    "SELECT"  # noqa: S608 - constants
    " (SELECT min(CASE WHEN d.status = 'pending'"
    "    THEN greatest(p.scheduled_at, coalesce(d.next_attempt_at, p.scheduled_at))"
    "    ELSE d.lease_expires_at END)"
    "  FROM post_destinations AS d JOIN posts AS p ON p.id = d.post_id"
    f"  WHERE p.status IN {sql_in(LIVE)} AND p.scheduled_at <= ?"
    "  AND ((d.status = 'pending' AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= ?))"
    "   OR (d.status = 'publishing' AND d.lease_expires_at < ?))) AS oldest_due_at,"
    " (SELECT max(finished_at) FROM ingest_batches) AS last_ingest_at,"
    " (SELECT max(computed_at) FROM mart_snapshots WHERE mart <> ?) AS last_mart_at"
)


def figures(cur: Cursor, now: datetime) -> Figures:
    """Publishing backlog and pipeline freshness as of ``now`` (naive UTC), in one statement."""
    cur.execute(_FIGURES, [now, now, now, RUN_MARKER])
    row = cur.fetchone()
    if row is None:
        return Figures(None, None, None)
    return Figures(row[0], row[1], row[2])
