"""Publishing reliability (issue 52, point 3): the figures are what the destinations say.

One simulator run per module, faults injected over the simulator's HTTP controls: a clean
post on three platforms, a 429 then success, a rejection, a 5xx on every attempt until the
worker gives up, a canceled post, and a worker killed mid-call (`murmur worker`, SIGKILL)
whose destination nobody takes over, so that it ends stuck. Two accounts have a recorded
token expiry within 7 days (one already past). Every figure of GET /analytics/publishing is
then checked against an independent computation over the destinations' own rows (read with
plain SQL, and through GET /posts/{id}), and the stuck destination and expiring tokens against
/readyz, /metrics, `murmur doctor` and the webhook events, sent once each.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.servers import settings_env
from tests.engagement.conftest import receiving
from tests.publishing.conftest import (
    FAST,
    TEXT_PLATFORMS,
    Sim,
    create_post,
    settled,
    unique_text,
    wait_for,
)
from tests.support import (
    LiveServer,
    Tenant,
    assert_error,
    new_tenant,
    register_sim_accounts,
    run_murmur,
)
from warehouse import reliability as reliability_repo
from warehouse.ids import utcnow
from warehouse.rows import Cursor, fetch_all
from workers.engagement.runner import engagement_for
from workers.publishing.worker import Worker

# The post statuses whose destinations fall due at their time (docs/api/analytics.md).
DUE_POSTS = {"scheduled", "publishing", "published", "partially_published", "failed"}
# The killed worker's lease: above its HTTP timeout (5 s), as the worker requires.
DEAD_LEASE_SECONDS = 6


def _at(value: Any) -> datetime | None:
    """A stored time as naive UTC, whichever engine handed it out."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def _api_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)


@dataclass(frozen=True)
class Row:
    """One destination as its own row says, beside its post's time and status."""

    id: str
    post_id: str
    platform: str
    account_id: str
    status: str
    attempts: int
    error_code: str | None
    published_at: datetime | None
    lease_expires_at: datetime | None
    claimed_at: datetime  # updated_at: the claim writes it
    scheduled_at: datetime | None
    post_status: str

    def stuck(self, now: datetime) -> bool:
        if self.status != "publishing" or self.lease_expires_at is None:
            return False
        lease = self.lease_expires_at - self.claimed_at
        return now - self.lease_expires_at > lease


_ROWS = (
    "SELECT d.id, d.post_id, d.platform, d.account_id, d.status, d.attempts, d.error_code,"
    " d.published_at, d.lease_expires_at, d.updated_at, p.scheduled_at, p.status"
    " FROM post_destinations d JOIN posts p ON p.id = d.post_id"
)


def _rows(server: LiveServer, where: str = "", params: list[Any] | None = None) -> list[Row]:
    def read(cur: Cursor) -> list[tuple[Any, ...]]:
        cur.execute(_ROWS + where, params or [])
        return cur.fetchall()

    return [
        Row(
            str(v[0]),
            str(v[1]),
            str(v[2]),
            str(v[3]),
            str(v[4]),
            int(v[5]),
            v[6],
            _at(v[7]),
            _at(v[8]),
            _at(v[9]) or datetime.min,
            _at(v[10]),
            str(v[11]),
        )
        for v in server.store.read(read)
    ]


def _nearest(values: list[float], percent: int) -> float | None:
    """The nearest-rank percentile: the value at rank ceil(p * n / 100) of the sorted values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.ceil(percent * len(ordered) / 100) - 1]


def _expected(rows: list[Row], tokens: int, now: datetime) -> dict[str, Any]:
    """The figures of these (due) destinations, computed here from their rows."""
    published = [r for r in rows if r.status == "published"]
    late = [
        max(0.0, (r.published_at - r.scheduled_at).total_seconds())
        for r in published
        if r.published_at is not None and r.scheduled_at is not None
    ]
    failed = [r for r in rows if r.status == "failed"]
    reasons: dict[str, int] = {}
    for r in failed:
        reasons[r.error_code or "unknown"] = reasons.get(r.error_code or "unknown", 0) + 1
    on_time = sum(1 for seconds in late if seconds <= 60)
    retried = sum(1 for r in rows if r.attempts > 1)
    return {
        "due": len(rows),
        "published": len(published),
        "on_time": on_time,
        "on_time_share": on_time / len(published) if published else None,
        "lateness_p50_seconds": _nearest(late, 50),
        "lateness_p99_seconds": _nearest(late, 99),
        "failed": len(failed),
        "failed_share": len(failed) / (len(published) + len(failed))
        if published or failed
        else None,
        "failed_by_reason": reasons,
        "retried": retried,
        "retried_share": retried / len(rows) if rows else None,
        "pending": sum(1 for r in rows if r.status == "pending"),
        "publishing": sum(1 for r in rows if r.status == "publishing"),
        "stuck": sum(1 for r in rows if r.stuck(now)),
        "tokens_expiring": tokens,
    }


def _same(answered: dict[str, Any], expected: dict[str, Any], what: str) -> None:
    """Counts exactly; lateness to the millisecond (SQLite's julianday arithmetic)."""
    assert set(answered) == set(expected), what
    for name, value in expected.items():
        got = answered[name]
        if name.startswith("lateness") and value is not None and got is not None:
            assert abs(got - value) <= 0.002, (what, name, got, value)
        elif isinstance(value, float):
            assert got == pytest.approx(value), (what, name)
        else:
            assert got == value, (what, name, got, value)


@dataclass
class Run:
    """What the simulator run left: the tenant, its posts, the stuck one, the tokens."""

    server: LiveServer
    tenant: Tenant
    posts: dict[str, dict[str, Any]]
    stuck_post: dict[str, Any]
    expiring: str  # the linkedin account: its token expires in 3 days
    expired: str  # the bluesky account: its token expired a day ago

    def due_rows(self) -> list[Row]:
        now = utcnow()
        return [
            r
            for r in _rows(self.server, " WHERE p.workspace_id = ?", [self.tenant.workspace_id])
            if r.post_status in DUE_POSTS and r.scheduled_at is not None and r.scheduled_at <= now
        ]


def _run_worker(server: LiveServer) -> tuple[threading.Event, threading.Thread, Any]:
    store = server.settings.open_store()
    worker = Worker(server.settings, store, policy=FAST, poll_interval=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    return stop, thread, store


def _kill_mid_call(server: LiveServer, sim: Sim, tenant: Tenant) -> dict[str, Any]:
    """A post on x whose worker dies mid-call: the platform holds its answer back (a fault),
    `murmur worker` is killed, and no worker runs after it: its destination stays claimed."""
    text = unique_text("Stuck")
    post = create_post(tenant, text, ["x"], in_seconds=1)
    sim.fault("x", "timeout_after_commit", delay=60)
    victim = subprocess.Popen(
        [sys.executable, "-m", "murmur", "worker", "--no-engagement"],
        env=dict(
            os.environ,
            **settings_env(server.settings),
            MURMUR_PLATFORMS_URL=sim.root,
            MURMUR_PUBLISHING_POLL_INTERVAL_SECONDS="0.05",
            MURMUR_PUBLISHING_LEASE_SECONDS=str(DEAD_LEASE_SECONDS),
            MURMUR_PUBLISHING_HTTP_TIMEOUT_SECONDS="5",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: sim.count("x", text) == 1, "the platform to create the stuck post")
        os.kill(victim.pid, signal.SIGKILL)
    finally:
        victim.wait(timeout=30)
    return post


@pytest.fixture(scope="module")
def run(pub_server: LiveServer, sim: Sim) -> Iterator[Run]:
    sim.admin.delete("/_sim/faults").raise_for_status()
    tenant = new_tenant(pub_server)
    register_sim_accounts(sim.admin, TEXT_PLATFORMS)  # as conftest.py does
    posts: dict[str, dict[str, Any]] = {}
    stop, thread, store = _run_worker(pub_server)
    try:
        # A clean post on three platforms.
        posts["clean"] = create_post(tenant, unique_text("Clean"), ["x", "linkedin", "bluesky"])
        wait_for(lambda: settled(pub_server, posts["clean"]["id"]), "the clean post")
        # One due destination per platform, each with its fault: a 429 once (then
        # published), a rejection, and a 5xx on every write until the worker gives up.
        sim.fault("bluesky", "429", count=1, retry_after=1, on="write")
        sim.fault("linkedin", "reject", message="media type not supported")
        sim.fault("x", "500", count=FAST.max_attempts, on="write")
        posts["retried"] = create_post(tenant, unique_text("Rate limited"), ["bluesky"])
        posts["rejected"] = create_post(tenant, unique_text("Rejected"), ["linkedin"])
        posts["unavailable"] = create_post(tenant, unique_text("Unavailable"), ["x"])
        # Canceled before its time: never due.
        posts["canceled"] = create_post(tenant, unique_text("Canceled"), ["x"], in_seconds=30)
        tenant.api.ok(tenant.api.post(f"/posts/{posts['canceled']['id']}/cancel"))
        faulted = [posts[name]["id"] for name in ("retried", "rejected", "unavailable")]
        wait_for(lambda: all(settled(pub_server, i) for i in faulted), "the faulted posts")
    finally:
        stop.set()
        thread.join(timeout=60)
        store.close()
    stuck = _kill_mid_call(pub_server, sim, tenant)
    now = utcnow()

    def tokens(cur: Cursor) -> None:
        ws = tenant.workspace_id
        record = reliability_repo.record_token_expiry
        record(cur, ws, tenant.accounts["linkedin"], now + timedelta(days=3), now)
        record(cur, ws, tenant.accounts["bluesky"], now - timedelta(days=1), now)
        record(cur, ws, tenant.accounts["x"], now + timedelta(days=30), now)  # not within 7

    pub_server.store.run(tokens)
    made = Run(
        pub_server,
        tenant,
        posts,
        stuck,
        tenant.accounts["linkedin"],
        tenant.accounts["bluesky"],
    )
    # Its lease (6 s) ran out a lease ago: stuck, by the destination's own row.
    wait_for(
        lambda: any(r.stuck(utcnow()) for r in made.due_rows()),
        "the killed worker's destination to be stuck",
        timeout=240,
        interval=0.5,
    )
    yield made
    # A worker takes the stuck destination over (it finds the post on the platform): the
    # tests after these find no claim of ours left in the store.
    stop, thread, store = _run_worker(pub_server)
    try:
        wait_for(lambda: settled(pub_server, stuck["id"]), "the stuck post to be taken over")
    finally:
        stop.set()
        thread.join(timeout=60)
        store.close()
    tenant.api.close()


def _figures_by(rows: list[Row], key: str, tokens: dict[str, int], now: datetime) -> dict[str, Any]:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(getattr(r, key), []).append(r)
    names = set(groups) | set(tokens)
    return {name: _expected(groups.get(name, []), tokens.get(name, 0), now) for name in names}


def test_the_figures_are_what_the_destinations_say(run: Run) -> None:
    api = run.tenant.api
    answer = api.ok(api.get("/analytics/publishing"))
    now = _api_time(answer["computed_at"])
    rows = run.due_rows()
    # What the run was made of, read from the rows themselves.
    by_post = {
        post["id"]: [r for r in rows if r.post_id == post["id"]] for post in run.posts.values()
    }
    assert by_post[run.posts["canceled"]["id"]] == []  # canceled: not due
    assert {r.status for r in by_post[run.posts["clean"]["id"]]} == {"published"}
    (retried,) = by_post[run.posts["retried"]["id"]]
    assert (retried.status, retried.attempts > 1) == ("published", True)
    (rejected,) = by_post[run.posts["rejected"]["id"]]
    assert (rejected.status, rejected.error_code) == ("failed", "rejected")
    (unavailable,) = by_post[run.posts["unavailable"]["id"]]
    assert (unavailable.status, unavailable.error_code) == ("failed", "platform_unavailable")
    (stuck,) = [r for r in rows if r.post_id == run.stuck_post["id"]]
    assert stuck.stuck(now)

    # Totals, per platform and per account: the rows' own figures.
    tokens_by_account = {run.expiring: 1, run.expired: 1}
    tokens_by_platform = {"linkedin": 1, "bluesky": 1}
    _same(answer["totals"], _expected(rows, 2, now), "totals")
    assert answer["totals"]["failed_by_reason"] == {"platform_unavailable": 1, "rejected": 1}
    assert answer["totals"]["stuck"] == 1
    platforms = _figures_by(rows, "platform", tokens_by_platform, now)
    assert [p["platform"] for p in answer["by_platform"]] == sorted(platforms)
    for item in answer["by_platform"]:
        _same(item["figures"], platforms[item["platform"]], item["platform"])
    accounts = _figures_by(rows, "account_id", tokens_by_account, now)
    assert {a["account_id"] for a in answer["by_account"]} == set(accounts)
    for item in answer["by_account"]:
        _same(item["figures"], accounts[item["account_id"]], item["account_id"])
        assert item["handle"] == f"{item['platform']}_handle"

    # The posts' own answers agree: each destination's status and error.
    failed_codes: dict[str, int] = {}
    published = 0
    for post in run.posts.values():
        shown = api.ok(api.get(f"/posts/{post['id']}"))
        if shown["status"] == "canceled":
            continue
        for dst in shown["destinations"]:
            published += dst["status"] == "published"
            if dst["status"] == "failed":
                failed_codes[dst["error"]["code"]] = failed_codes.get(dst["error"]["code"], 0) + 1
    assert published == answer["totals"]["published"]
    assert failed_codes == answer["totals"]["failed_by_reason"]

    # The stuck destination, and the tokens (the expired one first, said as such).
    (listed,) = answer["stuck_destinations"]
    assert listed["destination_id"] == stuck.id
    assert listed["attempts"] == stuck.attempts
    claimed, expires = stuck.claimed_at, stuck.lease_expires_at
    assert expires is not None
    # Times to the millisecond, as the API writes them.
    assert _api_time(listed["claimed_at"]) == claimed.replace(
        microsecond=claimed.microsecond // 1000 * 1000
    )
    since = _api_time(listed["stuck_since"]) - (expires + (expires - claimed))
    assert abs(since) <= timedelta(milliseconds=2)
    assert [(t["account_id"], t["expired"]) for t in answer["tokens_expiring"]] == [
        (run.expired, True),
        (run.expiring, False),
    ]

    # Narrowed: one platform, one account; and a range before the run, where nothing is due.
    only_x = api.ok(api.get("/analytics/publishing", params={"platform": "x"}))
    _same(only_x["totals"], platforms["x"], "platform=x")
    assert [p["platform"] for p in only_x["by_platform"]] == ["x"]
    one = api.ok(api.get("/analytics/publishing", params={"account_id": run.expiring}))
    _same(one["totals"], accounts[run.expiring], "account_id")
    before = api.ok(
        api.get(
            "/analytics/publishing",
            params={"from": "2020-01-01T00:00:00Z", "to": "2020-01-08T00:00:00+00:00"},
        )
    )
    assert before["totals"]["due"] == 0
    assert before["totals"]["lateness_p50_seconds"] is None  # not measured, never 0
    assert before["totals"]["on_time_share"] is None
    assert before["totals"]["tokens_expiring"] == 2  # now's, whatever the range
    assert before["stuck_destinations"] == []


def test_the_range_is_validated_and_needs_analytics_read(run: Run) -> None:
    api = run.tenant.api
    backwards = api.get(
        "/analytics/publishing",
        params={"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"},
    )
    (detail,) = assert_error(backwards, 400, "VALIDATION_ERROR")["details"]
    assert (detail["field"], detail["issue"]) == ("from", "invalid_range")
    long = api.get(
        "/analytics/publishing",
        params={"from": "2024-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"},
    )
    (detail,) = assert_error(long, 400, "VALIDATION_ERROR")["details"]
    assert (detail["field"], detail["issue"]) == ("to", "range_too_long")
    naive = api.get("/analytics/publishing", params={"from": "2026-01-01T00:00:00"})
    assert_error(naive, 400, "VALIDATION_ERROR")
    posts_only = run.tenant.key_with(run.server, scopes=["posts:read"])
    assert_error(posts_only.get("/analytics/publishing"), 403, "SCOPE_FORBIDDEN")
    posts_only.close()
    document = api.get("/openapi.json").json()
    operation = document["paths"]["/analytics/publishing"]["get"]
    assert operation["operationId"] == "get_publishing_reliability"  # the MCP tool's name
    assert operation["security"] == [{"HTTPBearer": ["analytics:read"]}]
    # The webhooks' event types, which an endpoint subscribes to, name the two new events.
    endpoint = document["components"]["schemas"]["EndpointCreate"]["properties"]
    assert {"post.stuck", "account.token_expiring"} <= set(endpoint["event_types"]["items"]["enum"])


def _expiry(token: dict[str, Any]) -> datetime:
    found = _at(token["expires_at"])
    assert found is not None
    return found


def _everywhere(server: LiveServer) -> tuple[list[Row], list[dict[str, Any]]]:
    """Every workspace's stuck destinations and tokens expiring within 7 days, from the rows."""
    now = utcnow()
    stuck = [r for r in _rows(server, " WHERE d.status = 'publishing'") if r.stuck(now)]
    stuck.sort(key=lambda r: (r.claimed_at, r.id))

    def read(cur: Cursor) -> list[dict[str, Any]]:
        return fetch_all(
            cur,
            "SELECT t.account_id, a.platform, t.expires_at FROM token_expiries t"
            " JOIN accounts a ON a.id = t.account_id WHERE a.status <> 'disconnected'",
        )

    horizon = now + timedelta(days=7)
    tokens = [t for t in server.store.read(read) if _expiry(t) <= horizon]
    tokens.sort(key=lambda t: (_expiry(t), t["account_id"]))
    return stuck, tokens


def _gauges(client: httpx.Client) -> dict[str, float]:
    text = client.get("/metrics").text
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_stuck_and_expiring_are_readyz_problems_metrics_and_doctor_lines(run: Run) -> None:
    stuck, tokens = _everywhere(run.server)
    assert run.stuck_post["destinations"][0]["id"] in {r.id for r in stuck}
    assert {run.expiring, run.expired} <= {t["account_id"] for t in tokens}
    expired = sum(1 for t in tokens if _expiry(t) <= utcnow())
    oldest, soonest = stuck[0], tokens[0]
    with httpx.Client(base_url=run.server.base_url, timeout=30) as root:
        ready = root.get("/readyz")
        assert ready.status_code == 200
        data = ready.json()["data"]
        assert data["status"] == "ready"  # ready all the same
        lines = [p for p in data["problems"] if p.startswith(("publishing:", "accounts:"))]
        assert len(lines) == 2, data["problems"]
        publishing, accounts = lines
        assert publishing.startswith(f"publishing: {len(stuck)} destination")
        assert f"(oldest {oldest.id} since " in publishing
        assert "past twice" in publishing
        assert accounts.startswith(f"accounts: {len(tokens)} token")
        assert f"{expired} expired" in accounts
        day = _expiry(soonest).date().isoformat()
        assert f"({soonest['account_id']} on {soonest['platform']}, expired {day})" in accounts
        gauges = wait_for_gauges(root, len(stuck), len(tokens))
        assert gauges["murmur_publishing_stuck_destinations"] == len(stuck)
        assert gauges["murmur_accounts_token_expiring"] == len(tokens)
    doctor = run_murmur(run.server.settings, "doctor", "--no-repair")
    warnings = [line.strip() for line in doctor.stderr.splitlines() if "warning:" in line]
    assert [w.removeprefix("warning: ") for w in warnings] == lines, doctor.stderr


def wait_for_gauges(root: httpx.Client, stuck: int, tokens: int) -> dict[str, float]:
    """The scrape's gauges once they show the store's figures (a scrape may answer the
    figures an earlier one read, for at most a second)."""
    found: dict[str, float] = {}

    def current() -> bool:
        found.update(_gauges(root))
        return (
            found.get("murmur_publishing_stuck_destinations") == stuck
            and found.get("murmur_accounts_token_expiring") == tokens
        )

    wait_for(current, "the gauges", timeout=60)
    return found


def test_each_is_sent_once_as_a_webhook_event_with_a_stable_id(run: Run) -> None:
    server, api = run.server, run.tenant.api
    stuck_id = run.stuck_post["destinations"][0]["id"]
    with receiving() as receiver:
        host = receiver.url.split("/")[2]
        before = server.settings.outbound_allow_hosts
        server.settings.outbound_allow_hosts = [*before, host]
        try:
            api.ok(
                api.post(
                    "/webhooks",
                    json={
                        "url": receiver.url,
                        "event_types": ["post.stuck", "account.token_expiring"],
                    },
                ),
                201,
            )
            # The engagement runner's own steps, over the server's store: the check, then
            # the outbox's fan-out and deliveries (what `murmur worker` loops over).
            engagement = engagement_for(server.settings, server.store)
            steps = engagement.steps()
            try:
                engagement.check_reliability()
                steps["webhooks"]()
                # Delivered within the step (the receiver answers 204 at once).
                wait_for(lambda: len(receiver.requests) >= 3, "the three events", timeout=60)
                mine = [
                    b
                    for b in receiver.json_bodies()
                    if b["workspace_id"] == run.tenant.workspace_id
                ]
                # A later check sees the same stuck claim and the same tokens: nothing new.
                assert engagement.check_reliability() == 0
                steps["reliability"]()  # the loop's step, throttled or not, sends nothing
                steps["webhooks"]()
            finally:
                engagement.http.close()
        finally:
            server.settings.outbound_allow_hosts = before
        after = receiver.json_bodies()
        headers = [r.headers for r in receiver.requests]
    assert len(after) == 3, after
    by_type: dict[str, list[dict[str, Any]]] = {}
    for body in mine:
        by_type.setdefault(body["type"], []).append(body)
    (stuck_event,) = by_type["post.stuck"]
    assert stuck_event["data"]["destination"]["destination_id"] == stuck_id
    assert stuck_event["data"]["post"]["id"] == run.stuck_post["id"]
    tokens = sorted(e["data"]["token"]["account_id"] for e in by_type["account.token_expiring"])
    assert tokens == sorted([run.expiring, run.expired])
    assert {e["data"]["account"]["id"] for e in by_type["account.token_expiring"]} == set(tokens)
    # Each event's id is the one its marker recorded, and the one its header names.
    assert sorted(h["Murmur-Event-Id"] for h in headers) == sorted(b["id"] for b in after)

    def markers(cur: Cursor) -> dict[str, str]:
        rows = fetch_all(
            cur,
            "SELECT subject_id, event_id FROM webhook_alerts WHERE workspace_id = ?",
            [run.tenant.workspace_id],
        )
        return {str(r["subject_id"]): str(r["event_id"]) for r in rows}

    sent = {stuck_event["data"]["destination"]["destination_id"]: stuck_event["id"]}
    sent |= {e["data"]["token"]["account_id"]: e["id"] for e in by_type["account.token_expiring"]}
    assert server.store.read(markers) == sent
