"""Workspace resources that are soft-deleted: one way to create, find, list, change and delete them.

Destination presets, content automations, queues, inbox automations and webhook endpoints
are rows with ``id``, ``workspace_id``, ``created_at``, ``updated_at`` and ``deleted_at``. A
deleted one keeps its row, so its id stays taken and history that names it still resolves,
but it is no longer found, listed or changed. Column names come from the row type's fields
(checked here, never from a request); every value is a bound parameter. :func:`insert` also
serves the workspace's other rows stamped ``created_at`` and ``updated_at`` (queue items,
members, approval batches).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from warehouse.ids import new_id, utcnow
from warehouse.reads import newest_first, select_row
from warehouse.rows import Cursor, TableRow

R = TypeVar("R", bound=TableRow)

_LIVE = "workspace_id = ? AND id = ? AND deleted_at IS NULL"


def _names(row_type: type[TableRow], values: Mapping[str, Any]) -> list[str]:
    """The keys of ``values``, each a column of ``row_type`` (a typo fails here, not in SQL)."""
    fields = {field.name for field in dataclasses.fields(row_type)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - fields)
    if unknown:
        raise ValueError(f"{row_type.TABLE} has no column {', '.join(unknown)}")
    return list(values)


def insert(
    cur: Cursor, row_type: type[TableRow], prefix: str, workspace_id: str, values: Mapping[str, Any]
) -> str:
    """Create a resource of ``workspace_id`` with a new ``prefix_…`` id; returns the id."""
    now = utcnow()
    row = {
        "id": new_id(prefix),
        "workspace_id": workspace_id,
        **values,
        "created_at": now,
        "updated_at": now,
    }
    names = _names(row_type, row)
    cur.execute(
        f"INSERT INTO {row_type.TABLE} ({', '.join(names)})"  # noqa: S608 - checked names
        f" VALUES ({', '.join('?' for _ in names)})",
        list(row.values()),
    )
    return str(row["id"])


def get(cur: Cursor, row_type: type[R], workspace_id: str, ident: str) -> R | None:
    """The live resource ``ident`` of the workspace, or None (deleted or never there)."""
    return select_row(cur, row_type, f"WHERE {_LIVE}", [workspace_id, ident])


def page(
    cur: Cursor,
    row_type: type[R],
    workspace_id: str,
    *,
    after: str | None,
    limit: int,
    equal: Mapping[str, Any] | None = None,
) -> list[R]:
    """Live resources of the workspace, newest first, after the cursor ``after``.

    ``equal`` narrows by columns; a None value there means "any".
    """
    narrow = equal or {}
    terms = [("workspace_id = ?", workspace_id)]
    terms += [(f"{name} = ?", narrow[name]) for name in _names(row_type, narrow)]
    return newest_first(cur, row_type, terms, after=after, limit=limit, always="deleted_at IS NULL")


def update(
    cur: Cursor,
    row_type: type[TableRow],
    workspace_id: str,
    ident: str,
    values: Mapping[str, Any],
    *,
    now: datetime | None = None,
) -> bool:
    """Set ``values`` on the live resource (and ``updated_at``); False when it is not there."""
    names = _names(row_type, values)
    sets = ", ".join(f"{name} = ?" for name in names)
    cur.execute(
        f"UPDATE {row_type.TABLE} SET {sets}, updated_at = ?"  # noqa: S608 - checked names
        f" WHERE {_LIVE} RETURNING id",
        [*values.values(), now or utcnow(), workspace_id, ident],
    )
    return cur.fetchone() is not None


def delete(
    cur: Cursor,
    row_type: type[TableRow],
    workspace_id: str,
    ident: str,
    values: Mapping[str, Any] | None = None,
) -> bool:
    """Soft-delete the live resource, also setting ``values``; False when it is not there."""
    now = utcnow()
    gone = {**(values or {}), "deleted_at": now}
    return update(cur, row_type, workspace_id, ident, gone, now=now)
