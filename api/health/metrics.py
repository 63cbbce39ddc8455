"""Prometheus metrics of one API process: its requests, its write queue, the store's backlog."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from fastapi.routing import iter_route_contexts
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from starlette.types import Scope

from warehouse.health import Figures

# No `*_created` series beside every counter and histogram: half the series, no use here.
disable_created_metrics()  # type: ignore[no-untyped-call]

# The label of requests no route matched (unknown paths) or refused before routing (a 429
# without a key, a 413 by Content-Length): one series, whatever the path.
UNMATCHED = "<unmatched>"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Reads are ~1 ms, writes a few ms, pages and aggregates up to ~100 ms (docs/performance.md).
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """This process's registry; the edge middleware records every request into it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        self._requests = Counter(
            "murmur_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self._duration = Histogram(
            "murmur_http_request_duration_seconds",
            "Time from a request's arrival to its last byte, by method and route template.",
            ("method", "route"),
            buckets=_BUCKETS,
            registry=self.registry,
        )
        # The labelled children by (method, route object, status): a dict hit per request
        # instead of prometheus_client's label validation and locks, and no template lookup.
        # Bounded: a fixed set of routes, of methods, and of statuses the app answers with.
        self._children: dict[tuple[str, int, int], tuple[Counter, Histogram]] = {}
        self._templates: dict[int, str] | None = None

    def observe(self, scope: Scope, status: int, seconds: float) -> None:
        """Count one answered request under its route's template (never its raw path)."""
        key = (scope["method"], id(scope.get("route")), status)
        children = self._children.get(key)
        if children is None:
            children = self._add(key, scope)
        children[0].inc()
        children[1].observe(seconds)

    def _add(self, key: tuple[str, int, int], scope: Scope) -> tuple[Counter, Histogram]:
        method, _, status = key
        label = method if method in _METHODS else "OTHER"
        template = self._template(scope)
        children = (
            self._requests.labels(label, template, str(status)),
            self._duration.labels(label, template),
        )
        if method in _METHODS:  # an odd method is counted, not remembered under its own key
            self._children[key] = children
        return children

    def _template(self, scope: Scope) -> str:
        """The matched route's full path template, prefixes of included routers included."""
        route = scope.get("route")
        if route is None:
            return UNMATCHED
        if self._templates is None:
            # An included router's routes keep their own path ("/posts/{post_id}"); the
            # app's route contexts know the path they are served at.
            routes = getattr(scope.get("app"), "routes", [])
            self._templates = {
                id(context.original_route): context.path
                for context in iter_route_contexts(routes)
                if context.path
            }
        found = self._templates.get(id(route))
        return found or str(getattr(route, "path", UNMATCHED))

    def render(self, *, queued: int, figures: Figures | None, now: datetime) -> bytes:
        """The text exposition: the registry, then the figures read for this scrape."""
        return generate_latest(_Scrape(self.registry, _scrape_families(queued, figures, now)))


class _Scrape:
    """A registry plus one scrape's families, as generate_latest takes them."""

    def __init__(self, registry: CollectorRegistry, extra: list[Metric]) -> None:
        self._registry = registry
        self._extra = extra

    def collect(self) -> Iterable[Metric]:
        yield from self._registry.collect()
        yield from self._extra


def _scrape_families(queued: int, figures: Figures | None, now: datetime) -> list[Metric]:
    """Gauges computed at scrape time; the store's are absent when it did not answer."""
    families: list[Metric] = [
        GaugeMetricFamily(
            "murmur_store_writes_queued",
            "Writes submitted to the group-commit queue and not yet taken into a batch.",
            value=queued,
        ),
        GaugeMetricFamily(
            "murmur_store_up",
            "1 when the store answered this scrape's queries in time, else 0.",
            value=0 if figures is None else 1,
        ),
    ]
    if figures is None:
        return families
    families.append(
        GaugeMetricFamily(
            "murmur_publishing_lateness_seconds",
            "How long the longest-waiting due, unpublished destination has waited for a"
            " publishing worker; 0 when none is due.",
            value=_age(figures.oldest_due_at, now) or 0.0,
        )
    )
    freshness = GaugeMetricFamily(
        "murmur_pipeline_freshness_seconds",
        "Age of the newest finished ingest batch (stage=ingest) and mart build (stage=marts);"
        " absent while none is recorded.",
        labels=("stage",),
    )
    for stage, at in (("ingest", figures.last_ingest_at), ("marts", figures.last_mart_at)):
        age = _age(at, now)
        if age is not None:
            freshness.add_metric((stage,), age)
    families.append(freshness)
    return families


def _age(at: datetime | None, now: datetime) -> float | None:
    """Seconds from ``at`` to ``now`` (both naive UTC), never negative."""
    if at is None:
        return None
    return max(0.0, (now - at).total_seconds())
