"""Inbox items over real HTTP: listing, filters, paging, snooze, respond, isolation, idempotency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.inbox.seed import seed_item
from tests.support import (
    LiveServer,
    Tenant,
    assert_each_needs_a_key_and_the_scope,
    assert_error,
    iter_pages,
)
from warehouse import inbox as inbox_repo


def future(hours: int = 2) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def test_item_detail_has_messages_oldest_first(server: LiveServer, tenant: Tenant) -> None:
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    item_id = seed_item(server, tenant, "first", external_id="thread-1", received_at=t0)
    again = seed_item(
        server, tenant, "second", external_id="thread-1", received_at=t0 + timedelta(minutes=5)
    )
    assert again == item_id
    item = tenant.api.ok(tenant.api.get(f"/inbox/items/{item_id}"))
    assert item["id"].startswith("inb_")
    assert (item["status"], item["platform"], item["kind"]) == ("open", "x", "comment")
    assert item["account_id"] == tenant.accounts["x"]
    assert item["author_handle"] == "alice"
    assert [m["text"] for m in item["messages"]] == ["first", "second"]
    assert {m["direction"] for m in item["messages"]} == {"inbound"}
    assert {m["delivery"] for m in item["messages"]} == {"received"}
    assert item["last_message_at"] == "2026-01-05T09:05:00.000Z"
    assert item["preview"] == "second"
    assert item["drafts"] == []


def test_list_filters(server: LiveServer, tenant: Tenant) -> None:
    x_comment = seed_item(server, tenant, "a", platform="x", kind="comment")
    ig_dm = seed_item(server, tenant, "b", platform="instagram", kind="dm")
    li_mention = seed_item(server, tenant, "c", platform="linkedin", kind="mention")
    tenant.api.ok(
        tenant.api.patch(
            f"/inbox/items/{ig_dm}", json={"tags": ["vip", "vip", "billing"], "assignee": "ada"}
        )
    )
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{li_mention}", json={"status": "closed"}))

    def ids(**params: Any) -> set[str]:
        return {i["id"] for i in tenant.api.list_all("/inbox/items", **params)}

    assert ids() == {x_comment, ig_dm, li_mention}
    assert ids(platform="instagram") == {ig_dm}
    assert ids(kind="mention") == {li_mention}
    assert ids(account_id=tenant.accounts["x"]) == {x_comment}
    assert ids(tag="vip") == {ig_dm}
    assert ids(assignee="ada") == {ig_dm}
    assert ids(status="closed") == {li_mention}
    assert ids(status="open") == {x_comment, ig_dm}
    assert tenant.api.ok(tenant.api.get(f"/inbox/items/{ig_dm}"))["tags"] == ["vip", "billing"]
    error = assert_error(
        tenant.api.get("/inbox/items", params={"kind": "email"}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "kind"


def test_paging_with_equal_activity_times_shows_every_item_once(
    server: LiveServer, tenant: Tenant
) -> None:
    same = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
    seeded = [seed_item(server, tenant, f"tie {i}", received_at=same) for i in range(7)]
    older = seed_item(server, tenant, "older", received_at=same - timedelta(hours=1))
    newer = seed_item(server, tenant, "newer", received_at=same + timedelta(hours=1))
    pages = list(iter_pages(tenant.api, "/inbox/items", 2))
    seen = [i["id"] for page in pages for i in page["items"]]
    assert len(pages) == 5
    assert len(seen) == len(set(seen)) == 9
    assert seen == [newer, *sorted(seeded, reverse=True), older]
    assert pages[-1]["pagination"] == {"limit": 2, "next_cursor": None, "has_more": False}


def test_new_activity_moves_an_item_up_and_reopens_it(server: LiveServer, tenant: Tenant) -> None:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    first = seed_item(server, tenant, "one", external_id="t-a", received_at=t0)
    second = seed_item(server, tenant, "two", received_at=t0 + timedelta(minutes=1))
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{first}", json={"status": "closed"}))
    seed_item(server, tenant, "one again", external_id="t-a", received_at=t0 + timedelta(minutes=2))
    items = tenant.api.list_all("/inbox/items")
    assert [i["id"] for i in items] == [first, second]
    assert items[0]["status"] == "open"
    assert items[0]["preview"] == "one again"


def test_snooze_rules(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant)
    path = f"/inbox/items/{item_id}"
    error = assert_error(
        tenant.api.patch(path, json={"status": "snoozed"}), 400, "VALIDATION_ERROR"
    )
    assert (error["details"][0]["field"], error["details"][0]["issue"]) == (
        "snoozed_until",
        "required",
    )
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    error = assert_error(
        tenant.api.patch(path, json={"status": "snoozed", "snoozed_until": past}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["issue"] == "in_past"
    error = assert_error(
        tenant.api.patch(path, json={"status": "snoozed", "snoozed_until": "2099-01-01T09:00:00"}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["issue"] == "offset_required"
    error = assert_error(
        tenant.api.patch(path, json={"status": "open", "snoozed_until": future()}),
        400,
        "VALIDATION_ERROR",
    )
    assert error["details"][0]["issue"] == "not_allowed"
    error = assert_error(
        tenant.api.patch(path, json={"status": "replied"}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "status"

    until = datetime.now(UTC) + timedelta(hours=3)
    snoozed = tenant.api.ok(
        tenant.api.patch(path, json={"status": "snoozed", "snoozed_until": until.isoformat()})
    )
    assert snoozed["status"] == "snoozed"
    assert snoozed["snoozed_until"].endswith("Z")
    reopened = tenant.api.ok(tenant.api.patch(path, json={"status": "open"}))
    assert (reopened["status"], reopened["snoozed_until"]) == ("open", None)
    tenant.api.ok(tenant.api.patch(path, json={"status": "closed"}))
    assert_error(
        tenant.api.patch(path, json={"status": "snoozed", "snoozed_until": future()}),
        409,
        "INVALID_STATE",
    )


def test_an_expired_snooze_reads_as_open(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant)

    def expire(cur: Any) -> None:
        inbox_repo.update_item(
            cur,
            tenant.workspace_id,
            item_id,
            status="snoozed",
            snoozed_until=datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=1),
            tags=[],
            assignee=None,
        )

    server.store.run(expire)
    item = tenant.api.ok(tenant.api.get(f"/inbox/items/{item_id}"))
    assert (item["status"], item["snoozed_until"]) == ("open", None)
    assert [i["id"] for i in tenant.api.list_all("/inbox/items", status="open")] == [item_id]
    assert tenant.api.list_all("/inbox/items", status="snoozed") == []


def test_respond_records_a_pending_reply_and_marks_replied(
    server: LiveServer, tenant: Tenant
) -> None:
    item_id = seed_item(server, tenant, "Do you ship to Norway?")
    data = tenant.api.ok(
        tenant.api.post(f"/inbox/items/{item_id}/respond", json={"text": "Yes, we do!"}), 201
    )
    assert data["item"]["status"] == "replied"
    message = data["message"]
    assert message["id"].startswith("inm_")
    assert (message["direction"], message["delivery"], message["text"]) == (
        "outbound",
        "pending",
        "Yes, we do!",
    )
    assert message["author_handle"] == "x_handle"
    assert message["sent_by"].startswith("key_")
    assert message["external_id"] is None
    item = tenant.api.ok(tenant.api.get(f"/inbox/items/{item_id}"))
    assert [m["direction"] for m in item["messages"]] == ["inbound", "outbound"]
    assert [i["id"] for i in tenant.api.list_all("/inbox/items", status="replied")] == [item_id]


def test_closed_items_refuse_replies(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant)
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{item_id}", json={"status": "closed"}))
    response = tenant.api.post(f"/inbox/items/{item_id}/respond", json={"text": "hi"})
    assert_error(response, 409, "INVALID_STATE")
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{item_id}", json={"status": "open"}))
    tenant.api.ok(tenant.api.post(f"/inbox/items/{item_id}/respond", json={"text": "hi"}), 201)


@pytest.mark.parametrize(
    ("body", "field", "issue"),
    [
        ({}, "text", "required"),
        ({"text": ""}, "text", "min_length"),
        ({"text": "x" * 10001}, "text", "max_length"),
        ({"text": "   "}, "text", "blank"),
        ({"text": "hi", "draft_id": "ind_nope"}, "draft_id", "unknown_draft"),
        ({"text": "hi", "send": True}, "send", "unknown_field"),
    ],
)
def test_respond_validation(
    server: LiveServer, tenant: Tenant, body: dict[str, Any], field: str, issue: str
) -> None:
    item_id = seed_item(server, tenant)
    response = tenant.api.post(f"/inbox/items/{item_id}/respond", json=body)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert (error["details"][0]["field"], error["details"][0]["issue"]) == (field, issue)


def test_update_validation(server: LiveServer, tenant: Tenant) -> None:
    path = f"/inbox/items/{seed_item(server, tenant)}"
    cases = [
        ({}, "body", "empty"),
        ({"tags": [""]}, "tags.0", "min_length"),
        ({"tags": [f"t{i}" for i in range(21)]}, "tags", "max_items"),
        ({"tags": None}, "tags", "not_nullable"),
        ({"status": None}, "status", "not_nullable"),
        ({"assignee": ""}, "assignee", "min_length"),
    ]
    for body, field, issue in cases:
        error = assert_error(tenant.api.patch(path, json=body), 400, "VALIDATION_ERROR")
        assert (error["details"][0]["field"], error["details"][0]["issue"]) == (field, issue), body
    assigned = tenant.api.ok(tenant.api.patch(path, json={"assignee": "ada@example.com"}))
    assert assigned["assignee"] == "ada@example.com"
    assert tenant.api.ok(tenant.api.patch(path, json={"assignee": None}))["assignee"] is None


def _endpoints(item_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    return [
        ("GET", "/inbox/items", None),
        ("GET", f"/inbox/items/{item_id}", None),
        ("PATCH", f"/inbox/items/{item_id}", {"tags": ["x"]}),
        ("POST", f"/inbox/items/{item_id}/respond", {"text": "hello"}),
        ("POST", f"/inbox/items/{item_id}/drafts", None),
        ("GET", f"/inbox/items/{item_id}/drafts", None),
    ]


def test_every_endpoint_needs_a_key_and_the_scope(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant)
    assert_each_needs_a_key_and_the_scope(
        server,
        tenant,
        _endpoints(item_id),
        read_scopes=["inbox:read"],
        other_scopes=["posts:read", "workspaces:write"],
    )


def test_another_workspaces_item_is_not_found(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    theirs = seed_item(server, other_tenant)
    for method, path, body in _endpoints(theirs)[1:]:
        assert_error(tenant.api.request(method, path, json=body), 404, "NOT_FOUND")
    assert tenant.api.list_all("/inbox/items") == []
    # Nothing was changed in their workspace.
    item = other_tenant.api.ok(other_tenant.api.get(f"/inbox/items/{theirs}"))
    assert (item["status"], item["tags"], item["drafts"]) == ("open", [], [])


def test_patch_replays_and_conflicts(server: LiveServer, tenant: Tenant) -> None:
    path = f"/inbox/items/{seed_item(server, tenant)}"
    first = tenant.api.patch(path, json={"tags": ["a"]}, idempotency_key="patch-1")
    tenant.api.ok(tenant.api.patch(path, json={"tags": ["b"]}))
    again = tenant.api.patch(path, json={"tags": ["a"]}, idempotency_key="patch-1")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert tenant.api.ok(tenant.api.get(path))["tags"] == ["b"]
    assert_error(
        tenant.api.patch(path, json={"tags": ["c"]}, idempotency_key="patch-1"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )


def test_respond_replays_without_a_second_message(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant)
    path = f"/inbox/items/{item_id}/respond"
    first = tenant.api.post(path, json={"text": "Thanks!"}, idempotency_key="respond-1")
    again = tenant.api.post(path, json={"text": "Thanks!"}, idempotency_key="respond-1")
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    messages = tenant.api.ok(tenant.api.get(f"/inbox/items/{item_id}"))["messages"]
    assert [m["direction"] for m in messages] == ["inbound", "outbound"]
    assert_error(
        tenant.api.post(path, json={"text": "Other"}, idempotency_key="respond-1"),
        409,
        "IDEMPOTENCY_CONFLICT",
    )


def test_a_refused_reply_is_the_keys_stored_outcome(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant)
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{item_id}", json={"status": "closed"}))
    path = f"/inbox/items/{item_id}/respond"
    first = tenant.api.post(path, json={"text": "hi"}, idempotency_key="closed-1")
    assert_error(first, 409, "INVALID_STATE")
    tenant.api.ok(tenant.api.patch(f"/inbox/items/{item_id}", json={"status": "open"}))
    again = tenant.api.post(path, json={"text": "hi"}, idempotency_key="closed-1")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.status_code == 409


def test_a_preview_is_an_excerpt_of_a_long_stored_message(
    server: LiveServer, tenant: Tenant
) -> None:
    """A message stored whole (before the ingest bound) still lists as a 280-character preview."""
    item_id = seed_item(server, tenant, "y" * 200_008, kind="dm")
    (item,) = [i for i in tenant.api.list_all("/inbox/items") if i["id"] == item_id]
    assert item["preview"] == "y" * 279 + "…"
    exact = seed_item(server, tenant, "z" * 280, kind="dm")
    assert tenant.api.ok(tenant.api.get(f"/inbox/items/{exact}"))["preview"] == "z" * 280
