"""The publishing worker: claims due destinations with a lease and publishes each exactly once.

One loop claims as many due destinations as it has free threads (one statement), confirms
their posts are still live (one statement), and hands each to a thread that asks the platform
whether an earlier attempt already went through (on any attempt after the first), publishes,
and records the outcome under its claim. See docs/publishing.md.
"""

from __future__ import annotations

import os
import queue
import random
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeVar

import structlog

from connectors.base import AccountRef, MediaFile, Published, Publisher, PublishRequest
from core.errors import MurmurError
from core.settings import Settings
from warehouse import publishing as repo
from warehouse import workspaces as ws_repo
from warehouse.ids import new_id, to_db, utcnow
from warehouse.publishing import Settlement
from warehouse.rows import Cursor
from warehouse.store import Store
from workers.publishing.policy import RetryPolicy, Verdict, classify

log = structlog.get_logger(__name__)

T = TypeVar("T")

# find_published looks back from the first attempt by this much more, in case the platform's
# clock runs behind ours.
_CLOCK_SKEW = timedelta(minutes=2)
MediaKind = Literal["image", "video", "document"]
_BATCH = 500


class PermanentJobError(MurmurError):
    """Something about the destination itself (not the platform) that no retry will fix."""

    code: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Job:
    """One claimed destination, with everything its platform call needs."""

    destination_id: str
    post_id: str
    workspace_id: str
    account_id: str
    platform: str
    attempt: int
    first_attempt_at: datetime  # naive UTC
    scheduled_at: datetime  # naive UTC
    text: str
    external_id: str | None
    handle: str | None
    account_status: str | None
    options: dict[str, object] = field(default_factory=dict)
    media: tuple[MediaFile, ...] = ()
    media_problem: str | None = None


PublisherFactory = Callable[[str], Publisher]


def default_publishers(settings: Settings, policy: RetryPolicy) -> PublisherFactory:
    """Publishers at the configured platforms' root (the simulator by default), one try each."""
    from connectors.http import PlatformHttp
    from connectors.registry import build_publisher, simulator_base_url

    def make(platform: str) -> Publisher:
        # The worker owns retries (as new claims, with the platform checked first), so the
        # HTTP layer must not retry a POST behind its back.
        http = PlatformHttp(timeout=policy.http_timeout, max_attempts=1)
        return build_publisher(
            platform, base_url=simulator_base_url(settings.platforms_url, platform), http=http
        )

    return make


def account_token(platform: str, external_id: str) -> str:
    """The token to publish as one of our accounts (the simulator mints its own)."""
    from connectors.registry import simulator_token

    return simulator_token(platform, external_id)


class Worker:
    """A publishing worker over one store handle; ``run`` until ``stop`` is set."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        *,
        worker_id: str | None = None,
        policy: RetryPolicy | None = None,
        concurrency: int = 16,
        poll_interval: float = 0.5,
        sweep_interval: float = 5.0,
        publishers: PublisherFactory | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.worker_id = worker_id or new_id("wrk")
        self.policy = policy or RetryPolicy()
        self.concurrency = max(1, concurrency)
        self.poll_interval = poll_interval
        self.sweep_interval = sweep_interval
        self._factory = publishers or default_publishers(settings, self.policy)
        self._publishers: dict[str, Publisher | PermanentJobError] = {}
        self._publishers_lock = threading.Lock()
        self._rng = random.Random()
        self.counts: dict[str, int] = {}
        self._counts_lock = threading.Lock()
        self.recorder: Recorder

    def _count(self, outcome: str) -> None:
        with self._counts_lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1

    # -- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Claim and publish until ``stop`` is set, then finish the calls in flight."""
        self._db(
            lambda cur: repo.register_worker(
                cur, self.worker_id, socket.gethostname(), os.getpid(), self.concurrency, utcnow()
            )
        )
        log.info("publishing.worker_started", worker=self.worker_id)
        self.recorder = Recorder(self.store, self.worker_id, self._count)
        in_flight: set[Future[None]] = set()
        next_sweep = 0.0
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="publish") as pool:
            while not stop.is_set():
                in_flight = {f for f in in_flight if not f.done()}
                claimed = 0
                free = self.concurrency - len(in_flight)
                if free > 0:
                    try:
                        jobs = self.claim(free)
                    except Exception:  # the store is briefly unreachable: try again next poll
                        log.exception("publishing.claim_failed", worker=self.worker_id)
                        jobs = []
                    claimed = len(jobs)
                    in_flight.update(pool.submit(self.process, job) for job in jobs)
                if time.monotonic() >= next_sweep:
                    self.sweep()
                    next_sweep = time.monotonic() + self.sweep_interval
                if claimed and claimed == free:
                    # Saturated: claim again as soon as a thread frees up.
                    wait(in_flight, timeout=self.poll_interval, return_when=FIRST_COMPLETED)
                elif claimed == 0:
                    stop.wait(self.poll_interval)
            wait(in_flight)
        self.recorder.close()
        self._db(lambda cur: repo.heartbeat(cur, self.worker_id, utcnow(), stopped=True))
        log.info("publishing.worker_stopped", worker=self.worker_id, counts=self.counts)

    def sweep(self) -> None:
        """Heartbeat, and settle posts whose roll-up a crash skipped."""
        try:
            now = utcnow()
            self._db(lambda cur: repo.heartbeat(cur, self.worker_id, now))
            settled = self._db(lambda cur: repo.roll_up(cur, None, now))
            if settled:
                log.info("publishing.swept", posts=len(settled))
        except Exception:
            log.exception("publishing.sweep_failed", worker=self.worker_id)

    # -- claiming ----------------------------------------------------------------------------

    def claim(self, limit: int) -> list[Job]:
        """Claim up to ``limit`` due destinations and load what publishing them needs."""
        now = utcnow()
        lease = now + timedelta(seconds=self.policy.lease_seconds)
        claimed = self._db(lambda cur: repo.claim_due(cur, self.worker_id, now, lease, limit))
        if not claimed:
            return []
        post_ids = sorted({row.post_id for row in claimed})
        live = self._db(lambda cur: repo.confirm_posts(cur, post_ids, now))
        dead = [row.id for row in claimed if row.post_id not in live]
        if dead:
            # Canceled (or returned) between our claim and the confirmation: never sent.
            self._db(lambda cur: repo.release(cur, dead, self.worker_id, utcnow()))
            log.info("publishing.released", destinations=len(dead))
        ids = [row.id for row in claimed if row.post_id in live]
        rows = self._db(lambda cur: repo.load_jobs(cur, ids))
        wanted: dict[str, set[str]] = {}
        for job_row in rows:
            if job_row.media_ids:
                wanted.setdefault(job_row.workspace_id, set()).update(job_row.media_ids)
        media = self._db(lambda cur: _media_of(cur, wanted)) if wanted else {}
        return [self._job(row, media) for row in rows]

    def _job(self, row: repo.JobRow, media: dict[tuple[str, str], repo.MediaFileRow]) -> Job:
        files: list[MediaFile] = []
        problem = None
        for media_id in row.media_ids:
            # Only the post's own workspace's media: another's id is as missing.
            found = media.get((row.workspace_id, media_id))
            path = self.settings.media_dir / found.storage_key if found else None
            if found is None or path is None or not path.is_file():
                problem = f"Media {media_id} is missing from the media store."
                break
            kind: MediaKind = "document"
            if found.kind in ("image", "video"):
                kind = "image" if found.kind == "image" else "video"
            files.append(MediaFile(str(path), kind, found.content_type, found.alt_text))
        options = row.platform_options.get(row.platform, {})
        return Job(
            destination_id=row.id,
            post_id=row.post_id,
            workspace_id=row.workspace_id,
            account_id=row.account_id,
            platform=row.platform,
            attempt=row.attempts,
            first_attempt_at=row.first_attempt_at,
            scheduled_at=row.scheduled_at,
            text=row.text,
            external_id=row.external_id,
            handle=row.handle,
            account_status=row.account_status,
            options=dict(options) if isinstance(options, dict) else {},
            media=tuple(files),
            media_problem=problem,
        )

    # -- one destination ---------------------------------------------------------------------

    def process(self, job: Job) -> None:
        """Publish one claimed destination (or find its earlier publication), then record it."""
        try:
            self.recorder.put(self._attempt(job))
        except Exception:
            # Unreachable in practice (_attempt catches platform errors); if it happens the
            # lease expires and the next claim asks the platform before posting again.
            log.exception("publishing.attempt_crashed", destination=job.destination_id)

    def _attempt(self, job: Job) -> Settlement:
        started = utcnow()
        try:
            request = self._request(job)
            publisher = self._publisher(job.platform)
            found = None
            if job.attempt > 1:
                # An earlier attempt may have reached the platform (a timeout, a crash after
                # the call): ask before posting again, so a retry never posts twice.
                found = publisher.find_published(request, since=self._since(job))
            how = "recovered" if found is not None else "published"
            if found is None:
                found = publisher.publish(request)
        except PermanentJobError as exc:
            return self._settlement(job, started, "failed", code=exc.code, message=str(exc))
        except Exception as exc:
            return self._after_error(job, classify(exc), started)
        return self._settlement(job, started, how, found=found)

    def _after_error(self, job: Job, verdict: Verdict, started: datetime) -> Settlement:
        if verdict.action in ("reconnect", "fail"):
            return self._settlement(
                job,
                started,
                "failed",
                code=verdict.code,
                message=verdict.message,
                reconnect=verdict.action == "reconnect",
            )
        if self.policy.exhausted(job.attempt):
            if verdict.unknown_outcome:
                # Before giving up on an attempt whose outcome is unknown, ask once more.
                try:
                    request = self._request(job)
                    publisher = self._publisher(job.platform)
                    found = publisher.find_published(request, since=self._since(job))
                except Exception:
                    found = None
                if found is not None:
                    return self._settlement(job, started, "recovered", found=found)
            message = f"Gave up after {job.attempt} attempts: {verdict.message}"
            return self._settlement(job, started, "failed", code=verdict.code, message=message)
        delay = self.policy.delay(job.attempt, verdict, self._rng)
        return self._settlement(
            job,
            started,
            "retry",
            code=verdict.code,
            message=verdict.message,
            next_attempt_at=utcnow() + timedelta(seconds=delay),
        )

    def _settlement(
        self,
        job: Job,
        started: datetime,
        outcome: str,
        *,
        found: Published | None = None,
        code: str | None = None,
        message: str | None = None,
        next_attempt_at: datetime | None = None,
        reconnect: bool = False,
    ) -> Settlement:
        status = {"published": "published", "recovered": "published", "retry": "pending"}.get(
            outcome, "failed"
        )
        done = Settlement(
            destination_id=job.destination_id,
            post_id=job.post_id,
            workspace_id=job.workspace_id,
            attempt=job.attempt,
            status=status,
            outcome=outcome,
            started_at=started,
            finished_at=utcnow(),
            platform_post_id=found.external_id if found else None,
            platform_url=found.url if found else None,
            published_at=(to_db(found.published_at) or utcnow()) if found else None,
            error_code=code,
            error_message=message,
            next_attempt_at=next_attempt_at,
            platform=job.platform,
        )
        if reconnect:
            self.recorder.reconnect(job.account_id)
        return done

    def _request(self, job: Job) -> PublishRequest:
        if job.account_status is None or job.external_id is None:
            raise PermanentJobError(
                "account_missing", f"Account {job.account_id} no longer exists."
            )
        if job.account_status != "active":
            raise PermanentJobError(
                "account_needs_reconnection",
                f"Account {job.account_id} is {job.account_status}; reconnect it and post again.",
            )
        if job.media_problem:
            raise PermanentJobError("media_missing", job.media_problem)
        account = AccountRef(
            job.platform,
            job.external_id,
            job.handle or job.external_id,
            kind="own",
            account_id=job.account_id,
            access_token=account_token(job.platform, job.external_id),
        )
        return PublishRequest(
            account=account,
            text=job.text,
            client_ref=job.destination_id,
            media=job.media,
            options=job.options,
        )

    def _publisher(self, platform: str) -> Publisher:
        with self._publishers_lock:
            found = self._publishers.get(platform)
            if found is None:
                try:
                    found = self._factory(platform)
                except ValueError as exc:
                    found = PermanentJobError(
                        "unsupported_platform", f"Murmur cannot publish to {platform} yet: {exc}"
                    )
                self._publishers[platform] = found
        if isinstance(found, PermanentJobError):
            raise PermanentJobError(found.code, str(found))
        return found

    def _since(self, job: Job) -> datetime:
        return job.first_attempt_at.replace(tzinfo=UTC) - _CLOCK_SKEW

    def _db(self, work: Callable[[Cursor], T]) -> T:
        return self.store.run(work)


class Recorder:
    """Writes outcomes in batches: one statement settles many destinations under their claims.

    The platform calls run on many threads; recording each outcome with its own statements
    would serialize them on the store (a remote store has one connection). Batching keeps
    the store's share of a publication to a fraction of a statement.
    """

    def __init__(self, store: Store, worker_id: str, counts: Callable[[str], None]) -> None:
        self.store = store
        self.worker_id = worker_id
        self._count = counts
        self._queue: queue.Queue[Settlement | None] = queue.Queue()
        self._accounts: set[str] = set()
        self._accounts_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="publish-recorder", daemon=True)
        self._thread.start()

    def put(self, done: Settlement) -> None:
        self._queue.put(done)

    def reconnect(self, account_id: str) -> None:
        """Mark an account as needing reconnection with the next batch."""
        with self._accounts_lock:
            self._accounts.add(account_id)

    def close(self) -> None:
        """Record everything queued, then stop."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        closing = False
        while not closing:
            first = self._queue.get()
            batch: list[Settlement] = []
            if first is None:
                closing = True
            else:
                batch.append(first)
            while len(batch) < _BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    closing = True
                    break
                batch.append(more)
            self._flush(batch)

    def _flush(self, batch: list[Settlement]) -> None:
        with self._accounts_lock:
            accounts, self._accounts = self._accounts, set()
        try:
            # Accounts first: by the time a destination shows failed with auth_expired, its
            # account already says needs_reconnection.
            for account_id in sorted(accounts):
                self.store.run(
                    lambda cur, a=account_id: ws_repo.set_account_status(  # type: ignore[misc]
                        cur, a, "needs_reconnection"
                    ),
                )
                log.warning("publishing.account_needs_reconnection", account=account_id)
            if not batch:
                return
            now = utcnow()
            kept = self.store.run(lambda cur: repo.settle(cur, self.worker_id, batch, now))
            outcomes = [s.outcome if s.destination_id in kept else "lost_lease" for s in batch]
            for s, outcome in zip(batch, outcomes, strict=True):
                self._count(outcome)
                if outcome == "lost_lease":
                    # Our lease expired and another worker took over: it asks the platform
                    # first, so this outcome is recovered there, not repeated.
                    log.warning("publishing.lease_lost", destination=s.destination_id)
                elif s.status == "published":
                    # The one line a console shows for a publication (murmur/logs.py).
                    log.info(
                        "publishing.published",
                        post=s.post_id,
                        platform=s.platform,
                        url=s.platform_url,
                        destination=s.destination_id,
                        recovered=outcome == "recovered",
                    )
                elif s.status == "failed":
                    log.warning(
                        "publishing.destination_failed",
                        post=s.post_id,
                        platform=s.platform,
                        destination=s.destination_id,
                        code=s.error_code,
                        message=s.error_message,
                    )
            terminal = sorted(
                {s.post_id for s in batch if s.destination_id in kept and s.status != "pending"}
            )
            if terminal:
                settled = self.store.run(lambda cur: repo.roll_up(cur, terminal, utcnow()))
                for row in settled:
                    log.info("publishing.post_settled", post=row.id, status=row.status)
            self.store.run(lambda cur: repo.log_attempts(cur, self.worker_id, batch, outcomes))
        except Exception:
            # The store is unreachable: leases expire, and the next claims ask the platform
            # first, so these outcomes are recovered rather than lost or repeated.
            log.exception("publishing.record_failed", destinations=len(batch))


def run_worker(
    settings: Settings,
    *,
    worker_id: str | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Run one publishing worker as ``settings`` say until ``stop`` is set (forever when None)."""
    policy = RetryPolicy(
        max_attempts=settings.publishing_max_attempts,
        lease_seconds=settings.publishing_lease_seconds,
        http_timeout=settings.publishing_http_timeout_seconds,
    )
    store = settings.open_store()
    try:
        worker = Worker(
            settings,
            store,
            worker_id=worker_id,
            policy=policy,
            concurrency=settings.publishing_concurrency,
            poll_interval=settings.publishing_poll_interval_seconds,
        )
        worker.run(stop or threading.Event())
    finally:
        store.close()


def _media_of(cur: Cursor, wanted: dict[str, set[str]]) -> dict[tuple[str, str], repo.MediaFileRow]:
    """Each workspace's media of the ids its posts name, by (workspace id, media id)."""
    media: dict[tuple[str, str], repo.MediaFileRow] = {}
    for workspace_id, ids in sorted(wanted.items()):
        found = repo.media_files(cur, workspace_id, sorted(ids))
        media.update(((workspace_id, media_id), row) for media_id, row in found.items())
    return media
