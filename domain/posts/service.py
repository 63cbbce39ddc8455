"""Posts: validation against each destination's rules, the post state machine, media reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pydantic
from pydantic_core import to_json

from connectors.platforms import SPECS
from core.errors import ErrorDetail
from domain.errors import InvalidState, PayloadTooLarge, ValidationFailed, found, shape_details
from domain.experiments import service as experiments
from domain.experiments.schemas import PostExperiment
from domain.posts import reads
from domain.posts.options import MAX_OPTIONS_BYTES
from domain.posts.schemas import (
    CheckedDestination,
    Destination,
    DestinationRef,
    Failure,
    Post,
    PostCheck,
    PostCreate,
    PostUpdate,
    PresetRef,
)
from domain.workspaces.service import choose_destination
from warehouse import approvals as approvals_repo
from warehouse import automation as automation_repo
from warehouse import idempotency as idem_repo
from warehouse import posts as repo
from warehouse import webhooks as webhooks_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import from_db, to_db, utcnow
from warehouse.posts import EDITABLE, PostStatus
from warehouse.rows import Cursor

# -- validation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    """A post's destinations and media once every rule has passed."""

    accounts: list[tuple[str, str]]  # (account id, platform), in the order given
    media_ids: list[str]
    # Options of the presets named in `platforms`, per platform: defaults under the post's own.
    preset_options: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def options(self, given: dict[str, Any]) -> dict[str, Any]:
        """The post's platform_options with its presets' options filled in beneath them."""
        merged: dict[str, Any] = {k: dict(v) for k, v in self.preset_options.items()}
        for platform, value in given.items():
            merged[platform] = {**merged.get(platform, {}), **value}
        size = len(to_json(merged))
        if self.preset_options and size > MAX_OPTIONS_BYTES:
            # Each part passed its own bound; what is stored and shown is the merge.
            raise ValidationFailed.on(
                "platform_options",
                "too_large",
                f"With the presets' options beneath them, the options take {size} bytes as"
                f" JSON; at most {MAX_OPTIONS_BYTES}.",
            )
        return merged


def _detail(field: str, issue: str, message: str) -> ErrorDetail:
    return ErrorDetail(field=field, issue=issue, message=message)


def _expand(
    cur: Cursor,
    workspace_id: str,
    platforms: Sequence[Destination],
    details: list[ErrorDetail],
    preset_options: dict[str, dict[str, Any]],
    by_id: dict[str, ws_repo.AccountRow],
) -> list[tuple[int, str, str]]:
    """(index, account id or platform name, field) of each entry, presets opened up."""
    refs: list[tuple[int, str, str]] = []
    for index, entry in enumerate(platforms):
        field_name = f"platforms.{index}"
        if isinstance(entry, PresetRef):
            preset = automation_repo.get_preset(cur, workspace_id, entry.preset_id)
            if preset is None:
                details.append(
                    _detail(
                        f"{field_name}.preset_id",
                        "unknown_preset",
                        f"No destination preset {entry.preset_id!r} here.",
                    )
                )
                continue
            for dest in preset.destinations:
                refs.append((index, str(dest["account_id"]), field_name))
                account = by_id.get(str(dest["account_id"]))
                if account is not None and dest.get("options"):
                    preset_options.setdefault(account.platform, {}).update(dest["options"])
        elif isinstance(entry, DestinationRef):
            refs.append((index, entry.account_id, field_name))
        else:
            refs.append((index, entry, field_name))
    return refs


def _resolve(
    cur: Cursor,
    workspace_id: str,
    platforms: Sequence[Destination],
    details: list[ErrorDetail],
    preset_options: dict[str, dict[str, Any]],
    accounts: list[ws_repo.AccountRow],
) -> list[tuple[int, str, str]]:
    """(index, account id, platform) of each destination that resolves."""
    resolved: list[tuple[int, str, str]] = []
    seen: dict[str, int] = {}
    by_id = {a.id: a for a in accounts}
    for index, ref, field in _expand(cur, workspace_id, platforms, details, preset_options, by_id):
        if not ref.startswith("acc_") and ref not in SPECS:
            details.append(
                _detail(
                    field,
                    "unknown_platform",
                    f"{ref!r} is neither an account id nor a platform "
                    f"({', '.join(sorted(SPECS))}).",
                )
            )
            continue
        try:
            account = choose_destination(accounts, ref, field)
        except ValidationFailed as exc:
            details.extend(exc.details)
            continue
        if account.status != "active":
            details.append(
                _detail(
                    field,
                    "account_inactive",
                    f"Account {account.id} is {account.status}; reconnect it first.",
                )
            )
            continue
        if account.id in seen:
            details.append(
                _detail(
                    field,
                    "duplicate",
                    f"Same account as platforms.{seen[account.id]} ({account.id}).",
                )
            )
            continue
        seen[account.id] = index
        resolved.append((index, account.id, account.platform))
    return resolved


def validate(
    cur: Cursor,
    workspace_id: str,
    text: str,
    platforms: Sequence[Destination],
    media_ids: Sequence[str],
    accounts: list[ws_repo.AccountRow] | None = None,
    prior: Sequence[ErrorDetail] = (),
) -> Checked:
    """Check a post's destinations, text and media against every platform; all failures at once.

    ``prior``: failures found before (a `scheduled_at` in the past), reported with these.
    """
    details: list[ErrorDetail] = list(prior)
    preset_options: dict[str, dict[str, Any]] = {}
    if accounts is None:
        accounts = repo.destination_choices(cur, workspace_id)[1]
    resolved = _resolve(cur, workspace_id, platforms, details, preset_options, accounts)

    found = repo.media_by_ids(cur, workspace_id, list(media_ids))
    kinds: list[str] = []
    seen_media: set[str] = set()
    for index, media_id in enumerate(media_ids):
        field = f"media_ids.{index}"
        if media_id in seen_media:
            details.append(_detail(field, "duplicate", f"{media_id!r} is listed twice."))
        elif media_id not in found:
            details.append(_detail(field, "unknown_media", f"No media {media_id!r} here."))
        else:
            kinds.append(found[media_id].kind)
        seen_media.add(media_id)
    media_ok = len(kinds) == len(media_ids)

    if not text.strip() and not media_ids:
        details.append(_detail("text", "required", "A post needs text or media."))
    length = len(text)  # Python strings count Unicode code points
    for index, _, platform in resolved:
        spec = SPECS[platform]
        if length > spec.text_limit:
            details.append(
                _detail(
                    f"platforms.{index}",
                    "max_length",
                    f"{spec.display_name} takes at most {spec.text_limit} characters;"
                    f" the text has {length}.",
                )
            )
        problem = spec.media_problem(kinds) if media_ok else None
        if problem is not None:
            details.append(_detail(f"platforms.{index}", *problem))
    if details:
        raise ValidationFailed(
            details[0].message if len(details) == 1 else "The post is invalid.", details
        )
    return Checked(
        [(account, platform) for _, account, platform in resolved],
        list(media_ids),
        preset_options,
    )


def _check_future(value: datetime | None) -> tuple[datetime | None, list[ErrorDetail]]:
    """The time to store, and the failure to report with the others if it is past."""
    stored = to_db(value)
    if stored is not None and stored <= utcnow():
        message = "scheduled_at is in the past; omit it to publish now."
        return stored, [_detail("scheduled_at", "in_past", message)]
    return stored, []


def _needs_approval(cur: Cursor, workspace_id: str, requested: bool) -> bool:
    if requested:
        return True
    workspace = ws_repo.get_workspace(cur, workspace_id)
    return bool(workspace and workspace.approval_required)


# -- commands ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Draft:
    """A post that passed validation, ready to insert."""

    workspace_id: str
    actor: str
    new: repo.NewPost
    accounts: list[tuple[str, str]]
    experiment: PostExperiment | None = None


def _draft(
    cur: Cursor,
    workspace_id: str,
    actor: str,
    body: PostCreate,
    choices: tuple[bool, list[ws_repo.AccountRow]],
    assigner: experiments.Assigner | None = None,
) -> _Draft:
    """Validate a new post against its workspace ((approval rule, accounts)); nothing written.

    With an ``experiment_id``, ``assigner`` draws its arm and slot (the batch's assigner, so
    that the posts of one batch take different slots)."""
    scheduled_at, past = _check_future(body.scheduled_at)
    if body.experiment_id is not None:
        past = [*past, *_experiment_conflicts(body)]
    workspace_approval, accounts = choices
    checked = validate(
        cur, workspace_id, body.text, body.platforms, body.media_ids, accounts, prior=past
    )
    experiment = None
    if body.experiment_id is not None:
        assigner = assigner or experiments.Assigner(cur, workspace_id)
        experiment = assigner.assign(body.experiment_id, [a for a, _ in checked.accounts])
        scheduled_at = to_db(experiment.slot_at)
    if body.draft:
        status = PostStatus.DRAFT
    elif body.approval_required or workspace_approval:
        status = PostStatus.PENDING_APPROVAL
    else:
        status = PostStatus.SCHEDULED
        scheduled_at = scheduled_at or utcnow()
    new = repo.NewPost(
        workspace_id=workspace_id,
        text=body.text,
        status=status,
        scheduled_at=scheduled_at,
        approval_required=body.approval_required,
        tags=list(body.tags),
        media_ids=checked.media_ids,
        platform_options=checked.options({str(k): v for k, v in body.platform_options.items()}),
        created_by=actor,
    )
    return _Draft(workspace_id, actor, new, checked.accounts, experiment)


def _experiment_conflicts(body: PostCreate) -> list[ErrorDetail]:
    """What an experiment's post may not set: its time is the arm's slot, and it is published."""
    details = []
    if body.scheduled_at is not None:
        message = "An experiment schedules its posts; omit scheduled_at."
        details.append(_detail("scheduled_at", "set_by_experiment", message))
    if body.draft:
        message = "An experiment's post is scheduled when it is created; it cannot be a draft."
        details.append(_detail("draft", "set_by_experiment", message))
    return details


def _insert(cur: Cursor, drafts: Sequence[_Draft]) -> list[Post]:
    """Insert validated posts, their destinations, approvals and events: a statement a table."""
    rows = repo.insert_posts(cur, [draft.new for draft in drafts])
    # A new post has no destinations to delete; the response is built from what was inserted.
    destinations = repo.insert_destinations_of(
        cur, [(row.id, d.workspace_id, d.accounts) for row, d in zip(rows, drafts, strict=True)]
    )
    posts: list[Post] = []
    events: list[tuple[str, str, dict[str, Any]]] = []
    for row, draft in zip(rows, drafts, strict=True):
        post_id = row.id
        if draft.experiment is not None:
            experiments.record(cur, draft.workspace_id, [(post_id, draft.experiment)])
        item: approvals_repo.ItemRow | None = None
        if draft.new.status == PostStatus.PENDING_APPROVAL:
            approvals_repo.submit(cur, draft.workspace_id, post_id, draft.actor)
            item = approvals_repo.latest_items_of_posts(cur, [post_id]).get(post_id)
        post = reads.post_out(row, destinations[post_id], item, draft.experiment)
        posts.append(post)
        # Lifecycle events go to the webhook outbox in this same transaction.
        payload = {"post": post.model_dump(mode="json")}
        events.append((draft.workspace_id, "post.created", payload))
        if draft.new.status == PostStatus.SCHEDULED:
            events.append((draft.workspace_id, "post.scheduled", payload))
    webhooks_repo.enqueue_many(cur, events)
    return posts


def check_post(cur: Cursor, workspace_id: str, actor: str, raw: object) -> PostCheck:
    """A dry run of :func:`create_post` on a body as sent: every failure at once, no write.

    The body's shape (pydantic's checks) and then the rules of each destination, as
    ``POST /posts`` checks them; the same function answers ``POST /posts/validate`` and the
    agents' ``validate_post``.
    """
    try:
        body = PostCreate.model_validate(raw)
    except pydantic.ValidationError as exc:
        return _invalid(shape_details(exc.errors()))
    try:
        draft = _draft(cur, workspace_id, actor, body, repo.destination_choices(cur, workspace_id))
    except ValidationFailed as exc:
        return _invalid(exc.details)
    return PostCheck(
        valid=True,
        errors=[],
        status=draft.new.status,
        scheduled_at=from_db(draft.new.scheduled_at),
        destinations=[
            CheckedDestination(account_id=account, platform=platform)
            for account, platform in draft.accounts
        ],
    )


def _invalid(details: Sequence[ErrorDetail]) -> PostCheck:
    failures = [Failure(field=d.field, issue=d.issue, message=d.message) for d in details]
    return PostCheck(valid=False, errors=failures, status=None, scheduled_at=None, destinations=[])


def create_post(cur: Cursor, workspace_id: str, actor: str, body: PostCreate) -> Post:
    choices = repo.destination_choices(cur, workspace_id)
    return _insert(cur, [_draft(cur, workspace_id, actor, body, choices)])[0]


@dataclass(frozen=True)
class PostRequest:
    """A ``POST /posts`` with a fresh Idempotency-Key, waiting for its group commit."""

    workspace_id: str
    actor: str
    body: PostCreate
    record: idem_repo.RecordKey
    fingerprint: str
    ttl_seconds: int
    request_id: str


class KeySeen(Exception):
    """The request's Idempotency-Key has a record already: replay, refuse or take it over."""


def create_posts(cur: Cursor, requests: Sequence[PostRequest]) -> list[Post | Exception]:
    """Create the posts of many requests (one batch's writes), each under its own key.

    The outcome of each request is its post, or the exception refusing it with nothing
    written: ``ValidationFailed``, or :class:`KeySeen` for a key already recorded (the caller
    then goes the careful way, see ``domain.idempotency.take``). The caller records each post's
    response under its key in the same transaction.
    """
    outcomes: list[Post | Exception] = [KeySeen() for _ in requests]
    choices: dict[str, tuple[bool, list[ws_repo.AccountRow]]] = {}
    assigners: dict[str, experiments.Assigner] = {}
    keys: set[idem_repo.RecordKey] = set()
    valid: list[tuple[int, _Draft]] = []
    for index, request in enumerate(requests):
        if request.record in keys:
            continue  # the same key twice in one batch: the second replays the first
        keys.add(request.record)
        workspace_id = request.workspace_id
        if workspace_id not in choices:
            choices[workspace_id] = repo.destination_choices(cur, workspace_id)
        assigner = assigners.setdefault(workspace_id, experiments.Assigner(cur, workspace_id))
        try:
            draft = _draft(
                cur, workspace_id, request.actor, request.body, choices[workspace_id], assigner
            )
        except (ValidationFailed, InvalidState) as exc:
            # A retry of a request that succeeded earlier replays it, even if it would no
            # longer validate (a scheduled_at now past).
            if not idem_repo.exists(cur, request.record):
                outcomes[index] = exc
            continue
        valid.append((index, draft))
    posts = _insert(cur, [draft for _, draft in valid])
    for (index, _), post in zip(valid, posts, strict=True):
        outcomes[index] = post
    return outcomes


def _require(cur: Cursor, workspace_id: str, post_id: str) -> repo.PostRow:
    return found(repo.get_post(cur, workspace_id, post_id), "post", post_id)


def _moved_meanwhile(cur: Cursor, workspace_id: str, post_id: str) -> InvalidState:
    """The refusal of a write whose post changed state since this request read it."""
    status = _require(cur, workspace_id, post_id).status
    return InvalidState(f"The post is {status} now; read it again before changing it.")


def update_post(cur: Cursor, workspace_id: str, actor: str, post_id: str, body: PostUpdate) -> Post:
    row = _require(cur, workspace_id, post_id)
    status = row.status
    if status not in EDITABLE:
        raise InvalidState(f"A {status} post cannot be edited.")
    given = body.model_fields_set
    if body.draft is True and status != PostStatus.DRAFT:
        raise InvalidState(f"A {status} post cannot go back to draft; cancel it instead.")
    current = repo.destinations_of(cur, [post_id])[post_id]
    if any(d.status != "pending" for d in current):
        # The worker has claimed a destination: editing now could change what goes out.
        raise InvalidState("This post is being published and can no longer be edited.")
    for name in ("text", "platforms", "media_ids", "tags", "platform_options", "draft"):
        if name in given and getattr(body, name) is None:
            raise ValidationFailed.on(name, "null", f"{name} cannot be null.")

    scheduled_at = row.scheduled_at
    past: list[ErrorDetail] = []
    moved = {"scheduled_at", "platforms", "draft"} & given
    if moved and experiments.assignments_of(cur, [post_id]):
        # Its slot and accounts are what the experiment drew and measures.
        name = sorted(moved)[0]
        message = "An experiment's post keeps its slot and accounts; cancel it instead."
        raise ValidationFailed.on(name, "set_by_experiment", message)
    if "scheduled_at" in given:
        scheduled_at, past = _check_future(body.scheduled_at)
    text = body.text if body.text is not None else row.text
    media_ids = body.media_ids if body.media_ids is not None else row.media_ids
    if body.platforms is not None:
        platforms: Sequence[Destination] = body.platforms
    else:
        platforms = [d.account_id for d in current]
    checked = validate(cur, workspace_id, text, platforms, media_ids, prior=past)
    options: dict[str, Any] = checked.options(
        {str(k): v for k, v in body.platform_options.items()}
        if body.platform_options is not None
        else row.platform_options
    )
    edited = _reviewed_changes(row, current, text, checked, options)
    item = (
        approvals_repo.latest_items_of_posts(cur, [post_id]).get(post_id)
        if edited and status in (PostStatus.SCHEDULED, PostStatus.PENDING_APPROVAL)
        else None
    )
    # What a reviewer approved was changed: the approval no longer covers the post.
    review_again = status == PostStatus.SCHEDULED and item is not None and item.status == "approved"

    submit = status == PostStatus.DRAFT and body.draft is False
    new_status = PostStatus.PENDING_APPROVAL if review_again else status
    if submit:
        new_status = (
            PostStatus.PENDING_APPROVAL
            if _needs_approval(cur, workspace_id, row.approval_required)
            else PostStatus.SCHEDULED
        )
    if new_status == PostStatus.SCHEDULED and scheduled_at is None:
        scheduled_at = utcnow()
    changed = repo.update_post(
        cur,
        post_id,
        text=text,
        status=new_status,
        scheduled_at=scheduled_at,
        tags=list(body.tags) if body.tags is not None else row.tags,
        media_ids=checked.media_ids,
        platform_options=options,
        was=status,
    )
    if not changed:
        raise _moved_meanwhile(cur, workspace_id, post_id)
    if body.platforms is not None:
        repo.replace_destinations(cur, post_id, workspace_id, checked.accounts)
    if submit and new_status == PostStatus.PENDING_APPROVAL:
        approvals_repo.submit(cur, workspace_id, post_id, actor)
    elif item is not None:
        _record_edit(cur, workspace_id, actor, item, edited, review_again)
    post = reads.get_post(cur, workspace_id, post_id)
    if review_again and item is not None and post.approval is not None:
        # The post's `approval` is the new item; `superseded`, the approved one it replaces.
        superseded = {"item_id": item.id, "batch_id": item.batch_id, "status": item.status}
        payload = {"post": post.model_dump(mode="json"), "superseded": superseded}
        webhooks_repo.enqueue_event(cur, workspace_id, "approval.superseded", payload)
    if submit and new_status == PostStatus.SCHEDULED:
        reads.emit(cur, workspace_id, "post.scheduled", post)
    return post


def _reviewed_changes(
    row: repo.PostRow,
    current: Sequence[repo.DestinationRow],
    text: str,
    checked: Checked,
    options: dict[str, Any],
) -> list[str]:
    """The fields a reviewer approves (the post's `version`) that this edit changes."""
    accounts = sorted(account for account, _ in checked.accounts)
    pairs = [
        ("text", row.text, text),
        ("media_ids", row.media_ids, checked.media_ids),
        ("platforms", sorted(d.account_id for d in current), accounts),
        ("platform_options", row.platform_options or {}, options),
    ]
    return [name for name, before, after in pairs if before != after]


def _record_edit(
    cur: Cursor,
    workspace_id: str,
    actor: str,
    item: approvals_repo.ItemRow,
    edited: list[str],
    review_again: bool,
) -> None:
    """Keep an edit of reviewed content on the post's item; an approved one is superseded."""
    fields = ", ".join(edited)
    if not review_again:
        if item.status == "pending":
            approvals_repo.insert_event(
                cur, item.id, workspace_id, "edit", actor, f"Edited: {fields}."
            )
        return
    new_item = approvals_repo.submit(cur, workspace_id, item.post_id, actor)
    note = f"Edited after approval ({fields}); under review again as {new_item}."
    approvals_repo.insert_event(cur, item.id, workspace_id, "supersede", actor, note)


def cancel_post(cur: Cursor, workspace_id: str, actor: str, post_id: str) -> Post:
    status = _require(cur, workspace_id, post_id).status
    if status not in EDITABLE or not repo.move(
        cur, post_id, PostStatus.CANCELED, canceled_at=utcnow()
    ):
        raise InvalidState(
            f"A {status} post cannot be canceled (only draft, pending_approval or scheduled)."
        )
    if status == PostStatus.PENDING_APPROVAL:
        approvals_repo.withdraw(cur, workspace_id, post_id, actor)
    post = reads.get_post(cur, workspace_id, post_id)
    reads.emit(cur, workspace_id, "post.canceled", post)
    return post


def check_quota(cur: Cursor, workspace_id: str, size: int, quota: int) -> None:
    """Refuse (``quota_exceeded``) a file that would take the workspace past its quota."""
    # Read in the request's transaction: two uploads racing can each see the other's bytes
    # missing, so the quota can be overshot by the files in flight, never by more.
    used = repo.media_bytes(cur, workspace_id)
    if used + size > quota:
        message = (
            f"This workspace's media may take {quota:,} bytes; it holds {used:,} and the file"
            f" has {size:,}."
        )
        raise PayloadTooLarge(
            message, [ErrorDetail(field="file", issue="quota_exceeded", message=message)]
        )


def add_media(cur: Cursor, media: repo.NewMedia, quota: int) -> None:
    """Record a stored file as the workspace's media, within the workspace's quota."""
    check_quota(cur, media.workspace_id, media.size_bytes, quota)
    repo.insert_media(cur, media)
