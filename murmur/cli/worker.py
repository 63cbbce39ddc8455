"""``murmur worker``: the publishing worker and the engagement runner, one thread each."""

from __future__ import annotations

import threading
import time
from typing import Annotated

import typer

from murmur.cli.common import DataDir, load_settings

# How long a stopped worker waits for its loops' current steps before it exits anyway.
STOP_SECONDS = 30


def worker(
    data_dir: DataDir = None,
    publishing: Annotated[bool, typer.Option(help="Publish due posts.")] = True,
    engagement: Annotated[
        bool, typer.Option(help="Sync the inbox, send replies, run automations and webhooks.")
    ] = True,
    worker_id: Annotated[
        str | None, typer.Option(help="The publishing worker's id (default: host and pid).")
    ] = None,
) -> None:
    """Run the workers: publishing on time, inbox and automations, webhook deliveries.

    Their knobs are settings (MURMUR_PUBLISHING_CONCURRENCY, …_POLL_INTERVAL_SECONDS,
    …_LEASE_SECONDS, …_HTTP_TIMEOUT_SECONDS, …_MAX_ATTEMPTS); run as many as you like.
    """
    from murmur.supervise import StopSignals
    from workers.engagement.runner import run_engagement
    from workers.publishing.worker import run_worker

    settings = load_settings(data_dir)
    with StopSignals() as signals:
        # SIGTERM, SIGINT and SIGHUP all end the loops the same way: the current step finishes.
        stop = signals.event
        # Daemon threads, so the bounded joins below bound the exit: a step stuck on a platform
        # that stopped answering (its retries and timeouts) must not keep a stopped worker up.
        # Abandoning a step is safe: every piece of work is claimed under a lease.
        threads = []
        if publishing:
            threads.append(
                threading.Thread(
                    target=run_worker,
                    args=(settings,),
                    kwargs={"stop": stop, "worker_id": worker_id},
                    daemon=True,
                )
            )
        if engagement:
            threads.append(
                threading.Thread(
                    target=run_engagement, args=(settings,), kwargs={"stop": stop}, daemon=True
                )
            )
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads) and not signals.wait(0.5):
            pass
        stop.set()
        # One deadline for all threads, not 30 s each: a stop is bounded by 30 s whatever
        # the number of loops (two at 30 s each outlasted a supervisor's 60 s wait under load).
        deadline = time.monotonic() + STOP_SECONDS
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
