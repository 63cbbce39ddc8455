"""Automation & queues: the rules between the API and warehouse.automation.

Queue re-flow: the active items of a queue (queued or scheduled), in position order, take
consecutive slot occurrences after now. An item whose slot has already passed while it is still
``scheduled`` is due (the publisher owns it): it keeps its slot, and the others start after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from connectors import outbound
from connectors.platforms import SPECS
from core.errors import ErrorDetail
from domain import slots as slotlib
from domain.automation import templates
from domain.automation.schemas import (
    AutomationTarget,
    ContentAutomation,
    ContentAutomationCreate,
    ContentAutomationUpdate,
    DestinationPreset,
    EventCreate,
    PresetCreate,
    PresetUpdate,
    Queue,
    QueueCreate,
    QueueItem,
    QueueItemCreate,
    QueueUpdate,
    ScheduledEvent,
    SlotIn,
    SlotOccurrence,
    Source,
    Target,
)
from domain.errors import InvalidState, NotFound, ValidationFailed, found
from domain.experiments import service as experiments
from domain.pagination import PageRequest
from domain.schemas import LATEST, Page, from_row
from domain.workspaces.service import resolve_destination
from warehouse import automation as repo
from warehouse import experiments as experiments_repo
from warehouse import posts as posts_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import from_db, to_db, utcnow
from warehouse.posts import PostStatus
from warehouse.rows import Cursor

MAX_RANGE = timedelta(days=366)
DEFAULT_SLOT_WINDOW = timedelta(days=14)
DEFAULT_CALENDAR_WINDOW = timedelta(days=30)


def _now() -> datetime:
    return datetime.now(UTC)


def _db(value: datetime | None) -> datetime | None:
    return to_db(value)


def _required(value: datetime | None) -> datetime:
    aware = from_db(value)
    if aware is None:
        raise ValueError("a required timestamp is missing")
    return aware


def _fail(details: list[ErrorDetail]) -> None:
    if details:
        raise ValidationFailed(f"{details[0].field}: {details[0].message}", details)


def _zone(name: str, field: str) -> ZoneInfo:
    tz = slotlib.zone(name)
    if tz is None:
        raise ValidationFailed.on(field, "unknown_timezone", f"{name!r} is not an IANA time zone.")
    return tz


def _destinations(
    cur: Cursor, workspace_id: str, refs: Sequence[str], field: str
) -> list[ws_repo.AccountRow]:
    """Resolve each destination once; the same account twice is an error."""
    resolved: list[ws_repo.AccountRow] = []
    for index, ref in enumerate(refs):
        account = resolve_destination(cur, workspace_id, ref, f"{field}.{index}")
        if any(a.id == account.id for a in resolved):
            raise ValidationFailed.on(
                f"{field}.{index}", "duplicate", f"{ref!r} names an account already listed."
            )
        resolved.append(account)
    return resolved


def _media(cur: Cursor, workspace_id: str, ids: Sequence[str], field: str) -> None:
    known = repo.known_media(cur, workspace_id, list(ids)) if ids else set()
    _fail(
        [
            ErrorDetail(
                field=f"{field}.{i}", issue="unknown_media", message=f"No media {m!r} here."
            )
            for i, m in enumerate(ids)
            if m not in known
        ]
    )


# -- content automations -----------------------------------------------------------------------


def _check_source(cur: Cursor, workspace_id: str, source: Source, policy: outbound.Policy) -> None:
    if source.type == "feed":
        # No DNS here: the feed's host is resolved and checked again at every fetch.
        try:
            policy.check_url(source.url)
        except outbound.Refused as exc:
            raise ValidationFailed.on("source.url", exc.issue, str(exc)) from None
    elif source.type == "evergreen":
        for index, post in enumerate(source.posts):
            _media(cur, workspace_id, post.media_ids, f"source.posts.{index}.media_ids")
    else:
        names = template_placeholders(source.template)
        details = [
            ErrorDetail(
                field=f"source.rows.{index}.{name}",
                issue="missing_placeholder",
                message=f"Row {index} does not give {{{name}}}.",
            )
            for index, row in enumerate(source.rows)
            for name in names
            if name not in row
        ]
        _fail(details)


def template_placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of a template, in order of first use (plain names only)."""
    try:
        return templates.placeholders(templates.parse(template))
    except templates.TemplateError as exc:
        raise ValidationFailed.on("source.template", "invalid_template", str(exc)) from None


def _check_rendered(
    cur: Cursor, workspace_id: str, source: dict[str, Any], target: dict[str, Any]
) -> None:
    """Each template row, rendered, must fit every destination's text limit."""
    if source.get("type") != "template":
        return
    if target.get("queue_id") is not None:
        queue = repo.get_queue(cur, workspace_id, target["queue_id"])
        platforms = [d["platform"] for d in queue.destinations] if queue else []
    else:
        accounts = ws_repo.accounts_by_ids(cur, workspace_id, list(target.get("platforms") or []))
        platforms = [a.platform for a in accounts.values()]
    limits = {p: SPECS[p].text_limit for p in platforms if p in SPECS}
    if not limits:
        return
    platform, limit = min(limits.items(), key=lambda item: item[1])
    parts = templates.parse(source["template"])
    details = []
    for index, row in enumerate(source["rows"]):
        # Counted, not rendered: a row cannot make the API build a long text to measure it.
        length = templates.rendered_length(parts, row)
        if length > limit:
            details.append(
                ErrorDetail(
                    field=f"source.rows.{index}",
                    issue="max_length",
                    message=f"Row {index} renders to {length} characters; {platform} takes"
                    f" at most {limit}.",
                )
            )
    _fail(details)


def compute_next_run(cron: str, timezone: str, after: datetime) -> datetime:
    """The next run of a schedule after ``after``, validating both parts."""
    tz = _zone(timezone, "schedule.timezone")
    try:
        parsed = slotlib.parse_cron(cron)
    except slotlib.CronError as exc:
        raise ValidationFailed.on("schedule.cron", "invalid_cron", exc.message) from exc
    found = slotlib.next_run(parsed, tz, after)
    if found is None:
        raise ValidationFailed.on(
            "schedule.cron", "never_matches", f"{cron!r} matches no date in the next 8 years."
        )
    return found


def _target(cur: Cursor, workspace_id: str, target: Target) -> dict[str, Any]:
    if target.queue_id is not None:
        if repo.get_queue(cur, workspace_id, target.queue_id) is None:
            raise ValidationFailed.on(
                "target.queue_id", "unknown_queue", f"No queue {target.queue_id!r} here."
            )
        return {"queue_id": target.queue_id}
    accounts = _destinations(cur, workspace_id, target.platforms or [], "target.platforms")
    return {"platforms": [a.id for a in accounts]}


def automation_out(row: repo.AutomationRow) -> ContentAutomation:
    target = AutomationTarget(
        queue_id=row.target.get("queue_id"), platforms=row.target.get("platforms")
    )
    return from_row(ContentAutomation, row, target=target)


def plan_run(
    cur: Cursor, workspace_id: str, automation_id: str, name: str, next_run_at: datetime | None
) -> None:
    """Keep one scheduled ``automation_run`` event at the automation's next run."""
    repo.cancel_ref_events(cur, workspace_id, "automation_run", automation_id)
    if next_run_at is not None:
        repo.insert_event(
            cur,
            workspace_id,
            kind="automation_run",
            title=f"Automation run: {name}"[:200],
            starts_at=next_run_at.astimezone(UTC).replace(tzinfo=None),
            ref_type="content_automation",
            ref_id=automation_id,
        )


def list_automations(
    cur: Cursor, workspace_id: str, enabled: bool | None, page: PageRequest
) -> Page[ContentAutomation]:
    rows = repo.list_automations(cur, workspace_id, enabled, page.after_value(), page.fetch)
    return page.page(rows, automation_out, lambda r: [r.id])


def _get_automation_row(cur: Cursor, workspace_id: str, automation_id: str) -> repo.AutomationRow:
    return found(
        repo.get_automation(cur, workspace_id, automation_id), "content automation", automation_id
    )


def get_automation(cur: Cursor, workspace_id: str, automation_id: str) -> ContentAutomation:
    return automation_out(_get_automation_row(cur, workspace_id, automation_id))


def create_automation(
    cur: Cursor,
    workspace_id: str,
    body: ContentAutomationCreate,
    policy: outbound.Policy = outbound.STRICT,
) -> ContentAutomation:
    _check_source(cur, workspace_id, body.source, policy)
    next_run = compute_next_run(body.schedule.cron, body.schedule.timezone, _now())
    target = _target(cur, workspace_id, body.target)
    _check_rendered(cur, workspace_id, body.source.model_dump(mode="json"), target)
    next_run_at = next_run if body.enabled else None
    fields = repo.AutomationFields(
        name=body.name,
        enabled=body.enabled,
        source=body.source.model_dump(mode="json"),
        schedule=body.schedule.model_dump(mode="json"),
        target=target,
        next_run_at=_db(next_run_at),
    )
    automation_id = repo.insert_automation(cur, workspace_id, fields)
    plan_run(cur, workspace_id, automation_id, body.name, next_run_at)
    return get_automation(cur, workspace_id, automation_id)


def update_automation(
    cur: Cursor,
    workspace_id: str,
    automation_id: str,
    body: ContentAutomationUpdate,
    policy: outbound.Policy = outbound.STRICT,
) -> ContentAutomation:
    row = _get_automation_row(cur, workspace_id, automation_id)
    changes = body.model_fields_set
    for field in changes:
        if getattr(body, field) is None:
            raise ValidationFailed.on(field, "null", f"{field} cannot be null.")
    name = body.name if body.name is not None else row.name
    enabled = body.enabled if body.enabled is not None else bool(row.enabled)
    if body.source is not None:
        _check_source(cur, workspace_id, body.source, policy)
        source = body.source.model_dump(mode="json")
    else:
        source = row.source
    schedule = body.schedule.model_dump(mode="json") if body.schedule is not None else row.schedule
    target = _target(cur, workspace_id, body.target) if body.target is not None else row.target
    if body.source is not None or body.target is not None:
        _check_rendered(cur, workspace_id, source, target)
    next_run = compute_next_run(schedule["cron"], schedule["timezone"], _now())
    next_run_at = next_run if enabled else None
    fields = repo.AutomationFields(
        name=name,
        enabled=enabled,
        source=source,
        schedule=schedule,
        target=target,
        next_run_at=_db(next_run_at),
    )
    repo.update_automation(cur, workspace_id, automation_id, fields)
    plan_run(cur, workspace_id, automation_id, name, next_run_at)
    return get_automation(cur, workspace_id, automation_id)


def delete_automation(cur: Cursor, workspace_id: str, automation_id: str) -> None:
    _get_automation_row(cur, workspace_id, automation_id)
    repo.delete_automation(cur, workspace_id, automation_id)
    repo.cancel_ref_events(cur, workspace_id, "automation_run", automation_id)


# -- destination presets -----------------------------------------------------------------------


def preset_out(row: repo.PresetRow) -> DestinationPreset:
    return from_row(DestinationPreset, row)


def _preset_destinations(
    cur: Cursor, workspace_id: str, destinations: Sequence[Any]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, dest in enumerate(destinations):
        field = f"destinations.{index}.account_id"
        account = ws_repo.get_account(cur, workspace_id, dest.account_id)
        if account is None:
            raise ValidationFailed.on(
                field, "unknown_account", f"No account {dest.account_id!r} here."
            )
        if any(d["account_id"] == account.id for d in out):
            raise ValidationFailed.on(field, "duplicate", f"{dest.account_id!r} is listed twice.")
        out.append(
            {"account_id": account.id, "platform": account.platform, "options": dest.options}
        )
    return out


def _unique_preset_name(cur: Cursor, workspace_id: str, name: str, exclude: str | None) -> None:
    ws_repo.serialize_on_workspace(cur, workspace_id)
    if repo.preset_name_taken(cur, workspace_id, name, exclude):
        raise InvalidState(f"A destination preset named {name!r} already exists.")


def _get_preset_row(cur: Cursor, workspace_id: str, preset_id: str) -> repo.PresetRow:
    return found(repo.get_preset(cur, workspace_id, preset_id), "destination preset", preset_id)


def list_presets(cur: Cursor, workspace_id: str, page: PageRequest) -> Page[DestinationPreset]:
    rows = repo.list_presets(cur, workspace_id, page.after_value(), page.fetch)
    return page.page(rows, preset_out, lambda r: [r.id])


def get_preset(cur: Cursor, workspace_id: str, preset_id: str) -> DestinationPreset:
    return preset_out(_get_preset_row(cur, workspace_id, preset_id))


def create_preset(cur: Cursor, workspace_id: str, body: PresetCreate) -> DestinationPreset:
    destinations = _preset_destinations(cur, workspace_id, body.destinations)
    _unique_preset_name(cur, workspace_id, body.name, None)
    preset_id = repo.insert_preset(cur, workspace_id, body.name, destinations)
    return get_preset(cur, workspace_id, preset_id)


def update_preset(
    cur: Cursor, workspace_id: str, preset_id: str, body: PresetUpdate
) -> DestinationPreset:
    row = _get_preset_row(cur, workspace_id, preset_id)
    for field in body.model_fields_set:
        if getattr(body, field) is None:
            raise ValidationFailed.on(field, "null", f"{field} cannot be null.")
    destinations = (
        _preset_destinations(cur, workspace_id, body.destinations)
        if body.destinations is not None
        else row.destinations
    )
    name = body.name if body.name is not None else row.name
    _unique_preset_name(cur, workspace_id, name, preset_id)
    repo.update_preset(cur, workspace_id, preset_id, name, destinations)
    return get_preset(cur, workspace_id, preset_id)


def delete_preset(cur: Cursor, workspace_id: str, preset_id: str) -> None:
    _get_preset_row(cur, workspace_id, preset_id)
    repo.delete_preset(cur, workspace_id, preset_id)


# -- queues ------------------------------------------------------------------------------------


def _weekly(slots: Sequence[SlotIn], field: str = "slots") -> list[dict[str, Any]]:
    seen: set[tuple[int, str]] = set()
    for index, slot in enumerate(slots):
        key = (slot.weekday, slot.time)
        if key in seen:
            raise ValidationFailed.on(
                f"{field}.{index}",
                "duplicate",
                f"Weekday {slot.weekday} at {slot.time} is listed twice.",
            )
        seen.add(key)
    return [{"weekday": w, "time": t} for w, t in sorted(seen)]


def _stored_slots(row: repo.QueueRow) -> list[slotlib.WeeklySlot]:
    out = []
    for slot in row.slots:
        hour, minute = slotlib.parse_hhmm(slot["time"]) or (0, 0)
        out.append(slotlib.WeeklySlot(slot["weekday"], hour, minute))
    return out


def queue_out(cur: Cursor, row: repo.QueueRow) -> Queue:
    return from_row(Queue, row, active_items=repo.count_active_items(cur, row.id))


def require_queue(cur: Cursor, workspace_id: str, queue_id: str) -> repo.QueueRow:
    return found(repo.get_queue(cur, workspace_id, queue_id), "queue", queue_id)


def list_queues(cur: Cursor, workspace_id: str, page: PageRequest) -> Page[Queue]:
    rows = repo.list_queues(cur, workspace_id, page.after_value(), page.fetch)
    return page.page(rows, lambda r: queue_out(cur, r), lambda r: [r.id])


def get_queue(cur: Cursor, workspace_id: str, queue_id: str) -> Queue:
    return queue_out(cur, require_queue(cur, workspace_id, queue_id))


def _queue_destinations(
    cur: Cursor, workspace_id: str, refs: Sequence[str]
) -> list[dict[str, Any]]:
    accounts = _destinations(cur, workspace_id, refs, "destinations")
    return [{"account_id": a.id, "platform": a.platform} for a in accounts]


def create_queue(cur: Cursor, workspace_id: str, body: QueueCreate) -> Queue:
    _zone(body.timezone, "timezone")
    weekly = _weekly(body.slots)
    destinations = _queue_destinations(cur, workspace_id, body.destinations)
    fields = repo.QueueFields(
        name=body.name, timezone=body.timezone, slots=weekly, destinations=destinations
    )
    queue_id = repo.insert_queue(cur, workspace_id, fields)
    return get_queue(cur, workspace_id, queue_id)


def update_queue(cur: Cursor, workspace_id: str, queue_id: str, body: QueueUpdate) -> Queue:
    row = require_queue(cur, workspace_id, queue_id)
    for field in body.model_fields_set:
        if getattr(body, field) is None:
            raise ValidationFailed.on(field, "null", f"{field} cannot be null.")
    timezone = row.timezone
    if body.timezone is not None:
        _zone(body.timezone, "timezone")
        timezone = body.timezone
    weekly = _weekly(body.slots) if body.slots is not None else row.slots
    destinations = (
        _queue_destinations(cur, workspace_id, body.destinations)
        if body.destinations is not None
        else row.destinations
    )
    fields = repo.QueueFields(
        name=body.name if body.name is not None else row.name,
        timezone=timezone,
        slots=weekly,
        destinations=destinations,
    )
    repo.update_queue(cur, workspace_id, queue_id, fields)
    if body.timezone is not None or body.slots is not None:
        reflow(cur, require_queue(cur, workspace_id, queue_id))
    return get_queue(cur, workspace_id, queue_id)


def replace_slots(cur: Cursor, workspace_id: str, queue_id: str, slots: Sequence[SlotIn]) -> Queue:
    return update_queue(cur, workspace_id, queue_id, QueueUpdate(slots=list(slots)))


def delete_queue(cur: Cursor, workspace_id: str, queue_id: str) -> None:
    require_queue(cur, workspace_id, queue_id)
    if repo.automations_targeting_queue(cur, workspace_id, queue_id):
        raise InvalidState("A content automation targets this queue; retarget or delete it first.")
    for item in repo.active_items(cur, queue_id):
        _remove(cur, item)
    repo.delete_queue(cur, workspace_id, queue_id)


def queue_slots(
    cur: Cursor,
    workspace_id: str,
    queue_id: str,
    start: datetime | None,
    end: datetime | None,
    page: PageRequest,
) -> Page[SlotOccurrence]:
    """Concrete slot occurrences in [start, end), ascending, with the item holding each."""
    row = require_queue(cur, workspace_id, queue_id)
    start, end = _range(start, end, DEFAULT_SLOT_WINDOW)
    tz = ZoneInfo(row.timezone)
    taken = {
        _required(i.slot_at): i.id
        for i in repo.active_items(cur, queue_id)
        if i.slot_at is not None
    }
    cursor_at = page.after_value()
    after = (
        datetime.fromisoformat(cursor_at)
        if cursor_at is not None
        else start - timedelta(microseconds=1)
    )
    found: list[slotlib.SlotTime] = []
    for occurrence in slotlib.slot_times(_stored_slots(row), tz, after, end):
        found.append(occurrence)
        if len(found) >= page.fetch:
            break

    def convert(s: slotlib.SlotTime) -> SlotOccurrence:
        return SlotOccurrence(
            starts_at=s.at,
            local_time=s.local.isoformat(),
            weekday=s.slot.weekday,
            time=s.slot.time,
            taken=s.at in taken,
            item_id=taken.get(s.at),
        )

    return page.page(found, convert, lambda s: [s.at.isoformat()])


# -- queue items -------------------------------------------------------------------------------


def reflow(cur: Cursor, queue: repo.QueueRow) -> None:
    """Give the queue's active items, in position order, consecutive slots after now."""
    now = _now()
    items = repo.active_items(cur, queue.id)
    # An experiment's items keep the slot of the arm drawn for them.
    drawn = experiments.assignments_of(cur, [i.post_id for i in items])
    items = [i for i in items if i.post_id not in drawn]
    due = [
        i
        for i in items
        if i.status == "scheduled" and i.slot_at is not None and _required(i.slot_at) <= now
    ]
    movable = [i for i in items if i not in due]
    after = max([now, *(_required(i.slot_at) for i in due)])
    times = slotlib.next_slots(_stored_slots(queue), ZoneInfo(queue.timezone), after, len(movable))
    for index, item in enumerate(movable):
        slot_at = times[index].at.replace(tzinfo=None) if index < len(times) else None
        status = "scheduled" if slot_at is not None else "queued"
        if item.slot_at == slot_at and item.status == status:
            continue
        repo.set_item(cur, item.id, position=item.position, status=status, slot_at=slot_at)
        posts_repo.move(
            cur,
            item.post_id,
            PostStatus.SCHEDULED if slot_at else PostStatus.DRAFT,
            scheduled_at=slot_at,
            reschedule=True,
        )


def item_out(row: repo.QueuedPost) -> QueueItem:
    return from_row(QueueItem, row.item, text=row.post_text, post_status=row.post_status)


ITEM_STATUSES = ["queued", "scheduled", "published", "failed", "removed"]


def list_items(
    cur: Cursor, workspace_id: str, queue_id: str, status: str | None, page: PageRequest
) -> Page[QueueItem]:
    require_queue(cur, workspace_id, queue_id)
    statuses = [status] if status else [s for s in ITEM_STATUSES if s != "removed"]
    after = (page.after_value(0), page.after_value(1)) if page.after is not None else None
    rows = repo.list_items(cur, workspace_id, queue_id, statuses, after, page.fetch)
    return page.page(rows, item_out, lambda r: [r.item.position, r.item.id])


def _get_item_row(cur: Cursor, workspace_id: str, queue_id: str, item_id: str) -> repo.QueuedPost:
    return found(repo.get_item(cur, workspace_id, queue_id, item_id), "queue item", item_id)


def get_item(cur: Cursor, workspace_id: str, queue_id: str, item_id: str) -> QueueItem:
    return item_out(_get_item_row(cur, workspace_id, queue_id, item_id))


def _check_text(text: str, platforms: Sequence[str]) -> None:
    details = []
    for platform in dict.fromkeys(platforms):
        limit = SPECS[platform].text_limit if platform in SPECS else None
        if limit is not None and len(text) > limit:
            details.append(
                ErrorDetail(
                    field="text",
                    issue="too_long",
                    message=f"{len(text)} characters is over {platform}'s {limit}.",
                )
            )
    _fail(details)


def add_item(
    cur: Cursor, workspace_id: str, actor: str, queue_id: str, body: QueueItemCreate
) -> QueueItem:
    queue = require_queue(cur, workspace_id, queue_id)
    if body.post_id is not None:
        post = posts_repo.get_post(cur, workspace_id, body.post_id)
        if post is None:
            raise ValidationFailed.on("post_id", "unknown_post", f"No post {body.post_id!r} here.")
        if post.status != PostStatus.DRAFT:
            raise InvalidState(f"Only a draft post can be queued; this one is {post.status}.")
        if repo.active_item_for_post(cur, post.id) is not None:
            raise InvalidState("This post is already in a queue.")
        post_id = post.id
    else:
        text = body.text or ""
        destinations = queue.destinations
        _check_text(text, [d["platform"] for d in destinations])
        _media(cur, workspace_id, body.media_ids or [], "media_ids")
        post_id = repo.insert_queue_post(
            cur,
            workspace_id,
            text=text,
            media_ids=body.media_ids or [],
            tags=body.tags or [],
            status=PostStatus.DRAFT,
            scheduled_at=None,
            created_by=actor,
            destinations=[(d["account_id"], d["platform"]) for d in destinations],
        )
    position = repo.next_position(cur, queue_id)
    item_id = repo.insert_item(cur, workspace_id, queue_id, post_id, position)
    _join_experiment(cur, workspace_id, queue, (item_id, position), post_id)
    reflow(cur, queue)
    return get_item(cur, workspace_id, queue_id, item_id)


def _join_experiment(
    cur: Cursor, workspace_id: str, queue: repo.QueueRow, item: tuple[str, int], post_id: str
) -> None:
    """A new item of a queue an experiment runs on: drawn an arm, scheduled at its slot."""
    assigner = experiments.Assigner(cur, workspace_id)
    for experiment in experiments_repo.running_on_queue(cur, queue.id):
        count = experiments_repo.assignment_count(cur, experiment.id)
        if experiments.status_of(experiment, count, _now()) != "running":
            continue  # its plan is over: the queue goes on as before
        accounts = [d["account_id"] for d in queue.destinations]
        drawn = assigner.assign(experiment.id, accounts, "queue_id")
        slot_at = drawn.slot_at.replace(tzinfo=None)
        experiments.record(cur, workspace_id, [(post_id, drawn)])
        repo.set_item(cur, item[0], position=item[1], status="scheduled", slot_at=slot_at)
        posts_repo.move(cur, post_id, PostStatus.SCHEDULED, scheduled_at=slot_at, reschedule=True)
        return


def reorder_items(
    cur: Cursor, workspace_id: str, queue_id: str, item_ids: Sequence[str]
) -> list[QueueItem]:
    queue = require_queue(cur, workspace_id, queue_id)
    items = repo.active_items(cur, queue_id)
    if len(set(item_ids)) != len(item_ids) or set(item_ids) != {i.id for i in items}:
        raise ValidationFailed.on(
            "item_ids",
            "not_a_permutation",
            "item_ids must list every queued or scheduled item of the queue exactly once.",
        )
    by_id = {i.id: i for i in items}
    first = min(i.position for i in items)
    for offset, item_id in enumerate(item_ids):
        item = by_id[item_id]
        repo.set_item(
            cur, item_id, position=first + offset, status=item.status, slot_at=item.slot_at
        )
    reflow(cur, queue)
    return [get_item(cur, workspace_id, queue_id, i) for i in item_ids]


def _remove(cur: Cursor, item: repo.QueueItemRow) -> None:
    repo.set_item(cur, item.id, position=item.position, status="removed", slot_at=None)
    posts_repo.move(cur, item.post_id, PostStatus.CANCELED, canceled_at=utcnow())


def remove_item(cur: Cursor, workspace_id: str, queue_id: str, item_id: str) -> QueueItem:
    queue = require_queue(cur, workspace_id, queue_id)
    item = _get_item_row(cur, workspace_id, queue_id, item_id).item
    if item.status not in repo.ACTIVE_ITEM_STATUSES:
        raise InvalidState(f"The item is {item.status}; only queued or scheduled items go.")
    _remove(cur, item)
    reflow(cur, queue)
    return get_item(cur, workspace_id, queue_id, item_id)


# -- scheduled events --------------------------------------------------------------------------


def _range(
    start: datetime | None, end: datetime | None, default: timedelta
) -> tuple[datetime, datetime]:
    start = start or _now()
    end = end or start + default
    if end <= start:
        raise ValidationFailed.on("to", "before_from", "`to` must be after `from`.")
    if end - start > MAX_RANGE:
        raise ValidationFailed.on("to", "range_too_long", "`from` to `to` spans at most 366 days.")
    # A default `to` may pass the last timestamp the API can spell: the window stops there.
    return start, min(end, LATEST)


def event_out(row: repo.CalendarEntry) -> ScheduledEvent:
    return from_row(ScheduledEvent, row)


def list_events(
    cur: Cursor,
    workspace_id: str,
    start: datetime | None,
    end: datetime | None,
    kind: str | None,
    include_canceled: bool,
    page: PageRequest,
) -> Page[ScheduledEvent]:
    start, end = _range(start, end, DEFAULT_CALENDAR_WINDOW)
    after = None
    if page.after is not None:
        after = (datetime.fromisoformat(page.after_value(0)), str(page.after_value(1)))
    rows = repo.list_calendar(
        cur,
        workspace_id,
        start=start.replace(tzinfo=None),
        end=end.replace(tzinfo=None),
        kind=kind,
        include_canceled=include_canceled,
        after=after,
        limit=page.fetch,
    )
    return page.page(rows, event_out, lambda r: [r.starts_at.isoformat(), r.id])


def create_event(cur: Cursor, workspace_id: str, body: EventCreate) -> ScheduledEvent:
    if body.starts_at <= _now():
        raise ValidationFailed.on("starts_at", "in_past", "starts_at must be in the future.")
    if body.ref_type is not None and body.ref_id is not None:
        exists = {
            "post": lambda: posts_repo.get_post(cur, workspace_id, body.ref_id or "") is not None,
            "content_automation": lambda: (
                repo.get_automation(cur, workspace_id, body.ref_id or "") is not None
            ),
            "queue_item": lambda: repo.queue_item_exists(cur, workspace_id, body.ref_id or ""),
        }[body.ref_type]()
        if not exists:
            raise ValidationFailed.on(
                "ref_id", "unknown_ref", f"No {body.ref_type} {body.ref_id!r} here."
            )
    event_id = repo.insert_event(
        cur,
        workspace_id,
        kind=body.kind,
        title=body.title,
        starts_at=body.starts_at.replace(tzinfo=None),
        ref_type=body.ref_type,
        ref_id=body.ref_id,
    )
    row = repo.get_event(cur, workspace_id, event_id)
    assert row is not None
    return event_out(row)


def cancel_event(cur: Cursor, workspace_id: str, event_id: str) -> ScheduledEvent:
    row = repo.get_event(cur, workspace_id, event_id)
    if row is None:
        if posts_repo.get_post(cur, workspace_id, event_id) is not None:
            raise InvalidState("This event is the post's publication; cancel the post instead.")
        if repo.queue_item_exists(cur, workspace_id, event_id):
            raise InvalidState("This event is a queue slot; remove the queue item instead.")
        raise NotFound.resource("scheduled event", event_id)
    if row.status != "scheduled":
        raise InvalidState(f"The event is already {row.status}.")
    repo.cancel_event(cur, event_id)
    updated = repo.get_event(cur, workspace_id, event_id)
    assert updated is not None
    return event_out(updated)
