"""``murmur pipeline run``: materialize everything that is due, once, in this process."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dagster import (
    AssetCheckSeverity,
    AssetsDefinition,
    AssetSelection,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    define_asset_job,
)

from core.settings import Settings
from pipelines.analytics.assets import DAILY_ASSETS, INSIGHT_ASSETS
from pipelines.definitions import resources
from pipelines.ingest.assets import CAPTURE
from pipelines.logs import SILENT_CONSOLE
from pipelines.partitions import (
    DayRange,
    due_days,
    later_ranges,
    plan,
    range_tags,
    rebuild_tags,
    rebuilds,
)
from pipelines.resources import PlatformsResource, StoreResource
from warehouse.errors import StoreUnavailableError
from warehouse.lake.integrity import catalog_problems
from warehouse.marts.definitions import NewRows
from warehouse.marts.runs import days_with_new_raw, last_run, mark_run_script

# How far back a new store's first run captures the (simulated) platforms.
HISTORY_DAYS = 14

# Each step's Dagster job, as Dagster's runs list names it (not `__ephemeral_asset_job__`):
# the schedules' own jobs where a step is what they run, and the start-up history's own.
JOBS = {
    "history": "history_capture",
    "ingest": "ingest_hourly",
    "marts": "marts_rebuild",
    "insights": "insights",
}
# Who started a run, on every run of a step (Dagster shows a run's tags).
STARTED_BY = "murmur/started_by"


@dataclass
class StepSummary:
    """One materialize call: what it covered, whether it succeeded, how long it took."""

    name: str
    partitions: str
    success: bool
    seconds: float
    checks_failed: list[str] = field(default_factory=list)
    read_failures: int = 0  # platform reads that failed and were recorded (ingest)
    checks_warned: list[str] = field(default_factory=list)  # failed WARN-level checks
    asset_seconds: dict[str, float] = field(default_factory=dict)  # each step's own time
    error: str = ""  # a failed step's first error, in one line: "ClassName: message"
    trace: str = ""  # its whole trace, as Dagster records it
    # staged rows and posts it rebuilt on later days, for an older import's posts alone
    later_rows: int = 0
    later_posts: int = 0


@dataclass
class RunSummary:
    """What ``run_all`` did."""

    started_at: datetime
    hour: str
    days: list[DayRange]  # rebuilt whole
    steps: list[StepSummary] = field(default_factory=list)
    # later days that older new rows change, rebuilt for those rows' posts alone
    later: list[DayRange] = field(default_factory=list)
    complete: bool = False  # marked as a complete run: its days are not due again

    @property
    def success(self) -> bool:
        return all(s.success for s in self.steps)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def checks_failed(self) -> list[str]:
        """The failed ERROR-level checks of every step: the data is wrong, not just late."""
        return [c for s in self.steps for c in s.checks_failed]


def run_all(
    settings: Settings,
    *,
    now: datetime | None = None,
    ingest: bool = True,
    history: bool = False,
    instance: DagsterInstance | None = None,
    progress: Callable[[StepSummary], None] | None = None,
) -> RunSummary:
    """Ingest the current hour, rebuild the days with new raw data, then recompute insights.

    The due days are those with raw rows ingested since the last complete run (all days on
    the first run), plus the day after each (its first delta depends on them), never
    after today: the cost follows the new data, not the length of history. ``history``
    first captures the platforms' past (``history_moments``) when the store has never had
    a complete run: only the bundled simulator can answer as of the past. ``progress`` is
    called with each step as soon as it finishes.
    """
    # A run on a damaged catalog would commit on top of it (and fail on it at every later
    # run): refused, with what the doctor would say first.
    damaged = catalog_problems(settings.lake, quick=True)
    if damaged:
        raise StoreUnavailableError(f"{damaged[0]}; `murmur doctor` names what is damaged")
    # The watermark is the wall clock (ingested_at is), even when ``now`` is given.
    wall = datetime.now(UTC).replace(tzinfo=None)
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    naive = moment.replace(tzinfo=None)
    hour = moment.strftime("%Y-%m-%d-%H:00")  # the hour in progress: ingest captures now
    res: dict[str, Any] = resources(settings)
    store: StoreResource = res["store"]
    tags = {"murmur/now": moment.isoformat(), STARTED_BY: "murmur pipeline run"}
    owned = instance is None
    inst = instance or DagsterInstance.ephemeral()
    summary = RunSummary(started_at=naive, hour=hour, days=[])

    def record(step: StepSummary) -> None:
        summary.steps.append(step)
        if progress is not None:
            progress(step)

    try:
        with contextlib.ExitStack() as held:
            # One session for the whole run: a session's open attaches the lake and copies
            # the publishing rows its SQL joins, which every asset would otherwise repeat.
            held.enter_context(store.session())
            if ingest and history:
                for past in _history_due(store, moment):
                    key = past.strftime("%Y-%m-%d-%H:00")
                    then = {
                        **res,
                        "platforms": PlatformsResource(
                            platforms_url=settings.platforms_url, as_of=past.isoformat()
                        ),
                    }
                    past_tags = {**tags, "murmur/now": past.isoformat()}
                    record(_step("history", key, [CAPTURE], then, inst, past_tags, key))
            if ingest:
                record(_step("ingest", hour, [CAPTURE], res, inst, tags, partition_key=hour))
            # Accounts connected since the session opened are joined from here on.
            with store.open() as s:
                s.refresh_publishing()
            summary.days, summary.later, new = _due_days(store, naive.date(), with_today=ingest)
            # Live runs compute as of the end of ingest, not of the run's start: the marts'
            # computed_at then follows the captures they read (a first run's history takes
            # a minute or two), and what was just captured is inside the insights' windows.
            after = moment if now is not None else datetime.now(UTC)
            after_tags = {**tags, "murmur/now": after.isoformat()}
            # The planned ranges are apart only across long or expensive gaps (a step over
            # them would pay for their days): one step each, in day order, with the later
            # days that follow it.
            for rebuild in rebuilds(summary.days, summary.later):
                range_ = {**after_tags, **rebuild_tags(rebuild, new)}
                record(_step("marts", rebuild.label, DAILY_ASSETS, res, inst, range_))
            record(_step("insights", "all", INSIGHT_ASSETS, res, inst, after_tags))
            # A failed ingest does not make the days recomputed here due again; failed marts
            # do, and so does a failed error-level check (its days are checked again next run).
            if all(
                step.success and not step.checks_failed
                for step in summary.steps
                if step.name != "ingest"
            ):
                run_id = f"run_all-{uuid.uuid4().hex[:12]}"
                with store.open() as s:
                    s.execute_script(mark_run_script(wall, run_id, len(summary.days)))
                summary.complete = True
    finally:
        if owned:
            inst.dispose()
    return summary


def rebuild_days(
    settings: Settings,
    days: set[date] | None,
    *,
    progress: Callable[[StepSummary], None] | None = None,
) -> RunSummary:
    """Rebuild the daily assets over ``days`` (None: every day with raw rows), then the
    insights: what ``murmur doctor`` runs once damaged derived files are taken out.

    The same steps as a run's marts and insights, over the days given rather than those due;
    a rebuild of every day is marked as a complete run, as ``run_all``'s is.
    """
    wall = datetime.now(UTC).replace(tzinfo=None)
    res: dict[str, Any] = resources(settings)
    store: StoreResource = res["store"]
    tags = {"murmur/now": datetime.now(UTC).isoformat(), STARTED_BY: "murmur doctor"}
    inst = DagsterInstance.ephemeral()
    summary = RunSummary(started_at=wall, hour=wall.strftime("%Y-%m-%d-%H:00"), days=[])

    def record(step: StepSummary) -> None:
        summary.steps.append(step)
        if progress is not None:
            progress(step)

    try:
        with store.session():
            with store.open() as s:
                wanted = (
                    set(days)
                    if days is not None
                    else set(s.run(lambda cur: days_with_new_raw(cur, None)))
                )
                summary.days = plan(s, {d for d in wanted if d <= wall.date()})
            for first, last in summary.days:
                range_ = {**tags, **range_tags([(first, last)])}
                record(_step("marts", f"{first}..{last}", DAILY_ASSETS, res, inst, range_))
            record(_step("insights", "all", INSIGHT_ASSETS, res, inst, tags))
            if days is None and summary.success and not summary.checks_failed:
                with store.open() as s:
                    run_id = f"rebuild-{uuid.uuid4().hex[:12]}"
                    s.execute_script(mark_run_script(wall, run_id, len(summary.days)))
                summary.complete = True
    finally:
        inst.dispose()
    return summary


def _history_due(store: StoreResource, moment: datetime) -> list[datetime]:
    """The past to capture: ``history_moments`` for a store that never had a complete run."""
    with store.open() as s:
        new_store = s.run(last_run) is None
    return history_moments(moment) if new_store else []


def _due_days(
    store: StoreResource, today: date, *, with_today: bool
) -> tuple[list[DayRange], list[DayRange], NewRows | None]:
    """The days to rebuild whole, as planned ranges; the later days to rebuild for the new
    rows' posts alone; and those rows (those ingested since the last complete run)."""
    # Whole: the days with new raw rows, the day after each (its first delta depends on
    # them), and today when ingesting; never after today. Later: the days after those on
    # which the new rows' posts were read before (an import of older days).
    with store.open() as s:
        since = s.run(last_run)
        found = s.run(lambda cur: days_with_new_raw(cur, since))
        due = due_days(found, today)
        if with_today:
            due.add(today)
        whole = plan(s, due)
        # the first run rebuilds every day with raw rows whole: nothing is later
        new = NewRows(since=since) if since is not None else None
        return whole, later_ranges(s, new, whole, today), new


def history_moments(now: datetime) -> list[datetime]:
    """The past captured for a new store, oldest first: daily over the 14 days before the
    last two, then every 6 hours (trend windows are 6 hours long: each holds a reading)."""
    daily = [now - timedelta(days=d) for d in range(HISTORY_DAYS, 2, -1)]
    recent = [now - timedelta(hours=h) for h in range(48, 0, -6)]
    return daily + recent


@contextlib.contextmanager
def _sigterm_kept() -> Iterator[None]:
    """SIGTERM's handler as it was before an in-process Dagster run, once the run is over."""
    # Dagster points SIGTERM at SIGINT's handler for the run and leaves it there after
    # (dagster._utils.interrupts). Where SIGINT is ignored (a shell's background job), that
    # made SIGTERM ignored for the rest of the process, and for every child it spawned until
    # the child set a handler of its own: a `murmur worker` stopped as it started kept running.
    if threading.current_thread() is not threading.main_thread():
        yield  # Dagster changes handlers only in the main thread
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before is not None:  # None: a handler set outside Python, which Python cannot restore
            signal.signal(signal.SIGTERM, before)


def _execute(
    job_name: str,
    assets: list[AssetsDefinition],
    res: dict[str, Any],
    instance: DagsterInstance,
    tags: dict[str, str],
    partition_key: str | None,
) -> ExecuteInProcessResult:
    """``assets`` materialized in this process as one run of the job ``job_name``."""
    job = define_asset_job(job_name, selection=AssetSelection.assets(*assets))
    defs = Definitions(assets=assets, jobs=[job], resources=res)
    return defs.resolve_job_def(job_name).execute_in_process(
        instance=instance,
        partition_key=partition_key,
        tags=tags,
        raise_on_error=False,
        # The CLI prints the summary and a failure's error (logs.py).
        run_config=SILENT_CONSOLE,
    )


def _step(
    name: str,
    partitions: str,
    assets: list[AssetsDefinition],
    res: dict[str, Any],
    instance: DagsterInstance,
    tags: dict[str, str],
    partition_key: str | None = None,
) -> StepSummary:
    began = time.perf_counter()
    with _sigterm_kept():
        result = _execute(JOBS[name], assets, res, instance, tags, partition_key)
    evaluations = [e for e in result.get_asset_check_evaluations() if not e.passed]
    failed = [e.check_name for e in evaluations if e.severity == AssetCheckSeverity.ERROR]
    warned = [e.check_name for e in evaluations if e.severity != AssetCheckSeverity.ERROR]
    # Only the ingest assets record "errors": one per platform read that failed.
    reads = sum(
        int(getattr(e.step_materialization_data.materialization.metadata.get("errors"), "value", 0))
        for e in result.get_asset_materialization_events()
    )
    # staging's, once: a run over a range of days records its materialization per day
    later = {
        e.asset_key: e.step_materialization_data.materialization.metadata
        for e in result.get_asset_materialization_events()
        if "later_rows" in e.step_materialization_data.materialization.metadata
    }.values()
    took = {
        e.step_key or "": getattr(e.event_specific_data, "duration_ms", 0.0) / 1000
        for e in result.get_step_success_events()
    }
    error, trace = "", ""
    # A step's failure, a resource's that failed to start, or the run's: the first recorded.
    for event in result.all_events if not result.success else []:
        info = getattr(event.event_specific_data, "error", None)
        if info is None or not hasattr(info, "to_string"):  # Dagster's SerializableErrorInfo
            continue
        trace = str(info.to_string())
        # Below Dagster's wrapper ("Error occurred while executing op …") is the step's own.
        while info.cause is not None and (info.cls_name or "").startswith("Dagster"):
            info = info.cause
        lines = info.message.splitlines()
        said = lines[0].split(": ", 1)[-1] if lines else ""
        error = f"{info.cls_name or 'Error'}: {said}"
        break
    return StepSummary(
        name,
        partitions,
        result.success,
        time.perf_counter() - began,
        failed,
        reads,
        warned,
        took,
        error,
        trace,
        sum(int(getattr(m["later_rows"], "value", 0)) for m in later),
        sum(int(getattr(m["later_posts"], "value", 0)) for m in later),
    )
