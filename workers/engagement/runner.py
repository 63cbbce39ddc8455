"""The engagement runner: inbox sync, reply delivery, content automations, publishing
reliability's alerts, webhook deliveries.

One loop, each pass doing every step once; a step that fails is logged and the others go on.
Every step claims its work with a single statement first (a lease, a compare-and-set or a
primary key), so several runners may run at once and none does a piece of work twice.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from connectors import outbound
from connectors.base import Publisher
from core.settings import Settings
from domain.analytics import publishing as reliability
from domain.inbox import drafts
from warehouse.ids import new_id, utcnow
from warehouse.store import Store
from workers.engagement import content_automations, inbox_sync, webhooks

log = structlog.get_logger(__name__)


@dataclass
class Platforms:
    """Publishers for each platform at the configured root URL (the simulator by default)."""

    root: str
    # The runner's stop: a platform call backing off before a retry gives up when it is set.
    stop: threading.Event
    _cache: dict[str, Publisher] = field(default_factory=dict)

    def publisher(self, platform: str) -> Publisher:
        if platform not in self._cache:
            from connectors import registry
            from connectors.http import PlatformHttp

            self._cache[platform] = registry.build_publisher(
                platform,
                base_url=registry.simulator_base_url(self.root, platform),
                token=registry.simulator_token(platform, "client"),
                http=PlatformHttp(stop=self.stop),
            )
        return self._cache[platform]

    @staticmethod
    def token(platform: str, external_id: str) -> str | None:
        from connectors.registry import simulator_token

        return simulator_token(platform, external_id)


@dataclass
class Engagement:
    """What one pass needs: the store, the platforms, the drafter, the delivery policy."""

    store: Store
    platforms: Platforms
    drafter: drafts.Drafter
    policy: webhooks.DeliveryPolicy
    http: outbound.OutboundClient  # for user-given URLs (webhooks, feeds) only
    worker: str
    sync_interval: float = 30.0
    # How often the stuck destinations and expiring tokens are looked for (a read; a write
    # only when one is new).
    reliability_interval: float = 15.0
    # Set to stop: the long steps (inbox sync) look at it between items.
    stop: threading.Event = field(default_factory=threading.Event)
    _next_check: float = field(default=0.0, init=False)

    def steps(self) -> dict[str, Callable[[], int]]:
        """Each loop's one round, by name (in a pass, the alerts before the webhooks)."""
        return {
            "inbox_sync": self._sync,
            "replies": self._replies,
            "content_automations": self._content,
            "reliability": self._reliability,
            "webhooks": self._webhooks,
        }

    def run_pass(self) -> dict[str, int]:
        """One round of every loop, one after the other; returns counts of what each did."""
        return {name: self._guarded(name, step) for name, step in self.steps().items()}

    @staticmethod
    def _guarded(name: str, step: Callable[[], int]) -> int:
        try:
            return step()
        except Exception:  # one failing round must not stop the loop
            log.exception("engagement.step_failed", step=name)
            return -1

    def loop(self, name: str, stop: threading.Event, poll_interval: float) -> None:
        """Run one step until ``stop``: each loop has its own thread, so a slow platform
        (inbox sync) never delays webhook deliveries or replies."""
        step = self.steps()[name]
        while not stop.is_set():
            self._guarded(name, step)
            stop.wait(poll_interval)

    def _webhooks(self) -> int:
        return webhooks.dispatch(self.store) + self._deliver()

    def _reliability(self) -> int:
        if time.monotonic() < self._next_check:
            return 0
        self._next_check = time.monotonic() + self.reliability_interval
        return self.check_reliability()

    def check_reliability(self) -> int:
        """Send each stuck destination and expiring token not sent yet as a webhook event
        (``post.stuck``, ``account.token_expiring``), each in the transaction that records it
        (domain/analytics/publishing.py); how many were sent."""
        now = utcnow()
        found = self.store.read(lambda cur: reliability.unsent_alerts(cur, now))
        if not found:
            return 0  # the usual case: a read, no write
        sent = self.store.run(lambda cur: reliability.send_alerts(cur, found, now))
        if sent:
            log.info("reliability.alerts_sent", events=sent)
        return sent

    def _sync(self) -> int:
        report = inbox_sync.sync_inbox(
            self.store,
            self.platforms.publisher,
            self.platforms.token,
            self.drafter,
            interval=self.sync_interval,
            stopping=self.stop.is_set,
        )
        return report.new_messages

    def _replies(self) -> int:
        report = inbox_sync.send_replies(
            self.store, self.worker, self.platforms.publisher, self.platforms.token
        )
        return report.sent + report.failed + report.retried

    def _content(self) -> int:
        return len(content_automations.run_due(self.store, self.http).posts)

    def _deliver(self) -> int:
        return webhooks.deliver_due(self.store, self.worker, self.policy, self.http)


def engagement_for(
    settings: Settings, store: Store, stop: threading.Event | None = None
) -> Engagement:
    """The runner's parts, configured from ``settings``; ``stop`` ends its loops."""
    stop = stop or threading.Event()
    return Engagement(
        store=store,
        platforms=Platforms(settings.platforms_url, stop),
        drafter=drafts.configured_drafter(settings),
        policy=webhooks.DeliveryPolicy(
            max_attempts=settings.webhook_max_attempts,
            base_delay=settings.webhook_retry_base_seconds,
            timeout=settings.webhook_timeout_seconds,
        ),
        http=outbound.OutboundClient(outbound.policy_for(settings.outbound_allow_hosts)),
        worker=f"{socket.gethostname()}:{os.getpid()}:{new_id('eng')}",
        sync_interval=settings.inbox_sync_interval_seconds,
        stop=stop,
    )


def run_engagement(
    settings: Settings, *, stop: threading.Event | None = None, poll_interval: float = 1.0
) -> None:
    """Run the engagement loops until ``stop`` is set (forever without one)."""
    store = settings.open_store()
    engagement = engagement_for(settings, store, stop)
    stop = engagement.stop
    log.info("engagement.start", worker=engagement.worker)
    threads = [
        threading.Thread(
            target=engagement.loop,
            args=(name, stop, poll_interval),
            name=f"engagement-{name}",
            daemon=True,
        )
        for name in engagement.steps()
    ]
    try:
        for thread in threads:
            thread.start()
        stop.wait()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        engagement.http.close()
        store.close()
        log.info("engagement.stop", worker=engagement.worker)
