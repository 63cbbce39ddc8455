"""The inbox: conversations, replies, AI reply drafts and inbox automations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.errors import ErrorDetail
from domain.errors import InvalidState, ValidationFailed, found
from domain.inbox import bounds, drafts
from domain.inbox.schemas import (
    Action,
    Automation,
    InboxAutomationCreate,
    InboxAutomationUpdate,
    InboxDraft,
    InboxItem,
    InboxItemDetail,
    InboxMessage,
    ItemFilters,
    ItemUpdate,
    Respond,
    Responded,
    Trigger,
)
from domain.pagination import PageRequest
from domain.schemas import Deleted, Page, from_row
from warehouse import inbox as repo
from warehouse import workspaces as ws_repo
from warehouse.ids import from_db, to_db
from warehouse.rows import Cursor

DETAIL_DRAFTS = 20


# -- conversions -------------------------------------------------------------------------------


def item_out(row: repo.ItemRow) -> InboxItem:
    # A snooze that has run out reads as open, with no snoozed_until.
    snoozed = row.snoozed_until if row.status == "snoozed" else None
    return from_row(
        InboxItem, row, snoozed_until=from_db(snoozed), preview=bounds.preview(row.preview)
    )


def message_out(row: repo.MessageRow) -> InboxMessage:
    return from_row(InboxMessage, row)


def draft_out(row: repo.DraftRow) -> InboxDraft:
    return from_row(InboxDraft, row)


def automation_out(row: repo.AutomationRow) -> Automation:
    return from_row(
        Automation,
        row,
        trigger=Trigger(type=row.trigger_type, phrases=list(row.phrases), intent=row.intent),
        action=Action(type=row.action, **row.action_params),
    )


# -- items -------------------------------------------------------------------------------------


def _item(cur: Cursor, workspace_id: str, item_id: str) -> repo.ItemRow:
    return found(repo.get_item(cur, workspace_id, item_id), "inbox item", item_id)


def _item_position(row: repo.ItemRow) -> list[Any]:
    return [row.last_message_at.isoformat(), row.id]


def _item_after(page: PageRequest) -> tuple[datetime, str] | None:
    if page.after is None:
        return None
    try:
        at, item_id = page.after
        return datetime.fromisoformat(str(at)), str(item_id)
    except (ValueError, TypeError) as exc:
        raise ValidationFailed.on(
            "cursor", "invalid", "The cursor is not one this endpoint issued."
        ) from exc


def list_items(
    cur: Cursor, workspace_id: str, page: PageRequest, filters: ItemFilters
) -> Page[InboxItem]:
    # Only the filters' own fields: an agent's arguments extend them with its page's.
    kept = repo.ItemFilter(**{name: getattr(filters, name) for name in ItemFilters.model_fields})
    rows = repo.list_items(cur, workspace_id, kept, after=_item_after(page), limit=page.fetch)
    return page.page(rows, item_out, _item_position)


def get_item(cur: Cursor, workspace_id: str, item_id: str) -> InboxItemDetail:
    row = _item(cur, workspace_id, item_id)
    messages = repo.list_messages(cur, workspace_id, item_id)
    recent = repo.list_drafts(cur, workspace_id, item_id, limit=DETAIL_DRAFTS)
    return InboxItemDetail(
        **item_out(row).model_dump(),
        messages=[message_out(m) for m in messages],
        drafts=[draft_out(d) for d in recent],
    )


def _dedupe(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


def update_item(cur: Cursor, workspace_id: str, item_id: str, body: ItemUpdate) -> InboxItem:
    given = body.model_fields_set
    if not given:
        raise ValidationFailed.on(
            "body", "empty", "Send at least one of status, snoozed_until, tags, assignee."
        )
    if "status" in given and body.status is None:
        raise ValidationFailed.on("status", "not_nullable", "status cannot be null.")
    if "tags" in given and body.tags is None:
        raise ValidationFailed.on("tags", "not_nullable", "tags cannot be null; send [].")
    if body.status == "snoozed":
        if body.snoozed_until is None:
            raise ValidationFailed.on(
                "snoozed_until", "required", "Snoozing needs snoozed_until, a future time."
            )
        if body.snoozed_until <= datetime.now(UTC):
            raise ValidationFailed.on(
                "snoozed_until", "in_past", "snoozed_until must be in the future."
            )
    elif body.snoozed_until is not None:
        raise ValidationFailed.on(
            "snoozed_until", "not_allowed", "snoozed_until goes only with status 'snoozed'."
        )
    row = _item(cur, workspace_id, item_id)
    status: str = row.status
    snoozed_until = row.snoozed_until if status == "snoozed" else None
    if body.status is not None:
        if body.status == "snoozed" and status == "closed":
            raise InvalidState("A closed conversation cannot be snoozed; reopen it first.")
        status = body.status
        snoozed_until = to_db(body.snoozed_until) if status == "snoozed" else None
    tags = _dedupe(body.tags) if body.tags is not None else list(row.tags)
    assignee = body.assignee if "assignee" in given else row.assignee
    repo.update_item(
        cur,
        workspace_id,
        item_id,
        status=status,
        snoozed_until=snoozed_until,
        tags=tags,
        assignee=assignee,
    )
    return item_out(_item(cur, workspace_id, item_id))


def respond(cur: Cursor, workspace_id: str, item_id: str, body: Respond, actor: str) -> Responded:
    """Record the reply for the delivery worker; the conversation becomes ``replied``."""
    if not body.text.strip():
        raise ValidationFailed.on("text", "blank", "text must not be only whitespace.")
    row = _item(cur, workspace_id, item_id)
    if body.draft_id is not None:
        draft = repo.get_draft(cur, workspace_id, body.draft_id)
        if draft is None or draft.item_id != item_id:
            raise ValidationFailed.on(
                "draft_id", "unknown_draft", f"No draft {body.draft_id!r} of this inbox item."
            )
    if row.status == "closed":
        raise InvalidState("The conversation is closed; reopen it (status 'open') to respond.")
    account = ws_repo.get_account(cur, workspace_id, row.account_id)
    if account is None or account.status == "disconnected":
        raise InvalidState("The conversation's account is disconnected; reconnect it to respond.")
    message_id = repo.add_outbound(cur, workspace_id, item_id, account.handle, body.text, actor)
    message = repo.get_message(cur, workspace_id, message_id)
    assert message is not None
    return Responded(item=item_out(_item(cur, workspace_id, item_id)), message=message_out(message))


# -- drafts ------------------------------------------------------------------------------------


def create_draft(
    cur: Cursor,
    workspace_id: str,
    item_id: str,
    drafter: drafts.Drafter = drafts.default_drafter,
) -> InboxDraft:
    """Ask the drafter for a reply to the conversation's latest inbound message; never sends."""
    row = _item(cur, workspace_id, item_id)
    inbound = repo.latest_inbound(cur, workspace_id, item_id)
    if inbound is None:
        raise InvalidState("The conversation has no inbound message to draft a reply to.")
    history = [
        drafts.PastExchange(inbound=r.inbound, reply=r.reply)
        for r in repo.past_exchanges(cur, workspace_id, exclude_message_id=inbound.id)
    ]
    proposal = drafter.draft(
        drafts.DraftRequest(
            text=inbound.text,
            author_handle=row.author_handle,
            author_name=row.author_name,
            platform=row.platform,
            kind=row.kind,
            history=history,
        )
    )
    confidence = min(max(float(proposal.confidence), 0.0), 1.0)
    draft_id = repo.insert_draft(
        cur, workspace_id, item_id, proposal.text, proposal.source, confidence
    )
    stored = repo.get_draft(cur, workspace_id, draft_id)
    assert stored is not None
    return draft_out(stored)


def list_drafts(
    cur: Cursor, workspace_id: str, item_id: str, page: PageRequest
) -> Page[InboxDraft]:
    _item(cur, workspace_id, item_id)
    rows = repo.list_drafts(cur, workspace_id, item_id, after=page.after_value(), limit=page.fetch)
    return page.page(rows, draft_out, lambda r: [r.id])


# -- automations -------------------------------------------------------------------------------


def _check_rule(trigger: Trigger, action: Action) -> None:
    """The per-type rules of a trigger and an action, every failure a ``details`` entry."""
    problems: list[ErrorDetail] = []

    def problem(field: str, issue: str, message: str) -> None:
        problems.append(ErrorDetail(field=field, issue=issue, message=message))

    if trigger.type == "phrase" and len(trigger.phrases) != 1:
        problem("trigger.phrases", "exactly_one", "A 'phrase' trigger takes exactly one phrase.")
    if trigger.type == "any_phrase" and not trigger.phrases:
        problem("trigger.phrases", "min_items", "An 'any_phrase' trigger needs a phrase or more.")
    if trigger.type == "intent":
        if trigger.intent is None:
            problem("trigger.intent", "required", "An 'intent' trigger needs an intent.")
        if trigger.phrases:
            problem("trigger.phrases", "not_allowed", "An 'intent' trigger takes no phrases.")
    elif trigger.intent is not None:
        problem("trigger.intent", "not_allowed", "Only an 'intent' trigger takes an intent.")
    needs = {"reply": "text", "tag": "tag", "assign": "assignee"}
    for name in ("text", "tag", "assignee"):
        value = getattr(action, name)
        if needs.get(action.type) == name and value is None:
            problem(f"action.{name}", "required", f"A '{action.type}' action needs {name}.")
        if needs.get(action.type) != name and value is not None:
            problem(f"action.{name}", "not_allowed", f"A '{action.type}' action takes no {name}.")
    if action.text is not None and not action.text.strip():
        problem("action.text", "blank", "text must not be only whitespace.")
    if problems:
        raise ValidationFailed(problems[0].message, problems)


def _fields(name: str, enabled: bool, trigger: Trigger, action: Action) -> repo.AutomationFields:
    """What a rule stores: the trigger's parts, the action's type and its other parameters."""
    return repo.AutomationFields(
        name=name,
        enabled=enabled,
        trigger_type=trigger.type,
        phrases=trigger.phrases,
        intent=trigger.intent,
        action=action.type,
        action_params=action.model_dump(exclude={"type"}, exclude_none=True),
    )


def _automation(cur: Cursor, workspace_id: str, automation_id: str) -> repo.AutomationRow:
    return found(
        repo.get_automation(cur, workspace_id, automation_id), "inbox automation", automation_id
    )


def list_automations(
    cur: Cursor, workspace_id: str, enabled: bool | None, page: PageRequest
) -> Page[Automation]:
    rows = repo.list_automations(
        cur, workspace_id, enabled=enabled, after=page.after_value(), limit=page.fetch
    )
    return page.page(rows, automation_out, lambda r: [r.id])


def get_automation(cur: Cursor, workspace_id: str, automation_id: str) -> Automation:
    return automation_out(_automation(cur, workspace_id, automation_id))


def create_automation(cur: Cursor, workspace_id: str, body: InboxAutomationCreate) -> Automation:
    _check_rule(body.trigger, body.action)
    fields = _fields(body.name, body.enabled, body.trigger, body.action)
    automation_id = repo.insert_automation(cur, workspace_id, fields)
    return get_automation(cur, workspace_id, automation_id)


def update_automation(
    cur: Cursor, workspace_id: str, automation_id: str, body: InboxAutomationUpdate
) -> Automation:
    given = body.model_fields_set
    if not given:
        raise ValidationFailed.on(
            "body", "empty", "Send at least one of name, enabled, trigger, action."
        )
    for name in ("name", "enabled", "trigger", "action"):
        if name in given and getattr(body, name) is None:
            raise ValidationFailed.on(name, "not_nullable", f"{name} cannot be null.")
    current = automation_out(_automation(cur, workspace_id, automation_id))
    trigger = body.trigger or current.trigger
    action = body.action or current.action
    _check_rule(trigger, action)
    enabled = current.enabled if body.enabled is None else body.enabled
    fields = _fields(body.name or current.name, enabled, trigger, action)
    repo.update_automation(cur, workspace_id, automation_id, fields)
    return get_automation(cur, workspace_id, automation_id)


def delete_automation(cur: Cursor, workspace_id: str, automation_id: str) -> Deleted:
    _automation(cur, workspace_id, automation_id)
    repo.delete_automation(cur, workspace_id, automation_id)
    return Deleted(id=automation_id)
