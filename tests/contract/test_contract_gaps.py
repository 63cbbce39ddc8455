"""The contract's last gaps (issue 15), each checked through the real server."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from api.app import BASE_PATH
from tests.support import LiveServer, Tenant, assert_error

DOCS = Path(__file__).resolve().parents[2] / "docs"
JSON_UTF8 = "application/json; charset=utf-8"


def _soon(hours: float) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def _fields(error: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d["field"], d["issue"]) for d in error["details"]]


def test_a_replay_answers_under_the_stored_request_id_in_body_and_header(tenant: Tenant) -> None:
    api = tenant.api
    key = str(uuid.uuid4())
    body = {"text": "once", "platforms": ["x"], "draft": True}
    first = api.post("/posts", json=body, idempotency_key=key)
    again = api.post("/posts", json=body, idempotency_key=key)
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()  # the stored body, as the contract has it
    assert again.headers["X-Request-Id"] == again.json()["request_id"]
    assert again.headers["X-Request-Id"] == first.headers["X-Request-Id"]
    # A stored refusal (404) replays the same way.
    missing = "/posts/post_nope/cancel"
    gone = api.post(missing, idempotency_key=key)
    replay = api.post(missing, idempotency_key=key)
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert assert_error(replay, 404, "NOT_FOUND") == assert_error(gone, 404, "NOT_FOUND")


def test_every_failure_in_one_response_with_scheduled_at_in_the_past(tenant: Tenant) -> None:
    body = {"text": "y" * 281, "platforms": ["x", "nope"], "scheduled_at": _soon(-1)}
    error = assert_error(tenant.api.post("/posts", json=body), 400, "VALIDATION_ERROR")
    assert set(_fields(error)) == {
        ("scheduled_at", "in_past"),
        ("platforms.0", "max_length"),
        ("platforms.1", "unknown_platform"),
    }
    draft = tenant.api.ok(tenant.api.post("/posts", json={"text": "d", "platforms": ["x"]}), 201)
    patch = {"scheduled_at": _soon(-2), "media_ids": ["med_nope"]}
    error = assert_error(
        tenant.api.patch(f"/posts/{draft['id']}", json=patch), 400, "VALIDATION_ERROR"
    )
    assert set(_fields(error)) == {("scheduled_at", "in_past"), ("media_ids.0", "unknown_media")}


def test_idempotency_is_checked_before_validation(server: LiveServer, tenant: Tenant) -> None:
    http = tenant.api.http  # no Idempotency-Key added
    invalid = {"text": "x", "platforms": []}
    assert_error(http.post("/posts", json=invalid), 400, "IDEMPOTENCY_KEY_REQUIRED")
    assert_error(http.post("/queues", json={"bogus": 1}), 400, "IDEMPOTENCY_KEY_REQUIRED")
    malformed = {"Content-Type": "application/json"}
    assert_error(
        http.post("/posts", content=b'{"text": ', headers=malformed),
        400,
        "IDEMPOTENCY_KEY_REQUIRED",
    )
    # Authentication comes first of all, malformed body or not.
    anonymous = httpx.post(
        f"{server.base_url}{BASE_PATH}/posts",
        content=b'{"text": ',
        headers={**malformed, "Idempotency-Key": "k"},
    )
    assert_error(anonymous, 401, "AUTH_REQUIRED")


def test_details_use_dotted_paths_and_malformed_json_names_the_body(tenant: Tenant) -> None:
    api = tenant.api
    body = {"text": "x", "platforms": ["x", {"account_id": "acc_nope"}], "media_ids": ["m"]}
    error = assert_error(api.post("/posts", json=body), 400, "VALIDATION_ERROR")
    assert set(_fields(error)) == {
        ("platforms.1", "unknown_account"),
        ("media_ids.0", "unknown_media"),
    }
    error = assert_error(
        api.post("/posts", json={"text": "x", "platforms": [7]}), 400, "VALIDATION_ERROR"
    )
    assert all("[" not in field for field, _ in _fields(error)), error
    assert all(field.startswith("platforms.0") for field, _ in _fields(error)), error
    for raw in (b'{"text": ', b"[1, 2", b"\xff\xfe"):
        response = api.post("/posts", content=raw, headers={"Content-Type": "application/json"})
        error = assert_error(response, 400, "VALIDATION_ERROR")
        assert _fields(error) == [("body", "invalid_json")], error


def test_facebook_limit_is_a_destination_entry(tenant: Tenant) -> None:
    api = tenant.api
    text = "f" * 63_207
    error = assert_error(
        api.post("/posts", json={"text": text, "platforms": ["linkedin", "facebook"]}),
        400,
        "VALIDATION_ERROR",
    )
    assert _fields(error) == [("platforms.0", "max_length"), ("platforms.1", "max_length")]
    assert "Facebook takes at most 63206 characters" in error["details"][1]["message"]
    fits = {"text": "f" * 63_206, "platforms": ["facebook"], "draft": True}
    assert api.ok(api.post("/posts", json=fits), 201)["text"] == fits["text"]


def test_insights_evidence_timestamps_carry_an_offset(server: LiveServer, tenant: Tenant) -> None:
    evidence = {
        "published_at": "2026-03-01T09:30:00",
        "window": ["2026-03-01 10:00:00.123456", "2026-03-02T10:00:00+02:00"],
        "weekday": 3,
        "label": "not a time",
    }

    def insert(cur: Any) -> None:
        cur.execute(
            "INSERT INTO mart_insights VALUES (?, 'top_content', 'x', NULL, 't', 'b', 1.0, ?, ?)",
            [tenant.workspace_id, json.dumps(evidence), datetime(2026, 3, 3)],
        )

    with server.settings.open_lakehouse() as lake:
        lake.run(insert)
    items = tenant.api.ok(tenant.api.get("/insights"))["items"]
    assert len(items) == 1
    assert items[0]["evidence"] == {
        "published_at": "2026-03-01T09:30:00.000Z",
        "window": ["2026-03-01T10:00:00.123Z", "2026-03-02T08:00:00.000Z"],
        "weekday": 3,
        "label": "not a time",
    }


def test_json_is_served_with_its_charset(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    key = str(uuid.uuid4())
    body = {"text": "c", "platforms": ["x"], "draft": True}
    responses = [
        api.get("/posts"),
        api.get("/accounts"),
        api.post("/posts", json=body, idempotency_key=key),
        api.post("/posts", json=body, idempotency_key=key),  # a replay
        api.get("/posts/post_nope"),
        api.get("/no-such-path"),
        httpx.get(f"{server.base_url}{BASE_PATH}/posts"),  # 401
    ]
    for response in responses:
        assert response.headers["Content-Type"] == JSON_UTF8, response.request.url


def test_preset_ids_match_the_docs(tenant: Tenant) -> None:
    api = tenant.api
    body = {"name": "launch", "destinations": [{"account_id": tenant.accounts["x"]}]}
    preset = api.ok(api.post("/destination-presets", json=body), 201)
    prefix = preset["id"].split("_", 1)[0] + "_"
    assert prefix == "dp_"
    posts_doc = (DOCS / "api" / "posts.md").read_text()
    assert '{"preset_id": "dp_…"}' in posts_doc
    assert "dps_" not in posts_doc


def test_min_score_must_be_a_finite_number(tenant: Tenant) -> None:
    for value in ("nan", "NaN", "inf", "-inf"):
        response = tenant.api.get("/viral-trends", params={"min_score": value})
        error = assert_error(response, 400, "VALIDATION_ERROR")
        assert error["details"][0]["field"] == "min_score"
    tenant.api.ok(tenant.api.get("/viral-trends", params={"min_score": "1.5"}))


def test_the_automation_docs_say_who_runs_automations() -> None:
    text = (DOCS / "api" / "automation.md").read_text()
    assert "nothing runs automations" not in text
    assert "murmur worker" in text
