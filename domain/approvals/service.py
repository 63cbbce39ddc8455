"""Approvals: a post waiting for review is an item in its day's batch; reviewers act on items."""

from __future__ import annotations

from collections.abc import Sequence

from core.errors import ErrorDetail
from domain.approvals.schemas import (
    ApprovalAction,
    ApprovalBatch,
    ApprovalEvent,
    ApprovalItem,
    PostSummary,
)
from domain.errors import InvalidState, NotFound, ValidationFailed, found
from domain.pagination import PageRequest
from domain.posts import reads as posts
from domain.schemas import Page, from_row
from warehouse import approvals as repo
from warehouse import posts as posts_repo
from warehouse import webhooks as webhooks_repo
from warehouse.ids import from_db, utcnow
from warehouse.posts import PostStatus
from warehouse.rows import Cursor

EXCERPT = 280
# The item's status after each action, and the post's.
OUTCOMES = {
    "approve": ("approved", PostStatus.SCHEDULED),
    "reject": ("rejected", PostStatus.CANCELED),
    "return": ("returned", PostStatus.DRAFT),
}


def _event_out(row: repo.EventRow) -> ApprovalEvent:
    return from_row(ApprovalEvent, row)


def _item_out(
    row: repo.ReviewRow,
    events: list[repo.EventRow],
    destinations: list[posts_repo.DestinationRow],
    successor: str | None,
) -> ApprovalItem:
    item = row.item
    superseded = any(e.action == "supersede" for e in events)
    accounts = [d.account_id for d in destinations]
    return ApprovalItem(
        id=item.id,
        batch_id=item.batch_id,
        status=item.status,
        actionable=item.status == "pending" and row.post_status == "pending_approval",
        comment=item.comment,
        decided_by=item.decided_by,
        decided_at=from_db(item.decided_at),
        superseded_by=successor if superseded else None,
        post=PostSummary(
            post_id=item.post_id,
            text=row.post_text[:EXCERPT],
            status=row.post_status,
            scheduled_at=from_db(row.post_scheduled_at),
            version=posts.content_version(
                row.post_text, row.post_media_ids, accounts, row.post_platform_options or {}
            ),
        ),
        events=[_event_out(e) for e in events],
        created_at=from_db(item.created_at),
        updated_at=from_db(item.updated_at),
    )


def _items_out(cur: Cursor, rows: Sequence[repo.ReviewRow]) -> list[ApprovalItem]:
    """Items as shown: each with its events, its post's version and any item superseding it."""
    ids = [r.item.id for r in rows]
    events = repo.events_of_items(cur, ids)
    destinations = posts_repo.destinations_of(cur, list({r.item.post_id for r in rows}))
    successors = repo.successors(cur, ids)
    return [
        _item_out(r, events[r.item.id], destinations[r.item.post_id], successors.get(r.item.id))
        for r in rows
    ]


def _batches_out(cur: Cursor, rows: Sequence[repo.BatchRow]) -> list[ApprovalBatch]:
    items = repo.items_of_batches(cur, [row.id for row in rows])
    shown_items = iter(_items_out(cur, [r for row in rows for r in items[row.id]]))
    out = []
    for row in rows:
        shown = [next(shown_items) for _ in items[row.id]]
        out.append(
            ApprovalBatch(
                id=row.id,
                name=row.name,
                batch_date=row.batch_date,
                status="pending" if any(i.actionable for i in shown) else "completed",
                items=shown,
                created_at=from_db(row.created_at),
                updated_at=from_db(row.updated_at),
            )
        )
    return out


def list_batches(
    cur: Cursor, workspace_id: str, status: str | None, page: PageRequest
) -> Page[ApprovalBatch]:
    rows = repo.list_batches(cur, workspace_id, status, page.after_value(), page.fetch)
    converted = {b.id: b for b in _batches_out(cur, rows[: page.limit])}
    return page.page(rows, lambda r: converted[r.id], lambda r: [r.id])


def get_batch(cur: Cursor, workspace_id: str, batch_id: str) -> ApprovalBatch:
    return _batches_out(
        cur, [found(repo.get_batch(cur, workspace_id, batch_id), "approval batch", batch_id)]
    )[0]


def get_item(cur: Cursor, workspace_id: str, item_id: str) -> ApprovalItem:
    if repo.get_item(cur, workspace_id, item_id) is None:
        raise NotFound.resource("approval item", item_id)
    row = repo.item_with_post(cur, item_id)
    assert row is not None
    return _items_out(cur, [row])[0]


def act(
    cur: Cursor,
    workspace_id: str,
    actor: str,
    item_id: str,
    body: ApprovalAction,
    if_match: str | None = None,
) -> ApprovalItem:
    """Decide an actionable item; ``if_match``: the post's ETag the reviewer read, if sent."""
    item = repo.get_item(cur, workspace_id, item_id)
    if item is None:
        raise NotFound.resource("approval item", item_id)
    comment = body.comment.strip() if body.comment else None
    if body.action == "reject" and not comment:
        raise ValidationFailed.on("comment", "required", "A rejection needs a comment.")
    if item.status != "pending":
        raise InvalidState(f"This item was already {item.status}.")
    post = posts_repo.get_post(cur, workspace_id, item.post_id)
    if post is None or post.status != PostStatus.PENDING_APPROVAL:
        status = post.status if post else "deleted"
        raise InvalidState(f"The item's post is {status}; nothing to review.")
    _check_version(cur, post, body.post_version, if_match)
    item_status, post_status = OUTCOMES[body.action]
    now = utcnow()
    moved = posts_repo.move(
        cur,
        post.id,
        post_status,
        scheduled_at=(post.scheduled_at or now) if body.action == "approve" else None,
        canceled_at=now if body.action == "reject" else None,
        unchanged_since=post.updated_at,
    )
    if not moved:  # an edit or a decision committed since the read above (read committed)
        raise InvalidState("The post changed while this decision was made; read it again.")
    repo.decide_item(cur, item_id, item_status, comment, actor, now)
    repo.insert_event(cur, item_id, workspace_id, body.action, actor, comment)
    decided = get_item(cur, workspace_id, item_id)
    # Lifecycle events go to the webhook outbox in this same transaction.
    webhooks_repo.enqueue_event(
        cur, workspace_id, f"approval.{item_status}", {"approval": decided.model_dump(mode="json")}
    )
    follow = {"approve": "post.scheduled", "reject": "post.canceled"}.get(body.action)
    if follow is not None:
        posts.emit(cur, workspace_id, follow, posts.get_post(cur, workspace_id, post.id))
    return decided


def _check_version(
    cur: Cursor, post: posts_repo.PostRow, seen: str | None, if_match: str | None
) -> None:
    """Refuse a decision on another version of the post than the reviewer read."""
    if seen is None and if_match is None:
        return
    current = posts.version_of(post, posts_repo.destinations_of(cur, [post.id])[post.id])
    # If-Match holds a list of ETags (weak or strong) or `*`: it holds when one matches.
    tags = [t.strip().removeprefix("W/").strip('"') for t in (if_match or "").split(",")]
    header_holds = if_match is None or any(tag in (current, "*") for tag in tags)
    if header_holds and seen in (None, current):
        return
    field = "If-Match" if not header_holds else "post_version"
    raise InvalidState(
        f"The post was edited since it was read: its version is now {current!r}; read it again.",
        [ErrorDetail(field, "stale", f"The post's current version is {current!r}.")],
    )
