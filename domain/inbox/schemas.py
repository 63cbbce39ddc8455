"""Inbox items (conversations), their messages and drafts, and inbox automations."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from domain.inbox.drafts import DraftSource, Intent
from domain.schemas import Model, UtcDatetime
from domain.workspaces.schemas import Platform

ItemStatus = Literal["open", "replied", "closed", "snoozed"]
SettableStatus = Literal["open", "closed", "snoozed"]
Kind = Literal["comment", "mention", "dm"]

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)]
Assignee = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
ReplyText = Annotated[str, StringConstraints(min_length=1, max_length=10000)]
Phrase = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


class ItemFilters(BaseModel):
    """The filters of the inbox list, as query parameters and as an agent's arguments."""

    status: ItemStatus | None = Field(default=None, description="Only this status.")
    platform: Platform | None = Field(default=None, description="Only this platform.")
    kind: Kind | None = Field(default=None, description="Only this kind.")
    account_id: str | None = Field(default=None, max_length=64, description="Only this account.")
    assignee: str | None = Field(default=None, max_length=200, description="Only this assignee.")
    tag: str | None = Field(default=None, max_length=50, description="Only items with this tag.")


class InboxMessage(BaseModel):
    id: str = Field(examples=["inm_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    item_id: str
    direction: Literal["inbound", "outbound"]
    author_handle: str
    text: str = Field(
        description="At most 10,000 characters: a longer inbound message is kept cut, ending"
        " with ` [… cut by Murmur at 10,000 characters]`."
    )
    external_id: str | None = Field(description="The platform's id, once delivered.")
    delivery: Literal["received", "pending", "sent", "failed"] = Field(
        description="`received` for inbound; an outbound reply is `pending` until the delivery "
        "worker sends it (`sent`) or gives up (`failed`)."
    )
    sent_by: str | None = Field(description="API key or automation id of an outbound message.")
    created_at: UtcDatetime


class InboxDraft(BaseModel):
    id: str = Field(examples=["ind_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    item_id: str
    text: str
    source: DraftSource = Field(
        description="`past_reply`: the workspace's own earlier reply to a similar message; "
        "`template`: an intent template."
    )
    confidence: float = Field(ge=0, le=1)
    created_at: UtcDatetime


class InboxItem(BaseModel):
    id: str = Field(examples=["inb_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    account_id: str
    platform: Platform
    kind: Kind
    external_id: str = Field(description="The platform's thread or comment id.")
    post_id: str | None = Field(description="Our post the conversation is about, if any.")
    author_handle: str
    author_name: str | None
    status: ItemStatus = Field(description="A snooze that has run out reads as `open`.")
    snoozed_until: UtcDatetime | None
    tags: list[str]
    assignee: str | None
    preview: str | None = Field(
        description="The latest message's first 280 characters: a longer text is cut to 279"
        " and `…` (the whole message, up to 10,000 characters, is in the item's `messages`)."
    )
    last_message_at: UtcDatetime
    created_at: UtcDatetime
    updated_at: UtcDatetime


class InboxItemDetail(InboxItem):
    messages: list[InboxMessage] = Field(description="Every message, oldest first.")
    drafts: list[InboxDraft] = Field(
        description="The 20 newest drafts; all of them at GET /inbox/items/{item_id}/drafts."
    )


class ItemUpdate(Model):
    status: SettableStatus | None = Field(
        default=None, description="`replied` is set by responding, not here."
    )
    snoozed_until: UtcDatetime | None = Field(
        default=None, description="Required with `status: snoozed`, in the future; only then."
    )
    tags: list[Tag] | None = Field(
        default=None, max_length=20, description="Replaces the tags; duplicates are dropped."
    )
    assignee: Assignee | None = Field(default=None, description="`null` unassigns.")


class Respond(Model):
    text: ReplyText
    draft_id: str | None = Field(
        default=None, max_length=64, description="The draft this reply was made from, if any."
    )


class Responded(BaseModel):
    item: InboxItem
    message: InboxMessage


# -- automations -------------------------------------------------------------------------------


class Trigger(Model):
    type: Literal["phrase", "any_phrase", "intent"] = Field(
        description="`phrase`: the message contains the one phrase; `any_phrase`: any of the "
        "phrases; `intent`: the detected intent."
    )
    phrases: list[Phrase] = Field(default_factory=list, max_length=50)
    intent: Intent | None = None


class Action(Model):
    type: Literal["draft", "reply", "tag", "assign", "hold"]
    text: ReplyText | None = Field(default=None, description="Required for `reply`, only there.")
    tag: Tag | None = Field(default=None, description="Required for `tag`, only there.")
    assignee: Assignee | None = Field(
        default=None, description="Required for `assign`, only there."
    )


class InboxAutomationCreate(Model):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
    enabled: bool = True
    trigger: Trigger
    action: Action


class InboxAutomationUpdate(Model):
    name: (
        Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
        | None
    ) = None
    enabled: bool | None = None
    trigger: Trigger | None = Field(default=None, description="Replaces the whole trigger.")
    action: Action | None = Field(default=None, description="Replaces the whole action.")


class Automation(BaseModel):
    id: str = Field(examples=["iau_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    name: str
    enabled: bool
    trigger: Trigger
    action: Action
    created_at: UtcDatetime
    updated_at: UtcDatetime
