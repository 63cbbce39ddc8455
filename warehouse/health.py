"""The store's answers to readiness probes and metric scrapes: a few small statements each."""

# Both run often on every API replica (a load balancer probes every few seconds, Prometheus
# scrapes every 15 s), so each statement returns one row, reads a few columns of a few
# tables, and binds every value: one per half of the store.

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from warehouse.marts.runs import RUN_MARKER
from warehouse.posts import LIVE, sql_in
from warehouse.rows import Cursor, fetch_value
from warehouse.sql import later_of


def ping(cur: Cursor) -> None:
    """A trivial query that needs the publishing database and a table of it to answer."""
    cur.execute("SELECT count(*) FROM (SELECT 1 FROM workspaces LIMIT 1) AS one")
    cur.fetchall()


def ping_lake(cur: Cursor) -> None:
    """A trivial query that needs the lake's catalog and a table of it to answer."""
    cur.execute("SELECT count(*) FROM (SELECT 1 FROM mart_snapshots LIMIT 1) AS one")
    cur.fetchall()


@dataclass(frozen=True)
class Figures:
    """What a scrape reads from the store; ``None`` where nothing is recorded."""

    oldest_due_at: datetime | None  # when the longest-waiting claimable destination became due
    last_ingest_at: datetime | None  # the newest finished ingest or import batch
    last_mart_at: datetime | None  # the newest mart build
    # Publishing reliability (domain/analytics/publishing.py), every workspace's: destinations
    # publishing past twice their lease, and tokens expired or expiring within 7 days.
    stuck_destinations: int = 0
    tokens_expiring: int = 0


# A destination is claimable by a publishing worker when its post is live and its time has
# come, and it is waiting (pending, past its retry time) or held by a lease that expired: the
# predicate of warehouse/publishing.py's claim_due. It became due at the latest of its post's
# scheduled_at and its retry time, or when its lease expired. Publishing and pipeline tables
# are read by separate statements: they live in separate databases under ADR 0002.
def oldest_due_at(cur: Cursor, now: datetime) -> datetime | None:
    """When the longest-waiting claimable destination became due (naive UTC), if any."""
    became_due = later_of(cur, "p.scheduled_at", "coalesce(d.next_attempt_at, p.scheduled_at)")
    found = fetch_value(
        cur,
        f"SELECT min(CASE WHEN d.status = 'pending' THEN {became_due}"  # noqa: S608 - constants
        " ELSE d.lease_expires_at END)"
        " FROM post_destinations AS d JOIN posts AS p ON p.id = d.post_id"
        f" WHERE p.status IN {sql_in(LIVE)} AND p.scheduled_at <= ?"
        " AND ((d.status = 'pending' AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= ?))"
        "  OR (d.status = 'publishing' AND d.lease_expires_at < ?))",
        [now, now, now],
    )
    # SQLite hands a time out as its stored text.
    return datetime.fromisoformat(found) if isinstance(found, str) else found


def freshness(cur: Cursor) -> tuple[datetime | None, datetime | None]:
    """The newest finished ingest or import batch, and the newest mart build."""
    cur.execute(
        "SELECT (SELECT max(finished_at) FROM ingest_batches),"
        " (SELECT max(computed_at) FROM mart_snapshots WHERE mart <> ?)",
        [RUN_MARKER],
    )
    row = cur.fetchone()
    return (None, None) if row is None else (row[0], row[1])


# Below this many free bytes, a store that fails to open or write is blamed on a full disk.
DISK_FULL_BYTES = 1 << 20


def disk_full(path: Path | None) -> bool:
    """Whether the filesystem holding ``path`` has (next to) no space left."""
    if path is None:
        return False
    try:
        return shutil.disk_usage(path).free < DISK_FULL_BYTES
    except OSError:
        return False
