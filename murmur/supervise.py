"""Child processes of `murmur up`: own process groups, restarts on a budget, nothing left behind.

Every child runs in a session (and so a process group) of its own: stopping it reaches what it
started too (Dagster's webserver, daemon and code servers). Each is launched through this
module's ``__main__``, which asks Linux to send the child SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``) and then ``exec``s the real command, so even a SIGKILLed `murmur up`
leaves nothing running.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

import structlog

log = structlog.get_logger("murmur.supervise")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def describe_exit(code: int) -> str:
    """A Popen return code in words: ``exit code 3`` or ``killed by SIGKILL``."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit code {code}"


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies, already dead, do not count)."""
    proc = "/proc"
    if not os.path.isdir(proc):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", encoding="ascii", errors="replace") as stat:
                # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
                fields = stat.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to every process of group ``pgid``; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def launcher(argv: Sequence[str]) -> list[str]:
    """``argv`` run through this module, so it dies with the process that starts it."""
    return [sys.executable, "-m", "murmur.supervise", str(os.getpid()), "--", *argv]


class StopSignals:
    """SIGTERM, SIGINT and SIGHUP turned into one event, set by the main loop's ``wait``."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.received: int | None = None
        self._previous: dict[int, object] = {}
        self._previous_wakeup = -1
        self._wake_read, self._wake_write = os.pipe()
        for fd in (self._wake_read, self._wake_write):
            os.set_blocking(fd, False)

    def __enter__(self) -> StopSignals:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        # The C-level handler writes each signal's number into the pipe itself, in whichever
        # thread the kernel chose: ``wait`` sees a stop even if the Python-level handler has
        # not run yet (it runs only when the main thread next executes bytecode).
        self._previous_wakeup = signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)
        # `kill -USR1 <pid>` writes every thread's stack to stderr, from C, whatever the
        # main thread is doing: how a process that does not stop tells where it is stuck.
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        return self

    def __exit__(self, *exc: object) -> None:
        faulthandler.unregister(signal.SIGUSR1)
        signal.set_wakeup_fd(self._previous_wakeup)
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        os.close(self._wake_read)
        os.close(self._wake_write)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # The handler runs in the main thread between two of its bytecodes, possibly while
        # that thread holds a lock: the log's, or the stop event's own inside ``Event.wait``
        # (``Event.set`` here then waited forever on it: a worker sent SIGTERM kept working
        # and never stopped, three CI runs in ten). So it takes no lock: it notes the signal
        # and ``wait``, woken through the pipe (the wake-up fd), sets the event.
        if self.received is None:
            self.received = signum

    @property
    def stopped(self) -> bool:
        """Whether a stop signal has arrived."""
        return self.received is not None

    @property
    def name(self) -> str | None:
        """The first stop signal's name (``SIGTERM``), or None while none has arrived."""
        return signal.Signals(self.received).name if self.received is not None else None

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True, the event set, as soon as a stop signal has arrived."""
        if self.received is None and select.select([self._wake_read], [], [], seconds)[0]:
            with contextlib.suppress(BlockingIOError):
                for signum in os.read(self._wake_read, 512):
                    if self.received is None and signum in STOP_SIGNALS:
                        self.received = signum
        if self.received is None:
            return False
        self.event.set()
        return True


@dataclass
class Child:
    """One supervised command and its current process."""

    name: str
    argv: list[str]
    env: dict[str, str]
    restart: bool
    proc: subprocess.Popen[bytes]
    restarts: deque[float] = field(default_factory=deque)
    restart_at: float | None = None  # a restart waiting out its backoff (monotonic time)
    returncode: int | None = None  # set once a one-shot child has finished
    # The process group is known empty: its number may now be reused by an unrelated process,
    # so it must never be signalled again.
    cleaned: bool = False


class Supervisor:
    """Starts children, restarts one that dies on a budget, and stops them all, group and all."""

    # A child that exits on its own is reported in one line and restarted after 1, 2, 4 … s; a
    # fourth exit within a minute (``max_restarts`` restarts per ``window``) stops everything:
    # a child that cannot stay up is a fault to show, not to hide behind endless restarts.

    def __init__(
        self,
        *,
        max_restarts: int = 3,
        window: float = 60.0,
        backoff: float = 1.0,
        grace: float = 10.0,
    ) -> None:
        self.max_restarts = max_restarts
        self.window = window
        self.backoff = backoff
        self.grace = grace
        self.children: list[Child] = []

    def start(
        self, name: str, argv: Sequence[str], env: dict[str, str], *, restart: bool = True
    ) -> Child:
        """Start ``argv`` as child ``name``; ``restart=False`` for a one-shot command."""
        child = Child(name, list(argv), env, restart, self._spawn(name, argv, env))
        self.children.append(child)
        return child

    def _spawn(
        self, name: str, argv: Sequence[str], env: dict[str, str]
    ) -> subprocess.Popen[bytes]:
        # Always from the main thread: PR_SET_PDEATHSIG fires when the *thread* that forked
        # the child ends, so a helper thread spawning children would kill them on its exit.
        proc = subprocess.Popen(launcher(argv), env=env, start_new_session=True)
        log.info("child.started", child=name, pid=proc.pid)
        return proc

    def check(self) -> str | None:
        """Handle children that exited since the last call; a reason to stop everything, or None."""
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    child.restart_at = None
                    child.proc = self._spawn(child.name, child.argv, child.env)
                    child.cleaned = False
                continue
            if child.returncode is not None:
                continue
            code = child.proc.poll()
            if code is None:
                continue
            # What the dead child started may still run (Dagster's webserver holding its port).
            self._terminate([child])
            if not child.restart:
                child.returncode = code
                if code != 0:
                    log.error(f"{child.name} failed: {describe_exit(code)}", child=child.name)
                continue
            while child.restarts and now - child.restarts[0] > self.window:
                child.restarts.popleft()
            said = f"{child.name} (pid {child.proc.pid}) exited unexpectedly: {describe_exit(code)}"
            if len(child.restarts) >= self.max_restarts:
                reason = (
                    f"{said}; it was restarted {len(child.restarts)} times within"
                    f" {self.window:g} s, stopping everything"
                )
                log.error(reason, child=child.name, exit_code=code)
                child.returncode = code
                return reason
            delay = self.backoff * 2 ** len(child.restarts)
            child.restarts.append(now)
            child.restart_at = now + delay
            log.error(
                f"{said}; restarting in {delay:g} s"
                f" (restart {len(child.restarts)} of {self.max_restarts} per {self.window:g} s)",
                child=child.name,
                exit_code=code,
            )
        return None

    def stop(self) -> None:
        """Stop every child and everything it started: SIGTERM, then SIGKILL after ``grace``."""
        for child in self.children:
            child.restart_at = None
        # Newest first, each gone before the next: clients (workers, Dagster) stop while the
        # simulator they call still answers, instead of retrying against a closing server.
        for child in reversed(self.children):
            self._terminate([child])

    def _terminate(self, children: Sequence[Child]) -> None:
        groups = {c.proc.pid: c for c in children if not c.cleaned}
        if not groups:
            return
        # SIGTERM to the leader first: it knows how to stop what it started (Dagster's code
        # server, signalled directly, is restarted by its manager instead). What outlives its
        # leader gets SIGTERM as a group, and whatever still runs after the grace, SIGKILL.
        leaders = set(groups)
        for child in groups.values():
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while True:
            for pgid, child in groups.items():
                if pgid in leaders and child.proc.poll() is not None:
                    leaders.discard(pgid)
                    signal_group(pgid, signal.SIGTERM)
            alive = [pgid for pgid in groups if group_alive(pgid)]
            if not alive or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if alive:
            left = ", ".join(groups[pgid].name for pgid in alive)
            log.warning(f"still running after {self.grace:g} s, killing: {left}")
            for pgid in alive:
                signal_group(pgid, signal.SIGKILL)
            if not self._wait_gone(groups, 10.0):
                log.error(f"could not stop: {left}")
                return
        for child in groups.values():
            child.cleaned = True

    @staticmethod
    def _wait_gone(groups: dict[int, Child], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            for child in groups.values():
                child.proc.poll()  # reap the leader, or it lingers as a zombie
            if not any(group_alive(pgid) for pgid in groups):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def set_parent_death_signal(sig: int) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _exec_child(argv: list[str]) -> None:
    """``python -m murmur.supervise PARENT_PID -- COMMAND…``: tie COMMAND to PARENT_PID, exec it."""
    if len(argv) < 3 or argv[1] != "--":
        sys.exit("usage: python -m murmur.supervise PARENT_PID -- COMMAND [ARG…]")
    parent, command = int(argv[0]), argv[2:]
    # The death signal survives exec; set first, then check, so a parent that died in between
    # is still seen (we would have been re-parented already).
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:
        sys.exit(f"murmur: parent {parent} is gone; not starting {command[0]}")
    # Default dispositions whatever the parent's were: a shell's background job ignores
    # SIGINT, and Dagster maps SIGTERM onto SIGINT's handler, so it would ignore SIGTERM too.
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    os.execvp(command[0], command)


if __name__ == "__main__":
    _exec_child(sys.argv[1:])
