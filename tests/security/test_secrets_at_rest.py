"""Webhook signing secrets are sealed at rest: neither the endpoint's row nor the stored reply
of its creation holds the secret in the clear, and a replay still shows it (once per key).

What an analyst's attach, a backup or a dump reads is the database; the key is the data
directory's `.secret` (warehouse/sealing.py), so none of them can sign as a tenant.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from core.settings import Settings
from tests.support import LiveServer, Tenant, new_tenant, start_server
from warehouse import webhooks as repo
from warehouse.rows import Cursor
from warehouse.sealing import UnsealError
from warehouse.store import Secrets

URL = "https://hooks.example.com/murmur"


def _stored(server: LiveServer, endpoint_id: str) -> str:
    def read(cur: Cursor) -> str:
        cur.execute("SELECT secret FROM webhook_endpoints WHERE id = ?", [endpoint_id])
        (row,) = cur.fetchall()
        return str(row[0])

    return server.store.read(read)


def _replies(server: LiveServer, key: str) -> list[str]:
    def read(cur: Cursor) -> list[str]:
        cur.execute(
            "SELECT response_body FROM idempotency_keys"
            " WHERE key LIKE ? AND path LIKE '%/webhooks'",
            [f"%:{key}"],
        )
        return [str(row[0]) for row in cur.fetchall()]

    return server.store.read(read)


def test_a_signing_secret_is_sealed_in_its_row_and_in_the_stored_reply(
    server: LiveServer, tenant: Tenant
) -> None:
    key = str(uuid.uuid4())
    first = tenant.api.post(
        "/webhooks", json={"url": URL, "event_types": ["post.created"]}, idempotency_key=key
    )
    created = tenant.api.ok(first, 201)
    secret = created["secret"]
    assert secret.startswith("whsec_")

    stored = _stored(server, created["id"])
    assert server.store.sealer is not None
    assert stored.startswith(f"{server.store.sealer.prefix}{secret[:10]}:")
    assert secret[10:] not in stored
    replies = _replies(server, key)
    assert replies
    assert all(secret[10:] not in reply for reply in replies)
    # The hint is what the API shows; the secret itself is shown by the creation only.
    shown = tenant.api.ok(tenant.api.get(f"/webhooks/{created['id']}"))
    assert shown["secret_hint"] == secret[:10] + "…"

    again = tenant.api.post(
        "/webhooks", json={"url": URL, "event_types": ["post.created"]}, idempotency_key=key
    )
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.status_code == 201
    assert again.json() == first.json()  # the first answer, unsealed, byte for byte


def test_a_sealed_secret_does_not_unseal_in_another_workspace(tmp_path: Path) -> None:
    sealer = Secrets.load(tmp_path).sealer()
    sealed = sealer.seal("whsec_abc", "ws_one")
    assert sealer.unseal(sealed, "ws_one") == "whsec_abc"
    with pytest.raises(UnsealError):
        sealer.unseal(sealed, "ws_two")
    other = Secrets.load(tmp_path / "elsewhere").sealer()  # another installation's key
    with pytest.raises(UnsealError, match="does not hold"):
        other.unseal(sealed, "ws_one")


def test_secrets_stored_before_sealing_are_sealed_when_the_api_starts(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    with settings.open_store() as store:
        live = start_server(settings)
        tenant = new_tenant(live)
        live.stop()
        endpoint_id = store.run(
            lambda cur: repo.insert_endpoint(
                cur,
                tenant.workspace_id,
                url=URL,
                secret="whsec_from_an_earlier_murmur",
                description=None,
                event_types=[],
                enabled=True,
            )
        )
    live = start_server(settings)
    try:
        stored = _stored(live, endpoint_id)
        assert live.store.sealer is not None
        assert stored.startswith(f"{live.store.sealer.prefix}whsec_from:")
        assert "an_earlier_murmur" not in stored
        unsealed = live.store.sealer.unseal(stored, tenant.workspace_id)
        assert unsealed == "whsec_from_an_earlier_murmur"
    finally:
        tenant.api.close()
        live.stop()
