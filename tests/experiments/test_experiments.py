"""Posting-time experiments over real HTTP (issue 52, point 2): creation, the seeded draw of
each new post's arm and slot, what an experiment's post may not change, and the stop rule."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.automation.helpers import make_queue
from tests.support import Api, LiveServer, Tenant, assert_error

CONTROL = {"name": "morning", "control": True, "slots": [{"time": "09:00"}, {"time": "10:00"}]}
EVENING = {"name": "evening", "slots": [{"time": "18:00"}, {"weekday": 5, "time": "20:30"}]}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def make_experiment(api: Api, tenant: Tenant, **fields: Any) -> dict[str, Any]:
    body = {
        "name": "When do our followers read us?",
        "account_ids": [tenant.accounts["x"], tenant.accounts["bluesky"]],
        "timezone": "Europe/Paris",
        "arms": [CONTROL, EVENING],
        "metric": "engagements_24h",
        "target_posts": 40,
        "seed": 1234,
        **fields,
    }
    return api.ok(api.post("/experiments", json=body), 201)  # type: ignore[no-any-return]


def _on_x(tenant: Tenant, name: str, metric: str, **fields: Any) -> dict[str, Any]:
    """The body of an experiment ``name`` of the morning and evening arms on the tenant's X
    account, measured by ``metric``, with ``fields``."""
    return {
        "name": name,
        "account_ids": [tenant.accounts["x"]],
        "arms": [CONTROL, EVENING],
        "metric": metric,
        **fields,
    }


def post_in(api: Api, experiment_id: str, platforms: list[str], text: str) -> dict[str, Any]:
    body = {"text": text, "platforms": platforms, "experiment_id": experiment_id}
    return api.ok(api.post("/posts", json=body), 201)  # type: ignore[no-any-return]


def test_each_new_post_is_drawn_an_arm_by_the_seed_and_scheduled_at_its_free_slot(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    experiment = make_experiment(api, tenant)
    assert experiment["status"] == "running"
    assert experiment["posts_assigned"] == 0
    before = datetime.now(UTC)
    posts = [post_in(api, experiment["id"], ["x"], f"post {i}") for i in range(8)]
    paris = ZoneInfo("Europe/Paris")
    slots: dict[str, set[tuple[int | None, int, int]]] = {
        "morning": {(None, 9, 0), (None, 10, 0)},
        "evening": {(None, 18, 0), (5, 20, 30)},
    }
    # The n-th post's arm is random.Random(f"{seed}:{n}") choosing among the arms as given.
    names = ["morning", "evening"]
    expected = [random.Random(f"1234:{n}").choice(names) for n in range(8)]
    assert [p["experiment"]["arm"] for p in posts] == expected
    seen: set[str] = set()
    for post in posts:
        assigned = post["experiment"]
        assert assigned["experiment_id"] == experiment["id"]
        assert post["status"] == "scheduled"
        assert post["scheduled_at"] == assigned["slot_at"]
        local = _at(assigned["slot_at"]).astimezone(paris)
        wall = {(None, local.hour, local.minute), (local.weekday(), local.hour, local.minute)}
        assert wall & slots[assigned["arm"]], (assigned, local)
        assert _at(assigned["slot_at"]) > before
        assert assigned["slot_at"] not in seen  # one post per slot
        seen.add(assigned["slot_at"])
    # Each arm's posts take its slots in order: none skipped before a later one.
    for arm in names:
        times = [_at(p["scheduled_at"]) for p in posts if p["experiment"]["arm"] == arm]
        assert times == sorted(times)
    # Recorded on the post: every read of it says so.
    read = api.ok(api.get(f"/posts/{posts[0]['id']}"))
    assert read["experiment"] == posts[0]["experiment"]
    listed = {p["id"]: p for p in api.list_all("/posts")}
    assert listed[posts[3]["id"]]["experiment"] == posts[3]["experiment"]
    detail = api.ok(api.get(f"/experiments/{experiment['id']}"))
    assert detail["posts_assigned"] == 8
    arms = {a["name"]: a for a in detail["results"]["arms"]}
    assert arms["morning"]["posts_assigned"] == expected.count("morning")
    assert arms["evening"]["posts_assigned"] == expected.count("evening")
    # Nothing published yet: nothing measured, no lift, no spread to size the plan by.
    assert all(a["posts_measured"] == 0 and a["lift"] is None for a in arms.values())
    assert detail["results"]["posts_needed"] == {"per_arm": None, "more": None}
    assert detail["results"]["enough_data"] is False
    assert detail["results"]["conclusive"] is False


def test_an_experiments_post_keeps_its_slot_and_accounts(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    experiment = make_experiment(api, tenant)
    post = post_in(api, experiment["id"], ["x"], "hello")
    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    for change in ({"scheduled_at": later}, {"platforms": ["bluesky"]}):
        error = assert_error(
            api.patch(f"/posts/{post['id']}", json=change), 400, "VALIDATION_ERROR"
        )
        assert error["details"][0]["issue"] == "set_by_experiment"
    # Its text may change (and it goes back for review where reviews are required).
    edited = api.ok(api.patch(f"/posts/{post['id']}", json={"text": "hello again"}))
    assert edited["experiment"] == post["experiment"]
    assert edited["scheduled_at"] == post["scheduled_at"]


def test_what_an_experiment_refuses(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    experiment = make_experiment(api, tenant)
    body = {"text": "t", "platforms": ["x"], "experiment_id": experiment["id"]}
    soon = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    error = assert_error(
        api.post("/posts", json={**body, "scheduled_at": soon}), 400, "VALIDATION_ERROR"
    )
    assert [d["field"] for d in error["details"]] == ["scheduled_at"]
    error = assert_error(api.post("/posts", json={**body, "draft": True}), 400, "VALIDATION_ERROR")
    assert error["details"][0]["issue"] == "set_by_experiment"
    error = assert_error(
        api.post("/posts", json={**body, "platforms": ["linkedin"]}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["issue"] == "accounts_outside"
    error = assert_error(
        api.post("/posts", json={**body, "experiment_id": "exp_nope"}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["issue"] == "unknown_experiment"
    # Nothing was written by any of them.
    assert api.ok(api.get(f"/experiments/{experiment['id']}"))["posts_assigned"] == 0
    assert api.list_all("/posts") == []


@pytest.mark.parametrize(
    ("change", "field", "issue"),
    [
        ({"arms": [EVENING, {**EVENING, "name": "late"}]}, "arms", "one_control"),
        (
            {"arms": [CONTROL, {**EVENING, "slots": [{"time": "09:00"}]}]},
            "arms.1.slots",
            "shared_slot",
        ),
        ({"arms": [CONTROL, {**EVENING, "name": "morning"}]}, "arms.1.name", "duplicate"),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown_timezone"),
        ({"account_ids": ["acc_nope"]}, "account_ids.0", "unknown_account"),
        ({"duration_days": 14}, "ends_at", "one_plan"),
        ({"target_posts": None}, "ends_at", "one_plan"),
        (
            {
                "target_posts": 5,
                "arms": [CONTROL, EVENING, {**EVENING, "name": "x", "slots": [{"time": "12:00"}]}],
            },
            "target_posts",
            "too_few",
        ),
        ({"target_posts": None, "ends_at": "2020-01-01T00:00:00Z"}, "ends_at", "in_past"),
        ({"queue_id": "q_nope"}, "queue_id", "unknown_queue"),
    ],
)
def test_an_invalid_experiment_is_refused_naming_its_field(
    server: LiveServer, tenant: Tenant, change: dict[str, Any], field: str, issue: str
) -> None:
    api = tenant.api
    body = _on_x(tenant, "e", "engagement_rate", **{"target_posts": 40, **change})
    error = assert_error(api.post("/experiments", json=body), 400, "VALIDATION_ERROR")
    assert (field, issue) in [(d["field"], d["issue"]) for d in error["details"]], error
    assert api.list_all("/experiments") == []


def test_stopping_early_is_refused_until_the_rule_allows_and_an_abandoned_one_assigns_nothing(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    experiment = make_experiment(api, tenant)
    post_in(api, experiment["id"], ["x"], "one")
    path = f"/experiments/{experiment['id']}/stop"
    error = assert_error(api.post(path, json={}), 409, "INVALID_STATE")
    assert "Haybittle-Peto" in error["message"]
    detail = api.ok(api.get(f"/experiments/{experiment['id']}"))
    assert detail["status"] == "running"
    assert detail["results"]["can_stop_early"] is False
    abandoned = api.ok(api.post(path, json={"abandon": True, "reason": "launch moved"}))
    assert (abandoned["status"], abandoned["stop_reason"]) == ("abandoned", "launch moved")
    assert abandoned["results"]["conclusive"] is False
    assert_error(api.post(path, json={"abandon": True}), 409, "INVALID_STATE")
    refused = api.post(
        "/posts", json={"text": "t", "platforms": ["x"], "experiment_id": experiment["id"]}
    )
    assert_error(refused, 409, "INVALID_STATE")


def test_a_plan_of_posts_completes_the_experiment_at_its_count(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    experiment = make_experiment(api, tenant, target_posts=4)
    for i in range(4):
        post_in(api, experiment["id"], ["bluesky"], f"p{i}")
    detail = api.ok(api.get(f"/experiments/{experiment['id']}"))
    assert (detail["status"], detail["posts_assigned"]) == ("completed", 4)
    refused = api.post(
        "/posts", json={"text": "t", "platforms": ["x"], "experiment_id": experiment["id"]}
    )
    assert_error(refused, 409, "INVALID_STATE")
    listed = api.list_all("/experiments")
    assert [(e["id"], e["status"]) for e in listed] == [(experiment["id"], "completed")]
    assert_error(api.post(f"/experiments/{experiment['id']}/stop", json={}), 409, "INVALID_STATE")


def test_an_experiment_of_another_workspace_is_not_found(
    server: LiveServer, tenant: Tenant, other_tenant: Tenant
) -> None:
    experiment = make_experiment(tenant.api, tenant)
    other = other_tenant.api
    assert_error(other.get(f"/experiments/{experiment['id']}"), 404, "NOT_FOUND")
    assert_error(other.post(f"/experiments/{experiment['id']}/stop", json={}), 404, "NOT_FOUND")
    body = {"text": "t", "platforms": ["x"], "experiment_id": experiment["id"]}
    error = assert_error(other.post("/posts", json=body), 400, "VALIDATION_ERROR")
    assert error["details"][0]["issue"] == "unknown_experiment"


def test_a_queue_the_experiment_names_schedules_its_new_items_at_their_arms_slots(
    server: LiveServer, tenant: Tenant
) -> None:
    api = tenant.api
    queue = make_queue(api, destinations=["x"])
    plain = api.ok(api.post(f"/queues/{queue['id']}/items", json={"text": "before"}), 201)
    experiment = make_experiment(api, tenant, queue_id=queue["id"])
    path = f"/queues/{queue['id']}/items"
    items = [api.ok(api.post(path, json={"text": f"q{i}"}), 201) for i in range(4)]
    drawn = [random.Random(f"1234:{n}").choice(["morning", "evening"]) for n in range(4)]
    for item, arm in zip(items, drawn, strict=True):
        post = api.ok(api.get(f"/posts/{item['post_id']}"))
        assert post["experiment"]["arm"] == arm
        assert item["status"] == "scheduled"
        assert item["slot_at"] == post["scheduled_at"] == post["experiment"]["slot_at"]
    # A re-flow of the queue (new slots) moves its own items, not the experiment's.
    moved = api.ok(api.put(f"{path[:-6]}/slots", json={"slots": [{"weekday": 2, "time": "07:15"}]}))
    assert moved["id"] == queue["id"]
    after = {i["id"]: i for i in api.list_all(path)}
    assert all(after[i["id"]]["slot_at"] == i["slot_at"] for i in items)
    assert after[plain["id"]]["slot_at"] != plain["slot_at"]
    assert api.ok(api.get(f"/experiments/{experiment['id']}"))["posts_assigned"] == 4
    # One experiment per queue; and the queue's accounts must be the experiment's.
    body = _on_x(tenant, "again", "engagements_48h", duration_days=7, queue_id=queue["id"])
    again = api.post("/experiments", json=body)
    assert assert_error(again, 400, "VALIDATION_ERROR")["details"][0]["issue"] == "queue_taken"
