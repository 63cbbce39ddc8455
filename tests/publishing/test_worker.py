"""The publishing worker against the simulator over real HTTP, with a real store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from benchmarks.servers import settings_env
from tests.publishing.conftest import (
    Sim,
    StartWorker,
    create_post,
    destination_rows,
    post_row,
    settled,
    unique_text,
    wait_for,
)
from tests.support import LiveServer, Tenant
from warehouse import publishing as repo
from warehouse import workspaces as ws_repo
from warehouse.posts import DestinationRow


def _attempts(server: LiveServer, destination_id: str) -> list[repo.AttemptRow]:
    return server.store.run(lambda cur: repo.attempts_of(cur, destination_id))


def _logged(server: LiveServer, destination_id: str, count: int) -> bool:
    """The attempt log holds ``count`` rows: it is written after the outcome, on its own."""
    return len(_attempts(server, destination_id)) >= count


Published = Callable[..., tuple[str, dict[str, Any], DestinationRow]]


@pytest.fixture
def published_through(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> Published:
    """``(label, platform, fault, **options)``: a post of the tenant's to ``platform`` alone, due
    as the simulator is given ``fault``, once a worker settled it: its text, the API's post and
    its one destination's row."""

    def publish(
        label: str, platform: str, fault: str, **options: Any
    ) -> tuple[str, dict[str, Any], DestinationRow]:
        text = unique_text(label)
        post = create_post(pub_tenant, text, [platform])
        sim.fault(platform, fault, **options)
        start_worker()
        wait_for(lambda: settled(pub_server, post["id"]), "the post to settle")
        (dst,) = destination_rows(pub_server, post)
        return text, post, dst

    return publish


def test_a_scheduled_post_is_published_once_at_its_time(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> None:
    text = unique_text("On time")
    post = create_post(pub_tenant, text, ["x", "bluesky"], in_seconds=2)
    start_worker()
    wait_for(lambda: settled(pub_server, post["id"]), "the post to settle")

    row = post_row(pub_server, post["id"])
    assert row.status == "published"
    scheduled = row.scheduled_at
    assert scheduled is not None
    published = []
    for dst in destination_rows(pub_server, post):
        assert dst.status == "published"
        assert dst.platform_post_id
        assert dst.attempts == 1
        assert dst.published_at is not None
        published.append(dst.published_at)
        # Not before its time: our attempt started after scheduled_at, and the platform's
        # own timestamp (whole seconds on some platforms) is not earlier either.
        wait_for(partial(_logged, pub_server, dst.id, 1), "the attempt log")
        (attempt,) = _attempts(pub_server, dst.id)
        assert attempt.started_at >= scheduled
        assert dst.published_at >= scheduled.replace(microsecond=0)
        assert sim.count(dst.platform, text) == 1
        on_platform = sim.posts(dst.platform, text)[0]
        platform_time = datetime.fromisoformat(on_platform["published_at"])
        assert platform_time >= scheduled.replace(microsecond=0, tzinfo=UTC)
    assert row.published_at == max(published)


def test_two_workers_never_publish_the_same_destination(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> None:
    texts = [unique_text(f"Race {i}") for i in range(40)]
    posts = [create_post(pub_tenant, t, ["x", "linkedin", "bluesky"], in_seconds=2) for t in texts]
    first, second = start_worker(concurrency=4), start_worker(concurrency=4)
    ids = [str(post["id"]) for post in posts]
    wait_for(lambda: all(settled(pub_server, i) for i in ids), "every post to settle")

    for post, text in zip(posts, texts, strict=True):
        assert post_row(pub_server, post["id"]).status == "published"
        for dst in destination_rows(pub_server, post):
            assert dst.status == "published"
            assert sim.count(dst.platform, text) == 1, (dst.platform, text)
            published = [a for a in _attempts(pub_server, dst.id) if a.outcome == "published"]
            assert len(published) == 1
    # Both took part (claims are ordered per worker, so neither starves the other).
    assert first.worker.counts.get("published", 0) > 0
    assert second.worker.counts.get("published", 0) > 0


def test_a_429_then_success_publishes_once(
    pub_server: LiveServer, sim: Sim, published_through: Published
) -> None:
    text, _, dst = published_through("Rate limited", "bluesky", "429", count=1, retry_after=1)
    assert dst.status == "published"
    assert dst.attempts == 2
    assert dst.error_code is None  # the success clears the earlier error
    assert sim.count("bluesky", text) == 1
    wait_for(partial(_logged, pub_server, dst.id, 2), "the attempt log")
    outcomes = [a.outcome for a in _attempts(pub_server, dst.id)]
    assert outcomes == ["retry", "published"]
    assert _attempts(pub_server, dst.id)[0].error_code == "rate_limited"


def test_an_expired_token_fails_clearly_and_marks_the_account(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, published_through: Published
) -> None:
    text, post, dst = published_through("Revoked", "x", "expired_token", count=1)
    assert post_row(pub_server, post["id"]).status == "failed"
    assert dst.status == "failed"
    assert dst.error_code == "auth_expired"
    assert "token" in (dst.error_message or "").lower()
    assert dst.attempts == 1  # permanent: no retry
    assert sim.count("x", text) == 0
    account = pub_server.store.run(
        lambda cur: ws_repo.get_account(cur, pub_tenant.workspace_id, dst.account_id)
    )
    assert account is not None
    assert account.status == "needs_reconnection"
    # Visible through the API too.
    shown = pub_tenant.api.ok(pub_tenant.api.get(f"/posts/{post['id']}"))
    assert shown["destinations"][0]["error"]["code"] == "auth_expired"


def test_some_destinations_failed_is_partially_published(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> None:
    text = unique_text("Half")
    post = create_post(pub_tenant, text, ["x", "linkedin"])
    sim.fault("linkedin", "reject", message="media type not supported")
    start_worker()
    wait_for(lambda: settled(pub_server, post["id"]), "the post to settle")

    row = post_row(pub_server, post["id"])
    assert row.status == "partially_published"
    by_platform = {d.platform: d for d in destination_rows(pub_server, post)}
    assert by_platform["x"].status == "published"
    assert by_platform["linkedin"].status == "failed"
    assert by_platform["linkedin"].error_code == "rejected"
    assert by_platform["linkedin"].attempts == 1
    assert row.published_at == by_platform["x"].published_at
    assert sim.count("x", text) == 1
    assert sim.count("linkedin", text) == 0


def test_canceled_and_rejected_posts_are_never_published(
    pub_server: LiveServer,
    pub_tenant: Tenant,
    review_tenant: Tenant,
    sim: Sim,
    start_worker: StartWorker,
) -> None:
    canceled_text, rejected_text = unique_text("Canceled"), unique_text("Rejected")
    canceled = create_post(pub_tenant, canceled_text, ["x"], in_seconds=1)
    pub_tenant.api.ok(pub_tenant.api.post(f"/posts/{canceled['id']}/cancel"))
    rejected = create_post(review_tenant, rejected_text, ["x"], in_seconds=1)
    assert rejected["status"] == "pending_approval"
    review_tenant.api.ok(
        review_tenant.api.post(
            f"/approvals/{rejected['approval']['item_id']}/action",
            json={"action": "reject", "comment": "off brand"},
        )
    )
    # A control post due after both: once it is out, both were due and passed over.
    control = create_post(pub_tenant, unique_text("Control"), ["x"], in_seconds=2.5)
    start_worker()
    wait_for(lambda: settled(pub_server, control["id"]), "the control post to settle")

    for post, text in ((canceled, canceled_text), (rejected, rejected_text)):
        assert post_row(pub_server, post["id"]).status == "canceled"
        (dst,) = destination_rows(pub_server, post)
        assert dst.status == "pending"
        assert dst.attempts == 0
        assert sim.count("x", text) == 0


def test_approving_a_post_whose_time_passed_publishes_it_at_once(
    pub_server: LiveServer, review_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> None:
    text = unique_text("Late approval")
    post = create_post(review_tenant, text, ["bluesky"], in_seconds=0.5)
    start_worker()
    scheduled = post_row(pub_server, post["id"]).scheduled_at
    assert scheduled is not None
    wait_for(lambda: datetime.now(UTC).replace(tzinfo=None) > scheduled, "the post's time to pass")
    assert post_row(pub_server, post["id"]).status == "pending_approval"
    review_tenant.api.ok(
        review_tenant.api.post(
            f"/approvals/{post['approval']['item_id']}/action", json={"action": "approve"}
        )
    )
    wait_for(lambda: settled(pub_server, post["id"]), "the approved post to settle")
    assert post_row(pub_server, post["id"]).status == "published"
    assert sim.count("bluesky", text) == 1


def _worker_process(pub_server: LiveServer, sim: Sim, **env: str) -> subprocess.Popen[bytes]:
    """`murmur worker --no-engagement` in a process of its own, on the test's store and sim."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "murmur",
            "worker",
            "--no-engagement",
            "--worker-id",
            f"worker-{uuid.uuid4().hex[:6]}",
        ],
        env=dict(
            os.environ,
            **settings_env(pub_server.settings),
            MURMUR_PLATFORMS_URL=sim.root,
            MURMUR_PUBLISHING_POLL_INTERVAL_SECONDS="0.05",
            **env,
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _held_mid_call(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, label: str, delay: float, **env: str
) -> tuple[str, dict[str, Any], subprocess.Popen[bytes]]:
    """A post to X due in a second, taken by a `murmur worker` process (``env``) whose call the
    platform committed and holds back ``delay`` seconds: its text, the post and the process."""
    text = unique_text(label)
    post = create_post(pub_tenant, text, ["x"], in_seconds=1)
    sim.fault("x", "timeout_after_commit", delay=delay)
    worker = _worker_process(pub_server, sim, **env)
    try:
        wait_for(lambda: sim.count("x", text) == 1, "the platform to create the post")
    except BaseException:
        worker.kill()
        worker.wait(timeout=30)
        raise
    return text, post, worker


def test_killing_the_worker_mid_publish_then_another_publishes_exactly_once(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> None:
    # The platform creates the post, then holds its answer back: the worker is mid-call.
    text, post, victim = _held_mid_call(
        pub_server,
        pub_tenant,
        sim,
        "Crash",
        30,
        MURMUR_PUBLISHING_LEASE_SECONDS="6",
        MURMUR_PUBLISHING_HTTP_TIMEOUT_SECONDS="5",
    )
    try:
        os.kill(victim.pid, signal.SIGKILL)
    finally:
        victim.wait(timeout=30)
    (dst,) = destination_rows(pub_server, post)
    assert dst.status == "publishing"  # the claim the dead worker left behind

    start_worker()
    wait_for(lambda: settled(pub_server, post["id"]), "the post to settle")

    (dst,) = destination_rows(pub_server, post)
    assert dst.status == "published"
    assert dst.attempts == 2
    assert sim.count("x", text) == 1
    assert dst.platform_post_id == sim.posts("x", text)[0]["external_id"]
    # The attempt log is written beside the outcome, in a statement of its own.
    wait_for(partial(_logged, pub_server, dst.id, 1), "the attempt log")
    assert [a.outcome for a in _attempts(pub_server, dst.id)] == ["recovered"]


def test_a_timeout_after_commit_is_recovered_not_reposted(
    pub_server: LiveServer, sim: Sim, published_through: Published
) -> None:
    text, _, dst = published_through("Timeout", "bluesky", "timeout_after_commit", delay=8)
    assert dst.status == "published"
    assert sim.count("bluesky", text) == 1
    # The attempt log is written beside the outcome, in a statement of its own.
    wait_for(partial(_logged, pub_server, dst.id, 2), "the attempt log")
    assert [a.outcome for a in _attempts(pub_server, dst.id)] == ["retry", "recovered"]
    assert _attempts(pub_server, dst.id)[0].error_code == "timeout"


def test_a_stopped_worker_leaves_a_call_the_platform_holds_back_to_its_lease(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim
) -> None:
    """SIGTERM ends `murmur worker` within its stop bound even mid-call: the call is left to
    its lease (what another worker then does with it: the SIGKILL test above)."""
    # The platform creates the post, then holds its answer back far past the stop bound.
    text, post, stopped = _held_mid_call(
        pub_server,
        pub_tenant,
        sim,
        "Stop",
        600,
        # The lease must outlast the call's timeout, which outlasts the test.
        MURMUR_PUBLISHING_LEASE_SECONDS="900",
        MURMUR_PUBLISHING_HTTP_TIMEOUT_SECONDS="800",
        MURMUR_WORKER_STOP_SECONDS="1",
    )
    try:
        stopped.send_signal(signal.SIGTERM)
        # Bounded by the stop setting, not by the call (600 s): generous for a busy machine.
        assert stopped.wait(timeout=120) == 0
    finally:
        if stopped.poll() is None:
            stopped.kill()
            stopped.wait(timeout=30)
    (dst,) = destination_rows(pub_server, post)
    assert dst.status == "publishing"  # left under its lease
    assert sim.count("x", text) == 1
