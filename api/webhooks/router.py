"""Webhooks: register endpoints for post lifecycle events and read their delivery log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import (
    IdPath,
    OutboundPolicy,
    StoreDep,
    WorkspacesRead,
    WorkspacesWrite,
    sealer_of,
)
from api.pagination import PageParams
from api.request_state import SEALED_REPLY
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.schemas import Deleted, Page
from domain.webhooks import service
from domain.webhooks.schemas import (
    Delivery,
    DeliveryStatus,
    Endpoint,
    EndpointCreate,
    EndpointCreated,
    EndpointUpdate,
)

router = APIRouter(tags=["Webhooks"], route_class=MurmurRoute)


@router.get("/webhooks", response_model=Envelope[Page[Endpoint]], operation_id="list_webhooks")
def list_endpoints(ctx: WorkspacesRead, page: PageParams) -> Envelope[Page[Endpoint]]:
    """List webhook endpoints, newest first."""
    return ok(service.list_endpoints(ctx.tx, ctx.workspace_id, page))


@router.post(
    "/webhooks",
    response_model=Envelope[EndpointCreated],
    status_code=201,
    operation_id="create_webhook",
    dependencies=[SEALED_REPLY],
)
def create_endpoint(
    ctx: WorkspacesWrite, policy: OutboundPolicy, store: StoreDep, body: EndpointCreate
) -> Envelope[EndpointCreated]:
    """Register a webhook endpoint; the answer shows its signing secret, once."""
    return ok(service.create_endpoint(ctx.tx, ctx.workspace_id, body, sealer_of(store), policy))


@router.get(
    "/webhooks/{endpoint_id}", response_model=Envelope[Endpoint], operation_id="get_webhook"
)
def get_endpoint(ctx: WorkspacesRead, endpoint_id: IdPath) -> Envelope[Endpoint]:
    """Get one webhook endpoint (without its secret)."""
    return ok(service.get_endpoint(ctx.tx, ctx.workspace_id, endpoint_id))


@router.patch(
    "/webhooks/{endpoint_id}", response_model=Envelope[Endpoint], operation_id="update_webhook"
)
def update_endpoint(
    ctx: WorkspacesWrite, policy: OutboundPolicy, endpoint_id: IdPath, body: EndpointUpdate
) -> Envelope[Endpoint]:
    """Change a webhook endpoint's URL, events, description or enabled flag."""
    return ok(service.update_endpoint(ctx.tx, ctx.workspace_id, endpoint_id, body, policy))


@router.delete(
    "/webhooks/{endpoint_id}", response_model=Envelope[Deleted], operation_id="delete_webhook"
)
def delete_endpoint(ctx: WorkspacesWrite, endpoint_id: IdPath) -> Envelope[Deleted]:
    """Delete a webhook endpoint; its pending deliveries are not attempted again."""
    return ok(service.delete_endpoint(ctx.tx, ctx.workspace_id, endpoint_id))


@router.get(
    "/webhooks/{endpoint_id}/deliveries",
    response_model=Envelope[Page[Delivery]],
    operation_id="list_webhook_deliveries",
)
def list_deliveries(
    ctx: WorkspacesRead,
    endpoint_id: IdPath,
    page: PageParams,
    status: Annotated[DeliveryStatus | None, Query(description="Only this status.")] = None,
) -> Envelope[Page[Delivery]]:
    """List an endpoint's deliveries, newest first, with attempts and the latest response."""
    return ok(service.list_deliveries(ctx.tx, ctx.workspace_id, endpoint_id, status, page))
