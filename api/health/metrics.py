"""Prometheus metrics of one API process: its requests, its write queue, the store's backlog."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from datetime import datetime

from fastapi.routing import iter_route_contexts
from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.utils import floatToGoString
from starlette.types import Scope

from warehouse.health import Figures

# The label of requests no route matched (unknown paths) or refused before routing (a 429
# without a key, a 413 by Content-Length): one series, whatever the path.
UNMATCHED = "<unmatched>"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Reads are ~1 ms, writes a few ms, pages and aggregates up to ~100 ms (docs/performance.md).
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _number(value: float) -> str:
    """A sample's value as prometheus-client writes it (as Go formats a float)."""
    text: str = floatToGoString(value)  # type: ignore[no-untyped-call]
    return text


# How old the process_* series may be (CPU, memory, open files).
PROCESS_MAX_AGE = 1.0
_LE = (*(_number(b) for b in _BUCKETS), "+Inf")

_REQUESTS = "murmur_http_requests_total"
_DURATION = "murmur_http_request_duration_seconds"
_HEAD = (
    f"# HELP {_REQUESTS} HTTP requests answered, by method, route template and status.\n"
    f"# TYPE {_REQUESTS} counter\n"
).encode()
_DURATION_HEAD = (
    f"# HELP {_DURATION} Time from a request's arrival to its last byte, by method and route"
    f" template.\n# TYPE {_DURATION} histogram\n"
).encode()


class _Count:
    """One (method, route, status) series: its count, and its sample as last written."""

    __slots__ = ("line", "n", "text", "written")

    def __init__(self, labels: str) -> None:
        self.line = f"{_REQUESTS}{{{labels}}} "
        self.n = 0
        self.written = -1
        self.text = b""

    def render(self) -> bytes:
        # Written anew only when it counted a request since: a scrape writes a few series.
        if self.written != self.n:
            self.written = self.n
            self.text = f"{self.line}{_number(self.n)}\n".encode()
        return self.text


class _Durations:
    """One (method, route) histogram: a count per bucket (not cumulative) and the sum."""

    __slots__ = ("counts", "lines", "n", "sum", "text", "written")

    def __init__(self, labels: str) -> None:
        self.counts = [0] * len(_LE)
        self.n = 0
        self.sum = 0.0
        self.lines = (
            *(f'{_DURATION}_bucket{{le="{le}",{labels}}} ' for le in _LE),
            f"{_DURATION}_count{{{labels}}} ",
            f"{_DURATION}_sum{{{labels}}} ",
        )
        self.written = -1
        self.text = b""

    def observe(self, seconds: float) -> None:
        # bisect_left: a value equal to a bound is counted in that bound's bucket (le).
        self.counts[bisect_left(_BUCKETS, seconds)] += 1
        self.n += 1
        self.sum += seconds

    def render(self) -> bytes:
        if self.written == self.n:  # nothing observed since it was last written
            return self.text
        out = []
        total = 0
        for line, n in zip(self.lines[: len(_LE)], self.counts, strict=True):
            total += n
            out.append(f"{line}{_number(total)}\n")
        out.append(f"{self.lines[-2]}{_number(total)}\n")
        out.append(f"{self.lines[-1]}{_number(self.sum)}\n")
        self.written, self.text = self.n, "".join(out).encode()
        return self.text


class Metrics:
    """This process's figures; the edge middleware records every request into it.

    The request series are plain numbers, updated and written out on the event loop only
    (the edge middleware and the scrape both run there), in the text prometheus-client
    writes, each series' text kept until it counts another request: prometheus-client took
    a lock per update and wrote every sample anew at each scrape.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        self._counts: dict[tuple[str, str, str], _Count] = {}
        self._durations: dict[tuple[str, str], _Durations] = {}
        # The series by (method, route object, status): a dict hit per request, and no
        # template lookup. Bounded: a fixed set of routes, of methods, and of statuses.
        self._children: dict[tuple[str, int, int], tuple[_Count, _Durations]] = {}
        self._templates: dict[int, str] | None = None
        self._store_reads = 0
        # The process collector's text and when it was read: it reads five files of /proc
        # (half of what a scrape cost), for figures no one needs to the second.
        self._process: tuple[float, bytes] | None = None

    def count_store_read(self) -> None:
        """One read of the store's figures, begun for a scrape."""
        self._store_reads += 1

    def observe(self, scope: Scope, status: int, seconds: float) -> None:
        """Count one answered request under its route's template (never its raw path)."""
        key = (scope["method"], id(scope.get("route")), status)
        children = self._children.get(key)
        if children is None:
            children = self._add(key, scope)
        children[0].n += 1
        children[1].observe(seconds)

    def _add(self, key: tuple[str, int, int], scope: Scope) -> tuple[_Count, _Durations]:
        method, _, status = key
        label = method if method in _METHODS else "OTHER"
        template = self._template(scope)
        labels = f'method="{label}",route="{_escape(template)}"'
        count = self._counts.get((label, template, str(status)))
        if count is None:
            count = self._counts[label, template, str(status)] = _Count(
                f'{labels},status="{status}"'
            )
        durations = self._durations.get((label, template))
        if durations is None:
            durations = self._durations[label, template] = _Durations(labels)
        if method in _METHODS:  # an odd method is counted, not remembered under its own key
            self._children[key] = (count, durations)
        return count, durations

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
        """The text exposition: the process (read once a second), the scrape's figures, requests."""
        out = [_HEAD, *(count.render() for count in self._counts.values()), _DURATION_HEAD]
        out += [durations.render() for durations in self._durations.values()]
        process = self._process
        if process is None or time.monotonic() - process[0] >= PROCESS_MAX_AGE:
            process = self._process = (time.monotonic(), generate_latest(self.registry))
        families = _Families(_scrape_families(self._store_reads, queued, figures, now))
        return process[1] + generate_latest(families) + b"".join(out)


class _Families:
    """One scrape's families, as generate_latest takes them."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def _scrape_families(
    store_reads: int, queued: int, figures: Figures | None, now: datetime
) -> list[Metric]:
    """Gauges computed at scrape time; the store's are absent when it did not answer."""
    families: list[Metric] = [
        CounterMetricFamily(
            "murmur_metrics_store_reads",
            "Reads of the store's figures for scrapes; the other scrapes answered the figures"
            " of an earlier read (no write since, at most MURMUR_METRICS_STORE_MAX_AGE_SECONDS"
            " old).",
            value=store_reads,
        ),
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
    families.append(
        GaugeMetricFamily(
            "murmur_publishing_stuck_destinations",
            "Destinations publishing past twice the lease their worker claimed them with, no"
            " worker taking them over (every workspace's).",
            value=figures.stuck_destinations,
        )
    )
    families.append(
        GaugeMetricFamily(
            "murmur_accounts_token_expiring",
            "Connected accounts whose recorded token expiry is within 7 days, expired ones"
            " included (every workspace's).",
            value=figures.tokens_expiring,
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


def _escape(value: str) -> str:
    """A label value as the text format quotes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
