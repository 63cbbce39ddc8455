"""Content automations: when a rule is due, make its next posts and advance its schedule.

Sources: ``feed`` (fetch the RSS/Atom URL, one post per item not seen before),
``evergreen`` (the next post of the list, round-robin) and ``template`` (the next row
rendered into the template, round-robin). Posts go into the target queue through
``api.automation.service.add_item`` or straight to scheduling through
``api.posts.service.create_post``, so validation, approvals and webhook events happen exactly
as through the API. A workspace that requires approval never gets a queue slot filled
without review: the post is created through ``create_post`` (``pending_approval``) to the
queue's destinations instead.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from connectors import outbound
from domain.automation import service as automation
from domain.automation import templates
from domain.automation.schemas import QueueItemCreate
from domain.errors import DomainError
from domain.posts import service as posts
from domain.posts.schemas import MAX_TEXT, PostCreate
from warehouse import automation as automation_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor
from warehouse.store import Store

log = structlog.get_logger(__name__)

MAX_FEED_POSTS_PER_RUN = 10
MAX_FEED_BYTES = 2 * 1024 * 1024
FEED_TIMEOUT_SECONDS = 15.0
_ATOM = "{http://www.w3.org/2005/Atom}"


@dataclass(frozen=True)
class Entry:
    """One post to make: its text and media, and the feed item it came from (if any)."""

    text: str
    media_ids: tuple[str, ...] = ()
    key: str | None = None


@dataclass
class ContentReport:
    runs: int = 0
    posts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


# -- sources -----------------------------------------------------------------------------------


def parse_feed(content: bytes) -> list[tuple[str, str]]:
    """(item id, post text) of each RSS ``item`` or Atom ``entry``, in document order."""
    root = ET.fromstring(content)
    found: list[tuple[str, str]] = []
    for item in root.iter("item"):
        title = (item.findtext("title") or "").strip()
        link = (item.findtext("link") or "").strip()
        key = (item.findtext("guid") or "").strip() or link or title
        if key:
            found.append((key, " ".join(p for p in (title, link) if p)))
    for entry in root.iter(f"{_ATOM}entry"):
        title = (entry.findtext(f"{_ATOM}title") or "").strip()
        link_el = entry.find(f"{_ATOM}link[@rel='alternate']") or entry.find(f"{_ATOM}link")
        link = (link_el.get("href") or "").strip() if link_el is not None else ""
        key = (entry.findtext(f"{_ATOM}id") or "").strip() or link or title
        if key:
            found.append((key, " ".join(p for p in (title, link) if p)))
    return found


def _feed_entries(url: str, seen: set[str], client: outbound.OutboundClient) -> list[Entry]:
    # Through the guard: every redirect hop is checked again, the size and time are capped.
    fetched = client.request(
        "GET",
        url,
        timeout=FEED_TIMEOUT_SECONDS,
        max_bytes=MAX_FEED_BYTES,
        follow_redirects=True,
    )
    if not 200 <= fetched.status_code < 300:
        raise ValueError(f"the feed answered HTTP {fetched.status_code}")
    fresh = [Entry(text, key=key) for key, text in parse_feed(fetched.content) if key not in seen]
    return fresh[:MAX_FEED_POSTS_PER_RUN]


def _next_of(cur: Cursor, automation_id: str, count: int) -> tuple[int, int | None]:
    """The round-robin index to use now, and the position stored so far (None: none yet)."""
    stored = automation_repo.automation_position(cur, automation_id)
    return (stored or 0) % count, stored


def render_row(template: str, row: dict[str, Any]) -> str:
    """A template's ``{name}`` placeholders filled from one row (missing names stay as is)."""
    # Never str.format: a template stored before placeholders were checked may still hold
    # format specs, which would make this shared worker build gigabytes. Such a template, or
    # a row longer than any post, fails this run (a ValueError, logged) and harms nothing else.
    return templates.render(templates.parse(template), row, limit=MAX_TEXT)


# -- running -----------------------------------------------------------------------------------


def run_due(
    store: Store,
    client: outbound.OutboundClient,
    now: datetime | None = None,
    workspace_id: str | None = None,
) -> ContentReport:
    """Run every content automation whose ``next_run_at`` has come (in one workspace, or all)."""
    report = ContentReport()
    now = now or utcnow()
    with store.transaction() as cur:
        due = automation_repo.due_automations(cur, now, workspace_id=workspace_id)
    for rule in due:
        try:
            made = run_one(store, rule, client, now)
        except (DomainError, outbound.OutboundError, ET.ParseError, ValueError, KeyError) as exc:
            if isinstance(exc, DomainError):
                message = exc.message
            elif isinstance(exc, outbound.OutboundError):
                message = f"feed: {exc.reason} ({exc})"
            else:
                message = str(exc)
            report.errors.append(f"{rule.id}: {message}"[:500])
            log.warning("automation.run_failed", automation=rule.id, error=message)
            continue
        if made is not None:
            report.runs += 1
            report.posts.extend(made)
    return report


def run_one(
    store: Store,
    rule: automation_repo.AutomationRow,
    client: outbound.OutboundClient,
    now: datetime,
) -> list[str] | None:
    """Claim one due run (None if another runner did), make its posts, plan the next run."""
    if rule.next_run_at is None:
        return None  # not scheduled (only due rules are passed here)
    schedule = rule.schedule
    try:
        upcoming = automation.compute_next_run(
            schedule["cron"], schedule["timezone"], now.replace(tzinfo=UTC)
        )
        next_run: datetime | None = upcoming.astimezone(UTC).replace(tzinfo=None)
    except DomainError:
        next_run = None  # a schedule that no longer matches stops rather than spins
    with store.transaction() as cur:
        if not automation_repo.claim_content_run(cur, rule.id, rule.next_run_at, next_run, now):
            return None
    workspace_id = rule.workspace_id
    source = rule.source
    target = rule.target
    made: list[str] = []
    with store.transaction() as cur:
        entries = _entries(cur, rule.id, source, client)
        for entry in entries:
            if entry.key is not None and not automation_repo.mark_seen(cur, rule.id, entry.key):
                continue  # another run took this feed item
            post_id = _create(cur, workspace_id, rule.id, target, entry)
            if entry.key is not None:
                automation_repo.set_seen_post(cur, rule.id, entry.key, post_id)
            made.append(post_id)
        automation_repo.finish_run_events(cur, workspace_id, rule.id, now)
        automation.plan_run(
            cur,
            workspace_id,
            rule.id,
            rule.name,
            next_run.replace(tzinfo=UTC) if next_run else None,
        )
    log.info("automation.run", automation=rule.id, posts=len(made), next_run_at=next_run)
    return made


def _entries(
    cur: Cursor, automation_id: str, source: dict[str, Any], client: outbound.OutboundClient
) -> list[Entry]:
    kind = source["type"]
    if kind == "feed":
        return _feed_entries(source["url"], automation_repo.seen_items(cur, automation_id), client)
    if kind == "evergreen":
        items = source["posts"]
        index, stored = _next_of(cur, automation_id, len(items))
        automation_repo.save_automation_position(
            cur, automation_id, index + 1, exists=stored is not None
        )
        chosen = items[index]
        return [Entry(chosen["text"], tuple(chosen.get("media_ids") or ()))]
    if kind == "template":
        rows = source["rows"]
        index, stored = _next_of(cur, automation_id, len(rows))
        automation_repo.save_automation_position(
            cur, automation_id, index + 1, exists=stored is not None
        )
        return [Entry(render_row(source["template"], rows[index]))]
    raise ValueError(f"unknown source type {kind!r}")


def _create(
    cur: Cursor, workspace_id: str, automation_id: str, target: dict[str, Any], entry: Entry
) -> str:
    """One post from an entry, through the same service code the API uses."""
    workspace = ws_repo.get_workspace(cur, workspace_id)
    approval = bool(workspace and workspace.approval_required)
    queue_id = target.get("queue_id")
    if queue_id is not None and not approval:
        item = automation.add_item(
            cur,
            workspace_id,
            automation_id,
            queue_id,
            QueueItemCreate(text=entry.text, media_ids=list(entry.media_ids) or None),
        )
        return item.post_id
    if queue_id is not None:
        queue = automation.require_queue(cur, workspace_id, queue_id)
        platforms = [d["account_id"] for d in queue.destinations]
    else:
        platforms = list(target["platforms"])
    post = posts.create_post(
        cur,
        workspace_id,
        automation_id,
        PostCreate(text=entry.text, platforms=platforms, media_ids=list(entry.media_ids)),
    )
    return post.id
