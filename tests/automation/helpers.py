"""Shared helpers of the automation tests."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.support import Api, LiveServer, Tenant, assert_error
from warehouse import automation as repo
from warehouse import posts as posts_repo


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def soon(**delta: float) -> str:
    return iso(datetime.now(UTC) + timedelta(**delta))


def make_queue(api: Api, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": f"queue-{uuid.uuid4().hex[:6]}",
        "timezone": "Europe/Paris",
        "slots": [{"weekday": d, "time": t} for d in range(7) for t in ("09:00", "17:30")],
        "destinations": ["x", "linkedin"],
    }
    body.update(overrides)
    data: dict[str, Any] = api.ok(api.post("/queues", json=body), 201)
    return data


def make_automation(api: Api, tenant: Tenant, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": f"auto-{uuid.uuid4().hex[:6]}",
        "source": {"type": "feed", "url": "https://example.com/feed.xml"},
        "schedule": {"cron": "30 9 * * 1-5", "timezone": "Europe/Paris"},
        "target": {"platforms": ["x", tenant.accounts["linkedin"]]},
    }
    body.update(overrides)
    data: dict[str, Any] = api.ok(api.post("/content-automations", json=body), 201)
    return data


def make_preset(api: Api, tenant: Tenant, name: str | None = None) -> dict[str, Any]:
    body = {
        "name": name or f"preset-{uuid.uuid4().hex[:6]}",
        "destinations": [
            {"account_id": tenant.accounts["x"], "options": {"reply_settings": "all"}}
        ],
    }
    data: dict[str, Any] = api.ok(api.post("/destination-presets", json=body), 201)
    return data


def make_post(server: LiveServer, tenant: Tenant, status: str, at: datetime | None = None) -> str:
    """A post row as the posts group would store it (that group is built separately)."""

    def work(cur: Any) -> str:
        return repo.insert_queue_post(
            cur,
            tenant.workspace_id,
            text=f"post {status}",
            media_ids=[],
            tags=[],
            status=posts_repo.PostStatus(status),
            scheduled_at=at.astimezone(UTC).replace(tzinfo=None) if at else None,
            created_by="test",
            destinations=[(tenant.accounts["x"], "x")],
        )

    post_id: str = server.store.run(work)
    return post_id


def post_row(server: LiveServer, post_id: str) -> posts_repo.PostRow:
    def work(cur: Any) -> posts_repo.PostRow:
        row = posts_repo.get_post(cur, _workspace_of(cur, post_id), post_id)
        assert row is not None
        return row

    return server.store.run(work)


def _workspace_of(cur: Any, post_id: str) -> str:
    cur.execute("SELECT workspace_id FROM posts WHERE id = ?", [post_id])
    found = cur.fetchone()
    assert found is not None
    return str(found[0])


def check_idempotency(
    api: Api,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    *,
    status: int,
    other_body: dict[str, Any],
) -> Any:
    """Replay, conflict and missing-key behaviour of one write; returns the first data."""
    key = f"idem-{uuid.uuid4()}"
    first = api.request(method, path, idempotency_key=key, json=body)
    data = api.ok(first, status)
    again = api.request(method, path, idempotency_key=key, json=body)
    assert again.status_code == status
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["data"] == first.json()["data"]
    conflict = api.request(method, path, idempotency_key=key, json=other_body)
    assert_error(conflict, 409, "IDEMPOTENCY_CONFLICT")
    missing = api.http.request(method, path, json=body)
    assert_error(missing, 400, "IDEMPOTENCY_KEY_REQUIRED")
    return data


def detail_fields(response: httpx.Response) -> list[tuple[str, str]]:
    error = assert_error(response, 400, "VALIDATION_ERROR")
    return [(d["field"], d["issue"]) for d in error["details"]]
