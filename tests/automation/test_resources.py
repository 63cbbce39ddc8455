"""Content automations, destination presets and scheduled events over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from tests.automation.helpers import (
    check_idempotency,
    detail_fields,
    make_automation,
    make_post,
    make_preset,
    make_queue,
    soon,
)
from tests.support import LiveServer, Tenant, assert_error, iter_pages

# -- content automations -------------------------------------------------------------------------


def test_automation_create_computes_next_run_and_plans_an_event(tenant: Tenant) -> None:
    api = tenant.api
    made = make_automation(api, tenant)
    assert made["target"]["platforms"] == [tenant.accounts["x"], tenant.accounts["linkedin"]]
    next_run = datetime.fromisoformat(made["next_run_at"].replace("Z", "+00:00"))
    assert next_run > datetime.now(UTC)
    local = next_run.astimezone(ZoneInfo("Europe/Paris"))
    assert (local.hour, local.minute) == (9, 30)
    assert local.isoweekday() <= 5
    assert api.ok(api.get(f"/content-automations/{made['id']}")) == made
    events = api.list_all("/scheduled-events", kind="automation_run")
    assert [(e["ref_id"], e["starts_at"]) for e in events] == [(made["id"], made["next_run_at"])]
    # Disabling clears the next run and its event.
    off = api.ok(api.patch(f"/content-automations/{made['id']}", json={"enabled": False}))
    assert off["next_run_at"] is None
    assert api.list_all("/scheduled-events", kind="automation_run") == []
    assert [a["id"] for a in api.list_all("/content-automations", enabled="false")] == [made["id"]]


def test_automation_sources_and_validation(tenant: Tenant) -> None:
    api = tenant.api
    evergreen = make_automation(
        api, tenant, source={"type": "evergreen", "posts": [{"text": "a"}, {"text": "b"}]}
    )
    assert evergreen["source"]["posts"][1]["text"] == "b"
    template = make_automation(
        api,
        tenant,
        source={
            "type": "template",
            "template": "{title}: {url}",
            "rows": [{"title": "t", "url": "u"}],
        },
    )
    assert template["source"]["rows"] == [{"title": "t", "url": "u"}]
    base = {
        "name": "n",
        "source": {"type": "feed", "url": "https://example.com/f"},
        "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
        "target": {"platforms": ["x"]},
    }
    cases: list[tuple[dict[str, Any], tuple[str, str]]] = [
        ({"source": {"type": "feed", "url": "ftp://example.com/f"}}, ("source.url", "invalid_url")),
        ({"source": {"type": "evergreen", "posts": []}}, ("source.evergreen.posts", "min_items")),
        (
            {"source": {"type": "template", "template": "{a} {b}", "rows": [{"a": 1}, {"b": 2}]}},
            ("source.rows.0.b", "missing_placeholder"),
        ),
        (
            {"schedule": {"cron": "61 * * * *", "timezone": "UTC"}},
            ("schedule.cron", "invalid_cron"),
        ),
        (
            {"schedule": {"cron": "0 0 30 2 *", "timezone": "UTC"}},
            ("schedule.cron", "never_matches"),
        ),
        (
            {"schedule": {"cron": "0 9 * * *", "timezone": "Mars/Base"}},
            ("schedule.timezone", "unknown_timezone"),
        ),
        ({"target": {"platforms": []}}, ("target.platforms", "min_items")),
        ({"target": {"platforms": ["acc_nope"]}}, ("target.platforms.0", "unknown_account")),
        ({"name": ""}, ("name", "min_length")),
        ({"extra": 1}, ("extra", "unknown_field")),
    ]
    for change, expected in cases:
        fields = detail_fields(api.post("/content-automations", json={**base, **change}))
        assert expected in fields, (change, fields)
    both = {**base, "target": {"platforms": ["x"], "queue_id": "q_x"}}
    assert detail_fields(api.post("/content-automations", json=both))[0][0] == "target"
    template_rows = {
        **base,
        "source": {"type": "template", "template": "{a}", "rows": [{"a": 1}, {}, {"a": 2}, {}]},
    }
    fields = detail_fields(api.post("/content-automations", json=template_rows))
    assert fields == [
        ("source.rows.1.a", "missing_placeholder"),
        ("source.rows.3.a", "missing_placeholder"),
    ]
    listed = [a["id"] for a in api.list_all("/content-automations")]
    assert listed == [template["id"], evergreen["id"]]


def test_automation_targets_a_queue_and_patch_replaces_schedule(tenant: Tenant) -> None:
    api = tenant.api
    queue = make_queue(api)
    made = make_automation(api, tenant, target={"queue_id": queue["id"]})
    assert made["target"] == {"queue_id": queue["id"], "platforms": None}
    changed = api.ok(
        api.patch(
            f"/content-automations/{made['id']}",
            json={"schedule": {"cron": "0 0 1 1 *", "timezone": "America/New_York"}},
        )
    )
    assert changed["next_run_at"].endswith("T05:00:00.000Z")  # midnight EST on 1 January
    # A queue that an automation targets cannot be deleted.
    assert_error(api.delete(f"/queues/{queue['id']}"), 409, "INVALID_STATE")
    fields = detail_fields(api.patch(f"/content-automations/{made['id']}", json={"name": None}))
    assert fields == [("name", "null")]


def test_automation_writes_are_idempotent(tenant: Tenant) -> None:
    api = tenant.api
    body = {
        "name": "idem",
        "source": {"type": "feed", "url": "https://example.com/f"},
        "schedule": {"cron": "0 9 * * *", "timezone": "UTC"},
        "target": {"platforms": ["x"]},
    }
    made = check_idempotency(
        api, "POST", "/content-automations", body, status=201, other_body={**body, "name": "other"}
    )
    assert len(api.list_all("/content-automations")) == 1
    path = f"/content-automations/{made['id']}"
    check_idempotency(api, "PATCH", path, {"name": "b"}, status=200, other_body={"name": "c"})
    assert api.ok(api.get(path))["name"] == "b"
    deleted = check_idempotency(api, "DELETE", path, None, status=200, other_body={"x": 1})
    assert deleted == {"id": made["id"], "deleted": True}
    assert_error(api.get(path), 404, "NOT_FOUND")
    assert_error(api.delete(path), 404, "NOT_FOUND")
    assert api.list_all("/content-automations") == []


def test_automation_list_pages(tenant: Tenant) -> None:
    made = [make_automation(tenant.api, tenant)["id"] for _ in range(3)]
    pages = list(iter_pages(tenant.api, "/content-automations", 2))
    assert [i["id"] for p in pages for i in p["items"]] == made[::-1]
    assert [p["pagination"]["has_more"] for p in pages] == [True, False]


# -- destination presets -------------------------------------------------------------------------


def test_preset_crud_and_unique_names(tenant: Tenant) -> None:
    api = tenant.api
    preset = make_preset(api, tenant, "Launch")
    assert preset["destinations"] == [
        {"account_id": tenant.accounts["x"], "platform": "x", "options": {"reply_settings": "all"}}
    ]
    assert_error(
        api.post(
            "/destination-presets",
            json={"name": "Launch", "destinations": [{"account_id": tenant.accounts["x"]}]},
        ),
        409,
        "INVALID_STATE",
    )
    other = make_preset(api, tenant, "Other")
    assert_error(
        api.patch(f"/destination-presets/{other['id']}", json={"name": "Launch"}),
        409,
        "INVALID_STATE",
    )
    changed = api.ok(
        api.patch(
            f"/destination-presets/{preset['id']}",
            json={"destinations": [{"account_id": tenant.accounts["bluesky"]}]},
        )
    )
    assert changed["destinations"][0]["platform"] == "bluesky"
    assert changed["name"] == "Launch"
    api.ok(api.delete(f"/destination-presets/{preset['id']}"))
    make_preset(api, tenant, "Launch")  # the name is free again once deleted
    assert sorted(p["name"] for p in api.list_all("/destination-presets")) == ["Launch", "Other"]


def test_preset_validation(tenant: Tenant, other_tenant: Tenant) -> None:
    api = tenant.api
    cases = [
        ({"name": "a", "destinations": []}, ("destinations", "min_items")),
        (
            {"name": "a", "destinations": [{"account_id": other_tenant.accounts["x"]}]},
            ("destinations.0.account_id", "unknown_account"),
        ),
        (
            {
                "name": "a",
                "destinations": [
                    {"account_id": tenant.accounts["x"]},
                    {"account_id": tenant.accounts["x"]},
                ],
            },
            ("destinations.1.account_id", "duplicate"),
        ),
        ({"destinations": [{"account_id": tenant.accounts["x"]}]}, ("name", "required")),
        (
            {"name": "a", "destinations": [{"account_id": tenant.accounts["x"], "options": 3}]},
            ("destinations.0.options", "dict_type"),
        ),
    ]
    for body, expected in cases:
        assert expected in detail_fields(api.post("/destination-presets", json=body)), body


def test_preset_writes_are_idempotent(tenant: Tenant) -> None:
    api = tenant.api
    body = {"name": "p", "destinations": [{"account_id": tenant.accounts["x"]}]}
    made = check_idempotency(
        api, "POST", "/destination-presets", body, status=201, other_body={**body, "name": "q"}
    )
    assert len(api.list_all("/destination-presets")) == 1
    path = f"/destination-presets/{made['id']}"
    check_idempotency(api, "PATCH", path, {"name": "r"}, status=200, other_body={"name": "s"})
    check_idempotency(api, "DELETE", path, None, status=200, other_body={"x": 1})
    assert api.list_all("/destination-presets") == []


# -- scheduled events ----------------------------------------------------------------------------


def test_calendar_combines_stored_and_derived_events(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    now = datetime.now(UTC)
    reminder = api.ok(
        api.post("/scheduled-events", json={"title": "Check stats", "starts_at": soon(hours=1)}),
        201,
    )
    assert reminder["kind"] == "reminder"
    assert reminder["stored"] is True
    post_id = make_post(server, tenant, "scheduled", now + timedelta(hours=2))
    pending_id = make_post(server, tenant, "pending_approval", now + timedelta(hours=3))
    make_post(server, tenant, "draft", now + timedelta(hours=2))  # not on the calendar
    make_post(server, tenant, "scheduled", now + timedelta(days=40))  # outside the window
    queue = make_queue(api)
    item = api.ok(api.post(f"/queues/{queue['id']}/items", json={"text": "queued"}), 201)
    automation = make_automation(api, tenant)
    events = api.list_all("/scheduled-events")
    kinds = {(e["kind"], e["ref_id"]) for e in events}
    assert kinds == {
        ("reminder", None),
        ("publication", post_id),
        ("publication", pending_id),
        ("queue_slot", item["id"]),
        ("automation_run", automation["id"]),
    }
    assert len(events) == 5  # the queue's post is shown once, as its slot
    keys = [(e["starts_at"], e["id"]) for e in events]
    assert keys == sorted(keys)
    paged = [i for p in iter_pages(api, "/scheduled-events", 2) for i in p["items"]]
    assert paged == events
    only = api.list_all("/scheduled-events", kind="publication")
    assert {e["id"] for e in only} == {post_id, pending_id}
    assert all(e["ref_type"] == "post" and e["stored"] is False for e in only)
    far = api.list_all("/scheduled-events", **{"from": soon(days=35), "to": soon(days=45)})
    assert [e["kind"] for e in far] == ["publication"]


def test_cancel_events(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    reminder = api.ok(
        api.post("/scheduled-events", json={"title": "r", "starts_at": soon(hours=1)}), 201
    )
    path = f"/scheduled-events/{reminder['id']}/cancel"
    canceled = check_idempotency(api, "POST", path, None, status=200, other_body={"x": 1})
    assert canceled["status"] == "canceled"
    assert_error(api.post(path), 409, "INVALID_STATE")
    assert api.list_all("/scheduled-events", kind="reminder") == []
    assert len(api.list_all("/scheduled-events", kind="reminder", include_canceled="true")) == 1
    post_id = make_post(server, tenant, "scheduled", datetime.now(UTC) + timedelta(hours=2))
    error = assert_error(api.post(f"/scheduled-events/{post_id}/cancel"), 409, "INVALID_STATE")
    assert "post" in error["message"]
    queue = make_queue(api)
    item = api.ok(api.post(f"/queues/{queue['id']}/items", json={"text": "x"}), 201)
    assert_error(api.post(f"/scheduled-events/{item['id']}/cancel"), 409, "INVALID_STATE")
    assert_error(api.post("/scheduled-events/evt_nope/cancel"), 404, "NOT_FOUND")


def test_event_validation_and_idempotency(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    cases = [
        ({"title": "t", "starts_at": soon(hours=-1)}, ("starts_at", "in_past")),
        ({"title": "t", "starts_at": "2030-01-01T09:00:00"}, ("starts_at", "offset_required")),
        (
            {"title": "t", "starts_at": soon(hours=1), "kind": "publication"},
            ("kind", "literal_error"),
        ),
        (
            {"title": "t", "starts_at": soon(hours=1), "ref_type": "post", "ref_id": "post_x"},
            ("ref_id", "unknown_ref"),
        ),
        ({"starts_at": soon(hours=1)}, ("title", "required")),
    ]
    for body, expected in cases:
        assert expected in detail_fields(api.post("/scheduled-events", json=body)), body
    post_id = make_post(server, tenant, "draft")
    body = {"title": "t", "starts_at": soon(days=2), "ref_type": "post", "ref_id": post_id}
    made = check_idempotency(
        api, "POST", "/scheduled-events", body, status=201, other_body={**body, "title": "u"}
    )
    assert made["ref_id"] == post_id
    assert len(api.list_all("/scheduled-events", kind="reminder")) == 1
    bad_range = api.get("/scheduled-events", params={"from": soon(), "to": soon(days=400)})
    assert ("to", "range_too_long") in detail_fields(bad_range)
    backwards = api.get("/scheduled-events", params={"from": soon(days=2), "to": soon(days=1)})
    assert ("to", "before_from") in detail_fields(backwards)
    naive = api.get("/scheduled-events", params={"from": "2030-01-01T00:00:00"})
    assert ("from", "offset_required") in detail_fields(naive)
