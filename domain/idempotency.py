"""Exactly once under retries: a write's key claimed before its work, its reply kept with it.

The unit of work every interface's writes go through, with no HTTP in it: REST
(``api/idempotency.py`` and the route class, ``api/routing.py``) and the agents' tools
(``api/mcp``) claim a key here, run the write, and store its reply in the write's own
transaction, so that a retry with the same key replays the first reply, a changed request
with it is a conflict, and one still running is in progress.

A key's record (``warehouse/idempotency.py``) is filed under (API key, workspace, method,
path, key); the interfaces name a write by its REST method and path, so that a write is the
same write whichever interface asked for it. A reply is kept as it was given: a status and
the body, the contract's envelope (``Reply``).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from domain.errors import (
    DomainError,
    IdempotencyConflict,
    IdempotencyInProgress,
    IdempotencyKeyRequired,
    ServiceUnavailable,
    ValidationFailed,
)
from warehouse import idempotency as repo
from warehouse import retry
from warehouse.errors import ConflictError, DuplicateKeyError
from warehouse.rows import Cursor
from warehouse.store import Store, Transaction

T = TypeVar("T")

# 1 to 255 printable ASCII characters, the first not a space (a header value's edges are
# trimmed in transit, so a leading space could never arrive as sent).
KEY_PATTERN = r"^[\x21-\x7e][\x20-\x7e]{0,254}$"
_VALID_KEY = re.compile(KEY_PATTERN)
KEY_RULE = "1 to 255 printable ASCII characters"

# A concurrent transaction won on the same row or key: the next attempt sees its result
# (a key taken meanwhile replays, a conflict runs again on the new rows).
RETRY_ON = (ConflictError, DuplicateKeyError)


@dataclass(frozen=True)
class Reply:
    """A write's answer as it is stored under its key: a status and the envelope's text."""

    status: int
    body: str


class Replayed(Exception):
    """A repeated request: answer it with the reply stored under its key."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__("replay")
        self.reply = Reply(status, body)


def request_id_of(body: str) -> str | None:
    """The ``request_id`` of a stored envelope: the first request's."""
    try:
        envelope = json.loads(body)
    except ValueError:
        return None
    found = envelope.get("request_id") if isinstance(envelope, dict) else None
    return found if isinstance(found, str) else None


def fingerprint(body: bytes) -> str:
    """A digest of what a request asks for: JSON canonicalised, so formatting does not count."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()
    except (ValueError, UnicodeDecodeError):
        return hashlib.sha256(body).hexdigest()


def fingerprint_of(body: Mapping[str, Any] | None) -> str:
    """:func:`fingerprint` of a body given as values (None: an empty body, as REST's)."""
    if body is None:
        return fingerprint(b"")
    return fingerprint(json.dumps(body, default=str).encode())


def validate_key(value: str | None, field: str = "Idempotency-Key") -> str:
    """The key, or the contract's refusal: none at all, or not printable ASCII."""
    if value is None or value == "":
        raise IdempotencyKeyRequired(f"Writes need an {field} ({KEY_RULE}).")
    if not _VALID_KEY.match(value):
        raise ValidationFailed.on(field, "invalid", f"{field} must be {KEY_RULE}.")
    return value


@dataclass(frozen=True)
class Claimed:
    """A key a request holds until its work commits or fails.

    ``in_tx``: the claim was inserted in the request's own transaction and commits (or
    vanishes) with its work, so a failed attempt leaves nothing to release.
    """

    record: repo.RecordKey
    fingerprint: str = ""
    ttl_seconds: int = 0
    in_tx: bool = False


def take_in(
    store: Store,
    txn: Transaction,
    record: repo.RecordKey,
    digest: str,
    *,
    lease_seconds: int,
    ttl_seconds: int,
) -> Claimed:
    """Claim a fresh key inside the request's transaction: one commit per write, not two.

    Two requests racing with one fresh key both insert it; the second fails at commit on
    the primary key, and its retry finds the first's completed record and replays it. A
    key seen before goes through :func:`take` (replay, conflict or in progress).
    """
    if repo.claim_new(
        txn.cur, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
    ):
        return Claimed(record, digest, ttl_seconds, in_tx=True)
    txn.rollback()
    return take(store, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds)


def take(
    store: Store,
    record: repo.RecordKey,
    digest: str,
    *,
    lease_seconds: int,
    ttl_seconds: int,
) -> Claimed:
    """Claim ``record``; raise :class:`Replayed` or the contract's 409s otherwise."""
    for _ in range(3):
        try:
            with store.transaction() as cur:
                taken = repo.claim_new(
                    cur, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
                )
            if taken:
                return Claimed(record)
            outcome = store.run(
                lambda cur: repo.claim(
                    cur, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
                )
            )
            break
        except DuplicateKeyError:
            # Two first requests with one key at the same moment: the loser's insert fails at
            # commit on the primary key; look again and it sees the winner's claim.
            pass
    else:
        outcome = repo.Claim("in_progress")
    if outcome.outcome == "claimed":
        return Claimed(record)
    if outcome.outcome == "replay":
        raise Replayed(outcome.response_status or 200, outcome.response_body or "")
    if outcome.outcome == "conflict":
        raise IdempotencyConflict("This idempotency key was used with another request.")
    raise IdempotencyInProgress(
        "A request with this idempotency key is still running; retry shortly.",
        retry_after=1,
    )


def commit(tx: Transaction | None, claim: Claimed | None, reply: Reply, *, wrote: bool) -> None:
    """Keep a successful ``reply`` under the key with the write it describes; commit both."""
    if tx is None or not tx.begun:
        return
    try:
        if claim is not None and reply.status < 400:
            repo.complete(tx.cur, claim.record, reply.status, reply.body)
    except BaseException:
        tx.rollback()
        raise
    tx.commit(wrote=wrote)


def settle(
    store: Store, tx: Transaction | None, claim: Claimed | None, outcome: Reply | None
) -> None:
    """Roll a failed attempt back; keep its ``outcome`` (a refusal) under the key, or free it."""
    if tx is not None:
        tx.rollback()
    if claim is None:
        return
    if claim.in_tx:
        if outcome is not None:
            store.run(
                lambda cur: repo.record_outcome(
                    cur,
                    claim.record,
                    claim.fingerprint,
                    outcome.status,
                    outcome.body,
                    ttl_seconds=claim.ttl_seconds,
                )
            )
        return
    if outcome is not None:
        # A refusal that follows from the resource's state is the request's outcome.
        store.run(lambda cur: repo.complete(cur, claim.record, outcome.status, outcome.body))
    else:
        store.run(lambda cur: repo.release(cur, claim.record))


def busy() -> ServiceUnavailable:
    """The refusal once every attempt lost to a concurrent change."""
    return ServiceUnavailable(
        "A concurrent change to the same resource won; retry with the same key.",
        retry_after=1,
    )


@dataclass(frozen=True)
class Outcome:
    """What :func:`run_once` answered: the reply, and whether it is an earlier one's."""

    reply: Reply
    replayed: bool


def run_once(
    store: Store,
    record: repo.RecordKey,
    digest: str,
    work: Callable[[Cursor], T],
    *,
    answer: Callable[[T], Reply],
    refusal: Callable[[DomainError], Reply | None],
    lease_seconds: int,
    ttl_seconds: int,
) -> Outcome:
    """Run one write exactly once under its key: claim, work, keep the reply, commit.

    ``answer`` makes the reply of the work's result; ``refusal`` the reply of a refusal that
    is the write's outcome (one from the resource's state: kept and replayed), or None for
    one that is not (validation, scope…: the key is freed, the error raised). A repeat
    returns the kept reply (``replayed``); a changed request with the key raises
    ``IdempotencyConflict``, one while the first runs ``IdempotencyInProgress``. A write
    that loses to a concurrent transaction runs again, as the store's retry policy allows.
    """
    for attempt in range(1, retry.ATTEMPTS + 1):
        txn = store.begin(write=True)
        claim: Claimed | None = None
        try:
            claim = take_in(
                store, txn, record, digest, lease_seconds=lease_seconds, ttl_seconds=ttl_seconds
            )
            result = work(txn.cur)
            reply = answer(result)
            commit(txn, claim, reply, wrote=True)
            return Outcome(reply, replayed=False)
        except Replayed as replay:
            txn.rollback()
            return Outcome(replay.reply, replayed=True)
        except DomainError as exc:
            stored = refusal(exc) if claim is not None else None
            settle(store, txn, claim, stored)
            if stored is None:
                raise
            return Outcome(stored, replayed=False)
        except BaseException as exc:
            if retry.may_retry(exc, attempt, RETRY_ON):
                txn.rollback()
                if claim is not None and not claim.in_tx:
                    settle(store, None, claim, None)  # the next attempt claims it again
                time.sleep(retry.delay(attempt))
                continue
            settle(store, txn, claim, None)
            if isinstance(exc, RETRY_ON):
                raise busy() from exc
            raise
    raise AssertionError("unreachable")
