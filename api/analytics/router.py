"""Analytics & intelligence: unified metrics, viral trends, insights, creators, competitors."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from api.caching import cached_json
from api.deps import (
    AccountFilter,
    AnalyticsRead,
    AsOf,
    Context,
    IdPath,
    PlatformFilter,
    RangeEnd,
    WorkspacesWrite,
)
from api.pagination import PageParams
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.analytics import breakouts, service
from domain.analytics.breakouts_schemas import Breakouts
from domain.analytics.schemas import (
    Basis,
    BestTimes,
    Competitor,
    CompetitorCreate,
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
from domain.schemas import Deleted, UtcDatetime
from warehouse.analytics import TrendFilter
from warehouse.store import LakeSnapshot

router = APIRouter(tags=["Analytics & intelligence"], route_class=MurmurRoute)


# What varies between two identical reads of an unchanged store: the clock (freshness, and
# the end of a range ending now).
_FRESHNESS = {"snapshot": {"freshness_seconds"}}
_CLOCK = {"snapshot": {"freshness_seconds"}, "range": {"from_", "to"}}


def _then(ctx: Context, as_of: LakeSnapshot | None, found: service.Answer) -> service.Answer:
    """An ``as_of`` answer as it was then: its freshness measured at its clock, not now."""
    if as_of is None:
        return found
    # Read whole: the past snapshot goes back to the store's few attached at once now, not
    # when the request's objects are collected (a read begins no publishing transaction,
    # which the route class would end).
    ctx.txn.end_lake_reads()
    return service.answer_at(found, as_of.clock.timestamp())


async def _answered(ctx: Context, as_of: LakeSnapshot | None, response: Response) -> Response:
    """A cached read's response, its ``as_of`` snapshot handed back (see :func:`_then`)."""
    if as_of is not None:
        await run_in_threadpool(ctx.txn.end_lake_reads)
    return response


@router.get(
    "/analytics/unified",
    response_model=Envelope[UnifiedAnalytics],
    operation_id="get_unified_analytics",
)
async def unified_analytics(
    request: Request,
    ctx: AnalyticsRead,
    as_of: AsOf,
    page: PageParams,
    from_: Annotated[
        UtcDatetime | None,
        Query(
            alias="from",
            description="Inclusive start, with offset. Default: the start of the last N buckets "
            "in `tz` counting the one holding `to` (N: 48 hours, 28 days, 12 weeks, 12 months).",
        ),
    ] = None,
    to: RangeEnd = None,
    platform: PlatformFilter = None,
    account_id: AccountFilter = None,
    granularity: Annotated[
        Granularity,
        Query(
            description="Bucket size in `tz`: `hour` (ranges up to 14 days), `day` (400 days), "
            "`week` (ISO weeks from Monday; 1096 days) or `month` (calendar months; 1827 days)."
        ),
    ] = "day",
    tz: Annotated[
        str,
        Query(
            max_length=64,
            description="IANA time zone the buckets and the default range follow "
            "(`Asia/Kolkata`, `America/New_York`); any case. Unknown: 400 on `tz`.",
        ),
    ] = "UTC",
    basis: Annotated[
        Basis,
        Query(
            description="`activity`: growth between readings, in the bucket it was read in. "
            "`published`: each own post's lifetime totals (first-seen total + all growth), "
            "in the bucket it was published in."
        ),
    ] = "activity",
    group_by: Annotated[
        GroupBy,
        Query(
            description="Series rows per bucket (`total`), per bucket and platform "
            "(`platform`) or per bucket, platform and account (`account`)."
        ),
    ] = "account",
) -> Response:
    """Own accounts' metrics over a range: totals, per platform, and a gap-filled paged series."""
    zone = service.time_zone(tz)
    # As of a past snapshot, the clock is its moment: a default range ends there, as it did.
    now = time.time() if as_of is None else as_of.clock.timestamp()
    key = (
        "unified",
        from_,
        to,
        platform,
        account_id,
        granularity,
        zone,
        basis,
        group_by,
        page.limit,
        page.key(),
    )
    # A range ending now covers other buckets as the clock moves: its answer is kept while
    # the clock stays in the bucket it was read in (and `to` is redrawn every second).
    window = None if to is not None or as_of else service.clock_window(granularity, zone, now)
    at = datetime.fromtimestamp(now, UTC)
    response = await cached_json(
        request,
        ctx,
        key,
        lambda: service.unified(
            ctx.txn,
            ctx.workspace_id,
            from_,
            to,
            granularity,
            zone,
            basis,
            group_by,
            platform,
            account_id,
            page,
            at,
        ),
        volatile=_CLOCK,
        window=window,
        redraw=partial(service.unified_at, clock=to is None),
    )
    return await _answered(ctx, as_of, response)


@router.get("/viral-trends", response_model=Envelope[ViralTrends])
async def list_viral_trends(
    request: Request,
    ctx: AnalyticsRead,
    as_of: AsOf,
    page: PageParams,
    entity_type: Annotated[EntityType | None, Query(description="post, hashtag or topic.")] = None,
    status: Annotated[TrendStatus | None, Query(description="Only this status.")] = None,
    platform: PlatformFilter = None,
    min_score: Annotated[
        float | None,
        Query(description="Only scores at least this (a finite number).", allow_inf_nan=False),
    ] = None,
    day: Annotated[
        date | None,
        Query(description="The trends judged on this UTC day (`YYYY-MM-DD`); default the newest."),
    ] = None,
) -> Response:
    """Posts, hashtags and topics trending against their baseline: rising first, then by score."""
    where = TrendFilter(
        entity_type=entity_type, status=status, platform=platform, min_score=min_score, day=day
    )
    response = await cached_json(
        request,
        ctx,
        ("viral_trends", where, page.limit, page.key()),
        lambda: service.viral_trends(ctx.txn, ctx.workspace_id, where, page),
        volatile=_FRESHNESS,
        redraw=service.answer_at,
    )
    return await _answered(ctx, as_of, response)


@router.get("/insights", response_model=Envelope[Insights])
def list_insights(
    ctx: AnalyticsRead,
    as_of: AsOf,
    page: PageParams,
    kind: Annotated[InsightKind | None, Query(description="Only this kind.")] = None,
    platform: PlatformFilter = None,
    account_id: AccountFilter = None,
) -> Envelope[Insights]:
    """Best times, top content, anomalies, benchmarks and recommendations, highest score first."""
    found = service.insights(ctx.txn, ctx.workspace_id, kind, platform, account_id, page)
    return ok(_then(ctx, as_of, found))


@router.get(
    "/insights/best-times", response_model=Envelope[BestTimes], operation_id="get_best_times"
)
def best_times(
    ctx: AnalyticsRead,
    as_of: AsOf,
    account_id: Annotated[str, Query(max_length=64, description="A connected account (`acc_…`).")],
    tz: Annotated[
        str,
        Query(
            max_length=64,
            description="IANA time zone of the weekdays, hours and blocks (`Europe/Paris`, "
            "`America/New_York`); any case. Unknown: 400 on `tz`.",
        ),
    ] = "UTC",
) -> Envelope[BestTimes]:
    """One account's best times in a zone: weekday x hour cells, 4-hour blocks, a recommendation."""
    zone = service.time_zone(tz)
    return ok(_then(ctx, as_of, service.best_times(ctx.txn, ctx.workspace_id, account_id, zone)))


@router.get(
    "/analytics/breakouts", response_model=Envelope[Breakouts], operation_id="list_breakouts"
)
def list_breakouts(
    ctx: AnalyticsRead,
    as_of: AsOf,
    page: PageParams,
    platform: PlatformFilter = None,
    account_id: AccountFilter = None,
    since: Annotated[
        UtcDatetime | None,
        Query(description="Only breakouts started at or after this instant, with offset."),
    ] = None,
) -> Envelope[Breakouts]:
    """Own posts growing above the band their own history predicts, newest first."""
    found = breakouts.list_breakouts(ctx.txn, ctx.workspace_id, platform, account_id, since, page)
    return ok(_then(ctx, as_of, found))


@router.get("/creators", response_model=Envelope[Creators])
def list_creators(
    ctx: AnalyticsRead,
    as_of: AsOf,
    page: PageParams,
    platform: PlatformFilter = None,
    category: Annotated[
        str | None, Query(max_length=100, description="Only this category (any case).")
    ] = None,
) -> Envelope[Creators]:
    """Creators ranked by the composite score, with its parts."""
    found = service.creators(ctx.txn, ctx.workspace_id, platform, category, page)
    return ok(_then(ctx, as_of, found))


@router.get("/competitors", response_model=Envelope[Competitors])
def list_competitors(ctx: AnalyticsRead, as_of: AsOf, page: PageParams) -> Envelope[Competitors]:
    """Tracked competitors in rank order, with their latest ranking and a benchmark against us."""
    # As of a past snapshot: the competitors tracked now, ranked by that snapshot's figures.
    return ok(_then(ctx, as_of, service.competitors(ctx.txn, ctx.workspace_id, page)))


@router.post("/competitors", status_code=201, response_model=Envelope[Competitor])
def track_competitor(ctx: WorkspacesWrite, body: CompetitorCreate) -> Envelope[Competitor]:
    """Track a competitor's account; the next pipeline run ingests and ranks it."""
    return ok(service.track_competitor(ctx.txn, ctx.workspace_id, body))


@router.delete("/competitors/{competitor_id}", response_model=Envelope[Deleted])
def untrack_competitor(ctx: WorkspacesWrite, competitor_id: IdPath) -> Envelope[Deleted]:
    """Stop tracking a competitor (kept, marked deleted, for the audit trail)."""
    return ok(service.untrack_competitor(ctx.tx, ctx.workspace_id, competitor_id))


@router.get(
    "/posts/{post_id}/analytics",
    response_model=Envelope[PostAnalytics],
    operation_id="get_post_analytics",
)
def post_analytics(ctx: AnalyticsRead, as_of: AsOf, post_id: IdPath) -> Envelope[PostAnalytics]:
    """One of our posts' daily metrics per destination, with totals."""
    return ok(_then(ctx, as_of, service.post_analytics(ctx.txn, ctx.workspace_id, post_id)))
