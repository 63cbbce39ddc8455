"""The inbox in motion: conversations in through the connectors, pending replies out.

Sync reads each active account's conversations since the last one seen and records them
with ``warehouse.inbox.upsert_conversation`` (idempotent on the platform's message id); a
message recorded for the first time is claimed once (``inbox_automation_marks``) and its
automations evaluated. What a platform sends is untrusted text: NUL characters and lone
surrogates are replaced (U+FFFD) and over-long texts and names cut (domain/inbox/bounds.py)
before anything is stored, and an item that still cannot be recorded is logged and skipped,
so that one bad item never stops an account, nor one account the round. Replies created by
``POST /inbox/items/{id}/respond`` (or by an automation) are leased with one
``UPDATE … RETURNING``, sent through ``Publisher.reply`` with the message id as
``client_ref``, and marked ``sent`` or ``failed``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from connectors.base import (
    AccountRef,
    AuthExpiredError,
    ConnectorError,
    Conversation,
    PermanentError,
    Publisher,
    RateLimitedError,
)
from domain import text
from domain.inbox import bounds, drafts
from warehouse import inbox as inbox_repo
from warehouse import posts as posts_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import utcnow
from warehouse.store import Store
from warehouse.workspaces import AccountRow
from workers.engagement import inbox_automations

log = structlog.get_logger(__name__)

PublisherFor = Callable[[str], Publisher]
TokenFor = Callable[[str, str], str | None]
MAX_REPLY_ATTEMPTS = 5


@dataclass
class SyncReport:
    accounts: int = 0
    messages: int = 0
    new_messages: int = 0
    automations_fired: int = 0
    errors: list[str] = field(default_factory=list)


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=UTC)


def _scrubbed(conv: Conversation) -> Conversation:
    """``conv`` with NUL and lone surrogates replaced in every text field."""
    # The store cannot bind a surrogate and the workers' SQL rendering refuses NUL.
    changes: dict[str, Any] = {
        f.name: text.scrub(value)
        for f in dataclasses.fields(conv)
        if isinstance(value := getattr(conv, f.name), str) and not text.is_clean(value)
    }
    if not changes:
        return conv
    log.warning(
        "inbox.item_scrubbed",
        platform=conv.platform,
        message=text.scrub(conv.message_external_id),
        fields=sorted(changes),
    )
    return dataclasses.replace(conv, **changes)


def _bounded(conv: Conversation) -> Conversation:
    """``conv`` within the inbox's bounds (domain/inbox/bounds.py): text and names cut.

    Raises ValueError for an id over its bound: cut, two threads could become one.
    """
    for name in ("external_id", "message_external_id", "post_external_id"):
        value = getattr(conv, name)
        if value is not None and len(value) > bounds.EXTERNAL_ID_CHARS:
            raise ValueError(f"{name} is over {bounds.EXTERNAL_ID_CHARS} characters")
    changes: dict[str, Any] = {}
    if len(conv.text) > bounds.MESSAGE_CHARS:
        changes["text"] = bounds.message(conv.text)
    if len(conv.author_handle) > bounds.NAME_CHARS:
        changes["author_handle"] = bounds.name(conv.author_handle)
    if conv.author_name is not None and len(conv.author_name) > bounds.NAME_CHARS:
        changes["author_name"] = bounds.name(conv.author_name)
    if not changes:
        return conv
    log.warning(
        "inbox.item_cut",
        platform=conv.platform,
        message=conv.message_external_id,
        fields=sorted(changes),
        text_chars=len(conv.text),
    )
    return dataclasses.replace(conv, **changes)


def _own(account: AccountRow, token_for: TokenFor) -> AccountRef:
    """A connected account as the connectors address it, with its access token."""
    return AccountRef(
        account.platform,
        account.external_id,
        account.handle,
        "own",
        account_id=account.id,
        access_token=token_for(account.platform, account.external_id),
    )


def _failure(exc: BaseException) -> str:
    return text.scrub(f"{type(exc).__name__}: {exc}")[:500]


def sync_inbox(
    store: Store,
    publisher_for: PublisherFor,
    token_for: TokenFor,
    drafter: drafts.Drafter,
    *,
    interval: float = 0.0,
    stopping: Callable[[], bool] = lambda: False,
) -> SyncReport:
    """Read each active account's new conversations (at most every ``interval`` seconds) and
    fire automations on new messages; return early, between two messages, once ``stopping``."""
    report = SyncReport()
    with store.transaction() as cur:
        accounts = ws_repo.active_accounts(cur)
        states = inbox_repo.sync_state(cur)
    recent = utcnow() - timedelta(seconds=interval)
    for account in accounts:
        if stopping():
            break
        state = states.get(account.id)
        if state is not None and interval > 0 and state.updated_at > recent:
            continue
        since = _aware(state.synced_until) if state else None
        ref = _own(account, token_for)
        newest = since
        error: str | None = None
        try:
            publisher = publisher_for(account.platform)
            for listed in publisher.list_conversations(ref, since):
                if stopping():
                    # The account's watermark stays where it was: the next sync reads these
                    # messages again, and those already recorded are recognised by their id.
                    return report
                report.messages += 1
                conv = _scrubbed(listed)
                try:
                    conv = _bounded(conv)
                    if _record(store, account, conv, drafter, report):
                        report.new_messages += 1
                except Exception as exc:  # this item only: skip it, keep the others
                    error = _failure(exc)
                    report.errors.append(f"{account.id}: {error}")
                    log.warning(
                        "inbox.item_skipped",
                        account=account.id,
                        message=conv.message_external_id[: bounds.EXTERNAL_ID_CHARS],
                        error=error,
                    )
                if newest is None or conv.received_at > newest:
                    newest = conv.received_at
        except (ConnectorError, ValueError, KeyError) as exc:
            error = _failure(exc)
            report.errors.append(f"{account.id}: {error}")
        except Exception as exc:  # this account only: the next accounts still sync
            error = _failure(exc)
            report.errors.append(f"{account.id}: {error}")
            log.exception("inbox.sync_failed", account=account.id)
        report.accounts += 1
        with store.transaction() as cur:
            inbox_repo.save_sync_state(
                cur,
                account.id,
                account.workspace_id,
                newest.astimezone(UTC).replace(tzinfo=None) if newest else None,
                error,
                exists=state is not None,
            )
    return report


def _record(
    store: Store,
    account: AccountRow,
    conv: Conversation,
    drafter: drafts.Drafter,
    report: SyncReport,
) -> bool:
    workspace_id = str(account.workspace_id)
    platform = str(account.platform)  # the account's, whatever the record says
    with store.transaction() as cur:
        post_id = (
            posts_repo.post_for_platform_post(cur, workspace_id, platform, conv.post_external_id)
            if conv.post_external_id
            else None
        )
        item_id = inbox_repo.upsert_conversation(
            cur,
            workspace_id,
            str(account.id),
            platform,
            conv.kind,
            conv.external_id,
            conv.author_handle,
            conv.author_name,
            conv.text,
            conv.received_at,
            post_id,
            message_external_id=conv.message_external_id,
        )
        message = inbox_repo.message_by_external_id(cur, item_id, conv.message_external_id)
        if message is None or not inbox_repo.mark_for_automations(cur, message.id, workspace_id):
            return False
        fired = inbox_automations.evaluate(cur, workspace_id, item_id, message, drafter)
        report.automations_fired += len(fired)
    return True


@dataclass
class ReplyReport:
    sent: int = 0
    failed: int = 0
    retried: int = 0


def send_replies(
    store: Store,
    worker: str,
    publisher_for: PublisherFor,
    token_for: TokenFor,
    *,
    lease_seconds: float = 120.0,
    limit: int = 20,
) -> ReplyReport:
    """Send each pending outbound reply once: lease, Publisher.reply, record the outcome."""
    report = ReplyReport()
    with store.transaction() as cur:
        claimed = inbox_repo.claim_replies(cur, worker, lease_seconds=lease_seconds, limit=limit)
    for message in claimed:
        with store.transaction() as cur:
            target = inbox_repo.reply_target(cur, message.workspace_id, message.item_id)
            account = (
                ws_repo.get_account(cur, message.workspace_id, target.account_id)
                if target
                else None
            )
        delivery, external_id, error, retry_at = "failed", None, None, None
        if target is None or account is None:
            error = "the conversation or its account no longer exists"
        else:
            ref = _own(account, token_for)
            try:
                published = publisher_for(account.platform).reply(
                    ref, target.external_id, message.text, message.id
                )
                delivery, external_id = "sent", published.external_id
            except (AuthExpiredError, PermanentError) as exc:
                error = f"{type(exc).__name__}: {exc}"[:500]
            except ConnectorError as exc:  # transient: retry with backoff, then give up
                error = f"{type(exc).__name__}: {exc}"[:500]
                attempts = int(message.delivery_attempts or 1)
                if attempts < MAX_REPLY_ATTEMPTS:
                    delivery = "pending"
                    wait = (
                        getattr(exc, "retry_after", None)
                        if isinstance(exc, RateLimitedError)
                        else None
                    )
                    retry_at = utcnow() + timedelta(seconds=wait or 5 * 2 ** (attempts - 1))
        with store.transaction() as cur:
            inbox_repo.finish_reply(
                cur,
                message.id,
                worker,
                delivery=delivery,
                external_id=external_id,
                error=error,
                retry_at=retry_at,
            )
        if delivery == "sent":
            report.sent += 1
        elif delivery == "failed":
            report.failed += 1
        else:
            report.retried += 1
        log.info("inbox.reply", message=message.id, delivery=delivery, error=error)
    return report
