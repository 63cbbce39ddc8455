"""The simulator restarted: posts published before read back as they were, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from simulator.app import create_app
from simulator.journal import Journal
from simulator.world import PUBLISHED_BASE, World
from tests.support import serve_in_thread

SEED = 23
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OWN_X = {"Authorization": "Bearer any-user-token"}
PIN_TOKEN = {"Authorization": "Bearer pina_test-pinterest-murmurtest"}
OWN_BOARD = str(900_000_000_000_000)  # the own account's board (index 0)


@contextmanager
def simulator(state_dir: Path | None) -> Iterator[httpx.Client]:
    """One simulator process's life: started over ``state_dir``, stopped on exit."""
    running = serve_in_thread(create_app(SEED, state_dir=state_dir), date_header=False)
    try:
        with httpx.Client(base_url=running.root, timeout=30) as http:
            yield http
    finally:
        running.stop()


def tweet(http: httpx.Client, text: str, headers: dict[str, str] = OWN_X) -> str:
    response = http.post("/x/2/tweets", json={"text": text}, headers=headers)
    assert response.status_code == 201, response.text
    tweet_id: str = response.json()["data"]["id"]
    return tweet_id


def read_tweets(http: httpx.Client, *ids: str) -> dict[str, Any]:
    response = http.get("/x/2/tweets", params={"ids": ",".join(ids)}, headers=OWN_X)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def media_id(http: httpx.Client) -> int:
    response = http.post("/x/2/media/upload", files={"media": ("a.png", b"png")}, headers=OWN_X)
    assert response.status_code == 200, response.text
    return int(response.json()["data"]["id"])


def pins(http: httpx.Client) -> dict[str, dict[str, Any]]:
    response = http.get("/pinterest/v5/pins", params={"page_size": 250}, headers=PIN_TOKEN)
    assert response.status_code == 200, response.text
    return {pin["id"]: pin for pin in response.json()["items"]}


def test_posts_published_before_a_restart_read_back_as_they_were(tmp_path: Path) -> None:
    state = tmp_path / "simulator"
    with simulator(state) as http:
        http.post("/_sim/clock", json={"now": T0.isoformat()}).raise_for_status()
        registered = http.post(
            "/_sim/accounts",
            json={"platform": "x", "external_id": "4242", "handle": "restarted", "kind": "own"},
        )
        assert registered.status_code == 201, registered.text
        own = tweet(http, "Before the restart #launch")
        theirs = tweet(http, "Theirs, before", headers={"Authorization": "Bearer sim-user-4242"})
        pin = http.post(
            "/pinterest/v5/pins",
            json={
                "board_id": OWN_BOARD,
                "title": "Kept title",
                "description": "A pin before the restart",
                "media_source": {"source_type": "image_url", "url": "https://example.com/a.png"},
            },
            headers=PIN_TOKEN,
        )
        assert pin.status_code == 201, pin.text
        pin_id = pin.json()["id"]
        media_before = media_id(http)
        http.post("/_sim/clock", json={"advance_seconds": 6 * 3600}).raise_for_status()
        before = read_tweets(http, own, theirs)
        pin_before = pins(http)[pin_id]
    assert "errors" not in before, before
    assert before["data"][0]["public_metrics"]["impression_count"] > 0

    with simulator(state) as http:
        # The clock set through the admin API comes back too: the world does not step back
        # to real time, before posts published at the set one.
        clock = http.get("/_sim/clock").json()
        assert clock == {"now": (T0 + timedelta(hours=6)).isoformat(), "fixed": True}
        after = read_tweets(http, own, theirs)
        assert after == before
        assert pins(http)[pin_id] == pin_before
        assert pin_before["title"] == "Kept title"
        # Nothing handed out before is handed out again.
        newer = tweet(http, "After the restart")
        assert newer not in (own, theirs)
        assert media_id(http) > media_before
        posts = http.get("/_sim/posts", params={"platform": "x"}).json()
        assert [p["external_id"] for p in posts["posts"]] == [own, theirs, newer]


def test_without_its_state_a_restarted_simulator_answers_not_found_not_500() -> None:
    with simulator(None) as http:
        http.post("/_sim/clock", json={"now": T0.isoformat()}).raise_for_status()
        own = tweet(http, "Forgotten after the restart")
    with simulator(None) as http:
        http.post("/_sim/clock", json={"now": (T0 + timedelta(hours=1)).isoformat()})
        body = read_tweets(http, own)
    assert "data" not in body
    assert body["errors"][0]["resource_id"] == own, body


def test_ids_outside_the_generated_world_are_unknown() -> None:
    world = World(SEED)
    # The write APIs' first id, and a fabricated one dated ~3300 AD: once decoded as generated
    # posts, their follower growth overflowed math.exp (HTTP 500 OverflowError).
    assert world.post("x", str(PUBLISHED_BASE)) is None
    assert world.post("x", str(PUBLISHED_BASE - 1)) is None
    assert world.post("instagram", f"179{PUBLISHED_BASE + 7:017d}") is None


def test_a_line_torn_by_a_crash_is_skipped_and_the_journal_goes_on(tmp_path: Path) -> None:
    journal = Journal(tmp_path, SEED)
    journal.append("clock", now=T0.isoformat())
    journal.close()
    with journal.path.open("a") as torn:
        torn.write('{"v":1,"kind":"clo')
    again = Journal(tmp_path, SEED)
    again.append("clock", now=None)
    again.close()
    assert [e["now"] for e in Journal(tmp_path, SEED).replay()] == [T0.isoformat(), None]
