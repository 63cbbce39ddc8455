"""The simulator's mutable side: the clock override, registered accounts, and injected faults."""

from __future__ import annotations

import base64
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from simulator.journal import Journal
from simulator.world import PLATFORMS, Account, Post, World, _rng

FAULT_KINDS = (
    "429",
    "500",
    "503",
    "expired_token",
    "deleted",
    "counter_drop",
    "metric_error",
    "reject",
    "timeout_after_commit",
)
WRITE_ONLY_KINDS = ("reject", "timeout_after_commit")
RANDOM_KINDS = ("429", "500", "503")
ID_BLOCK = 1000  # ids reserved in the journal at a time, so a restart never hands one out twice


@dataclass
class Fault:
    """One injected failure: consumed by the next matching call (``deleted`` is permanent)."""

    kind: str
    retry_after: int = 2
    post_id: str | None = None
    factor: float = 0.9
    metric: str | None = None
    message: str | None = None  # reject: the platform's message
    delay: float = 5.0  # timeout_after_commit: seconds the answer is held back
    on: str = "any"  # any call, or "write": only calls that write


@dataclass
class Sim:
    """Everything the handlers share; one lock guards the clock, faults and call counters."""

    world: World
    fault_rate: float = 0.0
    fixed_now: datetime | None = None
    queues: dict[str, deque[Fault]] = field(default_factory=lambda: {p: deque() for p in PLATFORMS})
    drops: dict[str, list[Fault]] = field(default_factory=lambda: {p: [] for p in PLATFORMS})
    metric_errors: dict[str, list[Fault]] = field(
        default_factory=lambda: {p: [] for p in PLATFORMS}
    )
    deleted: dict[str, dict[str, datetime]] = field(
        default_factory=lambda: {p: {} for p in PLATFORMS}
    )
    writes: dict[str, deque[Fault]] = field(default_factory=lambda: {p: deque() for p in PLATFORMS})
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLATFORMS, 0))
    lock: threading.Lock = field(default_factory=threading.Lock)
    # What the write APIs did: published posts (with the client's text), replies per thread,
    # and half-done objects (containers, upload sessions, media, publish ids) by id.
    published: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    post_meta: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    sequence: int = 0
    # Where the write side is remembered across restarts (None: this process only).
    journal: Journal | None = None
    reserved: int = 0  # ids up to here are recorded as handed out

    def next_id(self) -> int:
        """A number for ids of containers, uploads, replies: unique across restarts too."""
        with self.lock:
            self.sequence += 1
            if self.journal is not None and self.sequence > self.reserved:
                self.reserved = self.sequence + ID_BLOCK
                self.journal.append("ids", upto=self.reserved)
            return self.sequence

    def restore(self) -> int:
        """Replay the journal into this fresh state; returns the number of events replayed."""
        if self.journal is None:
            return 0
        journal, self.journal = self.journal, None  # replaying must not write the events again
        count = 0
        try:
            for event in journal.replay():
                self._apply(event)
                count += 1
        finally:
            self.journal = journal
        return count

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event["kind"]
        if kind == "account":
            self.register(
                event["platform"],
                event["external_id"],
                event["handle"],
                kind=event["account_kind"],
                category=event.get("category"),
                display_name=event.get("display_name"),
            )
        elif kind == "post":
            account = self.world.account(event["platform"], event["account"])
            if account is None or account.external_id != event["account"]:
                return
            self.world.publish(
                account,
                event["text"],
                event["media_type"],
                parse_iso(event["published_at"]),
                number=int(event["number"]),
            )
            entry = {k: v for k, v in event.items() if k not in ("v", "kind", "number")}
            self.record_post(entry)
        elif kind == "reply":
            self.add_reply(event["platform"], event["thread"], event["entry"])
        elif kind == "clock":
            self.fixed_now = parse_iso(event["now"]) if event.get("now") else None
        elif kind == "ids":
            self.sequence = self.reserved = max(self.reserved, int(event["upto"]))

    def register(
        self,
        platform: str,
        external_id: str,
        handle: str,
        *,
        kind: str = "own",
        category: str | None = None,
        display_name: str | None = None,
    ) -> Account:
        """Make an account exist (idempotent by external id), remembered across restarts."""
        known = self.world.account(platform, external_id)
        if known is not None and known.external_id == external_id:
            return known
        account = self.world.register(
            platform, external_id, handle, kind=kind, category=category, display_name=display_name
        )
        if self.journal is not None:
            self.journal.append(
                "account",
                platform=platform,
                external_id=external_id,
                handle=handle,
                account_kind=kind,
                category=category,
                display_name=display_name,
            )
        return account

    def publish(
        self,
        account: Account,
        text: str,
        media_type: str,
        now: datetime,
        *,
        meta: dict[str, Any] | None = None,
        media_count: int = 0,
    ) -> Post:
        """Make a post part of the world and of the publish log, remembered across restarts."""
        post = self.world.publish(account, text, media_type, now)
        entry = {
            "platform": account.platform,
            "account": account.external_id,
            "external_id": post.external_id,
            "text": text,
            "media_type": media_type,
            "media_count": media_count,
            "published_at": now.isoformat(),
            "meta": meta or {},
        }
        if self.journal is not None:
            self.journal.append("post", number=post.number, **entry)
        self.record_post(entry)
        return post

    def next_write_fault(self, platform: str, commit: bool) -> Fault | None:
        """The write-scoped fault due now; ``timeout_after_commit`` waits for a committing call."""
        with self.lock:
            queue = self.writes[platform]
            if not queue:
                return None
            if queue[0].kind == "timeout_after_commit" and not commit:
                return None
            return queue.popleft()

    def record_post(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.published.append(entry)
            self.post_meta[(entry["platform"], entry["external_id"])] = entry.get("meta") or {}

    def meta(self, platform: str, external_id: str) -> dict[str, Any]:
        """What the client attached to a published post beyond its text (tags, note, fields)."""
        with self.lock:
            return dict(self.post_meta.get((platform, external_id), {}))

    def add_reply(self, platform: str, thread: str, entry: dict[str, Any]) -> None:
        with self.lock:
            self.replies.setdefault((platform, thread), []).append(entry)
            if self.journal is not None:
                self.journal.append("reply", platform=platform, thread=thread, entry=entry)

    def thread_replies(self, platform: str, thread: str) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.replies.get((platform, thread), ()))

    def now(self, at: str | None = None) -> datetime:
        """The world's time: ``?at=`` when given, else the admin override, else the real clock."""
        if at:
            return parse_iso(at)
        with self.lock:
            return self.fixed_now or datetime.now(UTC)

    def set_clock(self, now: datetime | None, advance_seconds: float | None) -> datetime:
        with self.lock:
            base = now or self.fixed_now or datetime.now(UTC)
            if advance_seconds:
                base = base + timedelta(seconds=advance_seconds)
            self.fixed_now = base
            # Remembered: a restart back on the real clock could put the world before posts
            # published at the set time (hidden again, their counters back to zero).
            if self.journal is not None:
                self.journal.append("clock", now=base.isoformat())
            return base

    def reset_clock(self) -> None:
        with self.lock:
            self.fixed_now = None
            if self.journal is not None:
                self.journal.append("clock", now=None)

    def inject(self, platform: str, fault: Fault, count: int) -> None:
        with self.lock:
            if fault.kind == "deleted" and fault.post_id:
                self.deleted[platform][fault.post_id] = self.fixed_now or datetime.now(UTC)
            elif fault.kind == "counter_drop":
                self.drops[platform].extend(fault for _ in range(count))
            elif fault.kind == "metric_error":
                self.metric_errors[platform].extend(fault for _ in range(count))
            elif fault.kind in WRITE_ONLY_KINDS or fault.on == "write":
                self.writes[platform].extend(fault for _ in range(count))
            else:
                self.queues[platform].extend(fault for _ in range(count))

    def clear(self) -> None:
        with self.lock:
            for platform in PLATFORMS:
                self.queues[platform].clear()
                self.writes[platform].clear()
                self.drops[platform].clear()
                self.metric_errors[platform].clear()
                self.deleted[platform].clear()

    def next_fault(self, platform: str) -> Fault | None:
        """The fault this call must answer with: queued ones first, then the random rate."""
        with self.lock:
            self.calls[platform] += 1
            if self.queues[platform]:
                return self.queues[platform].popleft()
            call = self.calls[platform]
        if self.fault_rate > 0:
            r = _rng(self.world.seed, "fault", platform, call)
            if r.random() < self.fault_rate:
                return Fault(kind=r.choice(RANDOM_KINDS), retry_after=1)
        return None

    def take_drop(self, platform: str, post_id: str) -> float:
        """The factor to scale this post's counters by (1.0 unless a counter drop is due)."""
        with self.lock:
            for i, fault in enumerate(self.drops[platform]):
                if fault.post_id in (None, post_id):
                    del self.drops[platform][i]
                    return fault.factor
        return 1.0

    def take_metric_error(self, platform: str, metrics: list[str]) -> str | None:
        """A requested metric the platform should refuse this time, if one is due."""
        with self.lock:
            for i, fault in enumerate(self.metric_errors[platform]):
                if fault.metric in metrics:
                    del self.metric_errors[platform][i]
                    return fault.metric
        return None

    def metric_error_due(self, platform: str, metrics: list[str]) -> str | None:
        """The requested metric ``take_metric_error`` would refuse, left due."""
        with self.lock:
            for fault in self.metric_errors[platform]:
                if fault.metric in metrics:
                    return fault.metric
        return None

    def is_deleted(self, platform: str, post_id: str, now: datetime) -> bool:
        with self.lock:
            when = self.deleted[platform].get(post_id)
        return when is not None


def parse_iso(text: str) -> datetime:
    parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace(" ", "+"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def encode_cursor(*parts: object) -> str:
    raw = ":".join(str(p) for p in parts).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> list[str] | None:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return base64.urlsafe_b64decode(padded.encode()).decode().split(":")
    except (ValueError, UnicodeDecodeError):
        return None
