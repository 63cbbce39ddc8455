"""Liveness, readiness and metrics, over HTTP against a real server and store on loopback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

from api.app import BASE_PATH
from core.settings import Settings
from tests.support import LiveServer, assert_error, new_tenant
from warehouse import health as health_repo
from warehouse.ids import utcnow
from warehouse.marts import scripts

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
POST_ROUTE = f"{BASE_PATH}/posts/{{post_id}}"
READS = "murmur_metrics_store_reads_total"
SCRAPES = {"method": "GET", "route": "/metrics", "status": "200"}


def scrape(client: httpx.Client) -> Samples:
    """Every sample of one scrape, parsed as Prometheus parses the text format."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def labelled(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (found, labels) in samples if found == name]


def test_liveness_answers_in_the_envelope_without_rate_headers(root: httpx.Client) -> None:
    response = root.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "success": True,
        "data": {"status": "alive"},
        "request_id": response.headers["X-Request-Id"],
    }
    assert "X-RateLimit-Limit" not in response.headers  # not metered: probes never run out
    assert root.head("/healthz").status_code == 200


def test_readiness_is_200_while_the_store_answers(root: httpx.Client) -> None:
    response = root.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {"status": "ready", "problems": []}


def test_concurrent_probes_all_answer(root: httpx.Client) -> None:
    def probe(_: int) -> int:
        return root.get("/readyz").status_code

    with ThreadPoolExecutor(16) as pool:
        assert set(pool.map(probe, range(48))) == {200}


def test_probes_and_scrapes_are_never_rate_limited(strict_server: LiveServer) -> None:
    with httpx.Client(base_url=strict_server.base_url, timeout=30) as client:
        for _ in range(5):
            for path in ("/healthz", "/readyz", "/metrics"):
                assert client.get(path).status_code == 200, path
        # The address's keyless budget is untouched by them, and still applies elsewhere.
        statuses = [client.get(f"{BASE_PATH}/posts").status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]


def test_probes_are_outside_the_public_openapi_document(root: httpx.Client) -> None:
    paths = root.get(f"{BASE_PATH}/openapi.json").json()["paths"]
    assert not {"/healthz", "/readyz", "/metrics"} & set(paths)


def test_readiness_is_503_once_the_store_is_closed(doomed_server: LiveServer) -> None:
    with httpx.Client(base_url=doomed_server.base_url, timeout=30) as client:
        assert client.get("/readyz").status_code == 200
        assert value(scrape(client), "murmur_store_up") == 1  # figures kept for the next one
        doomed_server.store.close()

        response = client.get("/readyz")
        error = assert_error(response, 503, "SERVICE_UNAVAILABLE")
        assert error["message"]
        assert int(response.headers["Retry-After"]) > 0
        # Alive all the same: a restart would not bring the store back any sooner.
        assert client.get("/healthz").status_code == 200
        samples = scrape(client)
        assert value(samples, "murmur_store_up") == 0
        assert not labelled(samples, "murmur_publishing_lateness_seconds")


def test_readiness_is_503_when_the_store_does_not_answer_in_time(
    impatient_server: LiveServer,
) -> None:
    with httpx.Client(base_url=impatient_server.base_url, timeout=30) as client:
        response = client.get("/readyz")
        error = assert_error(response, 503, "SERVICE_UNAVAILABLE")
        assert "did not answer within" in error["message"]
        failed = [scrape(client) for _ in range(2)]
        assert [value(s, "murmur_store_up") for s in failed] == [0, 0]
        # A failed read is not kept: each scrape asks the store again.
        reads = [value(s, READS) or 0 for s in failed]
        assert reads[1] == reads[0] + 1
        # The interrupted probe left the store usable: the API still serves from it.
        impatient_server.store.run(health_repo.ping)


def test_request_metrics_count_by_route_template(
    ops_server: LiveServer, root: httpx.Client
) -> None:
    tenant = new_tenant(ops_server)
    try:
        later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
        post = tenant.api.ok(
            tenant.api.post(
                "/posts", json={"text": "Counted", "platforms": ["x"], "scheduled_at": later}
            ),
            201,
        )
        before = scrape(root)
        for _ in range(3):
            tenant.api.ok(tenant.api.get(f"/posts/{post['id']}"))
        assert root.get("/no/such/path").status_code == 404
        after = scrape(root)
    finally:
        tenant.api.close()

    def delta(name: str, **labels: str) -> float:
        return (value(after, name, **labels) or 0) - (value(before, name, **labels) or 0)

    ok = {"method": "GET", "route": POST_ROUTE}
    assert delta("murmur_http_requests_total", status="200", **ok) == 3
    assert delta("murmur_http_request_duration_seconds_count", **ok) == 3
    assert delta("murmur_http_request_duration_seconds_sum", **ok) > 0
    unmatched = {"method": "GET", "route": "<unmatched>", "status": "404"}
    assert delta("murmur_http_requests_total", **unmatched) == 1
    routes = {labels["route"] for labels in labelled(after, "murmur_http_requests_total")}
    assert not any(post["id"] in route or "no/such" in route for route in routes), routes
    assert "/metrics" in routes  # the scrape before this one was counted too


def test_a_scrape_loop_reads_the_store_once_until_a_write(lasting_server: LiveServer) -> None:
    """Scrapes while nothing is written answer the figures of one read; a write makes the
    next scrape read again, and it sees what was written."""
    tenant = new_tenant(lasting_server)
    try:
        with httpx.Client(base_url=lasting_server.base_url, timeout=30) as client:
            first = scrape(client)
            with ThreadPoolExecutor(6) as pool:  # six scrapers in a loop
                looped = list(pool.map(lambda _: scrape(client), range(36)))
            # No scheduled_at: due now, and no publishing worker runs beside this server.
            tenant.api.ok(tenant.api.post("/posts", json={"text": "Due", "platforms": ["x"]}), 201)
            after = [scrape(client) for _ in range(3)]
    finally:
        tenant.api.close()
    read = value(first, READS)
    assert read is not None
    assert read >= 1
    assert {value(s, READS) for s in looped} == {read}
    assert {value(s, "murmur_store_up") for s in looped} == {1}
    assert value(looped[-1], "murmur_publishing_lateness_seconds") == 0
    assert [value(s, READS) for s in after] == [read + 1] * 3
    lateness = value(after[0], "murmur_publishing_lateness_seconds")
    assert lateness is not None
    assert lateness > 0
    # The request series are never kept: each scrape counts the scrapes before it.
    counted = [value(s, "murmur_http_requests_total", **SCRAPES) for s in after]
    assert counted == [37, 38, 39]


def test_writes_queued_and_store_up_are_exposed(root: httpx.Client) -> None:
    samples = scrape(root)
    assert value(samples, "murmur_store_up") == 1
    queued = value(samples, "murmur_store_writes_queued")
    assert queued is not None
    assert queued >= 0


def test_publishing_lateness_grows_for_a_due_post_with_no_worker(
    ops_server: LiveServer, root: httpx.Client
) -> None:
    tenant = new_tenant(ops_server)
    try:
        later = (datetime.now(UTC) + timedelta(days=1)).isoformat()
        scheduled: dict[str, Any] = {"text": "Later", "platforms": ["x"], "scheduled_at": later}
        tenant.api.ok(tenant.api.post("/posts", json=scheduled), 201)
        # Only posts for tomorrow (and the other tests' drafts): nothing is due.
        assert value(scrape(root), "murmur_publishing_lateness_seconds") == 0

        # No scheduled_at: due now, and no publishing worker runs beside this server.
        tenant.api.ok(tenant.api.post("/posts", json={"text": "Now", "platforms": ["x"]}), 201)
        lateness = value(scrape(root), "murmur_publishing_lateness_seconds")
    finally:
        tenant.api.close()
    assert lateness is not None
    assert lateness > 0


def test_pipeline_freshness_appears_once_a_mart_is_built(
    ops_server: LiveServer, root: httpx.Client
) -> None:
    samples = scrape(root)
    assert value(samples, "murmur_pipeline_freshness_seconds", stage="ingest") is None
    assert value(samples, "murmur_pipeline_freshness_seconds", stage="marts") is None

    today = utcnow().date()
    with ops_server.settings.open_lakehouse() as lake:
        lake.execute_script(
            scripts.post_daily_script(
                today, today + timedelta(days=1), run_id="health-test", computed_at=utcnow()
            )
        )
    age = value(scrape(root), "murmur_pipeline_freshness_seconds", stage="marts")
    assert age is not None
    assert age >= 0


@contextlib.contextmanager
def _publishing_outage(settings: Settings) -> Iterator[None]:
    """The publishing database out of reach until the block ends: on the embedded profile its
    write queue cannot be opened (as on a failing disk); at scale the server refuses the
    database (its sessions ended, new ones not allowed)."""
    url = make_url(settings.pub_url)
    if url.get_backend_name() == "sqlite":
        queue = settings.data_dir / "publishing.sqlite.write-queue"
        queue.unlink(missing_ok=True)
        queue.mkdir()  # open("a") on it fails as on an unreachable file
        try:
            yield
        finally:
            queue.rmdir()
        return
    admin = f"host={url.host} port={url.port} user={url.username} dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'ALTER DATABASE "{url.database}" ALLOW_CONNECTIONS false')
        con.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            [url.database],
        )
        try:
            yield
        finally:
            con.execute(f'ALTER DATABASE "{url.database}" ALLOW_CONNECTIONS true')


def test_a_store_outage_mid_request_is_503_in_the_envelope_and_nothing_is_written(
    doomed_server: LiveServer,
) -> None:
    """The publishing database out of reach: the write answers 503 with Retry-After, and the
    same key succeeds once it is back."""
    tenant = new_tenant(doomed_server)
    key = {"Idempotency-Key": "outage-1"}
    body = {"text": "Launch day!", "platforms": ["linkedin"]}
    with _publishing_outage(doomed_server.settings):
        failed = tenant.api.post("/posts", json=body, headers=key)
        error = assert_error(failed, 503, "SERVICE_UNAVAILABLE")
        assert "store" in error["message"].lower()
        assert failed.headers["Retry-After"] == "1"
    assert tenant.api.get("/posts").json()["data"]["items"] == []
    created = tenant.api.post("/posts", json=body, headers=key)
    assert created.status_code == 201, created.text
    assert "Idempotent-Replayed" not in created.headers
