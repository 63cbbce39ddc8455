"""Secrets at rest: sealed with AES-256-GCM under the installation's key, bound to a context.

Webhook signing secrets (and the one stored reply that shows one) are kept sealed, so that
whoever reads the database (an analyst's attach, a backup, a dump) cannot sign as a tenant.
The key is not in the database: embedded, it is the data directory's ``.secret``
(``Secrets.sealing_key``); at scale, every process of one installation shares that file.
A sealed value reads ``sealed:v1:<hint>:<base64url(nonce + ciphertext)>``, where the hint is
the secret's first characters (what the API shows to tell endpoints apart). A value without
the prefix is a secret stored before sealing: read as it is (and sealed at the API's start).
"""

from __future__ import annotations

import base64
import os

PREFIX = "sealed:v1:"
HINT = 10  # characters of the secret shown in the clear, as the API shows them
_NONCE = 12


class Sealer:
    """Seals and unseals text with one key; the context (e.g. a workspace id) is authenticated
    with it, so a sealed value moved to another row does not unseal there."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("the sealing key is 32 bytes")
        self._key = key

    def seal(self, plaintext: str, context: str, *, hint: bool = True) -> str:
        """``plaintext`` sealed; its first characters kept in the clear when ``hint``."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(_NONCE)
        sealed = AESGCM(self._key).encrypt(nonce, plaintext.encode(), context.encode())
        shown = plaintext[:HINT] if hint else ""
        return f"{PREFIX}{shown}:{base64.urlsafe_b64encode(nonce + sealed).decode()}"

    def unseal(self, stored: str, context: str) -> str:
        """The plaintext of ``stored`` (a value from before sealing is returned as it is)."""
        if not is_sealed(stored):
            return stored
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        blob = base64.urlsafe_b64decode(stored.rsplit(":", 1)[1])
        plain = AESGCM(self._key).decrypt(blob[:_NONCE], blob[_NONCE:], context.encode())
        return plain.decode()


def is_sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)


def hint_of(stored: str) -> str:
    """The clear first characters of a sealed (or not yet sealed) secret."""
    if is_sealed(stored):
        return stored[len(PREFIX) :].split(":", 1)[0]
    return stored[:HINT]
