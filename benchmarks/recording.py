"""What the store benchmarks record per role: latencies, errors, retries; a free port, a child
process stopped."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

#: The Quack token of ADR 0002's candidate (a), the store of ADR 0001.
QUACK_TOKEN = "bench-token-0123456789"


class Recorder:
    """Latencies and errors of one role."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.samples: dict[str, list[float]] = {}
        self.errors = 0
        self.first_error: str | None = None
        self.retries = 0
        self.extra: dict[str, Any] = {}
        self._lock = threading.Lock()

    def timed(self, name: str, fn: Callable[[], Any]) -> bool:
        start = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # every failure is a finding, not a crash
            self.error(exc)
            return False
        elapsed = (time.perf_counter() - start) * 1000
        with self._lock:
            self.samples.setdefault(name, []).append(elapsed)
        return True

    def error(self, exc: BaseException | str) -> None:
        with self._lock:
            self.errors += 1
            if self.first_error is None:
                self.first_error = f"{type(exc).__name__}: {exc}"[:300]

    def result(self, seconds: float) -> dict[str, Any]:
        return {
            "role": self.role,
            "seconds": seconds,
            "samples": {k: summarize(v) for k, v in self.samples.items()},
            "errors": self.errors,
            "first_error": self.first_error,
            "retries": self.retries,
            **self.extra,
        }


def summarize(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)

    return {"n": len(ordered), "p50": pct(0.50), "p99": pct(0.99), "max": round(ordered[-1], 2)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def stop_child(proc: subprocess.Popen[bytes], grace: float, hang: float) -> None:
    """Terminate ``proc``; past ``grace`` seconds kill it, and wait ``hang`` more for it."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(hang)
