"""Fixtures: a real webhook receiver on loopback, and the engagement runner in a thread."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support import LiveServer, serving
from workers.engagement.runner import run_engagement


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """An HTTP server that records every POST and answers 500 to the first ``fail_first``."""

    url: str
    server: ThreadingHTTPServer | None
    requests: list[Received] = field(default_factory=list)
    fail_first: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def json_bodies(self) -> list[Any]:
        with self.lock:
            return [json.loads(r.body) for r in self.requests]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with receiver.lock:
                receiver.requests.append(Received(self.path, dict(self.headers.items()), body))
                failing = len(receiver.requests) <= receiver.fail_first
            self.send_response(500 if failing else 204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def receiving() -> Iterator[Receiver]:
    """A webhook receiver on a loopback port of its own, for as long as the block runs."""
    made = Receiver(url="", server=None)
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), _handler(made))) as http:
        made.server = http
        made.url = f"http://127.0.0.1:{http.server_address[1]}/hook"
        yield made


@pytest.fixture
def receiver(server: LiveServer) -> Iterator[Receiver]:
    """A loopback receiver that the API's outbound allow-list (copied by start_runner) admits."""
    with receiving() as made:
        before = server.settings.outbound_allow_hosts
        server.settings.outbound_allow_hosts = [*before, made.url.split("/")[2]]
        yield made
        server.settings.outbound_allow_hosts = before


StartRunner = Callable[..., None]


@pytest.fixture
def start_runner(server: LiveServer) -> Iterator[StartRunner]:
    """Start the engagement runner over the live server's store, with test-sized delays."""
    stops: list[tuple[threading.Event, threading.Thread]] = []

    def start(**overrides: Any) -> None:
        options: dict[str, Any] = {
            "webhook_retry_base_seconds": 0.2,
            "webhook_max_attempts": 8,
            "webhook_timeout_seconds": 5.0,
            "outbound_allow_hosts": list(server.settings.outbound_allow_hosts),
        }
        options.update(overrides)
        # The server's store (on either profile), with the runner's own options.
        settings = server.settings.model_copy(update=options)
        stop = threading.Event()
        thread = threading.Thread(
            target=run_engagement,
            args=(settings,),
            kwargs={"stop": stop, "poll_interval": 0.1},
            daemon=True,
        )
        thread.start()
        stops.append((stop, thread))

    yield start
    for stop, thread in stops:
        stop.set()
        thread.join(timeout=30)


def wait_for(check: Callable[[], Any], *, timeout: float = 240.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy (no timing is asserted).

    The deadline only turns a hang into a failure: on a machine loaded by other runs the
    workers under test take minutes, not seconds (issue 17 measured failures at 60 s).
    """
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)
