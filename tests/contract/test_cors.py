"""CORS: a dashboard on a listed origin may call the API from a browser; no other origin may.

Over the real API on loopback, with the headers a browser sends. Preflights are answered by
the CORS layer outside the edge middleware: no key, no rate budget, no metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from api.app import BASE_PATH
from benchmarks.servers import ssl_context
from core.settings import Settings
from tests.servers import StoreSettings
from tests.support import LiveServer, Tenant, assert_error, start_server, tenant_of

DASHBOARD = "http://dash.test:5173"
ELSEWHERE = "http://evil.test"
UNIFIED = f"{BASE_PATH}/analytics/unified"
REQUEST_HEADERS = {"authorization", "content-type", "idempotency-key", "if-none-match"}
EXPOSED = {
    "etag",
    "x-request-id",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "retry-after",
    "idempotent-replayed",
}


def _listed(value: str | None) -> set[str]:
    return {part.strip().lower() for part in (value or "").split(",") if part.strip()}


def preflight(
    root: str, path: str, origin: str, method: str = "GET", headers: str | None = None
) -> httpx.Response:
    """An OPTIONS as a browser sends it before a cross-origin request with a key."""
    asked = {"Origin": origin, "Access-Control-Request-Method": method}
    asked["Access-Control-Request-Headers"] = headers or "authorization,x-workspace-id"
    return httpx.options(f"{root}{path}", headers=asked, timeout=30, verify=ssl_context())


def cors_server(tmp_path: Path, store_settings: StoreSettings, **options: object) -> LiveServer:
    return start_server(store_settings(tmp_path / "data", cors_origins=[DASHBOARD], **options))


@pytest.fixture
def with_cors(tmp_path: Path, store_settings: StoreSettings) -> Iterator[LiveServer]:
    live = cors_server(tmp_path, store_settings)
    yield live
    live.stop()


@pytest.fixture
def cors_tenant(with_cors: LiveServer) -> Iterator[Tenant]:
    with tenant_of(with_cors) as made:
        yield made


def test_a_preflight_from_a_listed_origin_is_answered_without_a_key(
    with_cors: LiveServer,
) -> None:
    answer = preflight(
        with_cors.base_url,
        UNIFIED,
        DASHBOARD,
        headers="authorization,if-none-match,x-workspace-id",
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["Access-Control-Allow-Origin"] == DASHBOARD
    assert _listed(answer.headers["Access-Control-Allow-Methods"]) >= {
        "get",
        "post",
        "patch",
        "put",
        "delete",
    }
    assert _listed(answer.headers["Access-Control-Allow-Headers"]) >= REQUEST_HEADERS | {
        "x-workspace-id"
    }
    assert answer.headers["Access-Control-Max-Age"] == "600"
    assert "origin" in _listed(answer.headers["Vary"])
    # Never reached the edge: no budget counted, no request id given.
    assert "X-RateLimit-Remaining" not in answer.headers
    assert "X-Request-Id" not in answer.headers

    # A write's preflight, under any path of the API (here the keyless sign-in).
    write = preflight(
        with_cors.base_url,
        f"{BASE_PATH}/sessions",
        DASHBOARD,
        method="POST",
        headers="content-type,idempotency-key",
    )
    assert write.status_code == 200, write.text
    assert write.headers["Access-Control-Allow-Origin"] == DASHBOARD


def test_a_preflight_from_another_origin_gets_no_allow_origin(with_cors: LiveServer) -> None:
    refused = preflight(with_cors.base_url, UNIFIED, ELSEWHERE)
    # Starlette's answer: 400 in plain text, saying what was refused; no Allow-Origin, so
    # the browser sends nothing.
    assert refused.status_code == 400
    assert refused.text == "Disallowed CORS origin"
    assert "Access-Control-Allow-Origin" not in refused.headers
    # A listed origin asking for a header or a method beyond the list is refused as well.
    odd_header = preflight(with_cors.base_url, UNIFIED, DASHBOARD, headers="x-custom")
    assert (odd_header.status_code, odd_header.text) == (400, "Disallowed CORS headers")
    odd_method = preflight(with_cors.base_url, UNIFIED, DASHBOARD, method="TRACE")
    assert (odd_method.status_code, odd_method.text) == (400, "Disallowed CORS method")


def test_preflights_spend_no_budget_and_count_in_no_metrics(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    live = cors_server(tmp_path, store_settings, unauthenticated_rate_limit=1)
    try:
        for number in range(20):
            origin = DASHBOARD if number % 2 else ELSEWHERE
            assert preflight(live.base_url, UNIFIED, origin).status_code in {200, 400}
        metrics = httpx.get(f"{live.base_url}/metrics", timeout=30).text
        assert 'method="OPTIONS"' not in metrics
        # The address's one keyless request a minute is still there: a 401, not a 429.
        keyless = httpx.get(f"{live.base_url}{UNIFIED}", headers={"Origin": DASHBOARD})
        assert_error(keyless, 401, "AUTH_REQUIRED")
        assert keyless.headers["X-RateLimit-Remaining"] == "0"
        assert keyless.headers["Access-Control-Allow-Origin"] == DASHBOARD
        # ...and it was the one: the next is refused, with the headers a page may read.
        over = httpx.get(f"{live.base_url}{UNIFIED}", headers={"Origin": DASHBOARD})
        assert_error(over, 429, "RATE_LIMITED")
        assert over.headers["Access-Control-Allow-Origin"] == DASHBOARD
        assert "retry-after" in _listed(over.headers["Access-Control-Expose-Headers"])
    finally:
        live.stop()


def test_answers_to_a_listed_origin_allow_it_and_expose_the_contract_headers(
    with_cors: LiveServer, cors_tenant: Tenant
) -> None:
    first = cors_tenant.api.get("/posts", headers={"Origin": DASHBOARD})
    assert first.status_code == 200, first.text
    assert first.headers["Access-Control-Allow-Origin"] == DASHBOARD
    assert "origin" in _listed(first.headers["Vary"])
    assert _listed(first.headers["Access-Control-Expose-Headers"]) == EXPOSED
    assert "Access-Control-Allow-Credentials" not in first.headers  # keys, never cookies

    # A 304 (answered by the edge's fast path) and an error carry them too.
    again = cors_tenant.api.get(
        "/posts", headers={"Origin": DASHBOARD, "If-None-Match": first.headers["ETag"]}
    )
    assert again.status_code == 304
    assert again.headers["Access-Control-Allow-Origin"] == DASHBOARD
    missing = cors_tenant.api.get("/posts/post_nope", headers={"Origin": DASHBOARD})
    assert_error(missing, 404, "NOT_FOUND")
    assert missing.headers["Access-Control-Allow-Origin"] == DASHBOARD

    # Another origin: no Allow-Origin, so its page cannot read the answer.
    other = cors_tenant.api.get("/posts", headers={"Origin": ELSEWHERE})
    assert other.status_code == 200
    assert "Access-Control-Allow-Origin" not in other.headers
    assert "origin" in _listed(other.headers["Vary"])
    # No Origin (not a browser across origins): no CORS headers, but the answer still varies.
    plain = cors_tenant.api.get("/posts")
    assert "Access-Control-Allow-Origin" not in plain.headers
    assert "origin" in _listed(plain.headers["Vary"])


def test_with_no_origin_listed_every_preflight_is_refused_without_budget(
    server: LiveServer, tenant: Tenant
) -> None:
    assert server.settings.cors_origins == []
    refused = preflight(server.base_url, UNIFIED, DASHBOARD)
    assert (refused.status_code, refused.text) == (400, "Disallowed CORS origin")
    assert "Access-Control-Allow-Origin" not in refused.headers
    assert "X-RateLimit-Remaining" not in refused.headers
    read = tenant.api.get("/posts", headers={"Origin": DASHBOARD})
    assert read.status_code == 200
    assert "Access-Control-Allow-Origin" not in read.headers
    assert "Vary" not in tenant.api.get("/posts").headers


def test_origins_come_from_the_environment_comma_separated_or_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MURMUR_CORS_ORIGINS", " http://dash.test:5173, https://Board.Example.com/ ")
    assert Settings().cors_origins == [DASHBOARD, "https://board.example.com"]
    monkeypatch.setenv("MURMUR_CORS_ORIGINS", '["https://board.example.com:443"]')
    assert Settings().cors_origins == ["https://board.example.com"]
    monkeypatch.setenv("MURMUR_CORS_ORIGINS", "")
    assert Settings().cors_origins == []
    monkeypatch.delenv("MURMUR_CORS_ORIGINS")
    assert Settings().cors_origins == []
    for wrong in ("*", "null", "https://board.example.com/app", "board.example.com"):
        monkeypatch.setenv("MURMUR_CORS_ORIGINS", wrong)
        with pytest.raises(ValidationError, match="is not an origin"):
            Settings()
