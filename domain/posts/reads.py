"""Posts and media as the API shows them, read from the store; lifecycle events carry the same."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from domain.errors import found
from domain.experiments import service as experiments
from domain.experiments.schemas import PostExperiment
from domain.pagination import PageRequest
from domain.posts.schemas import DestinationError, Media, Post, PostApproval, PostDestination
from domain.schemas import Page, from_row
from warehouse import approvals as approvals_repo
from warehouse import posts as repo
from warehouse import webhooks as webhooks_repo
from warehouse.ids import from_db
from warehouse.rows import Cursor

# -- output ------------------------------------------------------------------------------------


def _destination_out(row: repo.DestinationRow) -> PostDestination:
    error = None
    if row.error_code is not None or row.error_message is not None:
        error = DestinationError(code=row.error_code, message=row.error_message)
    return from_row(PostDestination, row, error=error)


def content_version(
    text: str, media_ids: Sequence[str], account_ids: Sequence[str], options: dict[str, Any]
) -> str:
    """The version of what a reviewer approves: text, media, destinations and platform options."""
    # Destinations are a set to the worker, so their order is not part of what was reviewed.
    reviewed = [text, list(media_ids), sorted(account_ids), options]
    canonical = json.dumps(reviewed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(canonical.encode(), digest_size=8).hexdigest()


def version_of(row: repo.PostRow, destinations: Sequence[repo.DestinationRow]) -> str:
    """A stored post's :func:`content_version`."""
    accounts = [d.account_id for d in destinations]
    return content_version(row.text, row.media_ids, accounts, row.platform_options or {})


def post_out(
    row: repo.PostRow,
    destinations: list[repo.DestinationRow],
    item: approvals_repo.ItemRow | None,
    experiment: PostExperiment | None = None,
) -> Post:
    approval = None
    if item is not None:
        approval = PostApproval(item_id=item.id, batch_id=item.batch_id, status=item.status)
    return Post(
        post_id=row.id,
        id=row.id,
        workspace_id=row.workspace_id,
        status=row.status,
        text=row.text,
        scheduled_at=from_db(row.scheduled_at),
        destinations=[_destination_out(d) for d in destinations],
        media_ids=row.media_ids,
        tags=row.tags,
        platform_options=row.platform_options,
        approval_required=row.approval_required,
        approval=approval,
        version=version_of(row, destinations),
        created_at=from_db(row.created_at),
        updated_at=from_db(row.updated_at),
        canceled_at=from_db(row.canceled_at),
        published_at=from_db(row.published_at),
        experiment=experiment,
    )


def posts_out(cur: Cursor, rows: Sequence[repo.PostRow]) -> list[Post]:
    ids = [row.id for row in rows]
    destinations = repo.destinations_of(cur, ids)
    items = approvals_repo.latest_items_of_posts(cur, ids)
    arms = experiments.assignments_of(cur, ids)
    return [
        post_out(row, destinations[row.id], items.get(row.id), arms.get(row.id)) for row in rows
    ]


def media_out(row: repo.MediaRow) -> Media:
    return from_row(Media, row)


# -- reads ---------------------------------------------------------------------------------------


def emit(
    cur: Cursor, workspace_id: str, event_type: str, post: Post, also: list[str] | None = None
) -> None:
    """Record a post lifecycle event (and ``also`` these) for the workspace's webhooks."""
    payload = {"post": post.model_dump(mode="json")}
    kinds = [event_type, *(also or [])]
    webhooks_repo.enqueue_events(cur, workspace_id, [(kind, payload) for kind in kinds])


def get_post(cur: Cursor, workspace_id: str, post_id: str) -> Post:
    return posts_out(cur, [found(repo.get_post(cur, workspace_id, post_id), "post", post_id)])[0]


def list_posts(
    cur: Cursor, workspace_id: str, where: repo.PostFilter, page: PageRequest
) -> Page[Post]:
    rows = repo.list_posts(cur, workspace_id, where, page.after_value(), page.fetch)
    page_rows = rows[: page.limit]
    converted = {post.id: post for post in posts_out(cur, page_rows)}
    return page.page(rows, lambda r: converted[r.id], lambda r: [r.id])


# -- media reads -------------------------------------------------------------------------------


def list_media(cur: Cursor, workspace_id: str, kind: str | None, page: PageRequest) -> Page[Media]:
    rows = repo.list_media(cur, workspace_id, kind, page.after_value(), page.fetch)
    return page.page(rows, media_out, lambda r: [r.id])


def get_media(cur: Cursor, workspace_id: str, media_id: str) -> Media:
    return media_out(found(repo.get_media(cur, workspace_id, media_id), "media", media_id))
