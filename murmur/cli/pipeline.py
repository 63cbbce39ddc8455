"""``murmur pipeline run``: every asset once, in-process, with a line per step as it ends."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from murmur.cli.common import (
    DataDir,
    LogFormatOption,
    Refused,
    console_overrides,
    load_settings,
    refused,
    say,
    use_console,
)

if TYPE_CHECKING:
    from core.settings import Settings
    from pipelines.run import RunSummary, StepSummary

app = typer.Typer(help="Run the analytics pipeline.", no_args_is_help=True)


@app.command("run")
def run(
    data_dir: DataDir = None,
    history: Annotated[
        bool,
        typer.Option(
            help="On a store's first run, capture the simulated platforms' last 14 days first"
            " (daily, then every 6 hours over the last two): only the bundled simulator can"
            " answer as of the past."
        ),
    ] = False,
    ingest: Annotated[
        bool,
        typer.Option(
            help="Read the platforms (the connected accounts, their competitors, creators);"
            " --no-ingest reads none and rebuilds from what the store holds (imports).",
        ),
    ] = True,
    log_format: LogFormatOption = None,
) -> None:
    """Materialize every asset once, in-process, for the partitions that are due.

    One line per step as it finishes, then a summary; exit status 1 if a step failed, with
    one line more saying why when the disk is full or a lake file is damaged.
    """
    from dagster import DagsterInstance

    from murmur.doctor import full_disk
    from pipelines.run import run_all
    from warehouse.errors import DiskFullError, StoreUnavailableError
    from warehouse.health import disk_full

    if history and not ingest:
        raise typer.BadParameter("--history reads the platforms' past; --no-ingest reads none")
    settings = load_settings(data_dir, **console_overrides(log_format))
    use_console(settings)
    say(
        "Pipeline: ingest the current hour, rebuild the due days, then insights."
        if ingest
        else "Pipeline: no platform reads; rebuild the due days from the store, then insights.",
        "pipeline.start",
        ingest=ingest,
    )
    # With a Dagster home (as `up` gives it) the run is recorded there, so Dagster's UI lists
    # it and its partitions' fill status; without one it leaves no trace.
    instance = DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
    try:
        summary = run_all(
            settings,
            progress=_print_step,
            instance=instance,
            ingest=ingest,
            history=history,
        )
    except StoreUnavailableError as exc:
        # One line, no traceback: what an operator acts on (docs/operations.md).
        if isinstance(exc, DiskFullError) or disk_full(settings.data_dir):
            raise refused(Refused(full_disk(settings, "murmur pipeline run"))) from None
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise refused(Refused(f"the store is unavailable: {first}")) from None
    finally:
        if instance is not None:
            instance.dispose()
    _print_summary(summary)
    failed = [step for step in summary.steps if not step.success]
    if failed:
        _say_why(settings, failed)
    if failed or summary.checks_failed:
        raise typer.Exit(1)


def _say_why(settings: Settings, failed: list[StepSummary]) -> None:
    """One line for a full disk or a damaged lake file; any other failure's traces."""
    from rich.markup import escape

    from murmur.doctor import full_disk, lake_damage
    from warehouse.errors import says_disk_full
    from warehouse.health import disk_full

    if disk_full(settings.data_dir) or any(says_disk_full(step.trace) for step in failed):
        say(
            f"[bold red]Stopped:[/] {escape(full_disk(settings, 'murmur pipeline run'))}",
            "pipeline.disk_full",
            stderr=True,
            level="error",
        )
        return
    try:
        # The engine's error may name no file ("Variable-length int over 10 bytes."): every
        # page of the lake is decoded to find it (0.3 CPU-s on a `murmur up` store).
        damage = lake_damage(settings)
    except Exception:  # the check's own failure: the steps' traces say more
        damage = []
    if damage:
        more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
        say(
            f"[bold red]Stopped:[/] a lake file is damaged: {escape(str(damage[0]))}{more};"
            " `murmur doctor --deep` mends it (a derived file rebuilt, a raw one moved aside"
            " with its loss reported), then `murmur pipeline run` again",
            "pipeline.lake_damaged",
            stderr=True,
            level="error",
            file=str(damage[0]),
        )
        return
    for step in failed:
        say(
            escape(f"{step.name} {step.partitions} failed: {step.trace}"),
            "pipeline.step_failed",
            stderr=True,
            level="error",
            step=step.name,
            partitions=step.partitions,
        )


def _print_step(step: StepSummary) -> None:
    state = "[green]ok[/]" if step.success else "[bold red]failed[/]"
    checks = f"; checks failed: {', '.join(step.checks_failed)}" if step.checks_failed else ""
    if step.checks_warned:
        checks += f"; checks warned: {', '.join(step.checks_warned)}"
    # Failed reads never fail the ingest step (the run goes on), so they are said here.
    reads = f"; {step.read_failures} reads failed" if step.read_failures else ""
    say(
        f"  {step.name:<9} {step.partitions:<24} {step.seconds:7.1f} s  {state}{reads}{checks}",
        "pipeline.step",
        level="info" if step.success and not step.checks_failed else "error",
        step=step.name,
        partitions=step.partitions,
        seconds=round(step.seconds, 1),
        success=step.success,
        checks_failed=step.checks_failed,
        checks_warned=step.checks_warned,
        read_failures=step.read_failures,
    )


def _print_summary(summary: RunSummary) -> None:
    # a failed ERROR-level check means wrong data: never "ok" over it
    failed = [s for s in summary.steps if not s.success or s.checks_failed]
    days = ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in summary.days) or "none"
    outcome = (
        "[bold green]ok[/]"
        if not failed
        else f"[bold red]failed[/] ({', '.join(f'{s.name} {s.partitions}' for s in failed)})"
    )
    # A run not marked complete rebuilt no day for good: its due days are due again.
    done = f"days rebuilt: {days}" if summary.complete else f"days due again next run: {days}"
    if summary.later:
        # an older import's posts, rebuilt on the later days they were read (docs/pipeline.md)
        later = ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in summary.later)
        posts = sum(s.later_posts for s in summary.steps)
        done += f"; later days rebuilt for {posts} posts of older data: {later}"
    say(
        f"Pipeline {outcome}: {len(summary.steps)} steps in {summary.seconds:.1f} s;"
        f" hour {summary.hour}; {done}.",
        "pipeline.finished",
        level="error" if failed else "info",
        success=not failed,
        steps=len(summary.steps),
        seconds=round(summary.seconds, 1),
        hour=summary.hour,
    )
    checks = summary.checks_failed
    if checks:
        say(
            f"Checks failed: {', '.join(checks)}. The rebuilt days hold data that breaks them:"
            " find the rows (`murmur attach` opens the store; docs/pipeline.md says what each"
            " check tests), correct or re-import them, then run `murmur pipeline run` again.",
            "pipeline.checks_failed",
            level="error",
            checks=checks,
        )
    warned = [c for s in summary.steps for c in s.checks_warned]
    if warned:
        say(f"Checks warned: {', '.join(warned)}.", "pipeline.checks_warned", checks=warned)
