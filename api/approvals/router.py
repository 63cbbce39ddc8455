"""Approvals: list review batches; approve, reject or return individual items."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query

from api.deps import ApprovalsRead, ApprovalsWrite, IdPath
from api.pagination import PageParams
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.approvals import service
from domain.approvals.schemas import ApprovalAction, ApprovalBatch, ApprovalItem
from domain.schemas import Page

router = APIRouter(tags=["Approvals"], route_class=MurmurRoute)

IfMatch = Annotated[
    str | None,
    Header(
        max_length=512,
        description="The post's `ETag` (its `version`) as the reviewer read it: another is `409`.",
    ),
]


@router.get(
    "/approvals", response_model=Envelope[Page[ApprovalBatch]], operation_id="list_approval_batches"
)
def list_batches(
    ctx: ApprovalsRead,
    page: PageParams,
    status: Annotated[
        Literal["pending", "completed"] | None,
        Query(description="`pending`: batches with an item still to review."),
    ] = None,
) -> Envelope[Page[ApprovalBatch]]:
    """List review batches (one per UTC day), newest first, each with its items."""
    return ok(service.list_batches(ctx.tx, ctx.workspace_id, status, page))


@router.get(
    "/approvals/{batch_id}",
    response_model=Envelope[ApprovalBatch],
    operation_id="get_approval_batch",
)
def get_batch(ctx: ApprovalsRead, batch_id: IdPath) -> Envelope[ApprovalBatch]:
    """Get one review batch (`apb_…`) with its items and their events."""
    return ok(service.get_batch(ctx.tx, ctx.workspace_id, batch_id))


@router.post(
    "/approvals/{item_id}/action",
    response_model=Envelope[ApprovalItem],
    operation_id="act_on_approval_item",
)
def act(
    ctx: ApprovalsWrite, item_id: IdPath, body: ApprovalAction, if_match: IfMatch = None
) -> Envelope[ApprovalItem]:
    """Approve, reject (comment required) or return one approval item (`api_…`, not a batch id)."""
    return ok(service.act(ctx.tx, ctx.workspace_id, ctx.actor, item_id, body, if_match))
