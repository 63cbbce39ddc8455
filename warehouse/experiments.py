"""Experiments' SQL: the experiments and their assigned posts (publishing database), and the
readings of those posts (lake)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from warehouse import resources
from warehouse.ids import utcnow
from warehouse.reads import select_rows
from warehouse.rows import Cursor, Row, TableRow, columns, fetch_all, fetch_value
from warehouse.sql import one_of


@dataclass(frozen=True, slots=True)
class ExperimentRow(TableRow):
    """An experiment as created: its accounts, arms, metric and plan, and whether it stopped."""

    TABLE = "experiments"

    id: str
    workspace_id: str
    name: str
    account_ids: list[str]
    timezone: str
    arms: list[dict[str, Any]]
    metric: str
    ends_at: datetime | None
    target_posts: int | None
    min_detectable_effect: float
    seed: int
    queue_id: str | None
    state: str
    stopped_at: datetime | None
    stop_reason: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class AssignmentRow(TableRow):
    """A post an experiment scheduled: the arm drawn for it and the slot it was given."""

    TABLE = "experiment_posts"

    post_id: str
    experiment_id: str
    workspace_id: str
    arm: str
    slot_at: datetime
    assigned_at: datetime


def insert_experiment(cur: Cursor, workspace_id: str, values: dict[str, Any]) -> str:
    stored = {
        **values,
        "account_ids": json.dumps(values["account_ids"]),
        "arms": json.dumps(values["arms"], separators=(",", ":")),
    }
    return resources.insert(cur, ExperimentRow, "exp", workspace_id, stored)


def get_experiment(cur: Cursor, workspace_id: str, experiment_id: str) -> ExperimentRow | None:
    return resources.get(cur, ExperimentRow, workspace_id, experiment_id)


def list_experiments(
    cur: Cursor, workspace_id: str, after: str | None, limit: int
) -> list[ExperimentRow]:
    return resources.page(cur, ExperimentRow, workspace_id, after=after, limit=limit)


def stop_experiment(
    cur: Cursor, workspace_id: str, experiment_id: str, state: str, reason: str
) -> None:
    now = utcnow()
    values = {"state": state, "stopped_at": now, "stop_reason": reason}
    resources.update(cur, ExperimentRow, workspace_id, experiment_id, values, now=now)


def running_on_queue(cur: Cursor, queue_id: str) -> list[ExperimentRow]:
    """The experiments that name the queue and were not stopped (their plan may be over)."""
    return select_rows(
        cur,
        ExperimentRow,
        "WHERE queue_id = ? AND state = 'running' AND deleted_at IS NULL ORDER BY id",
        [queue_id],
    )


def hold_for_draws(cur: Cursor, experiment_id: str) -> None:
    """Hold the experiment until this transaction ends, so that two writers never take the
    same draw or slot (SQLite has one writer at a time already)."""
    if cur.dialect != "sqlite":
        cur.execute("SELECT id FROM experiments WHERE id = ? FOR UPDATE", [experiment_id])


def assignments(cur: Cursor, experiment_id: str) -> list[AssignmentRow]:
    """The experiment's posts, by slot."""
    return select_rows(
        cur, AssignmentRow, "WHERE experiment_id = ? ORDER BY slot_at, post_id", [experiment_id]
    )


def assignment_count(cur: Cursor, experiment_id: str) -> int:
    found = fetch_value(
        cur, "SELECT count(*) FROM experiment_posts WHERE experiment_id = ?", [experiment_id]
    )
    return int(found or 0)


def assignments_of_posts(cur: Cursor, post_ids: Sequence[str]) -> dict[str, AssignmentRow]:
    """The assignment of each post that has one."""
    if not post_ids:
        return {}
    rows = select_rows(
        cur, AssignmentRow, f"WHERE {one_of(cur, 'post_id')}", [json.dumps(list(post_ids))]
    )
    return {row.post_id: row for row in rows}


def insert_assignments(cur: Cursor, rows: Sequence[AssignmentRow]) -> None:
    for row in rows:
        cur.execute(
            f"INSERT INTO experiment_posts ({columns(AssignmentRow)})"  # noqa: S608 - constants
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                row.post_id,
                row.experiment_id,
                row.workspace_id,
                row.arm,
                row.slot_at,
                row.assigned_at,
            ],
        )


# -- the lake ---------------------------------------------------------------------------------

# One row per reading of each platform-side post of the given Murmur posts: engagements,
# impressions and views each at their running peak (a counter that dips and comes back counts
# its growth once, as the marts do); the platform's own publication time.
_READINGS = """
WITH posts AS (
    SELECT platform, external_id,
           arg_max(account_external_id, captured_at) AS account_external_id,
           arg_max(post_id, captured_at) AS post_id,
           arg_max(published_at, captured_at) AS published_at
    FROM raw_posts
    WHERE workspace_id = ? AND kind = 'own' AND list_contains(?::VARCHAR[], post_id)
    GROUP BY ALL
),
readings AS (
    SELECT s.platform, s.external_id, s.captured_at,
           coalesce(s.impressions, 0) AS impressions, coalesce(s.views, 0) AS views,
           coalesce(s.likes, 0) AS likes, coalesce(s.comments, 0) AS comments,
           coalesce(s.shares, 0) AS shares, coalesce(s.saves, 0) AS saves,
           coalesce(s.clicks, 0) AS clicks
    FROM raw_engagement_snapshots s
    JOIN posts p USING (platform, external_id)
    WHERE s.workspace_id = ?
    QUALIFY row_number() OVER (
        PARTITION BY s.platform, s.external_id, s.captured_at ORDER BY s.ingested_at DESC) = 1
)
SELECT p.post_id, r.platform, r.external_id, p.account_external_id, p.published_at,
       r.captured_at,
       max(r.likes) OVER w + max(r.comments) OVER w + max(r.shares) OVER w
         + max(r.saves) OVER w + max(r.clicks) OVER w AS engagements,
       max(r.impressions) OVER w AS impressions, max(r.views) OVER w AS views
FROM readings r JOIN posts p USING (platform, external_id)
WINDOW w AS (PARTITION BY r.platform, r.external_id ORDER BY r.captured_at
             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
ORDER BY p.post_id, r.platform, r.external_id, r.captured_at
"""


def post_readings(cur: Cursor, workspace_id: str, post_ids: Sequence[str]) -> list[Row]:
    """Every reading of the platform-side posts of ``post_ids``, oldest first per post."""
    if not post_ids:
        return []
    return fetch_all(cur, _READINGS, [workspace_id, list(post_ids), workspace_id])
