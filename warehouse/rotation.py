"""Rotating the sealing key: a new key in ``.secret``, then every sealed value re-sealed under it.

The order is what makes a kill at any moment safe (``tests/security/test_sealing_rotation.py``
kills the command mid-way). First the new key is written into ``.secret``, the old one kept
among ``previous_sealing_keys`` (one atomic replace of the file, flushed, its folder too): a
crash before the rename leaves the old file whole, after it both keys. Only then are values
re-sealed, in batches of one transaction each: a value is sealed under the old key or the new
one, never neither, and every key that sealed one is in the file. So every value stays
readable whatever the moment of a crash, and running ``reseal`` (or ``rotate`` again) finishes.

The API and the workers need no restart: their :class:`~warehouse.sealing.Sealer` reads
``.secret`` again before it seals (the file replaced since: it seals under the new key) and
when a value names a key it does not hold (it unseals what this command re-sealed). The
previous keys are dropped by :func:`forget_previous`, which refuses while any value is still
sealed under one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from warehouse import idempotency, webhooks
from warehouse.rows import Cursor
from warehouse.sealing import Sealer, SealingKeyError, key_id
from warehouse.store import Secrets, Store

BATCH = 500  # values re-sealed per transaction: short transactions beside a running API


@dataclass(frozen=True)
class Resealed:
    key_id: str  # the current key's
    secrets: int  # webhook signing secrets re-sealed
    replies: int  # stored replies of POST /webhooks re-sealed


def rotate(store: Store, data_dir: Path, *, batch: int = BATCH) -> Resealed:
    """A new sealing key, then every sealed value re-sealed under it."""
    # The key first, durably, the old one kept: a crash from here on leaves every value
    # under a key the file holds (the module's docstring).
    Secrets.rotate_sealing_key(data_dir)
    return reseal(store, data_dir, batch=batch)


def reseal(store: Store, data_dir: Path, *, batch: int = BATCH) -> Resealed:
    """Re-seal under the current key every value sealed under another (what a rotation that
    was interrupted left); a no-op when none is."""
    sealer = Secrets.load(data_dir).sealer()
    return Resealed(
        key_id(sealer.keys.current),
        _drain(store, lambda cur: webhooks.reseal_secrets(cur, sealer=sealer, limit=batch)),
        _drain(store, lambda cur: idempotency.reseal_replies(cur, sealer=sealer, limit=batch)),
    )


def _drain(store: Store, step: Callable[[Cursor], int]) -> int:
    # A value re-sealed leaves the step's selection, so each step finds the next batch.
    done = 0
    while found := store.run(step):
        done += found
    return done


def sealed_elsewhere(store: Store, sealer: Sealer) -> int:
    """How many values are sealed under another key than ``sealer``'s current one."""

    def count(cur: Cursor) -> int:
        secrets = webhooks.count_sealed_elsewhere(cur, sealer=sealer)
        return secrets + idempotency.count_sealed_elsewhere(cur, sealer=sealer)

    return store.read(count)


def forget_previous(store: Store, data_dir: Path) -> int:
    """Drop the previous sealing keys from ``.secret``; how many. Refused while any value is
    still sealed under one of them (it would never unseal again)."""
    secrets = Secrets.load(data_dir)
    left = sealed_elsewhere(store, secrets.sealer())
    if left:
        raise SealingKeyError(
            f"{left} value(s) are still sealed under a previous key: run `murmur seal reseal` first"
        )
    return Secrets.forget_previous_sealing_keys(data_dir, current=secrets.sealing_key)
