"""Workspaces, members and connected accounts as the API shows them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from domain.schemas import Named, UtcDatetime

PlatformName = Literal[
    "x", "instagram", "facebook", "linkedin", "tiktok", "youtube", "threads", "bluesky", "pinterest"
]
# One `Platform` schema in the OpenAPI document, referenced wherever a platform is named.
Platform = Annotated[PlatformName, Named("Platform")]


class Workspace(BaseModel):
    id: str = Field(examples=["ws_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    name: str
    timezone: str = Field(description="IANA time zone used for queues and calendars.")
    approval_required: bool = Field(description="Posts created here wait for approval.")
    is_test: bool
    created_at: UtcDatetime
    updated_at: UtcDatetime


class Account(BaseModel):
    id: str = Field(examples=["acc_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    platform: Platform
    handle: str
    display_name: str
    status: Literal["active", "needs_reconnection", "disconnected"]
    is_test: bool
    follower_count: int | None
    connected_at: UtcDatetime
