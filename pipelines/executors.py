"""Where a Dagster run's steps run: the run's own processes, or Celery workers elsewhere.

``MURMUR_PIPELINE_EXECUTOR=multiprocess`` (the default): Dagster's multiprocess executor,
a process per step on the machine that runs the run. ``celery``: dagster-celery's executor,
each step a task on ``MURMUR_CELERY_BROKER_URL`` (Redis or RabbitMQ) that a Celery worker,
on any machine, takes and runs (docs/operations.md, "Murmur on several machines").

The run and its workers must agree on the Celery app's settings: the run's come from
:func:`celery_config`, a worker's from the YAML file :func:`worker_config` gives
(``dagster-celery worker start -A dagster_celery.app -y <that file> -q dagster``).
``python -m pipelines.executors`` prints that file for the MURMUR_* variables it is given.

A step's task is acknowledged once the step has run, not when a worker takes it
(``task_acks_late``): a worker that dies mid-step (its machine lost, ``kill -9``) leaves the
task unacknowledged, and the broker hands it to another worker once
``MURMUR_CELERY_VISIBILITY_TIMEOUT`` has passed; the step runs again from its start (every
step rebuilds its days whole, so a second run of it counts nothing twice). The timeout must
outlast the longest step: a task still running past it is handed out a second time.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from dagster import ExecutorDefinition, multiprocess_executor

from core.settings import Settings

# The queue the run's tasks go to and its workers listen on (dagster-celery's default).
QUEUE = "dagster"


def celery_config(settings: Settings) -> dict[str, Any]:
    """The celery executor's config: the broker, the result backend, the Celery app's settings."""
    return {
        "broker": settings.celery_broker_url,
        "backend": settings.celery_backend_url or settings.celery_broker_url,
        "config_source": {
            "task_acks_late": True,
            # a task whose worker process died is put back, not failed (WorkerLostError)
            "task_reject_on_worker_lost": True,
            "worker_prefetch_multiplier": 1,
            "task_default_queue": QUEUE,
            "broker_connection_retry_on_startup": True,
            "broker_transport_options": {
                # dagster-celery's own (it replaces them when this key is given)
                "max_retries": 3,
                "interval_start": 0,
                "interval_step": 0.2,
                "interval_max": 0.5,
                # Redis: an unacknowledged task (its worker died) goes back to the queue
                # after this long; the live workers look for such tasks every tenth of it
                # (at most every 10 s, kombu's default interval, without its throttle).
                "visibility_timeout": settings.celery_visibility_timeout,
                "unacked_restore_interval": max(
                    1, min(10, settings.celery_visibility_timeout // 10)
                ),
                "unacked_restore_throttle": 1,
            },
        },
    }


def worker_config(settings: Settings) -> dict[str, Any]:
    """A worker's ``-y`` file: the same Celery settings as the runs' executor."""
    return {"execution": {"config": celery_config(settings)}}


def executor(settings: Settings) -> ExecutorDefinition:
    """The executor ``settings.pipeline_executor`` names, configured from ``settings``."""
    if settings.pipeline_executor == "celery":
        from dagster_celery import celery_executor

        configured: ExecutorDefinition = celery_executor.configured(
            celery_config(settings), name="celery"
        )
        return configured
    return multiprocess_executor


if __name__ == "__main__":
    # JSON, which is YAML: what the -y option reads, without a YAML library
    json.dump(worker_config(Settings()), sys.stdout, indent=2)
    sys.stdout.write("\n")
