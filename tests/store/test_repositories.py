"""The repositories on both engines of the publishing database: SQLite and PostgreSQL.

Each test runs the same repository calls through ``run`` on the engine of its parameter:
ADR 0002's two profiles (SQLite embedded, PostgreSQL at scale). What the engines spell
differently is chosen by the cursor's dialect (warehouse/sql.py); these tests are what says
the spellings mean the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Connection

from benchmarks.servers import ScaleServers
from warehouse import approvals, health, idempotency, posts, publishing
from warehouse import automation as automation_repo
from warehouse import inbox as inbox_repo
from warehouse import webhooks as webhooks_repo
from warehouse import workspaces as ws_repo
from warehouse.cursor import Cursor, PubCursor
from warehouse.errors import DuplicateKeyError
from warehouse.ids import utcnow
from warehouse.pubdb.engine import PubDB, sqlite_url

T = TypeVar("T")
Run = Callable[[Callable[[Cursor], T]], T]


@pytest.fixture(params=["sqlite", "postgresql"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Run[Any]]:
    """``run(work)``: ``work(cur)`` in one committed transaction on the parameter's engine."""
    if request.param == "sqlite":
        url = sqlite_url(tmp_path / "publishing.sqlite")
    else:
        servers: ScaleServers = request.getfixturevalue("scale_servers")
        name = "r" + uuid.uuid4().hex[:12]
        servers.postgres.create_database(name)
        url = servers.postgres.url(name)
    with PubDB.open(url) as db:

        def on_pubdb(work: Callable[[Cursor], T]) -> T:
            def in_transaction(conn: Connection) -> T:
                return work(PubCursor(conn))

            return db.run(in_transaction)

        yield on_pubdb


def _workspace(cur: Cursor, *, approval: bool = False) -> tuple[str, str]:
    org = ws_repo.create_organization(cur, "Repositories")
    ws = ws_repo.create_workspace(cur, org, "Repositories", approval_required=approval)
    account = ws_repo.insert_account(cur, ws, "x", "repo", "Repo", "x-1", follower_count=7)
    return ws, account


def _post(ws: str, **changes: Any) -> posts.NewPost:
    fields: dict[str, Any] = {
        "workspace_id": ws,
        "text": "typed",
        "status": posts.PostStatus.SCHEDULED,
        "scheduled_at": utcnow().replace(microsecond=0) - timedelta(minutes=1),
        "approval_required": False,
        "tags": ["a", "b"],
        "media_ids": [],
        "platform_options": {"x": {"reply_settings": "following"}},
        "created_by": "key_repo",
    }
    fields.update(changes)
    return posts.NewPost(**fields)


def test_posts_read_back_as_written(run: Run[Any]) -> None:
    def work(cur: Cursor) -> tuple[Any, ...]:
        ws, account = _workspace(cur, approval=True)
        inserted = posts.insert_posts(cur, [_post(ws), _post(ws, tags=["c"], text="second")])
        posts.insert_destinations(cur, inserted[0].id, ws, [(account, "x")])
        read = posts.get_post(cur, ws, inserted[0].id)
        destinations = posts.destinations_of(cur, [inserted[0].id, inserted[1].id])
        choices = posts.destination_choices(cur, ws)
        tagged = posts.list_posts(cur, ws, posts.PostFilter(tag="c"), None, 10)
        on_x = posts.list_posts(cur, ws, posts.PostFilter(platform="x"), None, 10)
        page = posts.list_posts(cur, ws, posts.PostFilter(), None, 10)
        state = publishing.post_status(cur, inserted[0].id)
        return inserted, read, destinations, choices, tagged, on_x, page, state

    inserted, read, destinations, (approval, accounts), tagged, on_x, page, state = run(work)
    first, second = inserted
    assert read == first
    assert (read.tags, read.media_ids) == (["a", "b"], [])
    assert read.platform_options == {"x": {"reply_settings": "following"}}
    assert read.approval_required is False
    assert read.canceled_at is None
    assert [(d.platform, d.status, d.attempts) for d in destinations[first.id]] == [
        ("x", "pending", 0)
    ]
    assert destinations[second.id] == []
    assert approval is True
    assert [(a.handle, a.follower_count, a.status) for a in accounts] == [("repo", 7, "active")]
    assert [p.id for p in tagged] == [second.id]
    assert [p.id for p in on_x] == [first.id]
    assert [p.id for p in page] == [second.id, first.id]
    assert state == publishing.PostState(first.id, "scheduled", None, first.scheduled_at)


def test_a_post_is_claimed_settled_and_rolled_up(run: Run[Any]) -> None:
    def seed(cur: Cursor) -> tuple[str, str, str, str]:
        ws, account = _workspace(cur)
        other = ws_repo.insert_account(cur, ws, "linkedin", "repo-li", "Repo", "li-1")
        post = posts.insert_post(cur, _post(ws))
        posts.insert_destinations(cur, post, ws, [(account, "x"), (other, "linkedin")])
        canceled = posts.insert_post(cur, _post(ws))
        posts.insert_destinations(cur, canceled, ws, [(account, "x")])
        publishing.register_worker(cur, "w1", "host", 1, 4, utcnow())
        publishing.register_worker(cur, "w1", "host", 2, 4, utcnow())  # a restart
        return ws, post, canceled, account

    ws, post, canceled, _ = run(seed)
    now = utcnow()

    def due(cur: Cursor) -> tuple[Any, ...]:
        states = [publishing.post_status(cur, post_id) for post_id in (post, canceled)]
        return health.oldest_due_at(cur, now), min(
            s.scheduled_at for s in states if s and s.scheduled_at
        )

    oldest_due, first_scheduled = run(due)
    assert oldest_due == first_scheduled  # the metric the scrape reports as backlog age

    def claim(cur: Cursor) -> tuple[Any, ...]:
        claims = publishing.claim_due(cur, "w1", now, now + timedelta(minutes=5), 10)
        assert posts.move(cur, canceled, posts.PostStatus.CANCELED, canceled_at=now)
        live = publishing.confirm_posts(cur, sorted({c.post_id for c in claims}), now)
        gone = [c.id for c in claims if c.post_id not in live]
        released = publishing.release(cur, gone, "w1", now)
        jobs = publishing.load_jobs(cur, [c.id for c in claims if c.post_id in live])
        again = publishing.claim_due(cur, "w2", now, now + timedelta(minutes=5), 10)
        return claims, live, released, jobs, again

    claims, live, released, jobs, again = run(claim)
    assert sorted(c.post_id for c in claims) == sorted([post, post, canceled])
    assert {c.attempts for c in claims} == {1}
    assert live == {post}
    assert released == 1
    assert sorted((j.platform, j.text, j.handle) for j in jobs) == [
        ("linkedin", "typed", "repo-li"),
        ("x", "typed", "repo"),
    ]
    assert all(j.media_ids == [] for j in jobs)
    assert all(j.platform_options == {"x": {"reply_settings": "following"}} for j in jobs)
    assert again == []  # held by w1's lease

    later = now + timedelta(seconds=3)
    done = [
        publishing.Settlement(
            destination_id=j.id,
            post_id=j.post_id,
            workspace_id=ws,
            attempt=j.attempts,
            status="published" if j.platform == "x" else "failed",
            outcome="published" if j.platform == "x" else "failed",
            started_at=now,
            finished_at=later,
            platform_post_id="p-1" if j.platform == "x" else None,
            published_at=later if j.platform == "x" else None,
            error_code=None if j.platform == "x" else "rejected",
        )
        for j in jobs
    ]
    stale = publishing.Settlement(
        destination_id=jobs[0].id,
        post_id=post,
        workspace_id=ws,
        attempt=jobs[0].attempts + 1,  # not the attempt we hold: changes nothing
        status="failed",
        outcome="failed",
        started_at=now,
        finished_at=later,
    )

    def settle(cur: Cursor) -> tuple[Any, ...]:
        lost = publishing.settle(cur, "w1", [stale], later)
        ours = publishing.settle(cur, "w1", done, later)
        publishing.log_attempts(cur, "w1", done, [s.outcome for s in done])
        rolled = publishing.roll_up(cur, [post], later)
        swept = publishing.roll_up(cur, None, later)
        publishing.heartbeat(cur, "w1", later, stopped=True)
        return (
            lost,
            ours,
            rolled,
            swept,
            publishing.attempts_of(cur, done[0].destination_id),
            publishing.open_destinations(cur, [post, canceled]),
            publishing.lateness(cur, [post]),
            publishing.post_status(cur, post),
        )

    lost, ours, rolled, swept, attempts, still_open, lateness, state = run(settle)
    assert lost == set()
    assert ours == {s.destination_id for s in done}
    assert [(r.id, r.status, r.published_at) for r in rolled] == [
        (post, "partially_published", later)
    ]
    assert swept == []
    assert [(a.attempt, a.outcome, a.worker_id) for a in attempts] == [(1, done[0].outcome, "w1")]
    assert still_open == 1  # the canceled post's destination, pending again
    # From the scheduled time to the end of the published call, for the one published
    # (SQLite computes times in whole milliseconds).
    assert lateness == [pytest.approx((later - jobs[0].scheduled_at).total_seconds(), abs=2e-3)]
    assert state is not None
    assert state.status == "partially_published"


def test_idempotency_records_claim_replay_and_expire(run: Run[Any]) -> None:
    key = idempotency.RecordKey("key_1", "ws_1", "POST", "/posts", "k-1")
    other = idempotency.RecordKey("key_1", "ws_2", "POST", "/posts", "k-1")  # another workspace
    third = idempotency.RecordKey("key_1", "ws_1", "POST", "/posts", "k-3")

    def first(cur: Cursor) -> tuple[Any, ...]:
        taken = idempotency.claim_new(cur, key, "fp", lease_seconds=30, ttl_seconds=60)
        idempotency.complete(cur, key, 201, '{"id": 1}')
        elsewhere = idempotency.claim(cur, other, "fp", lease_seconds=30, ttl_seconds=60)
        idempotency.release(cur, other)
        idempotency.insert_completed(cur, [(third, "fp3", 200, "{}")], ttl_seconds=-1)
        idempotency.record_outcome(cur, third, "fp3", 500, "{}", ttl_seconds=60)  # kept first
        return taken, elsewhere

    assert run(first) == (True, idempotency.Claim("claimed"))

    def again(cur: Cursor) -> tuple[Any, ...]:
        return (
            idempotency.claim(cur, key, "fp", lease_seconds=30, ttl_seconds=60),
            idempotency.claim(cur, key, "other", lease_seconds=30, ttl_seconds=60),
            idempotency.exists(cur, other),
            idempotency.purge_expired(cur),
            idempotency.exists(cur, third),
        )

    replay, conflict, released, purged, expired_left = run(again)
    assert replay == idempotency.Claim("replay", 201, '{"id": 1}')
    assert conflict == idempotency.Claim("conflict")
    assert released is False
    assert purged == 1
    assert expired_left is False

    def duplicate(cur: Cursor) -> bool:
        return idempotency.claim_new(cur, key, "fp", lease_seconds=30, ttl_seconds=60)

    assert run(duplicate) is False
    with pytest.raises(DuplicateKeyError):
        run(lambda cur: idempotency.insert_completed(cur, [(key, "fp", 1, "")], ttl_seconds=9))


def test_approvals_batch_review_and_decide(run: Run[Any]) -> None:
    def work(cur: Cursor) -> tuple[Any, ...]:
        ws, _ = _workspace(cur, approval=True)
        waiting = posts.insert_post(cur, _post(ws, status=posts.PostStatus.PENDING_APPROVAL))
        other = posts.insert_post(cur, _post(ws, status=posts.PostStatus.PENDING_APPROVAL))
        item = approvals.submit(cur, ws, waiting, "key_a")
        second = approvals.submit(cur, ws, other, "key_a")
        approvals.withdraw(cur, ws, other, "key_a")
        approvals.decide_item(cur, second, "canceled", None, "key_a", utcnow())
        batches = approvals.list_batches(cur, ws, "pending", None, 10)
        done = approvals.list_batches(cur, ws, "done", None, 10)
        reviews = approvals.items_of_batches(cur, [b.id for b in batches])
        events = approvals.events_of_items(cur, [item, second])
        latest = approvals.latest_items_of_posts(cur, [waiting, other])
        return ws, item, batches, done, reviews, events, latest

    _, item, batches, done, reviews, events, latest = run(work)
    assert len(batches) == 1
    assert done == []
    (batch,) = batches
    assert batch.batch_date == utcnow().date()
    assert [(r.item.id, r.post_text, r.post_status) for r in reviews[batch.id]] == [
        (item, "typed", "pending_approval"),
        (latest[next(p for p in latest if latest[p].id != item)].id, "typed", "pending_approval"),
    ]
    assert [e.action for e in events[item]] == ["submit"]
    assert [e.action for es in events.values() for e in es].count("cancel") == 1
    assert {row.status for row in latest.values()} == {"pending", "canceled"}


def test_queues_calendar_and_content_runs(run: Run[Any]) -> None:
    now = utcnow().replace(microsecond=0)

    def work(cur: Cursor) -> dict[str, Any]:
        ws, account = _workspace(cur)
        queue = automation_repo.insert_queue(
            cur,
            ws,
            automation_repo.QueueFields(
                name="Weekdays",
                timezone="UTC",
                slots=[{"day": "mon", "time": "09:00"}],
                destinations=[{"account_id": account}],
            ),
        )
        post = automation_repo.insert_queue_post(
            cur,
            ws,
            text="queued " * 20,
            media_ids=[],
            tags=["q"],
            status=posts.PostStatus.SCHEDULED,
            scheduled_at=now + timedelta(hours=1),
            created_by="key_q",
            destinations=[(account, "x")],
        )
        item = automation_repo.insert_item(
            cur, ws, queue, post, automation_repo.next_position(cur, queue)
        )
        automation_repo.set_item(
            cur, item, position=1, status="scheduled", slot_at=now + timedelta(hours=1)
        )
        automation_repo.insert_event(
            cur,
            ws,
            kind="campaign",
            title="Launch",
            starts_at=now + timedelta(hours=2),
            ref_type=None,
            ref_id=None,
        )
        content = automation_repo.insert_automation(
            cur,
            ws,
            automation_repo.AutomationFields(
                name="Feed",
                enabled=True,
                source={"type": "rss", "url": "http://127.0.0.1/feed"},
                schedule={"every_minutes": 60},
                target={"queue_id": queue},
                next_run_at=now - timedelta(minutes=1),
            ),
        )
        due = automation_repo.due_automations(cur, now)
        claimed = automation_repo.claim_content_run(
            cur, content, now - timedelta(minutes=1), now + timedelta(hours=1), now
        )
        claimed_twice = automation_repo.claim_content_run(
            cur, content, now - timedelta(minutes=1), now + timedelta(hours=1), now
        )
        seen = automation_repo.mark_seen(cur, content, "guid-1")
        automation_repo.set_seen_post(cur, content, "guid-1", post)
        automation_repo.save_automation_position(cur, content, 3, exists=False)
        automation_repo.save_automation_position(cur, content, 4, exists=True)
        calendar = automation_repo.list_calendar(
            cur,
            ws,
            start=now,
            end=now + timedelta(days=1),
            kind=None,
            include_canceled=False,
            after=None,
            limit=10,
        )
        return {
            "queue": queue,
            "item": item,
            "due": due,
            "claimed": (claimed, claimed_twice, seen),
            "calendar": calendar,
            "listed": automation_repo.list_items(cur, ws, queue, ["scheduled"], None, 10),
            "active": automation_repo.active_item_for_post(cur, post),
            "counts": (
                automation_repo.count_active_items(cur, queue),
                automation_repo.automations_targeting_queue(cur, ws, queue),
                automation_repo.automation_position(cur, content),
                automation_repo.seen_items(cur, content),
            ),
            "stored_queue": automation_repo.get_queue(cur, ws, queue),
        }

    got = run(work)
    assert [a.target for a in got["due"]] == [{"queue_id": got["queue"]}]
    assert got["claimed"] == (True, False, True)
    calendar = got["calendar"]
    assert [(e.kind, e.title[:9]) for e in calendar] == [
        ("queue_slot", "Weekdays:"),
        ("campaign", "Launch"),
    ]
    assert len(calendar[0].title) == len("Weekdays: ") + 80
    assert [q.item.id for q in got["listed"]] == [got["item"]]
    assert got["active"] is not None
    assert got["active"].slot_at == now + timedelta(hours=1)
    # Active items, automations targeting the queue, the automation's position, its seen keys.
    assert got["counts"] == (1, 1, 4, {"guid-1"})
    assert got["stored_queue"] is not None
    assert got["stored_queue"].slots == [{"day": "mon", "time": "09:00"}]


def test_inbox_conversations_replies_and_rules(run: Run[Any]) -> None:
    received = utcnow().replace(microsecond=0) - timedelta(minutes=5)

    def work(cur: Cursor) -> tuple[Any, ...]:
        ws, account = _workspace(cur)
        item = inbox_repo.upsert_conversation(
            cur, ws, account, "x", "mention", "t-1", "fan", "Fan", "hello", received,
            message_external_id="m-1",
        )  # fmt: skip
        same = inbox_repo.upsert_conversation(
            cur, ws, account, "x", "mention", "t-1", "fan", "Fan", "hello", received,
            message_external_id="m-1",
        )  # fmt: skip
        inbox_repo.upsert_conversation(
            cur, ws, account, "x", "mention", "t-1", "fan", "Fan", "again",
            received + timedelta(minutes=1), message_external_id="m-2",
        )  # fmt: skip
        inbox_repo.upsert_conversation(
            cur, ws, account, "x", "mention", "t-1", "fan", "Fan", "late delivery",
            received - timedelta(minutes=10), message_external_id="m-0",
        )  # fmt: skip
        before_reply = inbox_repo.get_item(cur, ws, item)
        inbox_repo.update_item(
            cur, ws, item, status="open", snoozed_until=None, tags=["vip"], assignee="ana"
        )
        reply = inbox_repo.add_outbound(cur, ws, item, "repo", "thanks!", "key_1")
        draft = inbox_repo.insert_draft(cur, ws, item, "a draft", "suggested", 0.5)
        rule = inbox_repo.insert_automation(
            cur,
            ws,
            inbox_repo.AutomationFields(
                name="Tag",
                enabled=True,
                trigger_type="keyword",
                phrases=["hello"],
                intent=None,
                action="tag",
                action_params={"tag": "greeting"},
            ),
        )
        first_mark = inbox_repo.mark_for_automations(cur, reply, ws)
        inbox_repo.log_automation_run(cur, rule, item, ws, "tag", "ok")
        claims = inbox_repo.claim_replies(cur, "w1", lease_seconds=30, limit=5)
        finished = inbox_repo.finish_reply(cur, reply, "w1", delivery="sent", external_id="r-1")
        inbox_repo.save_sync_state(cur, account, ws, received, None, exists=False)
        inbox_repo.save_sync_state(cur, account, ws, None, "boom", exists=True)
        return (
            item,
            same,
            before_reply,
            inbox_repo.list_items(cur, ws, inbox_repo.ItemFilter(tag="vip")),
            inbox_repo.list_items(cur, ws, inbox_repo.ItemFilter(tag="other")),
            inbox_repo.list_messages(cur, ws, item),
            inbox_repo.get_draft(cur, ws, draft),
            inbox_repo.enabled_automations(cur, ws),
            first_mark,
            inbox_repo.automation_runs(cur, ws, item),
            claims,
            finished,
            inbox_repo.sync_state(cur)[account],
            inbox_repo.past_exchanges(cur, ws),
        )

    (
        item,
        same,
        before_reply,
        vip,
        other,
        messages,
        draft,
        rules,
        marks,
        runs,
        claims,
        finished,
        sync,
        past,
    ) = run(work)
    assert same == item
    assert [(i.id, i.tags, i.assignee, i.preview) for i in vip] == [
        (item, ["vip"], "ana", "thanks!")
    ]
    # An older message delivered late does not move the conversation back in time.
    assert before_reply is not None
    assert before_reply.last_message_at == received + timedelta(minutes=1)
    assert vip[0].last_message_at > before_reply.last_message_at
    assert other == []
    assert [(m.direction, m.text) for m in messages] == [
        ("inbound", "late delivery"),
        ("inbound", "hello"),
        ("inbound", "again"),
        ("outbound", "thanks!"),
    ]
    assert draft is not None
    assert draft.confidence == pytest.approx(0.5)
    assert [(r.phrases, r.action_params, r.enabled) for r in rules] == [
        (["hello"], {"tag": "greeting"}, True)
    ]
    assert marks is True
    # Marked once only: a second mark is refused (and, as on DuckDB, ends the transaction).
    assert run(lambda cur: inbox_repo.mark_for_automations(cur, messages[3].id, "ws")) is False
    assert [r.outcome for r in runs] == ["ok"]
    assert [c.text for c in claims] == ["thanks!"]
    assert finished is True
    assert (sync.synced_until, sync.last_error) == (received, "boom")
    assert [(e.inbound, e.reply) for e in past] == [("again", "thanks!")]


def test_webhooks_fan_out_and_deliver(run: Run[Any]) -> None:
    def work(cur: Cursor) -> tuple[Any, ...]:
        ws, _ = _workspace(cur)
        endpoint = webhooks_repo.insert_endpoint(
            cur,
            ws,
            url="http://127.0.0.1:9/hook",
            secret="s",
            description=None,
            event_types=["post.published"],
            enabled=True,
        )
        webhooks_repo.enqueue_events(
            cur, ws, [("post.published", {"id": "p1"}), ("post.failed", {"id": "p2"})]
        )
        events = webhooks_repo.undispatched_events(cur)
        webhooks_repo.fan_out(cur, events, webhooks_repo.live_endpoints(cur), utcnow())
        claims = webhooks_repo.claim_deliveries(cur, "w1", lease_seconds=30, limit=5)
        finished = webhooks_repo.finish_delivery(
            cur,
            claims[0].id,
            "w1",
            status="delivered",
            response_status=204,
            response_ms=3.5,
            error=None,
            next_attempt_at=None,
        )
        return (
            endpoint,
            claims,
            finished,
            webhooks_repo.undispatched_events(cur),
            webhooks_repo.list_deliveries(cur, ws, endpoint, status=None, after=None, limit=10),
            webhooks_repo.list_endpoints(cur, ws, None, 10),
        )

    endpoint, claims, finished, left, deliveries, endpoints = run(work)
    assert [(c.endpoint_id, c.event_type, c.attempts) for c in claims] == [
        (endpoint, "post.published", 1)
    ]
    assert finished is True
    assert left == []
    assert [(d.status, d.response_status) for d in deliveries] == [("delivered", 204)]
    assert [(e.event_types, e.enabled) for e in endpoints] == [(["post.published"], True)]


def test_workspaces_keys_accounts_and_members(run: Run[Any]) -> None:
    def work(cur: Cursor) -> tuple[Any, ...]:
        ws, account = _workspace(cur)
        org = ws_repo.first_organization(cur)
        assert org is not None
        key = ws_repo.insert_api_key(
            cur,
            organization_id=org.id,
            name="ci",
            mode="live",
            key_hash="h1",
            key_hint="mk_…1",
            scopes=["posts:write"],
            workspace_ids=[ws],
        )
        revoked = ws_repo.revoke_api_key(cur, key)
        member = ws_repo.insert_member(cur, ws, "a@example.com", "Ana", "owner")
        ws_repo.update_member(cur, ws, member, role="owner", name="Ana B")
        ws_repo.set_account_status(cur, account, "disconnected")
        return (
            ws,
            account,
            key,
            revoked,
            ws_repo.find_api_key(cur, "h1"),
            ws_repo.list_workspaces(cur, [ws, "ws_missing"], None, 10),
            ws_repo.accounts_by_ids(cur, ws, [account]),
            ws_repo.active_accounts(cur),
            ws_repo.count_owners(cur, ws),
            ws_repo.find_member_by_email(cur, ws, "a@example.com"),
            ws_repo.remove_member(cur, ws, member),
            ws_repo.count_owners(cur, ws),
        )

    (ws, account, key, revoked, found, listed, by_id, active, owners, member, removed, left) = run(
        work
    )
    assert revoked is True
    assert found is not None
    assert (found.id, found.scopes, found.workspace_ids) == (key, ["posts:write"], [ws])
    assert found.revoked_at is not None
    assert [w.id for w in listed] == [ws]
    assert by_id[account].status == "disconnected"
    assert active == []
    assert (owners, removed, left) == (1, True, 0)
    assert member is not None
    assert member.name == "Ana B"
