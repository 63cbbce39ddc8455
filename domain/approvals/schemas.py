"""Approval batches, items and their events as the API shows them."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from domain.schemas import Model, UtcDatetime
from warehouse.posts import PostStatus

ItemStatus = Literal["pending", "approved", "rejected", "returned"]
BatchStatus = Literal["pending", "completed"]


class ApprovalAction(Model):
    """The body of `POST /approvals/{item_id}/action`."""

    action: Literal["approve", "reject", "return"]
    comment: str | None = Field(
        default=None, max_length=2000, description="Required to reject; kept with the event."
    )
    post_version: str | None = Field(
        default=None,
        max_length=64,
        description="The post's `version` the reviewer read (or send it as `If-Match`): another"
        " is `409 INVALID_STATE` naming the current one.",
    )


class ApprovalEvent(BaseModel):
    id: str
    action: Literal["submit", "approve", "reject", "return", "cancel", "edit", "supersede"] = Field(
        description="`cancel`: the post was canceled while it waited; `edit`: what is reviewed"
        " changed while it waited; `supersede`: what was approved changed, and a new item"
        " (`superseded_by`) reviews it again."
    )
    actor: str = Field(description="The API key that acted.")
    comment: str | None
    created_at: UtcDatetime


class PostSummary(BaseModel):
    post_id: str
    text: str = Field(description="The first 280 characters of the post's text.")
    status: PostStatus
    scheduled_at: UtcDatetime | None
    version: str = Field(description="The post's `version` now: what an approval approves.")


class ApprovalItem(BaseModel):
    id: str = Field(examples=["api_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    batch_id: str
    status: ItemStatus
    actionable: bool = Field(
        description="Pending and its post still waits for approval (false once it was canceled)."
    )
    comment: str | None
    decided_by: str | None
    decided_at: UtcDatetime | None
    superseded_by: str | None = Field(
        description="The item that reviews the post again after what this one approved was edited."
    )
    post: PostSummary
    events: list[ApprovalEvent]
    created_at: UtcDatetime
    updated_at: UtcDatetime


class ApprovalBatch(BaseModel):
    id: str = Field(examples=["apb_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    name: str
    batch_date: date = Field(description="The UTC day whose submissions the batch holds.")
    status: BatchStatus = Field(description="`pending` while any item is actionable.")
    items: list[ApprovalItem]
    created_at: UtcDatetime
    updated_at: UtcDatetime
