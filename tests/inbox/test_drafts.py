"""AI reply drafts: the offline drafter over real HTTP, and its parts on their own."""

from __future__ import annotations

import pytest

from domain.inbox.drafts import (
    DraftRequest,
    OfflineDrafter,
    PastExchange,
    best_match,
    detect_intent,
)
from tests.inbox.seed import seed_item
from tests.support import LiveServer, Tenant, assert_error

RESET_REPLY = "Go to Settings > Security and choose 'Reset password'; the link lasts an hour."


def test_drafter_proposes_a_past_reply_for_a_near_identical_question(
    server: LiveServer, tenant: Tenant
) -> None:
    answered = seed_item(server, tenant, "How do I reset my password?", author="bob")
    tenant.api.ok(
        tenant.api.post(f"/inbox/items/{answered}/respond", json={"text": RESET_REPLY}), 201
    )
    seed_item(server, tenant, "Where is your office in Berlin?", author="dan")
    asking = seed_item(server, tenant, "how can i reset my password??", author="carol")
    draft = tenant.api.ok(tenant.api.post(f"/inbox/items/{asking}/drafts"), 201)
    assert draft["id"].startswith("ind_")
    assert draft["item_id"] == asking
    assert draft["source"] == "past_reply"
    assert draft["text"] == RESET_REPLY
    assert 0.6 <= draft["confidence"] <= 1
    # Drafting never sends: the conversation has its one inbound message and is still open.
    item = tenant.api.ok(tenant.api.get(f"/inbox/items/{asking}"))
    assert item["status"] == "open"
    assert [m["direction"] for m in item["messages"]] == ["inbound"]
    assert [d["id"] for d in item["drafts"]] == [draft["id"]]
    # The draft can be the reply.
    data = tenant.api.ok(
        tenant.api.post(
            f"/inbox/items/{asking}/respond", json={"text": draft["text"], "draft_id": draft["id"]}
        ),
        201,
    )
    assert data["item"]["status"] == "replied"


def test_drafter_falls_back_to_an_intent_template(server: LiveServer, tenant: Tenant) -> None:
    answered = seed_item(server, tenant, "How do I reset my password?")
    tenant.api.ok(
        tenant.api.post(f"/inbox/items/{answered}/respond", json={"text": RESET_REPLY}), 201
    )
    praise = seed_item(server, tenant, "I love the new dashboard, great work!", author="@erin")
    draft = tenant.api.ok(tenant.api.post(f"/inbox/items/{praise}/drafts"), 201)
    assert draft["source"] == "template"
    assert "@erin" in draft["text"]
    assert "@@" not in draft["text"]
    assert 0 <= draft["confidence"] < 0.6
    complaint = seed_item(server, tenant, "My order is late and nobody answers", author="fay")
    draft = tenant.api.ok(tenant.api.post(f"/inbox/items/{complaint}/drafts"), 201)
    assert draft["source"] == "template"
    assert "sorry" in draft["text"]
    assert "@fay" in draft["text"]


def test_an_items_own_answered_message_is_not_its_own_draft(
    server: LiveServer, tenant: Tenant
) -> None:
    item_id = seed_item(server, tenant, "Is the API free to use?", author="gus")
    tenant.api.ok(tenant.api.post(f"/inbox/items/{item_id}/respond", json={"text": "It is."}), 201)
    draft = tenant.api.ok(tenant.api.post(f"/inbox/items/{item_id}/drafts"), 201)
    assert draft["source"] == "template"


def test_drafts_list_pages_newest_first(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant, "hello?")
    made = [
        tenant.api.ok(tenant.api.post(f"/inbox/items/{item_id}/drafts"), 201)["id"]
        for _ in range(3)
    ]
    first = tenant.api.ok(tenant.api.get(f"/inbox/items/{item_id}/drafts", params={"limit": 2}))
    assert [d["id"] for d in first["items"]] == [made[2], made[1]]
    assert first["pagination"]["has_more"] is True
    rest = tenant.api.ok(
        tenant.api.get(
            f"/inbox/items/{item_id}/drafts",
            params={"limit": 2, "cursor": first["pagination"]["next_cursor"]},
        )
    )
    assert [d["id"] for d in rest["items"]] == [made[0]]


def test_draft_replays_without_a_second_draft(server: LiveServer, tenant: Tenant) -> None:
    item_id = seed_item(server, tenant, "hello?")
    path = f"/inbox/items/{item_id}/drafts"
    first = tenant.api.post(path, idempotency_key="draft-1")
    again = tenant.api.post(path, idempotency_key="draft-1")
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert len(tenant.api.list_all(path)) == 1
    conflict = tenant.api.post(path, json={"hint": "x"}, idempotency_key="draft-1")
    assert_error(conflict, 409, "IDEMPOTENCY_CONFLICT")


def test_respond_refuses_another_items_draft(server: LiveServer, tenant: Tenant) -> None:
    one = seed_item(server, tenant, "a?")
    two = seed_item(server, tenant, "b?")
    draft = tenant.api.ok(tenant.api.post(f"/inbox/items/{one}/drafts"), 201)
    response = tenant.api.post(
        f"/inbox/items/{two}/respond", json={"text": "x", "draft_id": draft["id"]}
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "draft_id"


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("When does the sale start?", "question"),
        ("how do I export my data", "question"),
        ("This is broken, I want a refund", "complaint"),
        ("Why is my order so late?", "complaint"),
        ("Thank you, this is amazing", "praise"),
        ("Saw this on my way home", "other"),
    ],
)
def test_detect_intent(text: str, intent: str) -> None:
    assert detect_intent(text) == intent


def test_best_match_prefers_shared_rare_words() -> None:
    corpus = ["How do I reset my password?", "Do you ship to Canada?", "Love the colours"]
    found = best_match("password reset please", corpus)
    assert found is not None
    assert found[0] == 0
    assert best_match("", corpus) is None
    assert best_match("hello", []) is None


def test_offline_drafter_thresholds() -> None:
    history = [PastExchange("Do you ship to Canada?", "Yes, in 5 days.")]
    drafter = OfflineDrafter()
    close = drafter.draft(DraftRequest("do you ship to canada", "h", None, "x", "comment", history))
    assert (close.source, close.text) == ("past_reply", "Yes, in 5 days.")
    far = drafter.draft(DraftRequest("Nice photo", "h", None, "x", "comment", history))
    assert far.source == "template"
    assert far.text.startswith("Thank you so much, @h")
