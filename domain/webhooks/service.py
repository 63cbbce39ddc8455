"""Webhook endpoints: register, change, delete; read the delivery log."""

from __future__ import annotations

import secrets

from connectors import outbound
from domain.errors import ValidationFailed, found
from domain.pagination import PageRequest
from domain.schemas import Deleted, Page, from_row
from domain.webhooks.schemas import (
    Delivery,
    Endpoint,
    EndpointCreate,
    EndpointCreated,
    EndpointUpdate,
)
from warehouse import webhooks as repo
from warehouse.ids import from_db
from warehouse.rows import Cursor
from warehouse.sealing import Sealer, hint_of


def endpoint_out(row: repo.EndpointRow) -> Endpoint:
    return from_row(Endpoint, row, secret_hint=hint_of(row.secret) + "…")


def delivery_out(row: repo.DeliveryRow) -> Delivery:
    # Only a pending delivery has a next attempt; a settled one keeps its last, unused.
    pending = row.next_attempt_at if row.status == "pending" else None
    return from_row(Delivery, row, next_attempt_at=from_db(pending))


def _check_url(url: str, policy: outbound.Policy) -> str:
    # No DNS here: names are resolved and checked again at every delivery.
    try:
        policy.check_url(url)
    except outbound.Refused as exc:
        raise ValidationFailed.on("url", exc.issue, str(exc)) from None
    return url


def _endpoint(cur: Cursor, workspace_id: str, endpoint_id: str) -> repo.EndpointRow:
    return found(repo.get_endpoint(cur, workspace_id, endpoint_id), "webhook endpoint", endpoint_id)


def create_endpoint(
    cur: Cursor,
    workspace_id: str,
    body: EndpointCreate,
    sealer: Sealer,
    policy: outbound.Policy = outbound.STRICT,
) -> EndpointCreated:
    secret = "whsec_" + secrets.token_urlsafe(32)
    endpoint_id = repo.insert_endpoint(
        cur,
        workspace_id,
        url=_check_url(body.url, policy),
        # Sealed at rest, bound to the workspace: the database alone cannot sign as a tenant.
        secret=sealer.seal(secret, workspace_id),
        description=body.description,
        event_types=list(dict.fromkeys(body.event_types)),
        enabled=body.enabled,
    )
    out = endpoint_out(_endpoint(cur, workspace_id, endpoint_id))
    return EndpointCreated(**out.model_dump(), secret=secret)


def list_endpoints(cur: Cursor, workspace_id: str, page: PageRequest) -> Page[Endpoint]:
    rows = repo.list_endpoints(cur, workspace_id, page.after_value(), page.fetch)
    return page.page(rows, endpoint_out, lambda r: [r.id])


def get_endpoint(cur: Cursor, workspace_id: str, endpoint_id: str) -> Endpoint:
    return endpoint_out(_endpoint(cur, workspace_id, endpoint_id))


def update_endpoint(
    cur: Cursor,
    workspace_id: str,
    endpoint_id: str,
    body: EndpointUpdate,
    policy: outbound.Policy = outbound.STRICT,
) -> Endpoint:
    given = body.model_fields_set
    if not given:
        raise ValidationFailed.on(
            "body", "empty", "Send at least one of url, event_types, description, enabled."
        )
    for name in ("url", "event_types", "enabled"):
        if name in given and getattr(body, name) is None:
            raise ValidationFailed.on(name, "not_nullable", f"{name} cannot be null.")
    row = _endpoint(cur, workspace_id, endpoint_id)
    repo.update_endpoint(
        cur,
        workspace_id,
        endpoint_id,
        url=_check_url(body.url, policy) if body.url is not None else row.url,
        description=body.description if "description" in given else row.description,
        event_types=(
            list(dict.fromkeys(body.event_types))
            if body.event_types is not None
            else row.event_types
        ),
        enabled=body.enabled if body.enabled is not None else row.enabled,
    )
    return get_endpoint(cur, workspace_id, endpoint_id)


def delete_endpoint(cur: Cursor, workspace_id: str, endpoint_id: str) -> Deleted:
    _endpoint(cur, workspace_id, endpoint_id)
    repo.delete_endpoint(cur, workspace_id, endpoint_id)
    return Deleted(id=endpoint_id)


def list_deliveries(
    cur: Cursor, workspace_id: str, endpoint_id: str, status: str | None, page: PageRequest
) -> Page[Delivery]:
    _endpoint(cur, workspace_id, endpoint_id)
    rows = repo.list_deliveries(
        cur, workspace_id, endpoint_id, status=status, after=page.after_value(), limit=page.fetch
    )
    return page.page(rows, delivery_out, lambda r: [r.id])
