"""Liveness, readiness and metrics, at the root: operational, unauthenticated, not in OpenAPI."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4

from api.deps import SettingsDep, StoreDep
from api.health import service
from api.health.schemas import Health, Readiness
from api.schemas import Envelope, ok

router = APIRouter(tags=["Operations"], include_in_schema=False)

# The edge middleware neither rate-limits these nor gives them X-RateLimit-* headers.
PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


@router.api_route("/healthz", methods=["GET", "HEAD"], response_model=Envelope[Health])
async def liveness() -> Envelope[Health]:
    """Liveness: this process answers; the store is not asked."""
    return ok(Health(status="alive"))


@router.api_route("/readyz", methods=["GET", "HEAD"], response_model=Envelope[Readiness])
async def readiness(
    request: Request, store: StoreDep, settings: SettingsDep
) -> Envelope[Readiness]:
    """Readiness: the store answered a trivial query in time, else 503 SERVICE_UNAVAILABLE."""
    problems = await service.check_ready(
        _shared(request), store, settings.probe_timeout_seconds, settings.data_dir
    )
    return ok(Readiness(status="ready", problems=problems))


@router.get("/metrics")
async def metrics(request: Request, store: StoreDep, settings: SettingsDep) -> Response:
    """Prometheus text exposition (format 0.0.4, what generate_latest writes) of this process."""
    state = request.app.state
    body = await service.scrape(
        _shared(request),
        state.metrics,
        store,
        getattr(state, "post_writes", None),
        settings.probe_timeout_seconds,
        settings.metrics_store_max_age_seconds,
    )
    return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)


def _shared(request: Request) -> service.Shared:
    """This app's in-flight probe queries (one app, one event loop)."""
    state = request.app.state
    shared: service.Shared | None = getattr(state, "health_queries", None)
    if shared is None:
        shared = state.health_queries = service.Shared()
    return shared
