"""Rotating the sealing key (`murmur seal`): every sealed value re-sealed under a new key while
the API and the worker run, a kill at any moment leaves every value readable, and the old key
is dropped only once nothing is sealed under it (warehouse/rotation.py)."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from benchmarks.servers import settings_env
from core.settings import Settings
from tests.engagement.conftest import Receiver, receiving, wait_for
from tests.servers import StoreSettings
from tests.support import (
    HANG_SECONDS,
    Api,
    Tenant,
    new_tenant,
    run_murmur,
    start_server,
)
from warehouse import rotation
from warehouse import webhooks as repo
from warehouse.rows import Cursor
from warehouse.sealing import REPLY_CONTEXT, Sealer, UnsealError, hint_of
from warehouse.store import Secrets, Store
from workers.engagement.runner import run_engagement
from workers.engagement.webhooks import SIGNATURE_HEADER, verify

URL = "https://hooks.example.com/murmur"


def _secrets(store: Store) -> dict[str, tuple[str, str]]:
    """Every endpoint's stored secret and workspace, by id."""

    def read(cur: Cursor) -> dict[str, tuple[str, str]]:
        cur.execute("SELECT id, secret, workspace_id FROM webhook_endpoints")
        return {str(i): (str(s), str(w)) for i, s, w in cur.fetchall()}

    return store.read(read)


def _sealed_replies(store: Store) -> list[str]:
    def read(cur: Cursor) -> list[str]:
        cur.execute(
            "SELECT response_body FROM idempotency_keys WHERE response_body LIKE 'sealed:%'"
        )
        return [str(row[0]) for row in cur.fetchall()]

    return store.read(read)


def _murmur(settings: Settings, *args: str) -> str:
    done = run_murmur(settings, "seal", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _start_runner(settings: Settings) -> tuple[threading.Event, threading.Thread]:
    """The engagement runner in a thread, opening the store (and reading `.secret`) itself."""
    stop = threading.Event()
    thread = threading.Thread(
        target=run_engagement,
        args=(settings.model_copy(update={"webhook_retry_base_seconds": 0.2}),),
        kwargs={"stop": stop, "poll_interval": 0.1},
        daemon=True,
    )
    thread.start()
    return stop, thread


def _deliver(tenant: Tenant, receiver: Receiver, count: int) -> None:
    """Create a post; wait for the worker's deliveries so far to reach ``count``."""
    body = {"text": "Hello rotation", "platforms": ["x"], "scheduled_at": "2099-01-01T09:00:00Z"}
    tenant.api.ok(tenant.api.post("/posts", json=body), 201)
    wait_for(lambda: len(receiver.requests) >= count, what=f"delivery {count}")


def _all_signed(by_path: dict[str, str], receiver: Receiver) -> bool:
    """Whether every delivery so far is signed with its endpoint's secret."""
    with receiver.lock:
        got = list(receiver.requests)
    return all(verify(by_path[r.path], r.body, r.headers[SIGNATURE_HEADER]) for r in got)


def test_a_rotation_beside_a_running_api_and_worker_keeps_every_secret(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    with receiving() as receiver:
        host = receiver.url.split("/")[2]
        settings = store_settings(tmp_path / "data", outbound_allow_hosts=[host])
        _rotate_beside_running_processes(settings, receiver)


def _rotate_beside_running_processes(settings: Settings, receiver: Receiver) -> None:
    old_key = Secrets.load(settings.data_dir).sealing_key
    live = start_server(settings)
    tenant = new_tenant(live)
    # The worker starts with the key of before (and signs with it once, below).
    stop, thread = _start_runner(settings)
    try:
        firsts: dict[str, tuple[dict[str, object], bytes]] = {}
        created: dict[str, str] = {}
        by_path: dict[str, str] = {}  # each endpoint's secret, by the path it is delivered to
        for n in range(3):
            key = str(uuid.uuid4())
            url = f"{receiver.url}/{n}"
            body: dict[str, object] = {"url": url, "event_types": ["post.created"]}
            first = tenant.api.post("/webhooks", json=body, idempotency_key=key)
            made = tenant.api.ok(first, 201)
            firsts[key], created[made["id"]] = (body, first.content), made["secret"]
            by_path[f"/hook/{n}"] = made["secret"]
        _deliver(tenant, receiver, 3)
        assert _all_signed(by_path, receiver)
        old_prefix = Sealer(bytes.fromhex(old_key)).prefix
        assert all(stored.startswith(old_prefix) for stored, _ in _secrets(live.store).values())

        out = _murmur(settings, "rotate", "--batch-size", "2")
        assert "3 webhook secret(s) and 3 stored reply(ies) re-sealed" in out

        rotated = Secrets.load(settings.data_dir)
        assert rotated.sealing_key != old_key
        assert rotated.previous_sealing_keys == (old_key,)
        new_prefix = rotated.sealer().prefix
        after = _secrets(live.store)
        # Nothing under the old key is left in the database: neither secrets nor replies.
        assert all(stored.startswith(new_prefix) for stored, _ in after.values())
        replies = _sealed_replies(live.store)
        assert len(replies) == 3
        assert all(reply.startswith(new_prefix) for reply in replies)
        old_only = Sealer(bytes.fromhex(old_key))
        for stored, workspace in after.values():
            with pytest.raises(UnsealError):
                old_only.unseal(stored, workspace)
        for reply in replies:
            with pytest.raises(UnsealError):
                old_only.unseal(reply, REPLY_CONTEXT)
        for endpoint_id, secret in created.items():
            assert rotated.sealer().unseal(*after[endpoint_id]) == secret

        # Neither the API nor the worker was restarted: the API replays the stored replies
        # byte for byte and seals what it seals now under the new key; the worker signs with
        # the same secret.
        for key, (body, first_bytes) in firsts.items():
            again = tenant.api.post("/webhooks", json=body, idempotency_key=key)
            assert again.headers.get("Idempotent-Replayed") == "true"
            assert again.content == first_bytes
        fresh = tenant.api.post(
            "/webhooks", json={"url": f"{receiver.url}/3", "event_types": ["post.created"]}
        )
        made = tenant.api.ok(fresh, 201)
        assert _secrets(live.store)[made["id"]][0].startswith(new_prefix)
        by_path["/hook/3"] = made["secret"]
        _deliver(tenant, receiver, 3 + 4)
        assert _all_signed(by_path, receiver)

        assert "1 previous sealing key(s) forgotten" in _murmur(settings, "forget-previous")
        assert Secrets.load(settings.data_dir).previous_sealing_keys == ()
    finally:
        stop.set()
        thread.join(timeout=30)
        tenant.api.close()
        live.stop()

    # A process started with the new `.secret` alone reads everything.
    again_live = start_server(settings)
    api = Api(again_live.base_url, tenant.key)
    try:
        for key, (body, first_bytes) in firsts.items():
            assert api.post("/webhooks", json=body, idempotency_key=key).content == first_bytes
        assert again_live.store.sealer is not None
        assert again_live.store.sealer.keys.previous == ()
        rows = _secrets(again_live.store)
        for endpoint_id, secret in created.items():
            assert again_live.store.sealer.unseal(*rows[endpoint_id]) == secret
    finally:
        api.close()
        again_live.stop()


ROWS = 5000  # with batches of 5: a thousand commits, so the kill lands mid-way


def test_a_rotation_killed_mid_way_leaves_every_secret_readable_and_a_reseal_finishes(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    settings = store_settings(tmp_path / "data")
    old_key = Secrets.load(settings.data_dir).sealing_key
    with settings.open_store(prepare_lake=False) as store:
        plain = _seal_many(store, ROWS)
        old_prefix = Sealer(bytes.fromhex(old_key)).prefix

        def moved(cur: Cursor) -> int:
            cur.execute(
                "SELECT count(*) FROM webhook_endpoints WHERE secret NOT LIKE ?",
                [f"{old_prefix}%"],
            )
            return int(cur.fetchall()[0][0])

        command = [sys.executable, "-m", "murmur", "seal", "rotate", "--batch-size", "5"]
        proc = subprocess.Popen(
            [*command, "--data-dir", str(settings.data_dir)],
            env={**os.environ, **settings_env(settings)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            # Killed as soon as its first batch is seen committed (no sleep: the database says).
            deadline = time.monotonic() + HANG_SECONDS
            while not store.read(moved):
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "the rotation never committed a batch"
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=HANG_SECONDS)
            if proc.stderr is not None:
                proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        done = store.read(moved)
        assert 0 < done < ROWS, f"not killed mid-way: {done} of {ROWS} re-sealed"

        # Both keys are in `.secret`: every value reads, under one or the other.
        keys = Secrets.load(settings.data_dir)
        assert keys.previous_sealing_keys == (old_key,)
        both = keys.sealer()
        stored = _secrets(store)
        assert {i: both.unseal(*value) for i, value in stored.items()} == plain

        refused = run_murmur(settings, "seal", "forget-previous")
        assert refused.returncode == 1
        assert f"{ROWS - done} value(s) are still sealed under a previous key" in refused.stderr
        assert Secrets.load(settings.data_dir).previous_sealing_keys == (old_key,)

        out = _murmur(settings, "reseal")
        assert f"{ROWS - done} webhook secret(s)" in out
        assert "1 previous sealing key(s) forgotten" in _murmur(settings, "forget-previous")
        new_only = Sealer(bytes.fromhex(keys.sealing_key))
        stored = _secrets(store)
        assert {i: new_only.unseal(*value) for i, value in stored.items()} == plain


def _seal_many(store: Store, rows: int) -> dict[str, str]:
    """``rows`` endpoints in a few workspaces, their secrets sealed; each one's plaintext."""
    assert store.sealer is not None
    sealer = store.sealer

    def work(cur: Cursor) -> dict[str, str]:
        made = {}
        for n in range(rows):
            workspace, secret = f"ws_rotation_{n % 7}", f"whsec_{uuid.uuid4().hex}"
            endpoint_id = repo.insert_endpoint(
                cur,
                workspace,
                url=URL,
                secret=sealer.seal(secret, workspace),
                description=None,
                event_types=[],
                enabled=True,
            )
            made[endpoint_id] = secret
        return made

    return store.run(work)


def test_a_value_sealed_before_key_ids_is_read_and_resealed_with_one(
    tmp_path: Path, store_settings: StoreSettings
) -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    settings = store_settings(tmp_path / "data")
    key = bytes.fromhex(Secrets.load(settings.data_dir).sealing_key)
    nonce, secret, workspace = os.urandom(12), "whsec_sealed_as_v1", "ws_v1"
    blob = nonce + AESGCM(key).encrypt(nonce, secret.encode(), workspace.encode())
    v1 = f"sealed:v1:{secret[:10]}:{base64.urlsafe_b64encode(blob).decode()}"  # as a95e4bc did
    with settings.open_store(prepare_lake=False) as store:
        endpoint_id = store.run(
            lambda cur: repo.insert_endpoint(
                cur, workspace, url=URL, secret=v1, description=None, event_types=[], enabled=True
            )
        )
        assert store.sealer is not None
        assert store.sealer.unseal(v1, workspace) == secret
        assert hint_of(v1) == secret[:10]
        done = rotation.reseal(store, settings.data_dir)
        assert (done.secrets, done.replies) == (1, 0)
        stored = _secrets(store)[endpoint_id][0]
        assert stored.startswith(f"{store.sealer.prefix}{secret[:10]}:")
        assert hint_of(stored) == secret[:10]
        assert store.sealer.unseal(stored, workspace) == secret
        assert rotation.reseal(store, settings.data_dir).secrets == 0
