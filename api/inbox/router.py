"""Inbox: read conversations, respond, draft AI replies, manage inbox automations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import IdPath, InboxRead, InboxWrite, SettingsDep
from api.pagination import PageParams
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.inbox import drafts, service
from domain.inbox.schemas import (
    Automation,
    InboxAutomationCreate,
    InboxAutomationUpdate,
    InboxDraft,
    InboxItem,
    InboxItemDetail,
    ItemFilters,
    ItemUpdate,
    Respond,
    Responded,
)
from domain.schemas import Deleted, Page

router = APIRouter(tags=["Inbox"], route_class=MurmurRoute)


@router.get(
    "/inbox/items", response_model=Envelope[Page[InboxItem]], operation_id="list_inbox_items"
)
def list_items(
    ctx: InboxRead, page: PageParams, filters: Annotated[ItemFilters, Query()]
) -> Envelope[Page[InboxItem]]:
    """List conversations, newest activity first."""
    return ok(service.list_items(ctx.tx, ctx.workspace_id, page, filters))


@router.get(
    "/inbox/items/{item_id}",
    response_model=Envelope[InboxItemDetail],
    operation_id="get_inbox_item",
)
def get_item(ctx: InboxRead, item_id: IdPath) -> Envelope[InboxItemDetail]:
    """Get a conversation with its messages (oldest first) and newest drafts."""
    return ok(service.get_item(ctx.tx, ctx.workspace_id, item_id))


@router.patch(
    "/inbox/items/{item_id}", response_model=Envelope[InboxItem], operation_id="update_inbox_item"
)
def update_item(ctx: InboxWrite, item_id: IdPath, body: ItemUpdate) -> Envelope[InboxItem]:
    """Open, close or snooze a conversation; set its tags or assignee."""
    return ok(service.update_item(ctx.tx, ctx.workspace_id, item_id, body))


@router.post(
    "/inbox/items/{item_id}/respond",
    response_model=Envelope[Responded],
    status_code=201,
    operation_id="respond_to_inbox_item",
)
def respond(ctx: InboxWrite, item_id: IdPath, body: Respond) -> Envelope[Responded]:
    """Queue a reply for delivery on the platform; the conversation becomes replied."""
    return ok(service.respond(ctx.tx, ctx.workspace_id, item_id, body, ctx.actor))


@router.post(
    "/inbox/items/{item_id}/drafts",
    response_model=Envelope[InboxDraft],
    status_code=201,
    operation_id="create_inbox_draft",
)
def create_draft(ctx: InboxWrite, item_id: IdPath, settings: SettingsDep) -> Envelope[InboxDraft]:
    """Draft an AI reply to the latest inbound message; nothing is sent."""
    return ok(
        service.create_draft(ctx.tx, ctx.workspace_id, item_id, drafts.configured_drafter(settings))
    )


@router.get(
    "/inbox/items/{item_id}/drafts",
    response_model=Envelope[Page[InboxDraft]],
    operation_id="list_inbox_drafts",
)
def list_drafts(ctx: InboxRead, item_id: IdPath, page: PageParams) -> Envelope[Page[InboxDraft]]:
    """List a conversation's drafts, newest first."""
    return ok(service.list_drafts(ctx.tx, ctx.workspace_id, item_id, page))


@router.get(
    "/inbox/automations",
    response_model=Envelope[Page[Automation]],
    operation_id="list_inbox_automations",
)
def list_automations(
    ctx: InboxRead,
    page: PageParams,
    enabled: Annotated[bool | None, Query(description="Only enabled (or disabled) ones.")] = None,
) -> Envelope[Page[Automation]]:
    """List inbox automations, newest first."""
    return ok(service.list_automations(ctx.tx, ctx.workspace_id, enabled, page))


@router.post(
    "/inbox/automations",
    response_model=Envelope[Automation],
    status_code=201,
    operation_id="create_inbox_automation",
)
def create_automation(ctx: InboxWrite, body: InboxAutomationCreate) -> Envelope[Automation]:
    """Create an inbox automation."""
    return ok(service.create_automation(ctx.tx, ctx.workspace_id, body))


@router.get(
    "/inbox/automations/{automation_id}",
    response_model=Envelope[Automation],
    operation_id="get_inbox_automation",
)
def get_automation(ctx: InboxRead, automation_id: IdPath) -> Envelope[Automation]:
    """Get one inbox automation."""
    return ok(service.get_automation(ctx.tx, ctx.workspace_id, automation_id))


@router.patch(
    "/inbox/automations/{automation_id}",
    response_model=Envelope[Automation],
    operation_id="update_inbox_automation",
)
def update_automation(
    ctx: InboxWrite, automation_id: IdPath, body: InboxAutomationUpdate
) -> Envelope[Automation]:
    """Change an inbox automation; a trigger or action given replaces the old one."""
    return ok(service.update_automation(ctx.tx, ctx.workspace_id, automation_id, body))


@router.delete(
    "/inbox/automations/{automation_id}",
    response_model=Envelope[Deleted],
    operation_id="delete_inbox_automation",
)
def delete_automation(ctx: InboxWrite, automation_id: IdPath) -> Envelope[Deleted]:
    """Delete an inbox automation."""
    return ok(service.delete_automation(ctx.tx, ctx.workspace_id, automation_id))
