"""GET /analytics/publishing: publishing reliability, read from the posts' destinations.

Beside the analytics reads (scope ``analytics:read``), but over the publishing state as it is
now, not the lake: no snapshot, no ``as_of``, no cache (a worker settles destinations every
moment). docs/api/analytics.md, "GET /analytics/publishing".
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query

from api.deps import AccountFilter, AnalyticsRead, PlatformFilter, RangeEnd
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.analytics import publishing as service
from domain.analytics.publishing_schemas import PublishingReliability
from domain.schemas import UtcDatetime

router = APIRouter(tags=["Analytics & intelligence"], route_class=MurmurRoute)


@router.get(
    "/analytics/publishing",
    response_model=Envelope[PublishingReliability],
    operation_id="get_publishing_reliability",
)
def publishing_reliability(
    ctx: AnalyticsRead,
    from_: Annotated[
        UtcDatetime | None,
        Query(
            alias="from",
            description="Inclusive start (a post's scheduled time), with offset; default 7 days"
            " before `to`.",
        ),
    ] = None,
    to: RangeEnd = None,
    platform: PlatformFilter = None,
    account_id: AccountFilter = None,
) -> Envelope[PublishingReliability]:
    """Publishing reliability over a range: due, published, on time, lateness, failed by
    reason, retried and stuck destinations, and tokens expiring within 7 days."""
    return ok(
        service.reliability(
            ctx.tx, ctx.workspace_id, from_, to, platform, account_id, datetime.now(UTC)
        )
    )
