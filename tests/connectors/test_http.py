"""The shared HTTP layer: backoff schedule and Retry-After parsing, by hand."""

from __future__ import annotations

import socket
import threading
from datetime import UTC, datetime

import httpx
import pytest

from connectors.base import AuthExpiredError, NotFoundError, PermanentError, TransientError
from connectors.http import (
    PlatformHttp,
    backoff_ceiling,
    error_for_status,
    hashtags_in,
    parse_retry_after,
    parse_time,
)
from tests.connectors.conftest import Sleeps
from tests.support import free_port

NOW = datetime(2025, 6, 15, 12, 0, 0, tzinfo=UTC)


def test_backoff_ceilings_double_then_cap() -> None:
    # base 0.5 s: 0.5, 1, 2, 4, 8, then capped at 10.
    assert [backoff_ceiling(n, 0.5, 10.0) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0]


def test_full_jitter_draws_below_the_ceiling() -> None:
    http = PlatformHttp(jitter=lambda ceiling: ceiling / 4, base_delay=1.0, max_delay=30.0)
    error = TransientError("boom")
    # attempt 3: ceiling 1·2² = 4, the injected jitter takes a quarter of it.
    assert http.delay_for(error, 3) == 1.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        ("0", 0.0),
        (" 7 ", 7.0),
        ("Sun, 15 Jun 2025 12:01:30 GMT", 90.0),  # IMF-fixdate, 90 s after NOW
        ("Sunday, 15-Jun-25 12:00:10 GMT", 10.0),  # obsolete RFC 850 form
        ("Sun, 15 Jun 2025 11:00:00 GMT", 0.0),  # in the past: do not wait
        ("soon", None),
        (None, None),
    ],
)
def test_retry_after_seconds_and_http_dates(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


def test_status_mapping() -> None:
    def of(status: int) -> object:
        return error_for_status(httpx.Response(status))

    assert of(200) is None
    assert isinstance(of(401), AuthExpiredError)
    assert isinstance(of(404), NotFoundError)
    assert isinstance(of(410), NotFoundError)
    assert isinstance(of(503), TransientError)
    assert isinstance(of(422), PermanentError)
    assert not isinstance(of(422), TransientError)


def test_connection_errors_are_retried_then_raised() -> None:
    sleeps = Sleeps()
    http = PlatformHttp(sleep=sleeps, jitter=lambda c: c, max_attempts=3, timeout=1.0)
    with pytest.raises(TransientError):
        # Port 9 (discard) on loopback refuses connections: a real transport error.
        http.request("GET", "http://127.0.0.1:9/", classify=error_for_status)
    assert sleeps.delays == [0.5, 1.0]
    assert http.attempts == 3


def test_a_refused_connection_is_raised_at_once_when_told_and_a_timeout_still_retried() -> None:
    sleeps = Sleeps()
    http = PlatformHttp(sleep=sleeps, jitter=lambda c: c, max_attempts=3, retry_refused=False)
    with pytest.raises(TransientError) as refused:
        http.request("GET", f"http://127.0.0.1:{free_port()}/", classify=error_for_status)
    assert refused.value.code == "connection_refused"
    assert (http.attempts, sleeps.delays) == (1, [])
    # A peer that accepts and never answers is a timeout: it keeps its back-off.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        http = PlatformHttp(
            sleep=sleeps, jitter=lambda c: c, max_attempts=2, timeout=0.2, retry_refused=False
        )
        with pytest.raises(TransientError) as timed_out:
            http.request("GET", url, classify=error_for_status)
    assert timed_out.value.code == "timeout"
    assert (http.attempts, sleeps.delays) == (2, [0.5])


def test_a_caller_stopping_ends_the_wait_before_a_retry_and_gets_the_error() -> None:
    """The engagement runner (``murmur worker``) told to stop mid back-off stops: the wait
    (here a minute) ends and the error is raised, with no further attempt."""
    stop = threading.Event()
    http = PlatformHttp(base_delay=60.0, jitter=lambda c: c, max_attempts=5, stop=stop)
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(TransientError) as refused:
        http.request("GET", f"http://127.0.0.1:{free_port()}/", classify=error_for_status)
    assert refused.value.code == "connection_refused"
    assert http.attempts == 1


def test_helpers() -> None:
    assert hashtags_in("Go #AI and #ai, #Python! not&#38;this") == ("ai", "python")
    assert parse_time("2025-06-15T12:00:00+0000") == NOW
    assert parse_time("2025-06-15T12:00:00.000Z") == NOW
    assert parse_time(NOW.timestamp()) == NOW
