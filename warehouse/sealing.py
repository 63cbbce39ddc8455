"""Secrets at rest: sealed with AES-256-GCM under the installation's key, bound to a context.

Webhook signing secrets (and the one stored reply that shows one) are kept sealed, so that
whoever reads the database (an analyst's attach, a backup, a dump) cannot sign as a tenant.
The keys are not in the database: embedded, they are the data directory's ``.secret``
(``Secrets.sealing_key``, and the keys it replaced, ``previous_sealing_keys``, until they are
forgotten); at scale, every process of one installation shares that file.

A sealed value reads ``sealed:v2:<key id>:<hint>:<base64url(nonce + ciphertext)>``: the key
id (:func:`key_id`) names the key it was sealed under, so that a rotation
(``warehouse/rotation.py``) finds in SQL what is left to re-seal and an unseal tries one key;
the hint is the secret's first characters (what the API shows to tell endpoints apart).
``sealed:v1:<hint>:<…>`` (before key ids) is still read, by trying each key. A value without
the prefix is a secret stored before sealing: read as it is (and sealed at the API's start).
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from warehouse.errors import StoreError

PREFIX = "sealed:"  # every sealed value, of any version
_V1 = "sealed:v1:"
_V2 = "sealed:v2:"
HINT = 10  # characters of the secret shown in the clear, as the API shows them
_NONCE = 12
#: What a sealed stored reply (of POST /webhooks) is bound to.
REPLY_CONTEXT = "idempotency-reply"


class UnsealError(StoreError):
    """A sealed value that none of this installation's keys opens (or not in this context)."""


class SealingKeyError(StoreError):
    """A change of the sealing keys refused: values still sealed under a key to forget, or
    the keys changed meanwhile."""


def key_id(key: bytes) -> str:
    """The public name of a sealing key: 8 hex digits of a hash of it (no help to a guesser)."""
    return hashlib.sha256(b"murmur sealing key id:" + key).hexdigest()[:8]


@dataclass(frozen=True)
class Keyring:
    """The key new values are sealed with, and the ones it replaced (still read)."""

    current: bytes
    previous: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        if any(len(key) != 32 for key in (self.current, *self.previous)):
            raise ValueError("a sealing key is 32 bytes")


#: The keys again when they changed since it was last asked (the file replaced), else None.
Refresh = Callable[[], Keyring | None]


class Sealer:
    """Seals with the current key, unseals with any; the context (e.g. a workspace id) is
    authenticated with the value, so a sealed value moved to another row does not unseal there.

    With ``refresh``, a process learns of a rotation without a restart: it asks before each
    seal (a stat of ``.secret``) and when a value names a key it does not hold.
    """

    def __init__(
        self, current: bytes, previous: Sequence[bytes] = (), *, refresh: Refresh | None = None
    ) -> None:
        self._set(Keyring(current, tuple(previous)))
        self._refresh = refresh
        self._lock = threading.Lock()

    def _set(self, keys: Keyring) -> None:
        by_id: dict[str, list[bytes]] = {}
        for key in dict.fromkeys((keys.current, *keys.previous)):
            by_id.setdefault(key_id(key), []).append(key)
        # One assignment: a thread reading meanwhile sees the old ring or the new one, whole.
        self._state = (keys, by_id)

    def _refreshed(self) -> bool:
        if self._refresh is None:
            return False
        with self._lock:
            keys = self._refresh()
            if keys is None:
                return False
            self._set(keys)
            return True

    @property
    def keys(self) -> Keyring:
        return self._state[0]

    @property
    def prefix(self) -> str:
        """How every value sealed under the current key begins."""
        return f"{_V2}{key_id(self.keys.current)}:"

    def seal(self, plaintext: str, context: str, *, hint: bool = True) -> str:
        """``plaintext`` sealed under the current key; its first characters kept in the clear
        when ``hint``."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._refreshed()
        key = self.keys.current
        nonce = os.urandom(_NONCE)
        sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), context.encode())
        shown = plaintext[:HINT] if hint else ""
        blob = base64.urlsafe_b64encode(nonce + sealed).decode()
        return f"{_V2}{key_id(key)}:{shown}:{blob}"

    def unseal(self, stored: str, context: str) -> str:
        """The plaintext of ``stored`` (a value from before sealing is returned as it is)."""
        if not is_sealed(stored):
            return stored
        try:
            return self._open(stored, context)
        except UnsealError:
            if not self._refreshed():
                raise
        return self._open(stored, context)

    def _open(self, stored: str, context: str) -> str:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        keys, by_id = self._state
        if stored.startswith(_V2):
            kid = stored[len(_V2) :].split(":", 1)[0]
            candidates = by_id.get(kid, [])
        else:  # v1 names no key: the one of then is current or previous
            kid = "?"
            candidates = list(dict.fromkeys((keys.current, *keys.previous)))
        blob = base64.urlsafe_b64decode(stored.rsplit(":", 1)[1])
        for key in candidates:
            try:
                return AESGCM(key).decrypt(blob[:_NONCE], blob[_NONCE:], context.encode()).decode()
            except InvalidTag:
                continue
        raise UnsealError(
            f"a value sealed under key {kid} does not unseal in context {context!r}"
            + ("" if candidates else ": this installation does not hold that key")
        )


def is_sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)


def hint_of(stored: str) -> str:
    """The clear first characters of a sealed (or not yet sealed) secret."""
    if stored.startswith(_V2):
        return stored[len(_V2) :].split(":", 1)[1].rsplit(":", 1)[0]
    if stored.startswith(_V1):
        return stored[len(_V1) :].rsplit(":", 1)[0]
    return stored[:HINT]
