"""Queues, their slots and their items over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.automation.helpers import (
    check_idempotency,
    detail_fields,
    make_post,
    make_queue,
    post_row,
)
from tests.support import Api, LiveServer, Tenant, assert_error


def slot_starts(api: Api, queue_id: str, count: int) -> list[str]:
    page = api.ok(api.get(f"/queues/{queue_id}/slots", params={"limit": count}))
    return [s["starts_at"] for s in page["items"]]


def items(api: Api, queue_id: str) -> list[dict[str, Any]]:
    return api.list_all(f"/queues/{queue_id}/items")


def test_three_items_take_consecutive_slots_reorder_and_remove(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    queue = make_queue(api)
    path = f"/queues/{queue['id']}/items"
    a, b, c = (api.ok(api.post(path, json={"text": t}), 201) for t in ("a", "b", "c"))
    s1, s2, s3, _s4 = slot_starts(api, queue["id"], 4)
    assert [(i["id"], i["slot_at"], i["status"]) for i in items(api, queue["id"])] == [
        (a["id"], s1, "scheduled"),
        (b["id"], s2, "scheduled"),
        (c["id"], s3, "scheduled"),
    ]
    # The post follows its slot and goes to the queue's destinations.
    post = post_row(server, a["post_id"])
    assert (post.status, post.source) == ("scheduled", "queue")
    assert post.scheduled_at is not None
    assert post.scheduled_at.replace(tzinfo=UTC) == datetime.fromisoformat(
        s1.replace("Z", "+00:00")
    )
    # The slot listing marks the taken ones.
    listing = api.ok(api.get(f"/queues/{queue['id']}/slots", params={"limit": 4}))["items"]
    assert [s["item_id"] for s in listing] == [a["id"], b["id"], c["id"], None]
    assert [s["taken"] for s in listing] == [True, True, True, False]
    assert listing[0]["time"] in {"09:00", "17:30"}
    # Reorder: b and a swap slots.
    reorder = {"item_ids": [b["id"], a["id"], c["id"]]}
    order = check_idempotency(
        api,
        "POST",
        f"{path}/reorder",
        reorder,
        status=200,
        other_body={"item_ids": [c["id"], a["id"], b["id"]]},
    )
    assert [(i["id"], i["slot_at"]) for i in order] == [(b["id"], s1), (a["id"], s2), (c["id"], s3)]
    assert [i["id"] for i in items(api, queue["id"])] == [b["id"], a["id"], c["id"]]
    moved = post_row(server, a["post_id"]).scheduled_at
    assert moved is not None
    assert moved.replace(tzinfo=UTC) == datetime.fromisoformat(s2.replace("Z", "+00:00"))
    # Remove the first: the others move up.
    removed = check_idempotency(
        api, "DELETE", f"{path}/{b['id']}", None, status=200, other_body={"x": 1}
    )
    assert removed["status"] == "removed"
    assert removed["slot_at"] is None
    assert post_row(server, b["post_id"]).status == "canceled"
    assert [(i["id"], i["slot_at"]) for i in items(api, queue["id"])] == [
        (a["id"], s1),
        (c["id"], s2),
    ]
    assert_error(api.delete(f"{path}/{b['id']}"), 409, "INVALID_STATE")
    assert [i["id"] for i in api.list_all(path, status="removed")] == [b["id"]]
    assert api.ok(api.get(f"/queues/{queue['id']}"))["active_items"] == 2


def test_add_item_idempotency_and_validation(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    queue = make_queue(api, destinations=["x"])
    path = f"/queues/{queue['id']}/items"
    made = check_idempotency(
        api, "POST", path, {"text": "hello", "tags": ["t"]}, status=201, other_body={"text": "bye"}
    )
    assert made["text"] == "hello"
    assert made["position"] == 1
    assert len(items(api, queue["id"])) == 1
    cases = [
        ({}, ("body", "value_error")),
        ({"text": "x", "post_id": "post_x"}, ("body", "value_error")),
        ({"text": "x" * 281}, ("text", "too_long")),
        ({"text": "x", "media_ids": ["med_nope"]}, ("media_ids.0", "unknown_media")),
        ({"post_id": "post_nope"}, ("post_id", "unknown_post")),
        ({"text": ""}, ("text", "min_length")),
    ]
    for body, expected in cases:
        assert expected in detail_fields(api.post(path, json=body)), body
    # Every platform's limit applies, the ones the queue code once left out included.
    for platform, limit in (("pinterest", 500), ("youtube", 5000)):
        other = make_queue(api, destinations=[platform])
        over = api.post(f"/queues/{other['id']}/items", json={"text": "x" * (limit + 1)})
        assert ("text", "too_long") in detail_fields(over), platform
    scheduled = make_post(server, tenant, "scheduled", datetime.now(UTC))
    assert_error(api.post(path, json={"post_id": scheduled}), 409, "INVALID_STATE")
    bad = api.post(f"{path}/reorder", json={"item_ids": ["qi_other"]})
    assert detail_fields(bad) == [("item_ids", "not_a_permutation")]
    dup = api.post(f"{path}/reorder", json={"item_ids": [made["id"], made["id"]]})
    assert detail_fields(dup) == [("item_ids", "not_a_permutation")]


def test_queue_a_draft_post(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    queue = make_queue(api)
    draft = make_post(server, tenant, "draft")
    item = api.ok(api.post(f"/queues/{queue['id']}/items", json={"post_id": draft}), 201)
    assert item["post_id"] == draft
    assert item["status"] == "scheduled"
    assert post_row(server, draft).status == "scheduled"
    again = api.post(f"/queues/{queue['id']}/items", json={"post_id": draft})
    assert_error(again, 409, "INVALID_STATE")


def test_queue_without_slots_keeps_items_queued_until_slots_arrive(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    queue = make_queue(api, slots=[], timezone="America/New_York")
    path = f"/queues/{queue['id']}/items"
    first = api.ok(api.post(path, json={"text": "one"}), 201)
    assert (first["status"], first["slot_at"]) == ("queued", None)
    assert post_row(server, first["post_id"]).status == "draft"
    assert api.ok(api.get(f"/queues/{queue['id']}/slots"))["items"] == []
    body = {"slots": [{"weekday": 2, "time": "08:15"}, {"weekday": 4, "time": "12:00"}]}
    changed = check_idempotency(
        api, "PUT", f"/queues/{queue['id']}/slots", body, status=200, other_body={"slots": []}
    )
    assert changed["slots"] == body["slots"]
    item = api.ok(api.get(f"{path}/{first['id']}"))
    assert item["status"] == "scheduled"
    assert item["slot_at"] == slot_starts(api, queue["id"], 1)[0]
    assert post_row(server, first["post_id"]).status == "scheduled"
    # Dropping every slot puts the item back to queued.
    api.ok(api.put(f"/queues/{queue['id']}/slots", json={"slots": []}))
    assert api.ok(api.get(f"{path}/{first['id']}"))["status"] == "queued"


def test_slot_listing_window_and_local_time(tenant: Tenant) -> None:
    api = tenant.api
    queue = make_queue(api, slots=[{"weekday": 0, "time": "09:00"}])
    window = {"from": "2026-03-20T00:00:00Z", "to": "2026-04-10T00:00:00Z"}
    found = api.ok(api.get(f"/queues/{queue['id']}/slots", params=window))["items"]
    assert [(s["starts_at"], s["local_time"]) for s in found] == [
        ("2026-03-23T08:00:00.000Z", "2026-03-23T09:00:00+01:00"),
        ("2026-03-30T07:00:00.000Z", "2026-03-30T09:00:00+02:00"),
        ("2026-04-06T07:00:00.000Z", "2026-04-06T09:00:00+02:00"),
    ]
    page = api.ok(api.get(f"/queues/{queue['id']}/slots", params={**window, "limit": 2}))
    rest = api.ok(
        api.get(
            f"/queues/{queue['id']}/slots",
            params={**window, "limit": 2, "cursor": page["pagination"]["next_cursor"]},
        )
    )
    assert [s["starts_at"] for s in page["items"] + rest["items"]] == [
        s["starts_at"] for s in found
    ]
    too_long = {"from": "2026-01-01T00:00:00Z", "to": "2027-06-01T00:00:00Z"}
    assert ("to", "range_too_long") in detail_fields(
        api.get(f"/queues/{queue['id']}/slots", params=too_long)
    )


def test_queue_crud_validation_and_idempotency(tenant: Tenant) -> None:
    api = tenant.api
    body = {"name": "Q", "timezone": "UTC", "destinations": ["x"]}
    made = check_idempotency(
        api, "POST", "/queues", body, status=201, other_body={**body, "name": "R"}
    )
    assert len(api.list_all("/queues")) == 1
    assert made["destinations"] == [{"account_id": tenant.accounts["x"], "platform": "x"}]
    path = f"/queues/{made['id']}"
    patched = check_idempotency(
        api, "PATCH", path, {"timezone": "Asia/Tokyo"}, status=200, other_body={"name": "Z"}
    )
    assert patched["timezone"] == "Asia/Tokyo"
    cases = [
        ({**body, "timezone": "Nowhere/City"}, ("timezone", "unknown_timezone")),
        ({**body, "destinations": []}, ("destinations", "min_items")),
        ({**body, "destinations": ["x", "x"]}, ("destinations.1", "duplicate")),
        ({**body, "slots": [{"weekday": 7, "time": "09:00"}]}, ("slots.0.weekday", "max_value")),
        (
            {**body, "slots": [{"weekday": 1, "time": "9:00"}]},
            ("slots.0.time", "string_pattern_mismatch"),
        ),
        (
            {**body, "slots": [{"weekday": 1, "time": "09:00"}, {"weekday": 1, "time": "09:00"}]},
            ("slots.1", "duplicate"),
        ),
    ]
    for case, expected in cases:
        assert expected in detail_fields(api.post("/queues", json=case)), case
    item = api.ok(api.post(f"{path}/items", json={"text": "x"}), 201)
    check_idempotency(api, "DELETE", path, None, status=200, other_body={"x": 1})
    assert_error(api.get(path), 404, "NOT_FOUND")
    assert api.list_all("/queues") == []
    assert api.list_all("/scheduled-events", kind="queue_slot") == []
    assert item["id"]
