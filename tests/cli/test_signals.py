"""Stop signals reach what they stop: under a held lock, via another thread, after Dagster."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import HANG_SECONDS


def _run(script: str, *args: str) -> list[str]:
    """``script`` in a Python process of its own, from the repository; its output's lines."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split("\n")


# The race, made certain: the main thread holds the stop event's own lock (as it does for a
# moment inside every ``Event.wait``, which the worker's and the host's loops call every
# 0.2-0.5 s) when SIGTERM arrives. A handler that set the event there waited for that lock
# forever: the process never stopped (three CI runs in ten, a ``murmur worker``).
_SCRIPT = textwrap.dedent(
    """
    import os, signal
    from murmur.supervise import StopSignals

    with StopSignals() as signals:
        with signals.event._cond:
            os.kill(os.getpid(), signal.SIGTERM)  # its handler runs here, the lock held
            print("handled", signals.stopped, flush=True)
        print("stopping", signals.wait(5), signals.event.is_set(), signals.name, flush=True)
    """
)


def test_a_stop_signal_while_the_main_thread_holds_the_events_lock_stops_it() -> None:
    lines = _run(_SCRIPT)
    assert lines[:2] == ["handled True", "stopping True True SIGTERM"]


# A process-directed signal is handled in C by whichever thread the kernel picks; the Python
# handler then waits for the main thread's next bytecode. Here another thread takes the
# signal while the main thread sleeps in ``wait``: only the wake-up fd, written by the C
# handler, ends that sleep (before it, the main thread slept its whole timeout).
_OTHER_THREAD = textwrap.dedent(
    """
    import signal, threading
    from murmur.supervise import StopSignals

    with StopSignals() as signals:
        threading.Timer(
            0.2, lambda: signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        ).start()
        print("stopping", signals.wait(3600), signals.name, flush=True)
    """
)


def test_a_stop_signal_taken_by_another_thread_wakes_the_main_threads_wait() -> None:
    lines = _run(_OTHER_THREAD)
    assert lines[0] == "stopping True SIGTERM"


# Dagster's in-process run points SIGTERM at SIGINT's handler and leaves it there; in a
# shell's background job SIGINT is ignored, so SIGTERM became ignored for the rest of the
# process and for every child it spawned until the child set a handler: a `murmur worker`
# sent SIGTERM as it started kept running (the crash test, 3 CI runs in ~12).
_PIPELINE_RUN = textwrap.dedent(
    """
    import signal, sys
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job starts
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # whatever the test's process had
    from core.settings import Settings
    from pipelines.run import run_all

    summary = run_all(Settings(data_dir=sys.argv[1]), ingest=False)
    print(summary.success, signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
    """
)


def test_an_in_process_pipeline_run_leaves_sigterm_as_it_found_it(tmp_path: Path) -> None:
    lines = _run(_PIPELINE_RUN, str(tmp_path / "data"))
    assert lines[0] == "True True"
