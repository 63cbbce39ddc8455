"""Outbound webhooks: endpoints, the outbox of lifecycle events, and deliveries with retries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from warehouse import resources
from warehouse.ids import new_id, utcnow
from warehouse.reads import newest_first, select_row, select_rows
from warehouse.rows import Cursor, TableRow, columns, fetch_all, fetch_rows
from warehouse.sealing import PREFIX, Sealer, UnsealError
from warehouse.sql import one_of, rows_of

# The lifecycle events an endpoint may subscribe to (docs/api/webhooks.md).
EventType = Literal[
    "post.created",
    "post.scheduled",
    "post.published",
    "post.failed",
    "post.canceled",
    "approval.approved",
    "approval.rejected",
    "approval.returned",
    "approval.superseded",
    "post.stuck",
    "account.token_expiring",
    "analytics.breakout",
]
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)


@dataclass(frozen=True, slots=True)
class EndpointRow(TableRow):
    """A URL a workspace's events are POSTed to, signed with ``secret``."""

    TABLE = "webhook_endpoints"

    id: str
    workspace_id: str
    url: str
    secret: str
    description: str | None
    event_types: list[str]
    enabled: bool
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None


@dataclass(frozen=True, slots=True)
class EventRow(TableRow):
    """A lifecycle event in the outbox (``payload`` is its JSON text)."""

    TABLE = "webhook_events"

    id: str
    workspace_id: str
    event_type: str
    payload: str
    created_at: datetime
    dispatched_at: datetime | None


@dataclass(frozen=True, slots=True)
class DeliveryRow(TableRow):
    """One event on its way to one endpoint, and how its attempts went."""

    TABLE = "webhook_deliveries"

    id: str
    event_id: str
    endpoint_id: str
    workspace_id: str
    event_type: str
    body: str
    status: str
    attempts: int
    next_attempt_at: datetime | None
    claimed_by: str | None
    lease_expires_at: datetime | None
    response_status: int | None
    response_ms: float | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime


_DELIVERY = columns(DeliveryRow)


# -- the outbox --------------------------------------------------------------------------------


def enqueue_event(cur: Cursor, workspace_id: str, event_type: str, payload: dict[str, Any]) -> str:
    """Record a lifecycle event for delivery to the workspace's endpoints; returns its ``evt_`` id.

    One plain INSERT in the caller's transaction: it commits or rolls back with the change
    it reports.
    """
    return enqueue_events(cur, workspace_id, [(event_type, payload)])[0]


def enqueue_events(
    cur: Cursor, workspace_id: str, events: list[tuple[str, dict[str, Any]]]
) -> list[str]:
    """Record several events, in order, in one INSERT; returns their ``evt_`` ids."""
    return enqueue_many(cur, [(workspace_id, kind, payload) for kind, payload in events])


def enqueue_many(
    cur: Cursor, events: list[tuple[str, str, dict[str, Any]]], ids: list[str] | None = None
) -> list[str]:
    """Record events of any workspaces ((workspace, type, payload)), in order, in one INSERT.

    ``ids``: the events' ids when the caller chose them (recorded beside, in the same
    transaction, as publishing reliability's alerts are); new ones otherwise.
    """
    unknown = [kind for _, kind, _ in events if kind not in EVENT_TYPES]
    if unknown:
        raise ValueError(f"unknown webhook event types {unknown!r}")
    if not events:
        return []
    now = utcnow()
    ids = list(ids) if ids is not None else [new_id("evt") for _ in events]
    if len(ids) != len(events):
        raise ValueError("one id per event")
    params: list[Any] = []
    for event_id, (workspace_id, kind, payload) in zip(ids, events, strict=True):
        params += [event_id, workspace_id, kind, json.dumps(payload, default=str), now]
    cur.execute(
        "INSERT INTO webhook_events (id, workspace_id, event_type, payload, created_at,"  # noqa: S608
        " dispatched_at) VALUES " + ", ".join(["(?, ?, ?, ?, ?, NULL)"] * len(events)),
        params,
    )
    return ids


def undispatched_events(cur: Cursor, limit: int = 200) -> list[EventRow]:
    return select_rows(cur, EventRow, "WHERE dispatched_at IS NULL ORDER BY id LIMIT ?", [limit])


def delivery_body(event: EventRow) -> str:
    """The exact JSON body POSTed for an event: id, type, created_at, workspace_id, data."""
    return json.dumps(
        {
            "id": event.id,
            "type": event.event_type,
            "created_at": event.created_at.isoformat(timespec="milliseconds") + "Z",
            "workspace_id": event.workspace_id,
            "data": json.loads(event.payload),
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def _deliveries(
    events: list[EventRow], endpoints: list[EndpointRow]
) -> list[tuple[str, str, str, str, str, str]]:
    """One new delivery (id, event, endpoint, workspace, type, body) per subscribed endpoint."""
    found: list[tuple[str, str, str, str, str, str]] = []
    for event in events:
        body = delivery_body(event)
        for endpoint in endpoints:
            if endpoint.workspace_id != event.workspace_id:
                continue
            if event.event_type not in endpoint.event_types:
                continue
            found.append(
                (new_id("whd"), event.id, endpoint.id, event.workspace_id, event.event_type, body)
            )
    return found


_DELIVERY_INSERT = (
    "INSERT INTO webhook_deliveries (id, event_id, endpoint_id, workspace_id, event_type, body,"
    " status, attempts, next_attempt_at, created_at, updated_at) VALUES "
)


def fan_out(
    cur: Cursor, events: list[EventRow], endpoints: list[EndpointRow], now: datetime
) -> None:
    """Create one delivery per (event, subscribed endpoint) and mark the events dispatched.

    Run in one transaction, so an event is never half fanned out; a second runner doing the
    same batch fails on the unique (event, endpoint) key and rolls back whole.
    """
    params: list[Any] = []
    for delivery in _deliveries(events, endpoints):
        params += [*delivery, "pending", 0, now, now, now]
    if params:
        cur.execute(_DELIVERY_INSERT + rows_of(11, len(params) // 11), params)
    cur.execute(
        f"UPDATE webhook_events SET dispatched_at = ? WHERE {one_of(cur, 'id')}"  # noqa: S608 - constants
        " AND dispatched_at IS NULL",
        [now, [event.id for event in events]],
    )


# -- endpoints ---------------------------------------------------------------------------------


def live_endpoints(cur: Cursor) -> list[EndpointRow]:
    """Every enabled endpoint, across workspaces (the fan-out's targets)."""
    return select_rows(cur, EndpointRow, "WHERE enabled AND deleted_at IS NULL ORDER BY id")


def insert_endpoint(
    cur: Cursor,
    workspace_id: str,
    *,
    url: str,
    secret: str,
    description: str | None,
    event_types: list[str],
    enabled: bool,
) -> str:
    values = {
        "url": url,
        "secret": secret,
        "description": description,
        "event_types": event_types,
        "enabled": enabled,
    }
    return resources.insert(cur, EndpointRow, "whk", workspace_id, values)


def has_plaintext_secrets(cur: Cursor) -> bool:
    """Whether any signing secret was stored before secrets were sealed."""
    cur.execute("SELECT 1 FROM webhook_endpoints WHERE secret NOT LIKE ? LIMIT 1", [f"{PREFIX}%"])
    return cur.fetchone() is not None


def seal_plaintext_secrets(cur: Cursor, *, sealer: Sealer) -> int:
    """Seal the signing secrets stored before they were sealed; how many."""
    cur.execute(
        "SELECT id, workspace_id, secret FROM webhook_endpoints WHERE secret NOT LIKE ?",
        [f"{PREFIX}%"],
    )
    found = cur.fetchall()
    for endpoint_id, workspace_id, secret in found:
        cur.execute(
            "UPDATE webhook_endpoints SET secret = ? WHERE id = ? AND secret = ?",
            [sealer.seal(str(secret), str(workspace_id)), endpoint_id, secret],
        )
    return len(found)


def reseal_secrets(cur: Cursor, *, sealer: Sealer, limit: int) -> int:
    """Re-seal under the current key up to ``limit`` secrets not sealed under it (sealed under
    a previous key, or before sealing); how many were found."""
    cur.execute(
        "SELECT id, workspace_id, secret FROM webhook_endpoints WHERE secret NOT LIKE ? LIMIT ?",
        [f"{sealer.prefix}%", limit],
    )
    found = cur.fetchall()
    for endpoint_id, workspace_id, secret in found:
        try:
            plain = sealer.unseal(str(secret), str(workspace_id))
        except UnsealError as exc:
            raise UnsealError(f"webhook endpoint {endpoint_id}: {exc}") from exc
        # Only if unchanged since read: a row rewritten meanwhile is found again if need be.
        cur.execute(
            "UPDATE webhook_endpoints SET secret = ? WHERE id = ? AND secret = ?",
            [sealer.seal(plain, str(workspace_id)), endpoint_id, secret],
        )
    return len(found)


def count_sealed_elsewhere(cur: Cursor, *, sealer: Sealer) -> int:
    """How many secrets are sealed under another key than the current one."""
    cur.execute(
        "SELECT count(*) FROM webhook_endpoints WHERE secret LIKE ? AND secret NOT LIKE ?",
        [f"{PREFIX}%", f"{sealer.prefix}%"],
    )
    return int(cur.fetchall()[0][0])


def get_endpoint(cur: Cursor, workspace_id: str, endpoint_id: str) -> EndpointRow | None:
    return resources.get(cur, EndpointRow, workspace_id, endpoint_id)


def list_endpoints(
    cur: Cursor, workspace_id: str, after: str | None, limit: int
) -> list[EndpointRow]:
    return resources.page(cur, EndpointRow, workspace_id, after=after, limit=limit)


def update_endpoint(
    cur: Cursor,
    workspace_id: str,
    endpoint_id: str,
    *,
    url: str,
    description: str | None,
    event_types: list[str],
    enabled: bool,
) -> None:
    values = {"url": url, "description": description, "event_types": event_types}
    resources.update(cur, EndpointRow, workspace_id, endpoint_id, {**values, "enabled": enabled})


def delete_endpoint(cur: Cursor, workspace_id: str, endpoint_id: str) -> None:
    # A deleted endpoint is also disabled, so no fan-out that read it earlier delivers to it.
    resources.delete(cur, EndpointRow, workspace_id, endpoint_id, {"enabled": False})


# -- deliveries --------------------------------------------------------------------------------


def claim_deliveries(
    cur: Cursor, worker: str, *, lease_seconds: float, limit: int, now: datetime | None = None
) -> list[DeliveryRow]:
    """Lease due pending deliveries to ``worker`` in one statement (one runner wins each)."""
    now = now or utcnow()
    return fetch_rows(
        cur,
        "UPDATE webhook_deliveries SET claimed_by = ?, lease_expires_at = ?,"  # noqa: S608 - constants
        " attempts = attempts + 1, updated_at = ?"
        " WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending'"
        "  AND next_attempt_at <= ? AND (lease_expires_at IS NULL OR lease_expires_at < ?)"
        "  ORDER BY next_attempt_at, id LIMIT ?)"
        " AND status = 'pending' AND (lease_expires_at IS NULL OR lease_expires_at < ?)"
        f" RETURNING {_DELIVERY}",
        [worker, now + timedelta(seconds=lease_seconds), now, now, now, limit, now],
        DeliveryRow.make,
    )


def endpoint_for_delivery(cur: Cursor, endpoint_id: str) -> EndpointRow | None:
    """The endpoint a delivery goes to (deleted or disabled ones included: the caller decides)."""
    return select_row(cur, EndpointRow, "WHERE id = ?", [endpoint_id])


def finish_delivery(
    cur: Cursor,
    delivery_id: str,
    worker: str,
    *,
    status: str,
    response_status: int | None,
    response_ms: float | None,
    error: str | None,
    next_attempt_at: datetime | None,
) -> bool:
    """Record an attempt's outcome if ``worker`` still holds the lease."""
    now = utcnow()
    cur.execute(
        "UPDATE webhook_deliveries SET status = ?, response_status = ?, response_ms = ?,"
        " last_error = ?, next_attempt_at = ?, claimed_by = NULL, lease_expires_at = NULL,"
        " delivered_at = CASE WHEN ? = 'succeeded' THEN ? ELSE delivered_at END, updated_at = ?"
        " WHERE id = ? AND claimed_by = ? RETURNING id",
        [
            status,
            response_status,
            response_ms,
            error,
            next_attempt_at,
            status,
            now,
            now,
            delivery_id,
            worker,
        ],
    )
    return cur.fetchone() is not None


def list_deliveries(
    cur: Cursor,
    workspace_id: str,
    endpoint_id: str,
    *,
    status: str | None,
    after: str | None,
    limit: int,
) -> list[DeliveryRow]:
    """An endpoint's deliveries, newest first."""
    terms = [
        ("endpoint_id = ?", endpoint_id),
        ("workspace_id = ?", workspace_id),
        ("status = ?", status),
    ]
    return newest_first(cur, DeliveryRow, terms, after=after, limit=limit)


# -- alerts: events of a state, sent once each ---------------------------------------------


@dataclass(frozen=True)
class Alert:
    """An event of a state (a stuck post, an expiring token, a breakout) to send once: its key
    (what makes it the same one), its event."""

    key: str
    workspace_id: str
    event_type: str
    subject_id: str
    event_id: str


def alerted(cur: Cursor, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` were sent already."""
    if not keys:
        return set()
    rows = fetch_all(
        cur,
        f"SELECT alert_key FROM webhook_alerts WHERE {one_of(cur, 'alert_key')}",  # noqa: S608 - constants
        [list(keys)],
    )
    return {str(row["alert_key"]) for row in rows}


def record_alerts(cur: Cursor, alerts: Sequence[Alert], now: datetime) -> set[str]:
    """Record alerts not recorded yet; the keys this statement recorded (a concurrent check's
    are left alone: the unique key makes the second one write nothing)."""
    if not alerts:
        return set()
    params: list[Any] = []
    for alert in alerts:
        params += [
            alert.key,
            alert.workspace_id,
            alert.event_type,
            alert.subject_id,
            alert.event_id,
            now,
        ]
    rows = fetch_all(
        cur,
        "INSERT INTO webhook_alerts (alert_key, workspace_id, event_type, subject_id,"  # noqa: S608 - constants
        f" event_id, created_at) VALUES {rows_of(6, len(alerts))}"
        " ON CONFLICT (alert_key) DO NOTHING RETURNING alert_key",
        params,
    )
    return {str(row["alert_key"]) for row in rows}


def send_once(cur: Cursor, found: Sequence[tuple[Alert, dict[str, Any]]], now: datetime) -> int:
    """Record the alerts of ``found`` that no one recorded meanwhile and enqueue each one's
    event (its payload) in the same transaction: each is sent once, and only if recorded
    (a concurrent check's are left alone); how many were sent."""
    recorded = record_alerts(cur, [alert for alert, _ in found], now)
    sent = [(alert, payload) for alert, payload in found if alert.key in recorded]
    enqueue_many(
        cur,
        [(alert.workspace_id, alert.event_type, payload) for alert, payload in sent],
        [alert.event_id for alert, _ in sent],
    )
    return len(sent)
