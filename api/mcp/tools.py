"""The agents' tools: each a REST endpoint's twin, run on the same domain service.

A tool names its endpoint's scope, its arguments (a pydantic model: the input schema), the
model of what it answers (the output schema: the endpoint's `data`), its hints, and for a
write the REST method and path its idempotency key is filed under, so that a write is one
write whichever interface asked (domain/idempotency.py). Nothing here speaks MCP's wire:
api/mcp/server.py does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.mcp import docs
from core.settings import Settings
from domain.analytics import breakouts
from domain.analytics import publishing as reliability
from domain.analytics import service as analytics
from domain.analytics.as_of import AS_OF_DESCRIPTION, resolve_as_of
from domain.analytics.breakouts_schemas import Breakouts
from domain.analytics.publishing_schemas import PublishingReliability
from domain.analytics.schemas import (
    Basis,
    BestTimes,
    Competitors,
    Creators,
    EntityType,
    Granularity,
    GroupBy,
    InsightKind,
    Insights,
    PostAnalytics,
    TrendStatus,
    UnifiedAnalytics,
    ViralTrends,
)
from domain.approvals import service as approvals
from domain.approvals.schemas import ApprovalAction, ApprovalBatch, ApprovalItem
from domain.automation import service as automation
from domain.automation.schemas import Queue
from domain.experiments import service as experiments
from domain.experiments.schemas import (
    Experiment,
    ExperimentCreate,
    ExperimentDetail,
    ExperimentStop,
)
from domain.idempotency import KEY_PATTERN
from domain.inbox import drafts
from domain.inbox import service as inbox
from domain.inbox.schemas import InboxDraft, InboxItem, ItemFilters, Respond, Responded
from domain.pagination import CursorCodec, PageRequest
from domain.posts import reads
from domain.posts import service as posts
from domain.posts.schemas import Post, PostCheck, PostCreate, PostUpdate
from domain.schemas import Page, UtcDatetime
from domain.workspaces import service as workspaces
from domain.workspaces.keys import ApiKey
from domain.workspaces.schemas import Account, Platform, Workspace
from warehouse import posts as posts_repo
from warehouse.analytics import TrendFilter
from warehouse.ids import to_db
from warehouse.posts import PostStatus
from warehouse.rows import Cursor
from warehouse.store import LakeSnapshot, Store, Transaction

BASE_PATH = "/api/public/v1"  # api/app.py's, which imports this package when it builds the app


# -- arguments ---------------------------------------------------------------------------------


class Args(BaseModel):
    """A tool's arguments: unknown ones are errors, as unknown body fields are."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# Short: every tool repeats them in tools/list; the server's instructions say the rest.
WORKSPACE_DESCRIPTION = "`ws_…` (list_workspaces); optional with one workspace or X-Workspace-Id."
KEY_DESCRIPTION = (
    "A new unique string (a UUID) per write. Reuse the SAME key when you retry this call: it "
    "is done once. The same key with other arguments (another id) is IDEMPOTENCY_CONFLICT."
)
WorkspaceId = Annotated[str | None, Field(max_length=64, description=WORKSPACE_DESCRIPTION)]
IdempotencyKey = Annotated[
    str, Field(min_length=1, max_length=255, pattern=KEY_PATTERN, description=KEY_DESCRIPTION)
]
Limit = Annotated[int, Field(ge=1, le=100, description="Page size, 1 to 100.")]
PageCursor = Annotated[
    str | None,
    Field(max_length=2048, description="`pagination.next_cursor` of the previous page."),
]
Id = Annotated[str, Field(min_length=1, max_length=64)]
PlatformArg = Annotated[Platform | None, Field(description="Only this platform.")]
AccountArg = Annotated[str | None, Field(max_length=64, description="Only this account.")]
# A snapshot id as an answer's provenance gives it (a number), or its text, or an instant.
AsOf = Annotated[
    Annotated[int, Field(ge=0)] | Annotated[str, Field(min_length=1, max_length=64)] | None,
    Field(description=AS_OF_DESCRIPTION),
]


class InWorkspace(Args):
    workspace_id: WorkspaceId = None


class Paged(InWorkspace):
    limit: Limit = 25
    cursor: PageCursor = None


class NoArgs(Args):
    pass


class ListAccounts(Paged):
    platform: PlatformArg = None


class ListPosts(Paged):
    status: PostStatus | None = Field(default=None, description="Only posts in this state.")
    platform: Platform | None = Field(default=None, description="Only posts to this platform.")
    account_id: str | None = Field(
        default=None, max_length=64, description="Only posts to this account."
    )
    tag: str | None = Field(default=None, max_length=64, description="Only posts with this tag.")
    created_from: UtcDatetime | None = Field(default=None, description="Inclusive, with offset.")
    created_to: UtcDatetime | None = Field(default=None, description="Exclusive, with offset.")
    scheduled_from: UtcDatetime | None = Field(default=None, description="Inclusive.")
    scheduled_to: UtcDatetime | None = Field(default=None, description="Exclusive.")


class PostRef(InWorkspace):
    post_id: Id = Field(description="The post's id (`post_…`).")


class ValidatePost(PostCreate):
    workspace_id: WorkspaceId = None


class CreatePost(PostCreate):
    idempotency_key: IdempotencyKey
    workspace_id: WorkspaceId = None


class UpdatePost(PostUpdate):
    post_id: Id = Field(description="The post to edit (`post_…`).")
    idempotency_key: IdempotencyKey
    workspace_id: WorkspaceId = None


class CancelPost(InWorkspace):
    post_id: Id = Field(description="The post to cancel (`post_…`).")
    idempotency_key: IdempotencyKey


class ListApprovals(Paged):
    status: Literal["pending", "completed"] | None = Field(
        default=None, description="`pending`: batches with an item still to review."
    )


class ActOnApproval(ApprovalAction):
    item_id: Id = Field(description="The approval item (`api_…`), not the batch (`apb_…`).")
    idempotency_key: IdempotencyKey
    workspace_id: WorkspaceId = None


class ListInboxItems(Paged, ItemFilters):
    pass


class DraftReply(InWorkspace):
    item_id: Id = Field(description="The inbox item (`inb_…`) to draft a reply for.")
    idempotency_key: IdempotencyKey


class RespondToInboxItem(Respond):
    item_id: Id = Field(description="The inbox item (`inb_…`) to answer.")
    idempotency_key: IdempotencyKey
    workspace_id: WorkspaceId = None


class AsOfArgs(Args):
    as_of: AsOf = None


class UnifiedArgs(Paged, AsOfArgs):
    from_: UtcDatetime | None = Field(
        default=None,
        alias="from",
        description="Inclusive start, with offset. Default: the last N buckets in `tz` counting "
        "the one holding `to` (N: 48 hours, 28 days, 12 weeks, 12 months).",
    )
    to: UtcDatetime | None = Field(default=None, description="Exclusive end; default now.")
    platform: PlatformArg = None
    account_id: AccountArg = None
    granularity: Granularity = Field(
        default="day",
        description="Bucket size in `tz`: `hour` (ranges up to 14 days), `day` (400 days), "
        "`week` (ISO weeks; 1096 days) or `month` (1827 days).",
    )
    tz: str = Field(default="UTC", max_length=64, description="IANA time zone of the buckets.")
    basis: Basis = Field(
        default="activity",
        description="`activity`: growth between readings, in the bucket it was read in. "
        "`published`: each own post's lifetime totals, in the bucket it was published in.",
    )
    group_by: GroupBy = Field(
        default="account",
        description="Series rows per bucket (`total`), per bucket and platform (`platform`) or "
        "per bucket, platform and account (`account`).",
    )


class TrendArgs(Paged, AsOfArgs):
    entity_type: EntityType | None = Field(default=None, description="post, hashtag or topic.")
    status: TrendStatus | None = Field(default=None, description="Only this status.")
    platform: PlatformArg = None
    min_score: float | None = Field(
        default=None, allow_inf_nan=False, description="Only scores at least this."
    )
    day: date | None = Field(
        default=None, description="The trends judged on this UTC day; default the newest."
    )


class InsightArgs(Paged, AsOfArgs):
    kind: InsightKind | None = Field(default=None, description="Only this kind.")
    platform: PlatformArg = None
    account_id: AccountArg = None


class BestTimesArgs(InWorkspace, AsOfArgs):
    account_id: Id = Field(description="A connected account (`acc_…`, from list_accounts).")
    tz: str = Field(
        default="UTC", max_length=64, description="IANA time zone of the weekdays and hours."
    )


class CreatorArgs(Paged, AsOfArgs):
    platform: PlatformArg = None
    category: str | None = Field(
        default=None, max_length=100, description="Only this category (any case)."
    )


class CompetitorArgs(Paged, AsOfArgs):
    pass


class BreakoutArgs(Paged, AsOfArgs):
    platform: PlatformArg = None
    account_id: AccountArg = None
    since: UtcDatetime | None = Field(
        default=None, description="Only breakouts started at or after this instant."
    )


class PostAnalyticsArgs(PostRef, AsOfArgs):
    pass


class ReliabilityArgs(InWorkspace):
    from_: UtcDatetime | None = Field(
        default=None, alias="from", description="Inclusive, with offset; default to - 7 days."
    )
    to: UtcDatetime | None = Field(default=None, description="Exclusive; default now.")
    platform: PlatformArg = None
    account_id: AccountArg = None


class ExperimentRef(InWorkspace, AsOfArgs):
    experiment_id: Id = Field(description="The experiment's id (`exp_…`).")


class CreateExperiment(ExperimentCreate):
    idempotency_key: IdempotencyKey
    workspace_id: WorkspaceId = None


class StopExperiment(ExperimentStop):
    experiment_id: Id = Field(description="The experiment to stop (`exp_…`).")
    idempotency_key: IdempotencyKey
    workspace_id: WorkspaceId = None


class ExplainError(Args):
    code: str = Field(
        max_length=64, description="An error code, e.g. `INVALID_STATE` or `RATE_LIMITED`."
    )


# -- what a tool runs with ---------------------------------------------------------------------


@dataclass
class Call:
    """One tool call: who asks, in which workspace, and the transaction it reads or writes in."""

    key: ApiKey
    workspace_id: str
    settings: Settings
    codec: CursorCodec
    txn: Transaction | None = None
    write_cur: Cursor | None = None
    store: Store | None = None  # a write's, for the lake reads beside it (:meth:`writing`)
    body: dict[str, Any] = field(default_factory=dict)  # the arguments as sent, for writes
    now: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def cur(self) -> Cursor:
        if self.write_cur is not None:
            return self.write_cur
        assert self.txn is not None
        return self.txn.cur

    @property
    def transaction(self) -> Transaction:
        assert self.txn is not None
        return self.txn

    @property
    def actor(self) -> str:
        return self.key.id

    @contextmanager
    def writing(self) -> Iterator[Transaction]:
        """The write's transaction as a service that also reads the lake takes it (REST's
        ``ctx.txn``): its cursor is the write's, its lake reads are a snapshot of their own,
        ended here; the idempotency unit commits the write."""
        assert self.store is not None
        assert self.write_cur is not None
        txn = _Writing(self.store, self.write_cur)
        try:
            yield txn
        finally:
            txn.rollback()  # the lake reads only: the publishing transaction is never begun

    def page(self, path: str, args: Paged) -> PageRequest:
        """The page asked for, its cursor bound to the REST endpoint's (one cursor for both:
        api/pagination.py names an endpoint by its route's path, which is the router's)."""
        endpoint = f"GET {path}"
        after = self.codec.decode(endpoint, args.cursor) if args.cursor else None
        return PageRequest(limit=args.limit, after=after, endpoint=endpoint, codec=self.codec)


class _Writing(Transaction):
    """A transaction whose publishing cursor is a write's own, begun by the idempotency unit."""

    def __init__(self, store: Store, cur: Cursor) -> None:
        super().__init__(store, write=False)  # its own publishing transaction: never begun
        self._write_cur = cur

    @property
    def cur(self) -> Cursor:
        return self._write_cur


@dataclass(frozen=True)
class Write:
    """How a write tool is filed under its idempotency key: REST's method, path and status."""

    method: str
    path: Callable[[Any], str]
    status: int
    path_args: tuple[str, ...] = ()
    #: Whether the REST endpoint takes a body (its fingerprint is of the arguments as sent).
    body: bool = True


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    scope: str | None
    args: type[Args] | type[BaseModel]
    output: type[BaseModel]
    run: Callable[[Call, Any], BaseModel]
    summary: Callable[[dict[str, Any]], str]
    destructive: bool = False
    open_world: bool = False
    write: Write | None = None
    in_workspace: bool = True
    #: The arguments go to the service as sent (validate_post: their shape is its answer).
    raw: bool = False
    #: Counted against the key's budget of writes (REST's method is a write).
    counts_as_write: bool = False
    #: Where its `data` holds text from the platforms, written by third parties (dotted paths,
    #: `[]` for each item of a list): the description names them as data, never instructions.
    platform_text: tuple[str, ...] = ()

    @property
    def read_only(self) -> bool:
        """Only a tool filed under an idempotency key writes."""
        # validate_post counts as a write but is a dry run: it stores nothing.
        return self.write is None

    @property
    def idempotent(self) -> bool:
        # Reads change nothing; a write's repeat with the same idempotency_key (one of its
        # arguments) replays the first answer: the same arguments have no further effect.
        return True


# -- summaries ---------------------------------------------------------------------------------


def _page(noun: str) -> Callable[[dict[str, Any]], str]:
    def summary(data: dict[str, Any]) -> str:
        items = data.get("items", [])
        more = data.get("pagination", {}).get("has_more")
        tail = "; more: call again with cursor=pagination.next_cursor" if more else ""
        return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}{tail}."

    return summary


def _post(verb: str) -> Callable[[dict[str, Any]], str]:
    def summary(data: dict[str, Any]) -> str:
        where = ", ".join(d["platform"] for d in data.get("destinations", []))
        when = data.get("scheduled_at") or "no time set"
        return f"Post {data['post_id']} {verb}: {data['status']} ({where}; {when})."

    return summary


def _check(data: dict[str, Any]) -> str:
    if data["valid"]:
        where = ", ".join(d["platform"] for d in data["destinations"])
        return f"Valid: would be created as {data['status']} for {where}. Nothing was stored."
    fields = ", ".join(f"{e['field']} ({e['issue']})" for e in data["errors"])
    return f"Invalid, {len(data['errors'])} problem(s): {fields}. Nothing was stored."


def _unified(data: dict[str, Any]) -> str:
    totals = data.get("totals", {})
    shown = ", ".join(
        f"{name} {totals[name]}"
        for name in ("impressions", "engagements", "engagement_rate")
        if totals.get(name) is not None
    )
    # a rate says what it divides: its basis and what it leaves out
    coverage = totals.get("engagement_rate_coverage")
    if coverage:
        left = ", ".join(coverage.get("excluded_platforms") or []) or "none"
        shown += (
            f" (of {totals.get('engagement_rate_basis')}; platforms left out: {left}; "
            f"{coverage['excluded_engagements_share']:.1%} of engagements not covered)"
        )
    span = data.get("range", {})
    return f"Totals from {span.get('from')} to {span.get('to')}: {shown or 'no data'}."


def _best_times(data: dict[str, Any]) -> str:
    rec = data.get("recommendation") or {}
    return f"Best times for {data.get('account_id')}: {rec.get('text') or 'not enough data yet'}"


def _post_analytics(data: dict[str, Any]) -> str:
    totals = data.get("totals") or {}
    return (
        f"Post {data.get('post_id')}: {len(data.get('destinations', []))} destination(s), "
        f"totals {', '.join(f'{k} {v}' for k, v in totals.items() if v is not None)}."
    )


def _experiment(data: dict[str, Any]) -> str:
    plan = (
        f"until {data['ends_at']}" if data.get("ends_at") else f"{data.get('target_posts')} posts"
    )
    arms = ", ".join(
        f"{a['name']}{' (control)' if a.get('control') else ''}" for a in data.get("arms", [])
    )
    return (
        f"Experiment {data['id']} is {data['status']}: arms {arms}; metric {data['metric']}; "
        f"{data['posts_assigned']} post(s) assigned; plan {plan}."
    )


def _arm_result(arm: dict[str, Any]) -> str:
    head = f"{arm['name']}{' (control)' if arm.get('control') else ''}"
    measured = f"{arm['posts_measured']} post(s) measured"
    lift = arm.get("lift")
    if arm.get("control"):
        return f"{head} {measured}"
    if lift is None:
        return f"{head} {measured}, no lift yet"
    return (
        f"{head} {measured}, lift {lift['estimate']:+.1%} "
        f"(95 % interval {lift['low']:+.1%} to {lift['high']:+.1%})"
    )


def _experiment_detail(data: dict[str, Any]) -> str:
    results = data.get("results") or {}
    arms = "; ".join(_arm_result(a) for a in results.get("arms", []))
    needed = results.get("posts_needed") or {}
    if needed.get("per_arm") is None:
        posts_needed = "posts_needed unknown (no spread measured yet)"
    else:
        posts_needed = f"posts_needed {needed['per_arm']} per arm ({needed.get('more')} more)"
    return (
        f"Experiment {data['id']} ({data['status']}, {data['metric']}): {arms}. "
        f"enough_data {str(results.get('enough_data')).lower()}, {posts_needed}, "
        f"can_stop_early {str(results.get('can_stop_early')).lower()}."
    )


# -- the tools ---------------------------------------------------------------------------------


def _list_workspaces(call: Call, args: Paged) -> BaseModel:
    page = call.page("/workspaces", args)
    return workspaces.list_workspaces(call.cur, list(call.key.workspace_ids), page)


def _list_accounts(call: Call, args: ListAccounts) -> BaseModel:
    page = call.page("/accounts", args)
    return workspaces.list_accounts(call.cur, call.workspace_id, args.platform, page)


def _list_posts(call: Call, args: ListPosts) -> BaseModel:
    where = posts_repo.PostFilter(
        status=args.status,
        platform=args.platform,
        account_id=args.account_id,
        tag=args.tag,
        created_from=to_db(args.created_from),
        created_to=to_db(args.created_to),
        scheduled_from=to_db(args.scheduled_from),
        scheduled_to=to_db(args.scheduled_to),
    )
    return reads.list_posts(call.cur, call.workspace_id, where, call.page("/posts", args))


def _get_post(call: Call, args: PostRef) -> BaseModel:
    return reads.get_post(call.cur, call.workspace_id, args.post_id)


def _validate_post(call: Call, raw: dict[str, Any]) -> BaseModel:
    return posts.check_post(call.cur, call.workspace_id, call.actor, raw)


def _create_post(call: Call, args: CreatePost) -> BaseModel:
    body = PostCreate.model_validate(call.body)
    return posts.create_post(call.cur, call.workspace_id, call.actor, body)


def _update_post(call: Call, args: UpdatePost) -> BaseModel:
    # From the body as sent: the fields given are what changes (and an explicit null counts).
    body = PostUpdate.model_validate(call.body)
    return posts.update_post(call.cur, call.workspace_id, call.actor, args.post_id, body)


def _cancel_post(call: Call, args: CancelPost) -> BaseModel:
    return posts.cancel_post(call.cur, call.workspace_id, call.actor, args.post_id)


def _list_approvals(call: Call, args: ListApprovals) -> BaseModel:
    page = call.page("/approvals", args)
    return approvals.list_batches(call.cur, call.workspace_id, args.status, page)


def _act_on_approval(call: Call, args: ActOnApproval) -> BaseModel:
    body = ApprovalAction.model_validate(call.body)
    return approvals.act(call.cur, call.workspace_id, call.actor, args.item_id, body)


def _list_inbox_items(call: Call, args: ListInboxItems) -> BaseModel:
    return inbox.list_items(call.cur, call.workspace_id, call.page("/inbox/items", args), args)


def _draft_reply(call: Call, args: DraftReply) -> BaseModel:
    drafter = drafts.configured_drafter(call.settings)
    return inbox.create_draft(call.cur, call.workspace_id, args.item_id, drafter)


def _respond(call: Call, args: RespondToInboxItem) -> BaseModel:
    body = Respond.model_validate(call.body)
    return inbox.respond(call.cur, call.workspace_id, args.item_id, body, call.actor)


def _list_queues(call: Call, args: Paged) -> BaseModel:
    return automation.list_queues(call.cur, call.workspace_id, call.page("/queues", args))


def _list_experiments(call: Call, args: Paged) -> BaseModel:
    return experiments.list_experiments(
        call.cur, call.workspace_id, call.page("/experiments", args)
    )


def _get_experiment(call: Call, args: ExperimentRef) -> BaseModel:
    _travel(call, args.as_of)  # the lake's readings as then; no freshness to restate (_then)
    return experiments.get_experiment(call.transaction, call.workspace_id, args.experiment_id)


def _create_experiment(call: Call, args: CreateExperiment) -> BaseModel:
    body = ExperimentCreate.model_validate(call.body)
    return experiments.create_experiment(call.cur, call.workspace_id, body)


def _stop_experiment(call: Call, args: StopExperiment) -> BaseModel:
    body = ExperimentStop.model_validate(call.body)
    with call.writing() as txn:
        return experiments.stop_experiment(txn, call.workspace_id, args.experiment_id, body)


def _travel(call: Call, as_of: int | str | None) -> LakeSnapshot | None:
    """The past snapshot a read asked for (REST's ``as_of``), the call's lake reads moved to it."""
    if as_of is None:
        return None
    snapshot = resolve_as_of(call.transaction.store, call.settings, as_of)
    call.transaction.travel(snapshot)
    call.now = snapshot.clock  # a default range ends there, as it did then
    return snapshot


def _then(found: analytics.Answer, as_of: LakeSnapshot | None) -> analytics.Answer:
    """An ``as_of`` answer as it was then: its freshness measured at its clock, not now."""
    return found if as_of is None else analytics.answer_at(found, as_of.clock.timestamp())


def _unified_analytics(call: Call, args: UnifiedArgs) -> BaseModel:
    zone = analytics.time_zone(args.tz)
    as_of = _travel(call, args.as_of)
    found = analytics.unified(
        call.transaction,
        call.workspace_id,
        args.from_,
        args.to,
        args.granularity,
        zone,
        args.basis,
        args.group_by,
        args.platform,
        args.account_id,
        call.page("/analytics/unified", args),
        call.now,
    )
    return _then(found, as_of)


def _viral_trends(call: Call, args: TrendArgs) -> BaseModel:
    where = TrendFilter(
        entity_type=args.entity_type,
        status=args.status,
        platform=args.platform,
        min_score=args.min_score,
        day=args.day,
    )
    page = call.page("/viral-trends", args)
    as_of = _travel(call, args.as_of)
    return _then(analytics.viral_trends(call.transaction, call.workspace_id, where, page), as_of)


def _insights(call: Call, args: InsightArgs) -> BaseModel:
    as_of = _travel(call, args.as_of)
    found = analytics.insights(
        call.transaction,
        call.workspace_id,
        args.kind,
        args.platform,
        args.account_id,
        call.page("/insights", args),
    )
    return _then(found, as_of)


def _best_times_of(call: Call, args: BestTimesArgs) -> BaseModel:
    zone = analytics.time_zone(args.tz)
    as_of = _travel(call, args.as_of)
    found = analytics.best_times(call.transaction, call.workspace_id, args.account_id, zone)
    return _then(found, as_of)


def _creators(call: Call, args: CreatorArgs) -> BaseModel:
    page = call.page("/creators", args)
    as_of = _travel(call, args.as_of)
    found = analytics.creators(
        call.transaction, call.workspace_id, args.platform, args.category, page
    )
    return _then(found, as_of)


def _breakouts(call: Call, args: BreakoutArgs) -> BaseModel:
    page = call.page("/analytics/breakouts", args)
    as_of = _travel(call, args.as_of)
    found = breakouts.list_breakouts(
        call.transaction, call.workspace_id, args.platform, args.account_id, args.since, page
    )
    return _then(found, as_of)


def _competitors(call: Call, args: CompetitorArgs) -> BaseModel:
    page = call.page("/competitors", args)
    as_of = _travel(call, args.as_of)
    return _then(analytics.competitors(call.transaction, call.workspace_id, page), as_of)


def _post_analytics_of(call: Call, args: PostAnalyticsArgs) -> BaseModel:
    as_of = _travel(call, args.as_of)
    found = analytics.post_analytics(call.transaction, call.workspace_id, args.post_id)
    return _then(found, as_of)


def _publishing_reliability(call: Call, args: ReliabilityArgs) -> BaseModel:
    return reliability.reliability(
        call.cur, call.workspace_id, args.from_, args.to, args.platform, args.account_id, call.now
    )


def _reliability(data: dict[str, Any]) -> str:
    t = data.get("totals", {})
    share = t.get("on_time_share")
    on_time = "n/a" if share is None else f"{share:.1%}"
    return (
        f"{t.get('due')} due, {t.get('published')} published ({on_time} on time), "
        f"{t.get('failed')} failed {t.get('failed_by_reason')}, {t.get('retried')} retried, "
        f"{t.get('stuck')} stuck; {t.get('tokens_expiring')} token(s) expiring within 7 days."
    )


def _explain(call: Call, args: ExplainError) -> BaseModel:
    return docs.explain(args.code)


_PAGED = "One page (newest first unless said otherwise): `items` and `pagination`."
_FIGURES = " What each figure means: the resource murmur://docs/analytics."

TOOLS: tuple[Tool, ...] = (
    Tool(
        name="list_workspaces",
        title="List workspaces",
        description="List the workspaces this API key can act in (`ws_…` ids, names, whether "
        "posts need approval). Start here when the key has several: pass one as `workspace_id` "
        "to the other tools. " + _PAGED,
        scope="workspaces:read",
        args=Paged,
        output=Page[Workspace],
        run=_list_workspaces,
        summary=_page("workspace"),
        in_workspace=False,
    ),
    Tool(
        name="list_accounts",
        title="List connected accounts",
        description="List the workspace's connected social accounts (`acc_…` ids, platform, "
        "handle, status). Posts are sent to these accounts; analytics filter by them. " + _PAGED,
        scope="accounts:read",
        args=ListAccounts,
        output=Page[Account],
        run=_list_accounts,
        summary=_page("account"),
        platform_text=("items[].handle", "items[].display_name"),
    ),
    Tool(
        name="list_posts",
        title="List posts",
        description="List the workspace's posts, newest first, each with its destinations' "
        "statuses; filter by status, platform, account, tag or time. " + _PAGED,
        scope="posts:read",
        args=ListPosts,
        output=Page[Post],
        run=_list_posts,
        summary=_page("post"),
        platform_text=("items[].destinations[].error.message",),
    ),
    Tool(
        name="get_post",
        title="Get a post",
        description="Get one post (`post_…`) with each destination's status, the platform's "
        "post id or URL once published, or the error that failed it.",
        scope="posts:read",
        args=PostRef,
        output=Post,
        run=_get_post,
        summary=_post("is"),
        platform_text=("destinations[].error.message",),
    ),
    Tool(
        name="validate_post",
        title="Validate a post (dry run)",
        description="A read-only dry run of create_post: it stores and sends nothing and takes "
        "no idempotency_key. Answers every problem at once in `errors` (each destination's text "
        "limit, media rules, unknown or ambiguous accounts, a time in the past, unknown or "
        "missing fields), or, when `valid`, the state and accounts the post would get. Call it "
        "before create_post and fix every `errors` entry. Counted against the key's writes, as "
        "its REST twin POST /posts/validate is.",
        scope="posts:write",
        args=ValidatePost,
        output=PostCheck,
        run=_validate_post,
        summary=_check,
        raw=True,
        counts_as_write=True,
    ),
    Tool(
        name="create_post",
        title="Create a post",
        description="Create a post for one or more destinations (account ids, `{account_id}`, "
        "a preset, or a platform name with one account): published now, at `scheduled_at`, "
        "after approval, or kept as a draft (`draft: true`). It goes out to real platforms "
        "unless it is a draft or waits for approval. Check it with validate_post first.",
        scope="posts:write",
        args=CreatePost,
        output=Post,
        run=_create_post,
        summary=_post("created"),
        platform_text=("destinations[].error.message",),
        open_world=True,
        write=Write("POST", lambda a: f"{BASE_PATH}/posts", 201),
    ),
    Tool(
        name="update_post",
        title="Edit a post",
        description="Edit a draft, pending or scheduled post: only the fields given change "
        "(`scheduled_at: null` publishes as soon as allowed); `draft: false` submits a draft. "
        "A post that needed approval goes back to review (`pending_approval`) when its text, "
        "media, destinations or platform options change. A post being published or later is "
        "refused (INVALID_STATE).",
        scope="posts:write",
        args=UpdatePost,
        output=Post,
        run=_update_post,
        summary=_post("updated"),
        platform_text=("destinations[].error.message",),
        open_world=True,
        write=Write("PATCH", lambda a: f"{BASE_PATH}/posts/{a.post_id}", 200, ("post_id",)),
    ),
    Tool(
        name="cancel_post",
        title="Cancel a post",
        description="Cancel a draft, pending or scheduled post so that it is never published. "
        "It cannot be undone; a post being published or later is refused (INVALID_STATE).",
        scope="posts:write",
        args=CancelPost,
        output=Post,
        run=_cancel_post,
        summary=_post("canceled"),
        platform_text=("destinations[].error.message",),
        destructive=True,
        write=Write(
            "POST", lambda a: f"{BASE_PATH}/posts/{a.post_id}/cancel", 200, ("post_id",), body=False
        ),
    ),
    Tool(
        name="list_approvals",
        title="List approval batches",
        description="List review batches (one per UTC day), newest first, each with its items "
        "(`api_…`: the post waiting, its status and events). `status: pending` for the ones "
        "still to review. " + _PAGED,
        scope="approvals:read",
        args=ListApprovals,
        output=Page[ApprovalBatch],
        run=_list_approvals,
        summary=_page("batch"),
    ),
    Tool(
        name="act_on_approval",
        title="Approve, reject or return a post",
        description="Act on one approval item (`api_…`, from list_approvals): `approve` "
        "schedules the post (or publishes it now if it had no time), `reject` (a comment is "
        "required) ends it, `return` sends it back to draft for edits.",
        scope="approvals:write",
        args=ActOnApproval,
        output=ApprovalItem,
        run=_act_on_approval,
        summary=lambda d: f"Approval item {d['id']} is now {d['status']}.",
        destructive=True,
        open_world=True,
        write=Write(
            "POST", lambda a: f"{BASE_PATH}/approvals/{a.item_id}/action", 200, ("item_id",)
        ),
    ),
    Tool(
        name="list_inbox_items",
        title="List inbox conversations",
        description="List the inbox's conversations (comments, mentions, direct messages), "
        "newest activity first, each with its latest message's text (`preview`). " + _PAGED,
        scope="inbox:read",
        args=ListInboxItems,
        output=Page[InboxItem],
        run=_list_inbox_items,
        summary=_page("conversation"),
        platform_text=("items[].preview", "items[].author_handle", "items[].author_name"),
    ),
    Tool(
        name="draft_reply",
        title="Draft a reply",
        description="Draft a reply to a conversation's latest inbound message (the configured "
        "drafter: a past reply, a template or a language model, `source`). Nothing is "
        "sent: read `text`, then pass it (or your edit) and the draft's `id` as `draft_id` to "
        "respond_to_inbox_item to send it.",
        scope="inbox:write",
        args=DraftReply,
        output=InboxDraft,
        run=_draft_reply,
        summary=lambda d: f"Draft {d['id']}: {d['text'][:120]}",
        platform_text=("text",),
        open_world=True,
        write=Write(
            "POST",
            lambda a: f"{BASE_PATH}/inbox/items/{a.item_id}/drafts",
            201,
            ("item_id",),
            body=False,
        ),
    ),
    Tool(
        name="respond_to_inbox_item",
        title="Reply to a conversation",
        description="Send a reply on the platform to a conversation (`inb_…`); it becomes "
        "`replied`. The reply is public where the conversation is (a comment's thread). A "
        "closed conversation is refused (INVALID_STATE).",
        scope="inbox:write",
        args=RespondToInboxItem,
        output=Responded,
        run=_respond,
        summary=lambda d: f"Reply queued on {d['item']['id']}; it is {d['item']['status']}.",
        platform_text=("item.preview", "item.author_handle", "item.author_name"),
        open_world=True,
        write=Write(
            "POST", lambda a: f"{BASE_PATH}/inbox/items/{a.item_id}/respond", 201, ("item_id",)
        ),
    ),
    Tool(
        name="list_queues",
        title="List posting queues",
        description="List the workspace's queues: weekly time slots in a time zone with default "
        "destinations, which queued posts fill in order. " + _PAGED,
        scope="automations:read",
        args=Paged,
        output=Page[Queue],
        run=_list_queues,
        summary=_page("queue"),
    ),
    Tool(
        name="get_unified_analytics",
        title="Unified analytics",
        description="Own accounts' metrics over a time range, as the analytics pipeline "
        "computed them: totals, per platform, and a gap-filled series per bucket (hour, day, "
        "week, month in a time zone), with the data's freshness. Rates are recomputed from "
        "sums." + _FIGURES,
        scope="analytics:read",
        args=UnifiedArgs,
        output=UnifiedAnalytics,
        run=_unified_analytics,
        summary=_unified,
    ),
    Tool(
        name="list_viral_trends",
        title="Viral trends",
        description="Posts, hashtags and topics trending against their own baseline, emerging "
        "and peaking before declining, then highest score first: `score` = log2((velocity + 1) "
        "/ (baseline + 1)), in engagements per hour, abnormal from 1; `status` emerging, "
        "peaking or declining; the newest judged window, or `day`'s; `evidence` holds "
        "`window_hours`, `previous_velocity`, `baseline_source` and the baseline's windows."
        + _FIGURES,
        scope="analytics:read",
        args=TrendArgs,
        output=ViralTrends,
        run=_viral_trends,
        summary=_page("trend"),
        platform_text=("items[].entity", "items[].label"),
    ),
    Tool(
        name="get_insights",
        title="Insights",
        description="The pipeline's insights, highest score first: best times, top content, "
        "anomalies, benchmarks and recommendations, each with its evidence." + _FIGURES,
        scope="analytics:read",
        args=InsightArgs,
        output=Insights,
        run=_insights,
        summary=_page("insight"),
        platform_text=("items[].label", "items[].title", "items[].body"),
    ),
    Tool(
        name="get_best_times",
        title="Best times to post",
        description="One account's weekday x hour grid (UTC, 168 cells) of engagement indices "
        "(1.0 = the account's average), shrunk toward 1.0 where there are few posts, and up to "
        "3 best slots." + _FIGURES,
        scope="analytics:read",
        args=BestTimesArgs,
        output=BestTimes,
        run=_best_times_of,
        summary=_best_times,
    ),
    Tool(
        name="list_creators",
        title="Creators",
        description="Creators ranked by a composite `score`: the weighted sum of three parts, "
        "each z-scored among the ranked creators (`parts`, each with its value, z, weight and "
        "contribution): `engagement_rate` (shrunk toward the mean), `growth_rate` (followers) "
        "and `reach`. An item's `engagement_rate` is measured (null: not measured, never a "
        "prior); `engagement_rate_estimate` is the shrunk estimate, with its prior and weight."
        + _FIGURES,
        scope="analytics:read",
        args=CreatorArgs,
        output=Creators,
        run=_creators,
        summary=_page("creator"),
        platform_text=("items[].handle", "items[].label", "items[].category"),
    ),
    Tool(
        name="list_competitors",
        title="Competitors",
        description="Tracked competitors in rank order (then those not ranked yet, newest "
        "first), with their latest ranking and a "
        "benchmark against our own accounts." + _FIGURES,
        scope="analytics:read",
        args=CompetitorArgs,
        output=Competitors,
        run=_competitors,
        summary=_page("competitor"),
        platform_text=("items[].label", "items[].ranking.label"),
    ),
    Tool(
        name="get_post_analytics",
        title="A post's analytics",
        description="One of our posts' daily metrics per destination, with totals." + _FIGURES,
        scope="analytics:read",
        args=PostAnalyticsArgs,
        output=PostAnalytics,
        run=_post_analytics_of,
        summary=_post_analytics,
        platform_text=("destinations[].label",),
    ),
    Tool(
        name="list_breakouts",
        title="Breakouts",
        description="Own posts growing above the band their own history predicts, newest "
        "first: `observed` engagements in the first window above it, `expected` (an "
        "estimate) and the `band` (a prediction interval), `evidence` with the method and "
        "every window above the band. The webhook event analytics.breakout carries the same "
        "item, once per breakout. " + _PAGED + _FIGURES,
        scope="analytics:read",
        args=BreakoutArgs,
        output=Breakouts,
        run=_breakouts,
        summary=_page("breakout"),
    ),
    Tool(
        name="list_experiments",
        title="List posting-time experiments",
        description="List the workspace's posting-time experiments, newest first: each with "
        "its arms (posting slots, one the control), metric, plan and status (`running`, "
        "`completed`, `stopped`, `abandoned`). Their results: get_experiment. " + _PAGED,
        scope="analytics:read",
        args=Paged,
        output=Page[Experiment],
        run=_list_experiments,
        summary=_page("experiment"),
    ),
    Tool(
        name="get_experiment",
        title="A posting-time experiment's results",
        description="One experiment (`exp_…`) with, per arm, the posts assigned, published, "
        "measured and pending, the metric, and the lift against the control (the typical "
        "post's relative change, with its 95 % interval); `enough_data`, `posts_needed` for "
        "the minimum detectable effect, `conclusive`, `can_stop_early` and the stop rule. "
        "While running, the interval holds at the planned end only; `method` and "
        "`definitions` say how each figure is computed.",
        scope="analytics:read",
        args=ExperimentRef,
        output=ExperimentDetail,
        run=_get_experiment,
        summary=_experiment_detail,
    ),
    Tool(
        name="create_experiment",
        title="Start a posting-time experiment",
        description="Start an experiment on accounts: 2 to 6 arms of posting slots (exactly "
        "one `control: true`), a `metric`, and exactly one plan of `ends_at`, "
        "`duration_days` and `target_posts`. From then on a post created with its "
        "`experiment_id` (create_post) is drawn an arm at random and scheduled at that "
        "arm's next free slot. Every problem is answered at once (VALIDATION_ERROR).",
        scope="automations:write",
        args=CreateExperiment,
        output=Experiment,
        run=_create_experiment,
        summary=_experiment,
        write=Write("POST", lambda a: f"{BASE_PATH}/experiments", 201),
    ),
    Tool(
        name="stop_experiment",
        title="Stop a posting-time experiment",
        description="Stop a running experiment (`exp_…`) so that it assigns no more posts. "
        "Early, only as its stop rule allows (get_experiment's `can_stop_early`), else "
        "INVALID_STATE; `abandon: true` stops it anyway, its results then not conclusive. "
        "It cannot be undone; an experiment not running is refused (INVALID_STATE).",
        scope="automations:write",
        args=StopExperiment,
        output=ExperimentDetail,
        run=_stop_experiment,
        summary=_experiment_detail,
        destructive=True,
        write=Write(
            "POST",
            lambda a: f"{BASE_PATH}/experiments/{a.experiment_id}/stop",
            200,
            ("experiment_id",),
        ),
    ),
    Tool(
        name="get_publishing_reliability",
        title="Publishing reliability",
        description="How publishing went (posts scheduled in a range, default the last 7 "
        "days), from the destinations: due, published, on time (60 s), lateness p50/p99, "
        "failed by reason, retried, stuck; per platform and account; tokens expiring within 7 "
        "days. `definitions` gives each denominator.",
        scope="analytics:read",
        args=ReliabilityArgs,
        output=PublishingReliability,
        run=_publishing_reliability,
        summary=_reliability,
    ),
    Tool(
        name="explain_error",
        title="Explain an error code",
        description="What an error code of Murmur's means and what to do about it (retry with "
        "the same idempotency_key, fix the arguments, ask for a scope…), from the API's "
        "contract. Use it when a tool answers an error you do not know how to handle.",
        scope=None,
        args=ExplainError,
        output=docs.Explanation,
        run=_explain,
        summary=lambda d: f"{d['code']} ({d['status']}): {d['meaning']} {d['what_to_do']}",
        in_workspace=False,
    ),
)

BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}
