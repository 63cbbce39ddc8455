"""Content automations, destination presets, queues, queue items and scheduled events."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from domain.posts.options import DestinationOptions
from domain.schemas import Model, UtcDatetime, omitted

Name = Annotated[str, Field(min_length=1, max_length=200)]
Destination = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="A connected account's id, or a platform name with one connected account.",
    ),
]
TimeZone = Annotated[
    str, Field(min_length=1, max_length=64, examples=["Europe/Paris"], description="IANA zone.")
]
Text = Annotated[str, Field(min_length=1, max_length=63206)]
Ident = Annotated[str, Field(min_length=1, max_length=64)]

# -- content automations -----------------------------------------------------------------------


class EvergreenPost(Model):
    text: Text
    media_ids: list[Ident] = Field(default_factory=list, max_length=20)


class FeedSource(Model):
    type: Literal["feed"]
    url: str = Field(
        min_length=1,
        max_length=2048,
        description="An http(s) RSS or Atom feed URL, on a public host (see the webhooks' `url`).",
    )


class EvergreenSource(Model):
    type: Literal["evergreen"]
    posts: list[EvergreenPost] = Field(min_length=1, max_length=500)


class TemplateSource(Model):
    type: Literal["template"]
    template: str = Field(
        min_length=1,
        max_length=63206,
        description="Text with plain `{name}` placeholders (no format specs, conversions, "
        "attributes or indexes); `{{` and `}}` for braces.",
    )
    rows: list[dict[str, Any]] = Field(
        min_length=1, max_length=1000, description="One object per post, giving every placeholder."
    )


Source = Annotated[FeedSource | EvergreenSource | TemplateSource, Field(discriminator="type")]


class Schedule(Model):
    cron: str = Field(
        min_length=1,
        max_length=200,
        examples=["30 9 * * 1-5"],
        description="minute hour day-of-month month day-of-week, in `timezone`'s wall clock.",
    )
    timezone: TimeZone


class Target(Model):
    """Exactly one of `queue_id` and `platforms`."""

    queue_id: Ident | None = None
    platforms: list[Destination] | None = Field(default=None, min_length=1, max_length=20)

    @model_validator(mode="after")
    def _exactly_one(self) -> Target:
        if (self.queue_id is None) == (self.platforms is None):
            raise ValueError("give exactly one of queue_id and platforms")
        return self


class ContentAutomationCreate(Model):
    name: Name
    enabled: bool = True
    source: Source
    schedule: Schedule
    target: Target


class ContentAutomationUpdate(Model):
    """Fields to change; `source`, `schedule` and `target` are replaced whole; none takes null."""

    name: Name | None = omitted()
    enabled: bool | None = omitted()
    source: Source | None = omitted()
    schedule: Schedule | None = omitted()
    target: Target | None = omitted()


class AutomationTarget(BaseModel):
    queue_id: str | None
    platforms: list[str] | None = Field(description="Resolved account ids.")


class ContentAutomation(BaseModel):
    id: str = Field(examples=["ca_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    name: str
    enabled: bool
    source: dict[str, Any]
    schedule: dict[str, Any]
    target: AutomationTarget
    next_run_at: UtcDatetime | None = Field(
        description="Next cron match after now, in UTC; null when disabled."
    )
    last_run_at: UtcDatetime | None
    created_at: UtcDatetime
    updated_at: UtcDatetime


# -- destination presets -----------------------------------------------------------------------


class PresetDestinationIn(Model):
    account_id: Ident
    options: DestinationOptions = Field(
        default_factory=dict, description="The platform's options; at most 16 KiB as JSON."
    )


class PresetCreate(Model):
    name: Name
    destinations: list[PresetDestinationIn] = Field(min_length=1, max_length=50)


class PresetUpdate(Model):
    name: Name | None = omitted()
    destinations: list[PresetDestinationIn] | None = omitted(min_length=1, max_length=50)


class PresetDestination(BaseModel):
    account_id: str
    platform: str
    options: dict[str, Any]


class DestinationPreset(BaseModel):
    id: str = Field(examples=["dp_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    name: str
    destinations: list[PresetDestination]
    created_at: UtcDatetime
    updated_at: UtcDatetime


# -- queues ------------------------------------------------------------------------------------


class SlotIn(Model):
    weekday: int = Field(ge=0, le=6, description="0 Monday … 6 Sunday.")
    time: str = Field(
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$", examples=["09:30"], description="24-hour HH:MM."
    )


Slots = Annotated[list[SlotIn], Field(max_length=500)]


class QueueCreate(Model):
    name: Name
    timezone: TimeZone
    slots: Slots = Field(default_factory=list)
    destinations: list[Destination] = Field(min_length=1, max_length=20)


class QueueUpdate(Model):
    """Fields to change (none takes null); a new `timezone` or `slots` re-flows the queue."""

    name: Name | None = omitted()
    timezone: TimeZone | None = omitted()
    slots: Slots | None = omitted()
    destinations: list[Destination] | None = omitted(min_length=1, max_length=20)


class SlotsReplace(Model):
    slots: Slots


class Slot(BaseModel):
    weekday: int
    time: str


class QueueDestination(BaseModel):
    account_id: str
    platform: str


class Queue(BaseModel):
    id: str = Field(examples=["q_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    name: str
    timezone: str
    slots: list[Slot]
    destinations: list[QueueDestination]
    active_items: int = Field(description="Items queued or scheduled.")
    created_at: UtcDatetime
    updated_at: UtcDatetime


class SlotOccurrence(BaseModel):
    starts_at: UtcDatetime = Field(description="The slot's instant in UTC.")
    local_time: str = Field(
        description="The same instant in the queue's zone, ISO 8601 with its offset."
    )
    weekday: int
    time: str = Field(description="The weekly slot (HH:MM) this occurrence comes from.")
    taken: bool
    item_id: str | None


# -- queue items -------------------------------------------------------------------------------


class QueueItemCreate(Model):
    """Either `text` (a new post to the queue's destinations) or `post_id` (a draft post)."""

    text: Text | None = None
    media_ids: list[Ident] | None = Field(default=None, max_length=20)
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, max_length=50
    )
    post_id: Ident | None = None

    @model_validator(mode="after")
    def _one_source(self) -> QueueItemCreate:
        if (self.text is None) == (self.post_id is None):
            raise ValueError("give exactly one of text and post_id")
        if self.post_id is not None and (self.media_ids is not None or self.tags is not None):
            raise ValueError("media_ids and tags go with text, not post_id")
        return self


class ReorderItems(Model):
    item_ids: list[Ident] = Field(min_length=1, max_length=1000)


class QueueItem(BaseModel):
    id: str = Field(examples=["qi_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    queue_id: str
    post_id: str
    position: int
    status: Literal["queued", "scheduled", "published", "failed", "removed"]
    slot_at: UtcDatetime | None
    text: str
    post_status: str
    created_at: UtcDatetime
    updated_at: UtcDatetime


# -- scheduled events --------------------------------------------------------------------------

EventKind = Literal["publication", "automation_run", "queue_slot", "reminder"]
RefType = Literal["post", "content_automation", "queue_item"]


class EventCreate(Model):
    title: Name
    starts_at: UtcDatetime
    kind: Literal["reminder"] = "reminder"
    ref_type: RefType | None = None
    ref_id: Ident | None = None

    @model_validator(mode="after")
    def _ref_pair(self) -> EventCreate:
        if (self.ref_type is None) != (self.ref_id is None):
            raise ValueError("give ref_type and ref_id together")
        return self


class ScheduledEvent(BaseModel):
    id: str
    kind: EventKind
    title: str
    starts_at: UtcDatetime
    status: str = Field(
        description=(
            "Stored events: scheduled, canceled or done; derived ones: their source's status."
        )
    )
    ref_type: RefType | None
    ref_id: str | None
    stored: bool = Field(
        description="False for events derived from posts and queue items (cancel those instead)."
    )
