"""Dagster's runs on `murmur up`'s console: each run as it appears and ends, each failed check.

The runs Dagster's daemon starts (an import's, by the import sensor; the hourly schedules')
log in their own processes, at WARNING (pipelines/logs.py): nothing said that an import
started a run, nor where to look at it. `up` watches the Dagster home's run storage from a
thread instead and logs, for every run created since it started, ``dagster.run`` when it
first sees it, ``dagster.run_finished`` when it ends, and ``dagster.check_failed`` for each
asset check that failed in it, each with the run's page in Dagster's UI. The plain console
(murmur/logs.py) says an import's run in one line (the import, the run and its link), an
import's run that succeeded, and any run or check that failed; JSON says them all.
"""

from __future__ import annotations

import threading
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from pipelines import IMPORT_TAG

if TYPE_CHECKING:
    from dagster import DagsterInstance, DagsterRun

log = structlog.get_logger("murmur.runs")

FINISHED = ("SUCCESS", "FAILURE", "CANCELED")


class RunWatch:
    """Polls the Dagster home ``home`` every ``interval`` seconds, from a daemon thread."""

    def __init__(self, home: str | Path, ui: str | None, *, interval: float = 2.0) -> None:
        self.home = Path(home)
        self.ui = ui.rstrip("/") if ui else None
        self.interval = interval
        # Runs created before (the pipeline `up` ran at start, which said its own steps)
        # are not said again.
        self.since = datetime.now(UTC)
        self.said: dict[str, str] = {}  # run id → the last status logged
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dagster-runs", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def link(self, run_id: str) -> str | None:
        """The run's page in Dagster's UI, when the UI's address is known."""
        return f"{self.ui}/runs/{run_id}" if self.ui else None

    def _run(self) -> None:
        instance: DagsterInstance | None = None
        try:
            while not self._stop.wait(self.interval):
                try:
                    if instance is None:
                        if not self._dagster_answers():
                            continue  # `dagster dev` has not made its instance ready yet
                        instance = open_instance(self.home)
                    self.look(instance)
                except Exception as exc:  # the storage busy, a run written meanwhile: next look
                    log.debug("dagster.watch_failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            if instance is not None:
                instance.dispose()

    def _dagster_answers(self) -> bool:
        if self.ui is None:
            return True
        try:
            with urllib.request.urlopen(f"{self.ui}/server_info", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def look(self, instance: DagsterInstance) -> None:
        """Log what changed since the last look: new runs, ended runs and their failed checks."""
        from dagster import RunsFilter

        records = instance.get_run_records(RunsFilter(created_after=self.since), limit=500)
        for record in reversed(records):  # oldest first
            run = record.dagster_run
            status = run.status.value
            last = self.said.get(run.run_id)
            self.said[run.run_id] = status
            if last is None:
                log.info("dagster.run", **self._fields(run), status=status)
            # A run may be first seen already ended (it took less than a look's interval).
            if status in FINISHED and last not in FINISHED:
                self._finished(instance, run, record.start_time, record.end_time)

    def _fields(self, run: DagsterRun) -> dict[str, Any]:
        fields: dict[str, Any] = {"run_id": run.run_id, "job": run.job_name}
        if run.tags.get(IMPORT_TAG):
            fields["import_batch"] = run.tags[IMPORT_TAG]
        if run.tags.get("dagster/partition"):
            fields["partition"] = run.tags["dagster/partition"]
        link = self.link(run.run_id)
        if link:
            fields["url"] = link
        return fields

    def _finished(
        self, instance: DagsterInstance, run: DagsterRun, start: float | None, end: float | None
    ) -> None:
        status = run.status.value
        fields = self._fields(run)
        if start is not None and end is not None:
            fields["seconds"] = round(end - start, 1)
        if status == "FAILURE":
            error = first_error(instance, run.run_id)
            if error:
                fields["error"] = error
        level = {"SUCCESS": log.info, "CANCELED": log.warning}.get(status, log.error)
        level("dagster.run_finished", **fields, status=status)
        for check in failed_checks(instance, run.run_id):
            (log.error if check["severity"] == "ERROR" else log.warning)(
                "dagster.check_failed",
                **check,
                run_id=run.run_id,
                job=run.job_name,
                **({"url": fields["url"]} if "url" in fields else {}),
            )


def open_instance(home: Path) -> DagsterInstance:
    """The Dagster instance of the home ``home`` (its dagster.yaml, its storage)."""
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    return DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


def failed_checks(instance: DagsterInstance, run_id: str) -> list[dict[str, Any]]:
    """The asset checks that failed in the run: asset, check, severity (ERROR, WARN), partition."""
    from dagster import AssetCheckEvaluation, DagsterEventType

    found = []
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.dagster_event.event_specific_data if entry.dagster_event else None
        if not isinstance(evaluation, AssetCheckEvaluation) or evaluation.passed:
            continue
        check: dict[str, Any] = {
            "asset": evaluation.asset_key.to_user_string(),
            "check": evaluation.check_name,
            "severity": evaluation.severity.value,
        }
        if evaluation.partition:
            check["partition"] = evaluation.partition
        found.append(check)
    return found


def first_error(instance: DagsterInstance, run_id: str) -> str | None:
    """The first failure a run recorded, in one line: ``step: ErrorClass: message``."""
    from dagster import DagsterEventType
    from dagster._core.events import JobFailureData
    from dagster._core.execution.plan.objects import StepFailureData

    wanted = {DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE}
    for entry in instance.all_logs(run_id, of_type=wanted):
        event = entry.dagster_event
        data = event.event_specific_data if event else None
        info = data.error if isinstance(data, StepFailureData | JobFailureData) else None
        if event is None or info is None:
            continue
        # Below Dagster's wrapper ("Error occurred while executing op …") is the step's own.
        while info.cause is not None and (info.cls_name or "").startswith("Dagster"):
            info = info.cause
        lines = info.message.strip().splitlines()
        said = lines[0].split(": ", 1)[-1] if lines else ""
        where = f"{event.step_key}: " if event.step_key else ""
        return f"{where}{info.cls_name or 'Error'}: {said}"[:300]
    return None
