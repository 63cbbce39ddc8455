"""Repeated reads answered at the edge (api/caching.py FastReads) answer as the full path does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from pydantic import BaseModel

from api.caching import DAY, Cached, FastRead, FastReads
from domain.workspaces.keys import ApiKey
from tests.support import Api, LiveServer, Tenant, assert_error
from warehouse import workspaces as ws_repo

# Headers whose values differ between two answers of the same read, whichever path answers.
PER_REQUEST = {"x-request-id", "x-ratelimit-remaining", "x-ratelimit-reset", "date"}


def _fast_reads(server: LiveServer) -> FastReads:
    app: Any = server.running.server.config.app
    reads: FastReads = app.state.fast_reads
    return reads


def _post(api: Api, text: str) -> dict[str, Any]:
    at = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    body = {"text": text, "platforms": ["x"], "scheduled_at": at}
    created: dict[str, Any] = api.ok(api.post("/posts", json=body), 201)
    return created


def _without_request_id(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["request_id"] == response.headers["X-Request-Id"]
    return {k: v for k, v in body.items() if k != "request_id"}


def test_a_repeat_answers_the_same_body_and_headers_as_the_first(
    server: LiveServer, tenant: Tenant
) -> None:
    _post(tenant.api, "first")
    reads = [tenant.api.get("/posts", params={"limit": 10}) for _ in range(3)]
    assert _fast_reads(server)  # the first answer was remembered for the edge
    first, *repeats = reads
    for again in repeats:
        assert again.status_code == 200
        assert _without_request_id(again) == _without_request_id(first)
        assert again.headers["X-Request-Id"] != first.headers["X-Request-Id"]
        same = {k: v for k, v in first.headers.items() if k not in PER_REQUEST}
        assert {k: v for k, v in again.headers.items() if k not in PER_REQUEST} == same
    assert first.headers["content-type"] == "application/json; charset=utf-8"
    remaining = [int(r.headers["X-RateLimit-Remaining"]) for r in reads]
    assert remaining == [remaining[0], remaining[0] - 1, remaining[0] - 2]


def test_every_answer_says_nosniff_and_how_a_cache_may_keep_it(
    server: LiveServer, tenant: Tenant
) -> None:
    """nosniff everywhere; a conditional read private, no-cache on both paths; the rest no-store."""
    _post(tenant.api, "headers")
    first = tenant.api.get("/posts")
    again = tenant.api.get("/posts")  # answered at the edge
    assert _fast_reads(server)
    unchanged = tenant.api.get("/posts", headers={"If-None-Match": first.headers["ETag"]})
    assert (first.status_code, again.status_code, unchanged.status_code) == (200, 200, 304)
    for answer in (first, again, unchanged):
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Cache-Control"] == "private, no-cache"
    draft = {"text": "w", "platforms": ["x"], "draft": True}
    root = server.base_url
    others = {
        "a read": tenant.api.get("/inbox/items"),
        "a write": tenant.api.post("/posts", json=draft),
        "a 401": httpx.get(f"{root}/api/public/v1/posts", timeout=30),
        "a probe": httpx.get(f"{root}/healthz", timeout=30),
    }
    for what, answer in others.items():
        assert answer.headers["X-Content-Type-Options"] == "nosniff", what
        assert answer.headers["Cache-Control"] == "no-store", what
    preflight = httpx.options(
        f"{root}/api/public/v1/posts",
        headers={"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "GET"},
        timeout=30,
    )
    assert preflight.headers["X-Content-Type-Options"] == "nosniff"


def test_a_write_anywhere_is_seen_by_the_next_repeat(server: LiveServer, tenant: Tenant) -> None:
    _post(tenant.api, "one")
    before = tenant.api.ok(tenant.api.get("/posts"))
    assert tenant.api.ok(tenant.api.get("/posts")) == before
    _post(tenant.api, "two")
    after = tenant.api.ok(tenant.api.get("/posts"))
    assert sorted(p["text"] for p in after["items"]) == ["one", "two"]
    assert len(before["items"]) == 1


def test_a_repeat_with_another_key_or_workspace_is_never_answered_from_the_first(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    _post(tenant.api, "mine")
    _post(other_tenant.api, "theirs")
    for _ in range(2):
        mine = tenant.api.ok(tenant.api.get("/posts"))
        theirs = other_tenant.api.ok(other_tenant.api.get("/posts"))
        assert [p["text"] for p in mine["items"]] == ["mine"]
        assert [p["text"] for p in theirs["items"]] == ["theirs"]
    # Another workspace named in the header, by a key without it: refused, not served.
    stranger = Api(server.base_url, tenant.key, other_tenant.workspace_id)
    try:
        for _ in range(2):
            assert_error(stranger.get("/posts"), 403, "WORKSPACE_FORBIDDEN")
    finally:
        stranger.close()


def test_a_key_revoked_after_a_read_is_refused_on_the_repeat(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.key_with(server, scopes=["posts:read"])
    try:
        for _ in range(2):
            assert api.get("/posts").status_code == 200

        def revoke(cur: Any) -> None:
            found = cur.execute(
                "SELECT id FROM api_keys WHERE organization_id = ? ORDER BY created_at DESC"
                " LIMIT 1",
                [tenant.organization_id],
            ).fetchone()
            assert ws_repo.revoke_api_key(cur, found[0])

        server.store.run(revoke)
        assert_error(api.get("/posts"), 401, "API_KEY_INVALID")
    finally:
        api.close()


def test_a_key_over_its_read_budget_gets_429_on_the_repeat(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.key_with(server, scopes=["posts:read"], read_rate_limit=3)
    try:
        answers = [api.get("/posts") for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert [a.headers["X-RateLimit-Remaining"] for a in answers] == ["2", "1", "0"]
        refused = api.get("/posts")
        assert_error(refused, 429, "RATE_LIMITED")
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.headers["X-RateLimit-Remaining"] == "0"
    finally:
        api.close()


def test_if_none_match_on_a_repeat_gets_304_with_no_body(
    server: LiveServer, tenant: Tenant
) -> None:
    _post(tenant.api, "tagged")
    first = tenant.api.get("/posts")
    etag = first.headers["ETag"]
    for _ in range(2):
        again = tenant.api.get("/posts", headers={"If-None-Match": etag})
        assert again.status_code == 304
        assert again.content == b""
        assert again.headers["ETag"] == etag
        assert "X-RateLimit-Remaining" in again.headers


def test_repeats_are_counted_in_the_metrics_under_the_route_template(
    server: LiveServer, tenant: Tenant
) -> None:
    def count() -> float:
        text = httpx.get(server.base_url + "/metrics").text
        for line in text.splitlines():
            if (
                line.startswith("murmur_http_requests_total{")
                and 'route="/api/public/v1/posts"' in line
                and 'method="GET"' in line
                and 'status="200"' in line
            ):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    before = count()
    for _ in range(4):
        assert tenant.api.get("/posts").status_code == 200
    assert count() == before + 4


def _entry(
    *,
    token: bytes = b"t",
    period: int | None = None,
    epoch: int = 0,
    expires: float | None = None,
) -> Any:
    key = ApiKey("key_1", "org_1", "test", frozenset(), ("ws_1",), None, None)
    return FastRead(
        token=token,
        period=period,
        epoch=epoch,
        cached=Cached(b"{}", 'W/"x"'),
        key=key,
        expires_at=expires,
        bucket="key_1:read",
        limit=10,
        route=None,
    )


def test_an_entry_holds_only_under_its_token_epoch_and_the_key_s_expiry() -> None:
    reads = FastReads(size=2)
    sig = ("/p", b"", b"Bearer k", None)
    reads.remember(sig, _entry(token=b"a", period=1, epoch=100, expires=200.0))
    assert reads.lookup(sig, b"a", 100.5) is not None
    assert reads.lookup(sig, b"b", 100.5) is None  # a commit since
    assert reads.lookup(sig, b"a", 101.0) is None  # the clock's next second
    reads.remember(sig, _entry(token=b"a", period=DAY, epoch=1, expires=None))
    assert reads.lookup(sig, b"a", DAY + 0.0) is not None
    assert reads.lookup(sig, b"a", 2 * DAY - 0.001) is not None  # the same UTC day
    assert reads.lookup(sig, b"a", 2 * DAY + 0.0) is None  # the next day
    reads.remember(sig, _entry(token=b"a", expires=200.0))
    assert reads.lookup(sig, b"a", 199.9) is not None
    assert reads.lookup(sig, b"a", 200.0) is None  # the key expired
    for i in range(3):
        reads.remember(("/p", str(i).encode(), b"Bearer k", None), _entry())
    assert len(reads) == 2  # bounded, oldest out first


class _Clocked(BaseModel):
    value: int
    at: float


def test_a_clock_field_is_redrawn_once_a_second_and_the_rest_kept() -> None:
    redraws: list[float] = []

    def redraw(model: Any, now: float) -> BaseModel:
        redraws.append(now)
        return _Clocked(value=model.value, at=now)

    built = _Clocked(value=7, at=100.25)
    cached = Cached(
        built.model_dump_json().encode(), 'W/"x"', model=built, redraw=redraw, second=100
    )
    assert cached.data_at(100.9) == b'{"value":7,"at":100.25}'  # the second it was built in
    assert cached.data_at(101.5) == b'{"value":7,"at":101.5}'
    assert cached.data_at(101.75) == b'{"value":7,"at":101.5}'  # once per second
    assert cached.data_at(103.0) == b'{"value":7,"at":103.0}'
    assert redraws == [101.5, 103.0]
