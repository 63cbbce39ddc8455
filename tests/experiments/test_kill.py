"""An experiment's draws survive kill -9: every post a 201 acknowledged keeps the arm it was
drawn, no draw is left without its post, and the draws stay the seed's sequence."""

from __future__ import annotations

import random
import threading
import uuid
from typing import Any

import httpx

from tests.store.test_crash_handoff import Ledger, Rig, _kill, _mint, _wait_until, rig

__all__ = ["rig"]  # the fixture, imported for pytest

ARMS: list[dict[str, Any]] = [
    {"name": "morning", "control": True, "slots": [{"time": "09:00"}, {"time": "10:00"}]},
    {"name": "evening", "slots": [{"time": "18:00"}, {"time": "19:00"}]},
]


def _writes(
    rig: Rig,
    key: str,
    experiment_id: str,
    acked: dict[str, str],
    in_flight: dict[str, Any],
    lock: threading.Lock,
    stop: threading.Event,
) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=rig.base_url(), headers=headers, timeout=30) as http:
        while not stop.is_set():
            body = {
                "text": f"kill {uuid.uuid4().hex[:8]}",
                "platforms": ["x"],
                "experiment_id": experiment_id,
            }
            idem = str(uuid.uuid4())
            with lock:
                in_flight[idem] = body
            try:
                resp = http.post("/posts", json=body, headers={"Idempotency-Key": idem})
            except httpx.HTTPError:
                return  # the server is gone: this one stays in flight
            assert resp.status_code == 201, resp.text
            with lock:
                del in_flight[idem]
                acked[resp.json()["data"]["id"]] = resp.json()["data"]["experiment"]["arm"]


def test_kill_nine_mid_assignment_loses_no_draw_and_leaves_none_without_its_post(rig: Rig) -> None:
    key = _mint(rig, Ledger(), "experiments")
    (serve, _other) = rig.serve()
    _kill(_other)
    headers = {"Authorization": f"Bearer {key}"}
    api = httpx.Client(base_url=rig.base_url(), headers=headers, timeout=30)
    accounts = {a["platform"]: a["id"] for a in api.get("/accounts").json()["data"]["items"]}
    created = api.post(
        "/experiments",
        headers={"Idempotency-Key": str(uuid.uuid4())},
        json={
            "name": "killed",
            "account_ids": [accounts["x"]],
            "arms": ARMS,
            "metric": "engagements_24h",
            "target_posts": 5000,
            "seed": 77,
        },
    )
    assert created.status_code == 201, created.text
    experiment_id = created.json()["data"]["id"]
    api.close()
    acked: dict[str, str] = {}
    in_flight: dict[str, Any] = {}
    lock, stop = threading.Lock(), threading.Event()
    clients = [
        threading.Thread(
            target=_writes, args=(rig, key, experiment_id, acked, in_flight, lock, stop)
        )
        for _ in range(4)
    ]
    for client in clients:
        client.start()
    target = random.Random(5).randint(15, 40)
    _wait_until(lambda: len(acked) >= target, serve, what="posts acknowledged")
    _kill(serve)
    stop.set()
    for client in clients:
        client.join(60)
    rig.serve()
    with httpx.Client(base_url=rig.base_url(), headers=headers, timeout=30) as http:
        # A write the kill cut off, sent again with its key, is done once.
        for idem, body in list(in_flight.items()):
            resp = http.post("/posts", json=body, headers={"Idempotency-Key": idem})
            assert resp.status_code == 201, resp.text
            acked[resp.json()["data"]["id"]] = resp.json()["data"]["experiment"]["arm"]
        posts: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = http.get("/posts", params=params).json()["data"]
            posts.extend(page["items"])
            cursor = page["pagination"]["next_cursor"]
            if not cursor:
                break
        detail = http.get(f"/experiments/{experiment_id}").json()["data"]
    mine = {p["id"]: p for p in posts if p["experiment"] is not None}
    # Every acknowledged post is there with the arm its 201 said; no post without its draw.
    assert {p: mine[p]["experiment"]["arm"] for p in acked} == acked
    assert len(mine) == len(posts)
    # The experiment counts exactly those posts: no draw lost, none written without its post.
    assert detail["posts_assigned"] == len(mine)
    assert sum(a["posts_assigned"] for a in detail["results"]["arms"]) == len(mine)
    # The draws are the seed's sequence: n = 0, 1, … with none taken twice or skipped.
    ordered = sorted(mine.values(), key=lambda p: p["id"])
    names = [a["name"] for a in ARMS]
    expected = [random.Random(f"77:{n}").choice(names) for n in range(len(ordered))]
    assert sorted(p["experiment"]["arm"] for p in ordered) == sorted(expected)
    # One post per slot, even across the restart.
    slots = [p["experiment"]["slot_at"] for p in ordered]
    assert len(set(slots)) == len(slots)
