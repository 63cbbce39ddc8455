"""Dashboard sessions: a one-time sign-in link's token in, a read-only key out; sign-out.

Over the real API on loopback. Links are made as ``murmur dashboard`` makes them (the service,
on the server's store; tests/cli/test_dashboard.py runs the command itself); an expired one is
made with a clock 11 minutes back, not by waiting.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import BASE_PATH
from domain.workspaces import sign_in
from domain.workspaces.keys import ALL_SCOPES
from tests.servers import StoreSettings
from tests.support import LiveServer, Tenant, assert_error, bootstrap_workspace_id, start_server
from warehouse import workspaces as ws_repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor

READ_SCOPES = sorted(scope for scope in ALL_SCOPES if scope.endswith(":read"))


def make_link(server: LiveServer, workspace_id: str, *, now: datetime | None = None) -> str:
    """A sign-in link's token, as ``murmur dashboard`` makes it."""
    made = server.store.run(lambda cur: sign_in.create_link(cur, workspace_id, now=now))
    return made.token


def redeem(server: LiveServer, token: str, **kwargs: Any) -> httpx.Response:
    """``POST /sessions`` as the dashboard sends it: no API key, no Idempotency-Key."""
    return httpx.post(
        f"{server.base_url}{BASE_PATH}/sessions", json={"token": token}, timeout=30, **kwargs
    )


def rows(server: LiveServer, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """What ``sql`` reads from the server's store, each row a tuple."""

    def read(cur: Cursor) -> list[tuple[Any, ...]]:
        cur.execute(sql, params or [])
        return [tuple(row) for row in cur.fetchall()]

    return server.store.read(read)


def as_key(server: LiveServer, key: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.base_url + BASE_PATH,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )


def assert_link_refused(response: httpx.Response) -> str:
    error = assert_error(response, 401, "API_KEY_INVALID")
    assert "murmur dashboard" in error["message"]
    assert "new" in error["message"]
    return str(error["message"])


def test_a_link_signs_in_once_with_a_read_only_key_of_its_workspace(
    server: LiveServer, tenant: Tenant
) -> None:
    token = make_link(server, tenant.workspace_id)
    before = datetime.now(UTC)
    answer = redeem(server, token)

    assert answer.status_code == 201, answer.text
    assert answer.headers["Cache-Control"] == "no-store"
    assert "Idempotent-Replayed" not in answer.headers
    body = answer.json()
    assert body["success"] is True
    assert body["request_id"] == answer.headers["X-Request-Id"]
    session = body["data"]
    assert set(session) == {"key", "key_id", "workspace_id", "expires_at", "scopes"}
    assert session["key"].startswith("sk_")
    assert session["key_id"].startswith("key_")
    assert session["workspace_id"] == tenant.workspace_id
    assert sorted(session["scopes"]) == READ_SCOPES
    expires = datetime.fromisoformat(session["expires_at"])
    assert session["expires_at"].endswith("Z")
    assert before + timedelta(hours=12) - timedelta(minutes=1) < expires
    assert expires <= datetime.now(UTC) + timedelta(hours=12)

    with as_key(server, session["key"]) as client:
        listed = client.get("/workspaces")
        assert listed.status_code == 200, listed.text
        assert [w["id"] for w in listed.json()["data"]["items"]] == [tenant.workspace_id]
        assert client.get("/posts").status_code == 200
        assert client.get("/analytics/unified").status_code == 200

    assert_link_refused(redeem(server, token))  # a second use


def test_the_session_key_has_no_write_scope(server: LiveServer, tenant: Tenant) -> None:
    session = redeem(server, make_link(server, tenant.workspace_id)).json()["data"]
    assert not [scope for scope in session["scopes"] if not scope.endswith(":read")]
    with as_key(server, session["key"]) as client:
        created = client.post(
            "/posts",
            headers={"Idempotency-Key": "session-write"},
            json={"text": "from a dashboard", "platforms": [{"platform": "x"}]},
        )
        assert_error(created, 403, "SCOPE_FORBIDDEN")
        member = client.post(
            f"/workspaces/{tenant.workspace_id}/members",
            headers={"Idempotency-Key": "session-member"},
            json={"email": "someone@example.com", "role": "viewer"},
        )
        assert_error(member, 403, "SCOPE_FORBIDDEN")


def test_used_expired_and_unknown_tokens_get_one_and_the_same_401(
    server: LiveServer, tenant: Tenant
) -> None:
    used = make_link(server, tenant.workspace_id)
    assert redeem(server, used).status_code == 201
    # Made 11 minutes ago: it expired a minute ago.
    expired = make_link(server, tenant.workspace_id, now=utcnow() - timedelta(minutes=11))
    # Made 9 minutes ago: a minute left, so it still works.
    fresh = make_link(server, tenant.workspace_id, now=utcnow() - timedelta(minutes=9))

    messages = {
        assert_link_refused(redeem(server, token))
        for token in (used, expired, "no-such-token", "x" * 256, used[:-1])
    }
    assert len(messages) == 1  # nothing tells a guesser which tokens exist
    assert redeem(server, fresh).status_code == 201
    # An expired link stays unusable: the refusal did not consume or change it.
    assert_link_refused(redeem(server, expired))


def test_a_malformed_body_is_a_validation_error(server: LiveServer) -> None:
    url = f"{server.base_url}{BASE_PATH}/sessions"
    assert_error(httpx.post(url, json={}, timeout=30), 400, "VALIDATION_ERROR")
    assert_error(httpx.post(url, json={"token": ""}, timeout=30), 400, "VALIDATION_ERROR")
    assert_error(
        httpx.post(url, json={"token": "t", "extra": 1}, timeout=30), 400, "VALIDATION_ERROR"
    )
    broken = httpx.post(
        url, content=b"{not json", headers={"Content-Type": "application/json"}, timeout=30
    )
    assert assert_error(broken, 400, "VALIDATION_ERROR")["details"][0]["issue"] == "invalid_json"
    surrogate = httpx.post(
        url,
        content=b'{"token": "\\ud800"}',
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert_error(surrogate, 400, "VALIDATION_ERROR")


def test_two_uses_at_once_exactly_one_wins(server: LiveServer, tenant: Tenant) -> None:
    token = make_link(server, tenant.workspace_id)
    racers = 6
    start = threading.Barrier(racers)
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def use() -> None:
        with httpx.Client(timeout=60) as client:
            start.wait()
            answer = client.post(f"{server.base_url}{BASE_PATH}/sessions", json={"token": token})
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=use) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == racers
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [201] + [401] * (racers - 1), [a.text for a in answers]
    for answer in answers:
        if answer.status_code == 401:
            assert_link_refused(answer)
    # One key minted: the link names it, and only one dashboard key exists for the workspace.
    minted = [
        row.id
        for row in server.store.read(ws_repo.list_api_keys)
        if row.name == "dashboard" and row.workspace_ids == [tenant.workspace_id]
    ]
    assert minted == [next(a for a in answers if a.status_code == 201).json()["data"]["key_id"]]


def test_sign_out_revokes_the_session_key_at_once(server: LiveServer, tenant: Tenant) -> None:
    session = redeem(server, make_link(server, tenant.workspace_id)).json()["data"]
    with as_key(server, session["key"]) as client:
        assert client.get("/workspaces").status_code == 200  # now in the key cache
        out = client.delete("/sessions/current")  # no Idempotency-Key needed
        assert out.status_code == 200, out.text
        assert out.json()["data"] == {"id": session["key_id"], "deleted": True}
        assert_error(client.get("/workspaces"), 401, "API_KEY_INVALID")
        # Signing out again: the key is gone, so is the session.
        assert_error(client.delete("/sessions/current"), 401, "API_KEY_INVALID")


def test_sign_out_leaves_a_key_no_link_made_alone(server: LiveServer, tenant: Tenant) -> None:
    # A key pasted into the dashboard: signing out forgets it in the page, never revokes it.
    refused = tenant.api.delete("/sessions/current")
    assert "murmur keys revoke" in assert_error(refused, 404, "NOT_FOUND")["message"]
    assert tenant.api.get("/workspaces").status_code == 200
    assert_error(
        httpx.delete(f"{server.base_url}{BASE_PATH}/sessions/current", timeout=30),
        401,
        "AUTH_REQUIRED",
    )


def test_no_idempotency_record_keeps_the_key(server: LiveServer, tenant: Tenant) -> None:
    headers = {"Idempotency-Key": "same-key-twice"}
    first = redeem(server, make_link(server, tenant.workspace_id), headers=headers)
    second = redeem(server, make_link(server, tenant.workspace_id), headers=headers)
    assert first.status_code == second.status_code == 201
    assert "Idempotent-Replayed" not in second.headers  # two links, two sessions
    keys = [first.json()["data"]["key"], second.json()["data"]["key"]]
    assert keys[0] != keys[1]
    stored = rows(server, "SELECT response_body FROM idempotency_keys")
    assert not [body for (body,) in stored if body and any(key in body for key in keys)]


def test_the_store_keeps_only_the_tokens_hash(server: LiveServer, tenant: Tenant) -> None:
    token = make_link(server, tenant.workspace_id)
    held = rows(
        server,
        "SELECT token_hash, workspace_id, used_at FROM sign_in_links WHERE workspace_id = ?",
        [tenant.workspace_id],
    )
    assert held == [(hashlib.sha256(token.encode()).hexdigest(), tenant.workspace_id, None)]
    assert token not in repr(held)


@pytest.fixture
def strict_server(tmp_path: Path, store_settings: StoreSettings) -> Iterator[LiveServer]:
    """A server of the test's own with a keyless budget of 3 a minute per address."""
    live = start_server(store_settings(tmp_path / "data", unauthenticated_rate_limit=3))
    yield live
    live.stop()


def test_uses_count_against_the_keyless_budget(strict_server: LiveServer) -> None:
    token = make_link(strict_server, bootstrap_workspace_id(strict_server))
    for guess in range(3):
        assert_link_refused(redeem(strict_server, f"guess-{guess}"))
    assert_error(redeem(strict_server, "guess-3"), 429, "RATE_LIMITED")
    # A header does not buy more guesses: the address pays for the use all the same.
    with_header = redeem(strict_server, "guess-4", headers={"Authorization": "Bearer sk_test_x"})
    assert_error(with_header, 429, "RATE_LIMITED")
    # Refused before the link was looked at: it still works once the minute has passed.
    assert_error(redeem(strict_server, token), 429, "RATE_LIMITED")
    assert rows(strict_server, "SELECT used_at FROM sign_in_links") == [(None,)]


def test_the_document_asks_no_key_and_no_idempotency_key_to_sign_in(server: LiveServer) -> None:
    document = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json", timeout=30).json()
    create = document["paths"]["/sessions"]["post"]
    assert "security" not in create
    assert create["operationId"] == "create_session"
    idempotency = [p for p in create["parameters"] if p["name"] == "Idempotency-Key"]
    assert [p["required"] for p in idempotency] == [False]
    assert "201" in create["responses"]
    sign_out = document["paths"]["/sessions/current"]["delete"]
    assert sign_out["security"]
    assert [p["required"] for p in sign_out["parameters"] if p["name"] == "Idempotency-Key"] == [
        False
    ]
