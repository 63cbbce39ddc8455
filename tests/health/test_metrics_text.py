"""The request series as Metrics writes them: the text prometheus-client's own metrics write."""

from __future__ import annotations

from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.routing import Route

from api.health.metrics import _BUCKETS, UNMATCHED, Metrics

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(text: str, prefix: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith(prefix) and not sample.name.endswith("_created")
    }


def test_request_series_read_as_prometheus_clients_own() -> None:
    metrics = Metrics()
    registry = CollectorRegistry()
    requests = Counter("murmur_http_requests", "", ("method", "route", "status"), registry=registry)
    duration = Histogram(
        "murmur_http_request_duration_seconds",
        "",
        ("method", "route"),
        buckets=_BUCKETS,
        registry=registry,
    )
    odd = Route('/odd/"quoted"\\path', lambda request: None)
    posts = Route("/posts", lambda request: None)
    # On a bound, between bounds, past the last one; an odd method; no route at all.
    answered = [
        ("GET", posts, "/posts", 200, 0.001),
        ("GET", posts, "/posts", 200, 0.0011),
        ("GET", posts, "/posts", 304, 0.0),
        ("GET", posts, "/posts", 200, 42.0),
        ("BREW", odd, '/odd/"quoted"\\path', 200, 0.01),
        ("PURGE", odd, '/odd/"quoted"\\path', 200, 0.3),
        ("GET", None, UNMATCHED, 404, 0.002),
    ]
    for i, (method, route, template, status, seconds) in enumerate(answered):
        if i == 2:  # written out once: each series' text is kept until it counts again
            metrics.render(queued=0, figures=None, now=datetime(2026, 1, 1))
        metrics.observe({"method": method, "route": route}, status, seconds)
        label = "OTHER" if method in {"BREW", "PURGE"} else method
        requests.labels(label, template, str(status)).inc()
        duration.labels(label, template).observe(seconds)

    mine = metrics.render(queued=0, figures=None, now=datetime(2026, 1, 1)).decode()
    theirs = generate_latest(registry).decode()
    for prefix in ("murmur_http_requests_total", "murmur_http_request_duration_seconds"):
        found = _samples(mine, prefix)
        assert found == _samples(theirs, prefix), prefix
        assert found
