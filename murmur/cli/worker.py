"""``murmur worker``: the publishing worker and the engagement runner, one thread each."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Annotated

import typer

from murmur.cli.common import (
    DataDir,
    LogFormatOption,
    console_overrides,
    load_settings,
    use_console,
)


def worker(
    data_dir: DataDir = None,
    publishing: Annotated[bool, typer.Option(help="Publish due posts.")] = True,
    engagement: Annotated[
        bool, typer.Option(help="Sync the inbox, send replies, run automations and webhooks.")
    ] = True,
    worker_id: Annotated[
        str | None, typer.Option(help="The publishing worker's id (default: host and pid).")
    ] = None,
    log_format: LogFormatOption = None,
) -> None:
    """Run the workers: publishing on time, inbox and automations, webhook deliveries.

    Their knobs are settings (MURMUR_PUBLISHING_CONCURRENCY, …_POLL_INTERVAL_SECONDS,
    …_LEASE_SECONDS, …_HTTP_TIMEOUT_SECONDS, …_MAX_ATTEMPTS); run as many as you like.
    """
    from murmur.supervise import StopSignals

    # Caught before the workers' imports and the settings (~0.5 s of a start): a stop that
    # comes while the worker starts ends it like any other, with status 0.
    with StopSignals() as signals:
        from workers.engagement.runner import run_engagement
        from workers.publishing.worker import run_worker

        settings = load_settings(data_dir, **console_overrides(log_format))
        use_console(settings)
        # SIGTERM, SIGINT and SIGHUP all end the loops the same way: the current step finishes.
        stop = signals.event
        # Daemon threads, so the bounded joins below bound the exit: a step stuck on a platform
        # that stopped answering (its retries and timeouts) must not keep a stopped worker up.
        # Abandoning a step is safe: every piece of work is claimed under a lease.
        loops: list[tuple[str, bool, Callable[..., object], dict[str, object]]] = [
            ("publishing", publishing, run_worker, {"stop": stop, "worker_id": worker_id}),
            ("engagement", engagement, run_engagement, {"stop": stop}),
        ]
        threads = [
            threading.Thread(name=name, target=loop, args=(settings,), kwargs=kwargs, daemon=True)
            for name, wanted, loop, kwargs in loops
            if wanted
        ]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads) and not signals.wait(0.5):
            pass
        stop.set()
        # One deadline for all threads, not one each: a stop is bounded whatever the number
        # of loops (two at 30 s each outlasted a supervisor's 60 s wait under load).
        deadline = time.monotonic() + settings.worker_stop_seconds
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        abandoned = [thread.name for thread in threads if thread.is_alive()]
    if abandoned:
        # Daemon threads alone do not bound the exit: the interpreter joins the publishing
        # pool's threads when it exits, so a call a platform holds back (and its retries)
        # kept a stopped worker up past any deadline (over 60 s, once, under CI's load).
        import structlog

        structlog.get_logger(__name__).warning(
            "worker.abandoned", loops=abandoned, after_seconds=settings.worker_stop_seconds
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
