"""Posts over real HTTP: create, validate, list, page, edit, cancel, idempotency."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx

from tests.posts.helpers import MP4, PNG, create_post, future, post_body, upload_id
from tests.support import Api, LiveServer, Tenant, assert_error, iter_pages, new_tenant


def test_create_returns_the_whole_post(tenant: Tenant) -> None:
    api = tenant.api
    body = post_body(
        platforms=[{"account_id": tenant.accounts["x"]}, "linkedin"],
        scheduled_at=future(),
        tags=["launch"],
        platform_options={"x": {"reply_settings": "following"}},
    )
    post = api.ok(api.post("/posts", json=body), 201)
    assert post["post_id"] == post["id"]
    assert post["id"].startswith("post_")
    assert post["status"] == "scheduled"
    assert post["scheduled_at"].endswith("Z")
    assert [d["account_id"] for d in post["destinations"]] == [
        tenant.accounts["x"],
        tenant.accounts["linkedin"],
    ]
    assert all(d["status"] == "pending" for d in post["destinations"])
    assert post["tags"] == ["launch"]
    assert post["platform_options"] == {"x": {"reply_settings": "following"}}
    assert post["approval"] is None
    assert api.ok(api.get(f"/posts/{post['id']}")) == post


def test_without_schedule_publishes_now_and_draft_stays_draft(tenant: Tenant) -> None:
    now = create_post(tenant.api)
    assert now["status"] == "scheduled"
    assert now["scheduled_at"] is not None
    draft = create_post(tenant.api, draft=True)
    assert draft["status"] == "draft"
    assert draft["scheduled_at"] is None


def _refused(api: Api, **fields: Any) -> list[dict[str, Any]]:
    """The details of the 400 VALIDATION_ERROR refusing a post of ``fields``."""
    error = assert_error(api.post("/posts", json=post_body(**fields)), 400, "VALIDATION_ERROR")
    details: list[dict[str, Any]] = error["details"]
    return details


def test_empty_platforms_is_the_specs_validation_error(tenant: Tenant) -> None:
    detail = _refused(tenant.api, platforms=[])[0]
    assert detail["field"] == "platforms"
    assert detail["issue"] == "min_items"


def test_text_limits_are_per_destination(tenant: Tenant) -> None:
    api = tenant.api
    details = _refused(api, text="a" * 281, platforms=["linkedin", "x"])
    assert [(d["field"], d["issue"]) for d in details] == [("platforms.1", "max_length")]
    assert "X" in details[0]["message"]
    create_post(api, text="a" * 3000, platforms=["linkedin"])
    details = _refused(api, text="é" * 3001, platforms=["linkedin", "bluesky"])
    assert {d["field"] for d in details} == {"platforms.0", "platforms.1"}
    # Code points, not bytes: 280 emoji fit X.
    create_post(api, text="🚀" * 280, platforms=["x"])


def test_destination_errors(tenant: Tenant, other_tenant: Tenant) -> None:
    api = tenant.api
    cases: list[tuple[list[Any], str]] = [
        (["linkedin", tenant.accounts["linkedin"]], "duplicate"),
        (["myspace"], "unknown_platform"),
        ([other_tenant.accounts["x"]], "unknown_account"),
        ([{"account_id": "acc_nope"}], "unknown_account"),
    ]
    for platforms, issue in cases:
        details = _refused(api, platforms=platforms)
        assert issue in [d["issue"] for d in details], details


def test_media_rules(tenant: Tenant, other_tenant: Tenant) -> None:
    api = tenant.api
    images = [upload_id(api) for _ in range(5)]
    video = upload_id(api, MP4, name="clip.mp4", content_type="video/mp4")
    bad: list[tuple[list[str], list[str], str]] = [
        (["x"], images, "media_count"),
        (["x"], [images[0], video], "media_count"),
        (["youtube"], images[:1], "media_count"),
        (["tiktok"], [], "media_count"),
        (["pinterest"], [video], "media_kind"),
        (["instagram"], [], "media_count"),
    ]
    for platforms, media, issue in bad:
        details = _refused(api, platforms=platforms, media_ids=media)
        assert [(d["field"], d["issue"]) for d in details] == [("platforms.0", issue)]
    create_post(api, platforms=["x"], media_ids=images[:4])
    create_post(api, platforms=["youtube", "tiktok", "instagram"], media_ids=[video])
    foreign = upload_id(other_tenant.api, PNG)
    assert _refused(api, media_ids=[images[0], foreign])[0]["field"] == "media_ids.1"


def test_timestamps_need_an_offset_and_the_future(tenant: Tenant) -> None:
    api = tenant.api
    naive = _refused(api, scheduled_at="2030-01-01T09:00:00")[0]
    assert naive["field"] == "scheduled_at"
    assert naive["issue"] == "offset_required"
    past = _refused(api, scheduled_at="2020-01-01T09:00:00Z")[0]
    assert past["field"] == "scheduled_at"
    assert past["issue"] == "in_past"
    post = create_post(api, scheduled_at="2030-01-01T10:00:00+01:00")
    assert post["scheduled_at"] == "2030-01-01T09:00:00.000Z"


def test_unknown_field_is_refused(tenant: Tenant) -> None:
    detail = _refused(tenant.api, colour="red")[0]
    assert detail == {"field": "colour", "issue": "unknown_field", "message": detail["message"]}


def test_auth_scope_and_workspace(server: LiveServer, tenant: Tenant, other_tenant: Tenant) -> None:
    anonymous = Api(server.base_url, None)
    post = create_post(tenant.api)
    for response in (
        anonymous.get("/posts"),
        anonymous.post("/posts", json=post_body()),
        anonymous.get(f"/posts/{post['id']}"),
        anonymous.patch(f"/posts/{post['id']}", json={"text": "x"}),
        anonymous.post(f"/posts/{post['id']}/cancel"),
    ):
        assert_error(response, 401, "AUTH_REQUIRED")
    reader = tenant.key_with(server, scopes=["posts:read"])
    assert_error(reader.post("/posts", json=post_body()), 403, "SCOPE_FORBIDDEN")
    assert_error(reader.patch(f"/posts/{post['id']}", json={"text": "x"}), 403, "SCOPE_FORBIDDEN")
    assert_error(reader.post(f"/posts/{post['id']}/cancel"), 403, "SCOPE_FORBIDDEN")
    writer = tenant.key_with(server, scopes=["posts:write"])
    assert_error(writer.get("/posts"), 403, "SCOPE_FORBIDDEN")
    assert_error(writer.get(f"/posts/{post['id']}"), 403, "SCOPE_FORBIDDEN")
    other = other_tenant.api
    assert_error(other.get(f"/posts/{post['id']}"), 404, "NOT_FOUND")
    assert_error(other.patch(f"/posts/{post['id']}", json={"text": "x"}), 404, "NOT_FOUND")
    assert_error(other.post(f"/posts/{post['id']}/cancel"), 404, "NOT_FOUND")
    assert other.list_all("/posts") == []


def test_idempotent_create(tenant: Tenant) -> None:
    api = tenant.api
    key = str(uuid.uuid4())
    first = api.post("/posts", json=post_body(), idempotency_key=key)
    again = api.post("/posts", json=post_body(), idempotency_key=key)
    assert first.status_code == again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert len(api.list_all("/posts")) == 1
    assert_error(
        api.post("/posts", json=post_body(text="other"), idempotency_key=key),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    assert_error(api.http.post("/posts", json=post_body()), 400, "IDEMPOTENCY_KEY_REQUIRED")
    # A refused request is not stored: fix it and retry with the same key.
    fixed = str(uuid.uuid4())
    assert_error(
        api.post("/posts", json=post_body(platforms=[]), idempotency_key=fixed),
        400,
        "VALIDATION_ERROR",
    )
    api.ok(api.post("/posts", json=post_body(), idempotency_key=fixed), 201)


def test_idempotent_patch_and_cancel(tenant: Tenant) -> None:
    api = tenant.api
    post = create_post(api, scheduled_at=future())
    key = str(uuid.uuid4())
    path = f"/posts/{post['id']}"
    first = api.patch(path, json={"text": "edited"}, idempotency_key=key)
    again = api.patch(path, json={"text": "edited"}, idempotency_key=key)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert_error(
        api.patch(path, json={"text": "other"}, idempotency_key=key), 409, "IDEMPOTENCY_CONFLICT"
    )
    assert_error(api.http.patch(path, json={"text": "x"}), 400, "IDEMPOTENCY_KEY_REQUIRED")
    cancel_key = str(uuid.uuid4())
    first = api.post(f"{path}/cancel", idempotency_key=cancel_key)
    again = api.post(f"{path}/cancel", idempotency_key=cancel_key)
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert_error(
        api.post(f"{path}/cancel", json={"x": 1}, idempotency_key=cancel_key),
        409,
        "IDEMPOTENCY_CONFLICT",
    )
    assert_error(api.http.post(f"{path}/cancel"), 400, "IDEMPOTENCY_KEY_REQUIRED")


def test_concurrent_identical_creates_make_one_post(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    key = str(uuid.uuid4())
    barrier = threading.Barrier(2)
    results: list[httpx.Response] = []

    def fire() -> None:
        client = Api(server.base_url, tenant.key)
        barrier.wait()
        results.append(client.post("/posts", json=post_body(), idempotency_key=key))
        client.close()

    threads = [threading.Thread(target=fire) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for response in results:
        if response.status_code == 409:
            assert response.json()["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS"
        else:
            assert response.status_code == 201, response.text
    assert any(r.status_code == 201 for r in results)
    assert len(api.list_all("/posts")) == 1


def _burst(
    server: LiveServer, tenant: Tenant, requests: list[tuple[str, dict[str, Any]]]
) -> list[httpx.Response]:
    """Send (key, body) POST /posts all at once from threads of their own, in order."""
    barrier = threading.Barrier(len(requests))
    results: list[httpx.Response | None] = [None] * len(requests)

    def fire(index: int, key: str, body: dict[str, Any]) -> None:
        client = Api(server.base_url, tenant.key)
        barrier.wait()
        results[index] = client.post("/posts", json=body, idempotency_key=key)
        client.close()

    threads = [
        threading.Thread(target=fire, args=(i, key, body)) for i, (key, body) in enumerate(requests)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


def test_a_burst_of_creates_gives_each_request_its_own_answer(
    server: LiveServer, tenant: Tenant
) -> None:
    """Concurrent creates share group commits; no request's outcome leaks into another's."""
    api = tenant.api
    seen_key = str(uuid.uuid4())
    original = api.post("/posts", json=post_body(text="first"), idempotency_key=seen_key)
    shared = str(uuid.uuid4())
    fresh = [(str(uuid.uuid4()), post_body(text=f"burst {i}")) for i in range(14)]
    invalid = [(str(uuid.uuid4()), post_body(platforms=[])) for _ in range(2)]
    twins = [(shared, post_body(text="twin")), (shared, post_body(text="twin"))]
    repeats = [(seen_key, post_body(text="first")), (seen_key, post_body(text="changed"))]
    results = _burst(server, tenant, [*fresh, *invalid, *twins, *repeats])
    made, refused, twin, (replay, conflict) = (
        results[:14],
        results[14:16],
        results[16:18],
        results[18:],
    )

    created = [api.ok(r, 201) for r in made]
    assert [p["text"] for p in created] == [body["text"] for _, body in fresh]
    assert len({p["id"] for p in created}) == 14
    for response in refused:
        assert_error(response, 400, "VALIDATION_ERROR")
    # Two requests with one fresh key: one post; the other request replays its response.
    assert [r.status_code for r in twin] == [201, 201]
    assert twin[0].json()["data"] == twin[1].json()["data"]
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in twin) == ["", "true"]
    assert replay.status_code == 201
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json() == original.json()
    assert_error(conflict, 409, "IDEMPOTENCY_CONFLICT")

    listed = {p["id"]: p for p in api.list_all("/posts")}
    assert len(listed) == 1 + 14 + 1
    for post in created:
        assert listed[post["id"]] == post
    # Each post's lifecycle events went to the outbox with it, in the same transaction.
    events = server.store.run(
        lambda cur: cur.execute(
            "SELECT event_type, count(*) FROM webhook_events WHERE workspace_id = ?"
            " GROUP BY event_type ORDER BY 1",
            [tenant.workspace_id],
        ).fetchall()
    )
    assert events == [("post.created", 16), ("post.scheduled", 16)]
    # A refused request's key is free: fixed, it goes through.
    api.ok(api.post("/posts", json=post_body(), idempotency_key=invalid[0][0]), 201)


def test_a_burst_into_an_approval_workspace_submits_each_post(server: LiveServer) -> None:
    tenant = new_tenant(server, approval_required=True)
    results = _burst(
        server, tenant, [(str(uuid.uuid4()), post_body(text=f"review {i}")) for i in range(6)]
    )
    posts = [tenant.api.ok(r, 201) for r in results]
    assert {p["status"] for p in posts} == {"pending_approval"}
    assert len({p["approval"]["item_id"] for p in posts}) == 6
    assert len({p["approval"]["batch_id"] for p in posts}) == 1
    (batch,) = tenant.api.list_all("/approvals")
    assert sorted(i["post"]["post_id"] for i in batch["items"]) == sorted(p["id"] for p in posts)
    tenant.api.close()


def test_a_retry_replays_even_when_the_request_would_no_longer_validate(tenant: Tenant) -> None:
    api = tenant.api
    preset = api.ok(
        api.post(
            "/destination-presets",
            json={"name": "Launch", "destinations": [{"account_id": tenant.accounts["x"]}]},
        ),
        201,
    )
    body = post_body(platforms=[{"preset_id": preset["id"]}])
    key = str(uuid.uuid4())
    first = api.post("/posts", json=body, idempotency_key=key)
    assert first.status_code == 201, first.text
    api.ok(api.delete(f"/destination-presets/{preset['id']}"), 200)
    # the same body under a new key no longer validates: the preset is gone
    gone = api.post("/posts", json=body, idempotency_key=str(uuid.uuid4()))
    assert assert_error(gone, 400, "VALIDATION_ERROR")["details"][0]["issue"] == "unknown_preset"

    again = api.post("/posts", json=body, idempotency_key=key)

    assert again.status_code == 201, again.text
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()


def test_paging_while_posts_are_created(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    before = {create_post(api)["id"] for _ in range(30)}
    stop = threading.Event()

    def writer() -> None:
        client = Api(server.base_url, tenant.key)
        while not stop.is_set():
            client.post("/posts", json=post_body(text="late"))
        client.close()

    thread = threading.Thread(target=writer)
    thread.start()
    seen: list[str] = []
    try:
        for page in iter_pages(api, "/posts", 7):
            assert len(page["items"]) <= 7
            seen.extend(item["id"] for item in page["items"])
    finally:
        stop.set()
        thread.join()
    assert len(seen) == len(set(seen))
    assert before <= set(seen)
    assert seen == sorted(seen, reverse=True)


def test_filters(tenant: Tenant) -> None:
    api = tenant.api
    tagged = create_post(api, platforms=["x"], tags=["launch"], scheduled_at=future(48))
    draft = create_post(api, platforms=["linkedin"], draft=True)

    def ids(**params: Any) -> list[str]:
        return [p["id"] for p in api.list_all("/posts", **params)]

    assert ids(status="draft") == [draft["id"]]
    assert ids(platform="x") == [tagged["id"]]
    assert ids(account_id=tenant.accounts["linkedin"]) == [draft["id"]]
    assert ids(tag="launch") == [tagged["id"]]
    assert ids(scheduled_from=future(24)) == [tagged["id"]]
    assert ids(created_from="2000-01-01T00:00:00Z") == [draft["id"], tagged["id"]]
    assert ids(created_to="2000-01-01T00:00:00Z") == []
    error = assert_error(
        api.get("/posts", params={"created_from": "2000-01-01T00:00:00"}), 400, "VALIDATION_ERROR"
    )
    assert error["details"][0]["field"] == "created_from"
    assert_error(api.get("/posts", params={"status": "bogus"}), 400, "VALIDATION_ERROR")


def test_edit_and_submit_a_draft(tenant: Tenant) -> None:
    api = tenant.api
    draft = create_post(api, draft=True)
    path = f"/posts/{draft['id']}"
    edited = api.ok(api.patch(path, json={"text": "a" * 281, "platforms": ["linkedin"]}))
    assert edited["text"] == "a" * 281
    assert edited["status"] == "draft"
    error = assert_error(api.patch(path, json={"platforms": ["x"]}), 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "platforms.0"
    assert_error(
        api.patch(path, json={"scheduled_at": "2020-01-01T00:00:00Z"}), 400, "VALIDATION_ERROR"
    )
    submitted = api.ok(api.patch(path, json={"draft": False, "tags": ["a"]}))
    assert submitted["status"] == "scheduled"
    assert submitted["tags"] == ["a"]
    assert submitted["scheduled_at"] is not None
    assert_error(api.patch(path, json={"draft": True}), 409, "INVALID_STATE")


def test_cancel_state_machine(tenant: Tenant) -> None:
    api = tenant.api
    for post in (create_post(api, draft=True), create_post(api, scheduled_at=future())):
        canceled = api.ok(api.post(f"/posts/{post['id']}/cancel"))
        assert canceled["status"] == "canceled"
        assert canceled["canceled_at"] is not None
        assert_error(api.post(f"/posts/{post['id']}/cancel"), 409, "INVALID_STATE")
        assert_error(api.patch(f"/posts/{post['id']}", json={"text": "x"}), 409, "INVALID_STATE")


def test_a_polled_page_answers_304_until_the_posts_change(tenant: Tenant) -> None:
    api = tenant.api
    create_post(api)
    first = api.get("/posts")
    etag = first.headers["ETag"]
    assert etag.startswith('W/"')
    again = api.get("/posts", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["ETag"] == etag
    # The same page from the cache carries this request's own id.
    repeat = api.get("/posts")
    assert repeat.json()["data"] == first.json()["data"]
    assert (
        repeat.json()["request_id"] == repeat.headers["X-Request-Id"] != first.json()["request_id"]
    )
    created = create_post(api)
    changed = api.get("/posts", headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["ETag"] != etag
    assert changed.json()["data"]["items"][0]["id"] == created["id"]
