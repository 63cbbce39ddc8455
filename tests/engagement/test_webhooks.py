"""Outbound webhooks over real HTTP: endpoints API, signatures, retries, the delivery log."""

from __future__ import annotations

import json

from tests.engagement.conftest import Receiver, StartRunner, wait_for
from tests.support import LiveServer, Tenant, assert_error
from workers.engagement.webhooks import SIGNATURE_HEADER, sign, verify


def _endpoint(tenant: Tenant, url: str, events: list[str]) -> dict[str, object]:
    created: dict[str, object] = tenant.api.ok(
        tenant.api.post("/webhooks", json={"url": url, "event_types": events}), 201
    )
    return created


def _post(tenant: Tenant, text: str = "Hello webhooks") -> dict[str, object]:
    body = {"text": text, "platforms": ["x"], "scheduled_at": "2099-01-01T09:00:00Z"}
    post: dict[str, object] = tenant.api.ok(tenant.api.post("/posts", json=body), 201)
    return post


def test_sign_and_verify_roundtrip() -> None:
    header = sign("whsec_x", b'{"a":1}', 1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    assert not verify("whsec_x", b'{"a":1}', header)  # too old for the tolerance
    fresh = sign("whsec_x", b'{"a":1}')
    assert verify("whsec_x", b'{"a":1}', fresh)
    assert not verify("whsec_y", b'{"a":1}', fresh)
    assert not verify("whsec_x", b'{"a":2}', fresh)


def test_endpoint_crud_shows_the_secret_once(tenant: Tenant) -> None:
    created = _endpoint(tenant, "https://example.com/hook", ["post.created", "post.created"])
    assert str(created["id"]).startswith("whk_")
    assert str(created["secret"]).startswith("whsec_")
    assert created["event_types"] == ["post.created"]
    got = tenant.api.ok(tenant.api.get(f"/webhooks/{created['id']}"))
    assert "secret" not in got
    listed = tenant.api.list_all("/webhooks")
    assert [e["id"] for e in listed] == [created["id"]]
    patched = tenant.api.ok(tenant.api.patch(f"/webhooks/{created['id']}", json={"enabled": False}))
    assert patched["enabled"] is False
    bad = tenant.api.post("/webhooks", json={"url": "ftp://x", "event_types": ["post.created"]})
    assert_error(bad, 400, "VALIDATION_ERROR")
    unknown = tenant.api.post("/webhooks", json={"url": "https://x.y", "event_types": ["nope"]})
    assert_error(unknown, 400, "VALIDATION_ERROR")
    tenant.api.ok(tenant.api.delete(f"/webhooks/{created['id']}"))
    assert_error(tenant.api.get(f"/webhooks/{created['id']}"), 404, "NOT_FOUND")


def test_deliveries_are_signed_and_verify_with_the_secret(
    server: LiveServer, tenant: Tenant, receiver: Receiver, start_runner: StartRunner
) -> None:
    endpoint = _endpoint(tenant, receiver.url, ["post.created", "post.scheduled"])
    post = _post(tenant)
    start_runner()
    wait_for(lambda: len(receiver.requests) >= 2, what="two deliveries")
    types = sorted(r.headers["Murmur-Event"] for r in receiver.requests)
    assert types == ["post.created", "post.scheduled"]
    for request in receiver.requests:
        assert verify(str(endpoint["secret"]), request.body, request.headers[SIGNATURE_HEADER])
        assert not verify("whsec_wrong", request.body, request.headers[SIGNATURE_HEADER])
        body = json.loads(request.body)
        assert body["id"] == request.headers["Murmur-Event-Id"]
        assert body["id"].startswith("evt_")
        assert body["workspace_id"] == tenant.workspace_id
        assert body["data"]["post"]["id"] == post["id"]

    # The receiver sees a request before the worker records its answer.
    def recorded() -> list[dict[str, object]]:
        log = tenant.api.list_all(f"/webhooks/{endpoint['id']}/deliveries")
        return log if {d["status"] for d in log} == {"succeeded"} else []

    log = wait_for(recorded, what="both deliveries recorded as succeeded")
    assert len(log) == 2
    assert all(d["attempts"] == 1 and d["response_status"] == 204 for d in log)


def test_a_failing_receiver_is_retried_until_it_succeeds(
    server: LiveServer, tenant: Tenant, receiver: Receiver, start_runner: StartRunner
) -> None:
    receiver.fail_first = 3
    endpoint = _endpoint(tenant, receiver.url, ["post.canceled"])
    post = _post(tenant)
    tenant.api.ok(tenant.api.post(f"/posts/{post['id']}/cancel"))
    start_runner()

    def succeeded() -> list[dict[str, object]]:
        log = tenant.api.list_all(f"/webhooks/{endpoint['id']}/deliveries")
        return [d for d in log if d["status"] == "succeeded"]

    done = wait_for(succeeded, what="a successful delivery after retries")
    assert len(done) == 1
    assert done[0]["attempts"] == 4
    assert done[0]["event_type"] == "post.canceled"
    assert len(receiver.requests) == 4
    ids = {json.loads(r.body)["id"] for r in receiver.requests}
    assert len(ids) == 1  # the same event each time, for the receiver to deduplicate


def test_a_receiver_that_never_answers_2xx_fails_after_max_attempts(
    server: LiveServer, tenant: Tenant, receiver: Receiver, start_runner: StartRunner
) -> None:
    receiver.fail_first = 1000
    endpoint = _endpoint(tenant, receiver.url, ["post.created"])
    _post(tenant)
    start_runner(webhook_max_attempts=3, webhook_retry_base_seconds=0.05)

    def failed() -> list[dict[str, object]]:
        log = tenant.api.list_all(f"/webhooks/{endpoint['id']}/deliveries", status="failed")
        return log

    done = wait_for(failed, what="a failed delivery")
    assert done[0]["attempts"] == 3
    assert done[0]["response_status"] == 500
    assert done[0]["last_error"] == "HTTP 500"
