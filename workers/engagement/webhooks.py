"""Outbound webhooks: fan the outbox out to endpoints, deliver signed POSTs, retry with backoff."""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from connectors import outbound
from warehouse import webhooks as repo
from warehouse.cursor import Cursor
from warehouse.errors import DuplicateKeyError
from warehouse.ids import utcnow
from warehouse.store import Store

log = structlog.get_logger(__name__)

SIGNATURE_HEADER = "Murmur-Signature"
# (status, response status, latency ms, error, next attempt)
Outcome = tuple[str, int | None, float | None, str | None, datetime | None]


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``, like Stripe's signature header."""
    t = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def verify(secret: str, body: bytes, header: str, *, tolerance: float = 300.0) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance`` seconds of now."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        t = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(time.time() - t) > tolerance:
        return False
    expected = sign(secret, body, t).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


@dataclass(frozen=True)
class DeliveryPolicy:
    """How deliveries are attempted: per-attempt timeout, attempts, backoff."""

    max_attempts: int = 8
    base_delay: float = 30.0  # seconds before the 2nd attempt; doubles each time
    timeout: float = 10.0
    lease_seconds: float = 120.0

    def delay(self, attempts: int) -> timedelta:
        """The wait after the ``attempts``-th failed attempt: base * 2^(attempts-1)."""
        return timedelta(seconds=self.base_delay * 2 ** max(attempts - 1, 0))


def dispatch(store: Store, limit: int = 200) -> int:
    """Turn undispatched outbox events into pending deliveries; returns the events handled."""

    # One transaction, so an event is never half fanned out; two runners fanning out one
    # batch meet on the unique (event, endpoint) key and the second writes nothing.
    def fan_out(cur: Cursor) -> int:
        events = repo.undispatched_events(cur, limit)
        if events:
            repo.fan_out(cur, events, repo.live_endpoints(cur), utcnow())
        return len(events)

    try:
        return store.run(fan_out)
    except DuplicateKeyError:
        return 0  # another runner fanned the same events out first


def _secret(store: Store, stored: str, workspace_id: str) -> str:
    """The endpoint's signing secret, unsealed (warehouse/sealing.py)."""
    if store.sealer is None:
        raise RuntimeError("the store was opened without its data directory's sealing key")
    return store.sealer.unseal(stored, workspace_id)


def deliver_due(
    store: Store,
    worker: str,
    policy: DeliveryPolicy,
    client: outbound.OutboundClient,
    limit: int = 20,
) -> int:
    """Attempt every due delivery once; returns how many were attempted."""
    with store.transaction() as cur:
        claimed = repo.claim_deliveries(
            cur, worker, lease_seconds=policy.lease_seconds, limit=limit
        )
    for delivery in claimed:
        with store.transaction() as cur:
            endpoint = repo.endpoint_for_delivery(cur, delivery.endpoint_id)
        attempts = delivery.attempts
        outcome: Outcome
        if endpoint is None or endpoint.deleted_at is not None or not endpoint.enabled:
            outcome = ("failed", None, None, "the endpoint was deleted or disabled", None)
        else:
            secret = _secret(store, endpoint.secret, endpoint.workspace_id)
            outcome = _attempt(client, endpoint.url, secret, delivery, policy)
            status, code, ms, error, _ = outcome
            if status != "succeeded":
                if attempts >= policy.max_attempts:
                    outcome = ("failed", code, ms, error, None)
                else:
                    outcome = ("pending", code, ms, error, utcnow() + policy.delay(attempts))
        status, code, ms, error, retry_at = outcome
        with store.transaction() as cur:
            repo.finish_delivery(
                cur,
                delivery.id,
                worker,
                status=status,
                response_status=code,
                response_ms=ms,
                error=error,
                next_attempt_at=retry_at,
            )
        log.info(
            "webhook.attempt",
            delivery=delivery.id,
            event_type=delivery.event_type,
            attempt=attempts,
            status=status,
            response=code,
        )
    return len(claimed)


def _attempt(
    client: outbound.OutboundClient,
    url: str,
    secret: str,
    delivery: repo.DeliveryRow,
    policy: DeliveryPolicy,
) -> Outcome:
    body = delivery.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Murmur-Webhooks/1",
        SIGNATURE_HEADER: sign(secret, body),
        "Murmur-Event": delivery.event_type,
        "Murmur-Event-Id": delivery.event_id,
        "Murmur-Delivery": delivery.id,
    }
    started = time.monotonic()
    try:
        # The body is never read (max_bytes=0): a receiver cannot make the worker hold it.
        answer = client.request("POST", url, content=body, headers=headers, timeout=policy.timeout)
    except outbound.OutboundError as exc:
        # The tenant reads this log: one fixed text per class and no latency, so that
        # neither the OS error nor the timing tells which internal ports are open.
        log.info("webhook.attempt_failed", delivery=delivery.id, detail=str(exc)[:500])
        return "pending", None, None, exc.reason, None
    ms = round((time.monotonic() - started) * 1000, 1)
    if 200 <= answer.status_code < 300:
        return "succeeded", answer.status_code, ms, None, None
    return "pending", answer.status_code, ms, f"HTTP {answer.status_code}", None
