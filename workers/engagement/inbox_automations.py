"""Inbox automations: on each new inbound message, the workspace's enabled rules fire in order.

Triggers: ``phrase`` (the message contains the phrase, case-insensitively), ``any_phrase``
(any of them), ``intent`` (``api.inbox.drafts.detect_intent``). Actions: ``draft`` stores a
draft and sends nothing; ``reply`` queues the rule's text for delivery (the explicit rule
that lets something be sent); ``tag``; ``assign``; ``hold`` tags the conversation ``held``
and stops every automatic reply to this message. Every firing is logged in
``inbox_automation_runs``, including the ones that were skipped or failed.
"""

from __future__ import annotations

import structlog

from domain.errors import DomainError
from domain.inbox import drafts
from domain.inbox import service as inbox
from domain.inbox.schemas import ItemUpdate, Respond
from warehouse import inbox as inbox_repo
from warehouse.inbox import AutomationRow, MessageRow
from warehouse.rows import Cursor

log = structlog.get_logger(__name__)

HELD_TAG = "held"


def matches(automation: AutomationRow, text: str) -> bool:
    """Whether an automation's trigger fires on a message's text."""
    lowered = text.casefold()
    phrases = [p.casefold() for p in automation.phrases]
    kind = automation.trigger_type
    if kind == "phrase":
        return bool(phrases) and phrases[0] in lowered
    if kind == "any_phrase":
        return any(p in lowered for p in phrases)
    if kind == "intent":
        return bool(drafts.detect_intent(text) == automation.intent)
    return False


def evaluate(
    cur: Cursor, workspace_id: str, item_id: str, message: MessageRow, drafter: drafts.Drafter
) -> list[tuple[str, str, str]]:
    """Fire the matching automations for one inbound message; returns (id, action, outcome)."""
    rules = [
        a for a in inbox_repo.enabled_automations(cur, workspace_id) if matches(a, message.text)
    ]
    held = any(a.action == "hold" for a in rules)
    replied = False
    fired: list[tuple[str, str, str]] = []
    for rule in rules:
        try:
            outcome = _apply(cur, workspace_id, item_id, rule, drafter, held=held, replied=replied)
        except DomainError as exc:
            outcome = f"error: {exc.message}"
        if rule.action == "reply" and outcome.startswith("reply queued"):
            replied = True
        inbox_repo.log_automation_run(cur, rule.id, item_id, workspace_id, rule.action, outcome)
        fired.append((rule.id, rule.action, outcome))
        log.info("inbox.automation", automation=rule.id, item=item_id, outcome=outcome)
    return fired


def _tags(cur: Cursor, workspace_id: str, item_id: str, tag: str) -> None:
    item = inbox_repo.get_item(cur, workspace_id, item_id)
    if item is not None and tag not in item.tags:
        inbox.update_item(cur, workspace_id, item_id, ItemUpdate(tags=[*item.tags, tag]))


def _apply(
    cur: Cursor,
    workspace_id: str,
    item_id: str,
    rule: AutomationRow,
    drafter: drafts.Drafter,
    *,
    held: bool,
    replied: bool,
) -> str:
    params = rule.action_params
    action = rule.action
    if action == "draft":
        draft = inbox.create_draft(cur, workspace_id, item_id, drafter)
        return f"drafted {draft.id} ({draft.source})"
    if action == "reply":
        if held:
            return "skipped: a hold rule matched; a person decides"
        if replied:
            return "skipped: another rule already replied"
        done = inbox.respond(
            cur, workspace_id, item_id, Respond(text=params["text"]), actor=rule.id
        )
        return f"reply queued {done.message.id}"
    if action == "tag":
        _tags(cur, workspace_id, item_id, params["tag"])
        return f"tagged {params['tag']}"
    if action == "assign":
        inbox.update_item(cur, workspace_id, item_id, ItemUpdate(assignee=params["assignee"]))
        return f"assigned {params['assignee']}"
    if action == "hold":
        _tags(cur, workspace_id, item_id, HELD_TAG)
        return "held for a person"
    return f"skipped: unknown action {action!r}"
