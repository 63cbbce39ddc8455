"""Automation & queues: content automations, destination presets, queues and the calendar."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from api.deps import AutomationsRead, AutomationsWrite, IdPath, OutboundPolicy
from api.pagination import PageParams
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.automation import service
from domain.automation.schemas import (
    ContentAutomation,
    ContentAutomationCreate,
    ContentAutomationUpdate,
    DestinationPreset,
    EventCreate,
    EventKind,
    PresetCreate,
    PresetUpdate,
    Queue,
    QueueCreate,
    QueueItem,
    QueueItemCreate,
    QueueUpdate,
    ReorderItems,
    ScheduledEvent,
    SlotOccurrence,
    SlotsReplace,
)
from domain.schemas import Deleted, Page, UtcDatetime

router = APIRouter(tags=["Automation & queues"], route_class=MurmurRoute)

From = Annotated[
    UtcDatetime | None, Query(alias="from", description="Start (inclusive); default now.")
]
To = Annotated[UtcDatetime | None, Query(description="End (exclusive).")]
ItemStatus = Literal["queued", "scheduled", "published", "failed", "removed"]


# -- content automations -----------------------------------------------------------------------


@router.get("/content-automations", response_model=Envelope[Page[ContentAutomation]])
def list_content_automations(
    ctx: AutomationsRead,
    page: PageParams,
    enabled: Annotated[bool | None, Query(description="Only enabled or disabled ones.")] = None,
) -> Envelope[Page[ContentAutomation]]:
    """List the workspace's content automations, newest first."""
    return ok(service.list_automations(ctx.tx, ctx.workspace_id, enabled, page))


@router.post("/content-automations", response_model=Envelope[ContentAutomation], status_code=201)
def create_content_automation(
    ctx: AutomationsWrite, policy: OutboundPolicy, body: ContentAutomationCreate
) -> Envelope[ContentAutomation]:
    """Create a content automation and plan its next run."""
    return ok(service.create_automation(ctx.tx, ctx.workspace_id, body, policy))


@router.get("/content-automations/{automation_id}", response_model=Envelope[ContentAutomation])
def get_content_automation(
    ctx: AutomationsRead, automation_id: IdPath
) -> Envelope[ContentAutomation]:
    """Get one content automation."""
    return ok(service.get_automation(ctx.tx, ctx.workspace_id, automation_id))


@router.patch("/content-automations/{automation_id}", response_model=Envelope[ContentAutomation])
def update_content_automation(
    ctx: AutomationsWrite,
    policy: OutboundPolicy,
    automation_id: IdPath,
    body: ContentAutomationUpdate,
) -> Envelope[ContentAutomation]:
    """Change a content automation; its next run is computed again."""
    return ok(service.update_automation(ctx.tx, ctx.workspace_id, automation_id, body, policy))


@router.delete("/content-automations/{automation_id}", response_model=Envelope[Deleted])
def delete_content_automation(ctx: AutomationsWrite, automation_id: IdPath) -> Envelope[Deleted]:
    """Delete a content automation and cancel its planned run."""
    service.delete_automation(ctx.tx, ctx.workspace_id, automation_id)
    return ok(Deleted(id=automation_id))


# -- destination presets -----------------------------------------------------------------------


@router.get("/destination-presets", response_model=Envelope[Page[DestinationPreset]])
def list_destination_presets(
    ctx: AutomationsRead, page: PageParams
) -> Envelope[Page[DestinationPreset]]:
    """List the workspace's destination presets, newest first."""
    return ok(service.list_presets(ctx.tx, ctx.workspace_id, page))


@router.post("/destination-presets", response_model=Envelope[DestinationPreset], status_code=201)
def create_destination_preset(
    ctx: AutomationsWrite, body: PresetCreate
) -> Envelope[DestinationPreset]:
    """Create a named set of destinations with per-account options."""
    return ok(service.create_preset(ctx.tx, ctx.workspace_id, body))


@router.get("/destination-presets/{preset_id}", response_model=Envelope[DestinationPreset])
def get_destination_preset(ctx: AutomationsRead, preset_id: IdPath) -> Envelope[DestinationPreset]:
    """Get one destination preset."""
    return ok(service.get_preset(ctx.tx, ctx.workspace_id, preset_id))


@router.patch("/destination-presets/{preset_id}", response_model=Envelope[DestinationPreset])
def update_destination_preset(
    ctx: AutomationsWrite, preset_id: IdPath, body: PresetUpdate
) -> Envelope[DestinationPreset]:
    """Rename a destination preset or replace its destinations."""
    return ok(service.update_preset(ctx.tx, ctx.workspace_id, preset_id, body))


@router.delete("/destination-presets/{preset_id}", response_model=Envelope[Deleted])
def delete_destination_preset(ctx: AutomationsWrite, preset_id: IdPath) -> Envelope[Deleted]:
    """Delete a destination preset."""
    service.delete_preset(ctx.tx, ctx.workspace_id, preset_id)
    return ok(Deleted(id=preset_id))


# -- queues ------------------------------------------------------------------------------------


@router.get("/queues", response_model=Envelope[Page[Queue]])
def list_queues(ctx: AutomationsRead, page: PageParams) -> Envelope[Page[Queue]]:
    """List the workspace's queues, newest first."""
    return ok(service.list_queues(ctx.tx, ctx.workspace_id, page))


@router.post("/queues", response_model=Envelope[Queue], status_code=201)
def create_queue(ctx: AutomationsWrite, body: QueueCreate) -> Envelope[Queue]:
    """Create a queue with weekly slots in its time zone and default destinations."""
    return ok(service.create_queue(ctx.tx, ctx.workspace_id, body))


@router.get("/queues/{queue_id}", response_model=Envelope[Queue])
def get_queue(ctx: AutomationsRead, queue_id: IdPath) -> Envelope[Queue]:
    """Get one queue."""
    return ok(service.get_queue(ctx.tx, ctx.workspace_id, queue_id))


@router.patch("/queues/{queue_id}", response_model=Envelope[Queue])
def update_queue(ctx: AutomationsWrite, queue_id: IdPath, body: QueueUpdate) -> Envelope[Queue]:
    """Change a queue; new slots or a new time zone re-flow its items."""
    return ok(service.update_queue(ctx.tx, ctx.workspace_id, queue_id, body))


@router.delete("/queues/{queue_id}", response_model=Envelope[Deleted])
def delete_queue(ctx: AutomationsWrite, queue_id: IdPath) -> Envelope[Deleted]:
    """Delete a queue, removing its waiting items and canceling their posts."""
    service.delete_queue(ctx.tx, ctx.workspace_id, queue_id)
    return ok(Deleted(id=queue_id))


@router.get("/queues/{queue_id}/slots", response_model=Envelope[Page[SlotOccurrence]])
def list_queue_slots(
    ctx: AutomationsRead,
    queue_id: IdPath,
    page: PageParams,
    from_: From = None,
    to: To = None,
) -> Envelope[Page[SlotOccurrence]]:
    """List the queue's concrete slot times in [from, to) (default the next 14 days), ascending."""
    return ok(service.queue_slots(ctx.tx, ctx.workspace_id, queue_id, from_, to, page))


@router.put("/queues/{queue_id}/slots", response_model=Envelope[Queue])
def replace_queue_slots(
    ctx: AutomationsWrite, queue_id: IdPath, body: SlotsReplace
) -> Envelope[Queue]:
    """Replace the queue's weekly slots and re-flow its items."""
    return ok(service.replace_slots(ctx.tx, ctx.workspace_id, queue_id, body.slots))


@router.get("/queues/{queue_id}/items", response_model=Envelope[Page[QueueItem]])
def list_queue_items(
    ctx: AutomationsRead,
    queue_id: IdPath,
    page: PageParams,
    status: Annotated[
        ItemStatus | None, Query(description="Only this status; default all but removed.")
    ] = None,
) -> Envelope[Page[QueueItem]]:
    """List the queue's items by position."""
    return ok(service.list_items(ctx.tx, ctx.workspace_id, queue_id, status, page))


@router.post("/queues/{queue_id}/items", response_model=Envelope[QueueItem], status_code=201)
def add_queue_item(
    ctx: AutomationsWrite, queue_id: IdPath, body: QueueItemCreate
) -> Envelope[QueueItem]:
    """Add text or a draft post to the end of the queue; it takes the next free slot."""
    return ok(service.add_item(ctx.tx, ctx.workspace_id, ctx.actor, queue_id, body))


@router.post("/queues/{queue_id}/items/reorder", response_model=Envelope[list[QueueItem]])
def reorder_queue_items(
    ctx: AutomationsWrite, queue_id: IdPath, body: ReorderItems
) -> Envelope[list[QueueItem]]:
    """Put the waiting items in a new order and re-flow their slots."""
    return ok(service.reorder_items(ctx.tx, ctx.workspace_id, queue_id, body.item_ids))


@router.get("/queues/{queue_id}/items/{item_id}", response_model=Envelope[QueueItem])
def get_queue_item(ctx: AutomationsRead, queue_id: IdPath, item_id: IdPath) -> Envelope[QueueItem]:
    """Get one queue item."""
    return ok(service.get_item(ctx.tx, ctx.workspace_id, queue_id, item_id))


@router.delete("/queues/{queue_id}/items/{item_id}", response_model=Envelope[QueueItem])
def remove_queue_item(
    ctx: AutomationsWrite, queue_id: IdPath, item_id: IdPath
) -> Envelope[QueueItem]:
    """Remove an item (its post is canceled); the items after it move up."""
    return ok(service.remove_item(ctx.tx, ctx.workspace_id, queue_id, item_id))


# -- scheduled events --------------------------------------------------------------------------


@router.get("/scheduled-events", response_model=Envelope[Page[ScheduledEvent]])
def list_scheduled_events(
    ctx: AutomationsRead,
    page: PageParams,
    from_: From = None,
    to: To = None,
    kind: Annotated[EventKind | None, Query(description="Only this kind.")] = None,
    include_canceled: Annotated[bool, Query(description="Also canceled stored events.")] = False,
) -> Envelope[Page[ScheduledEvent]]:
    """The calendar in [from, to) (default the next 30 days), ascending by time."""
    return ok(
        service.list_events(ctx.tx, ctx.workspace_id, from_, to, kind, include_canceled, page)
    )


@router.post("/scheduled-events", response_model=Envelope[ScheduledEvent], status_code=201)
def create_scheduled_event(ctx: AutomationsWrite, body: EventCreate) -> Envelope[ScheduledEvent]:
    """Put a reminder on the calendar."""
    return ok(service.create_event(ctx.tx, ctx.workspace_id, body))


@router.post("/scheduled-events/{event_id}/cancel", response_model=Envelope[ScheduledEvent])
def cancel_scheduled_event(ctx: AutomationsWrite, event_id: IdPath) -> Envelope[ScheduledEvent]:
    """Cancel a stored event (reminder or automation run)."""
    return ok(service.cancel_event(ctx.tx, ctx.workspace_id, event_id))
