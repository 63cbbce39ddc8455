"""``murmur up``: the whole product from one command, each part a supervised child process."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from murmur.cli.common import (
    AccessLogOption,
    DataDir,
    LogFormatOption,
    Refused,
    console_overrides,
    load_settings,
    refused,
    say,
    use_console,
)
from murmur.cli.keys import Minted, mint, sign_in_link
from pipelines import PLANNED_EVENTS_ENV

if TYPE_CHECKING:
    from core.settings import Settings
    from murmur.cli.host import Watch
    from warehouse.store import Store

# ``murmur up`` mints a key of this name at each start and revokes the earlier ones (only
# once it hosts the store: never while another Murmur runs on the directory).
QUICKSTART = "quickstart"


def up(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    simulator: Annotated[bool, typer.Option(help="Run the platform simulator.")] = True,
    pipeline: Annotated[bool, typer.Option(help="Run the pipeline once at start.")] = True,
    dagster: Annotated[bool, typer.Option(help="Run Dagster's webserver and daemon.")] = True,
    workers: Annotated[
        bool, typer.Option(help="Run the publishing and engagement workers.")
    ] = True,
    log_format: LogFormatOption = None,
    access_log: AccessLogOption = False,
) -> None:
    """The whole product on the embedded default: store, key, API, simulator, workers, Dagster.

    One plain line per event that matters; --access-log adds requests; --log-format json.
    """
    from murmur.cli.host import murmur_argv, run
    from murmur.cli.serving import link_host
    from murmur.runs import RunWatch
    from murmur.supervise import Supervisor

    settings = load_settings(
        data_dir, host=host, port=port, **console_overrides(log_format, access_log)
    )
    # Before the children's environment is made: each of them logs as this process does.
    use_console(settings)
    try:
        held = _one_up_per_directory(settings)
    except Refused as exc:
        raise refused(exc) from None
    env = {**os.environ, "MURMUR_DATA_DIR": str(settings.data_dir.resolve())}
    # `dagster dev` stops its webserver, daemon and code server one after another, each
    # finishing what it holds: 10 s was not enough on a loaded machine (CI, 2026-12-02).
    supervisor = Supervisor(grace=30.0)
    base = f"http://{settings.host}:{settings.port}/api/public/v1"
    dagster_ui = f"http://{link_host(settings.host)}:{settings.dagster_port}"
    quickstart: list[Minted] = []
    watches: list[RunWatch] = []

    def with_store(store: Store) -> None:
        # Minted once the API's port is this process's: a second `up` on the same port
        # never gets here, so it cannot revoke the running instance's key.
        minted = mint(store, [], QUICKSTART, "test", None, replace=True)
        quickstart.append(minted)
        # First, before the children's and the pipeline's logs: the one thing to copy. Never
        # split across lines (say's soft wrap): the key is copied from its line.
        workspace = minted.workspace_ids[0]
        say(f"Test workspace: {workspace}", "up.workspace", workspace=workspace)
        say(
            f"Test API key ({minted.key_id}), shown once: [bold]{minted.key}[/]",
            "up.key",
            key_id=minted.key_id,
            key=minted.key,
        )
        link, note = sign_in_link(store, settings, workspace)
        say(f"{note} {link}", "up.sign_in_link", workspace=workspace, url=link)
        if minted.revoked:
            say(
                f"Revoked the earlier quickstart key{'s' if len(minted.revoked) > 1 else ''}:"
                f" {', '.join(minted.revoked)}",
                "up.keys_revoked",
                keys=minted.revoked,
            )
        say(f"Starting Murmur on {base}…", "up.starting", url=base)

    def before_api() -> None:
        if simulator:
            supervisor.start(
                "simulator",
                [
                    *murmur_argv(),
                    "simulator",
                    "--port",
                    str(settings.simulator_port),
                    "--seed",
                    str(settings.simulator_seed),
                ],
                env,
            )

    def after_api(watch: Watch) -> int:
        if workers:
            supervisor.start("worker", [*murmur_argv(), "worker"], env)
        dagster_env = env
        if dagster:
            home = prepare_dagster_home(settings.data_dir.resolve() / "dagster")
            dagster_env = {**env, "DAGSTER_HOME": str(home), **DAGSTER_ENV}
        if pipeline:
            # With its own simulator, a new store starts with the simulated platforms' past;
            # the run is recorded in the Dagster home, so its UI lists it.
            history = ["--history"] if simulator else []
            say(
                "Running the pipeline once (platforms → raw → marts"
                f"{'; a new store first captures the last 14 days' if simulator else ''})…",
                "up.pipeline",
            )
            run = supervisor.start(
                "pipeline",
                [*murmur_argv(), "pipeline", "run", *history],
                dagster_env,
                restart=False,
            )
            code = watch.until(lambda: run.returncode is not None)
            if code or watch.stopping:
                return code
        if dagster:
            supervisor.start(
                "dagster",
                [
                    sys.executable,
                    "-m",
                    "dagster",
                    "dev",
                    "-m",
                    "pipelines.definitions",
                    "-h",
                    settings.host,
                    "-p",
                    str(settings.dagster_port),
                    # The console is Murmur's: Dagster's services say only what needs a look
                    # (runs' own logs are at WARNING too: pipelines/definitions.py).
                    "--log-level",
                    "warning",
                    *(["--log-format", "json"] if settings.log_format == "json" else []),
                ],
                dagster_env,
            )
            # The runs Dagster starts (an import's, the schedules'), and checks that failed,
            # each said on this console with its page in Dagster's UI (murmur/runs.py).
            watches.append(RunWatch(dagster_env["DAGSTER_HOME"], dagster_ui))
            watches[-1].start()
        key = quickstart[0].key
        say(f"[bold green]Murmur is up[/] on {base}", "up.ready", url=base)
        say(
            f"Try: curl -H 'Authorization: Bearer {key}' {base}/analytics/unified",
            "up.try",
        )
        say(f"API docs: {base}/docs", "up.docs", url=f"{base}/docs")
        dashboard = f"http://{settings.host}:{settings.port}/dashboard/"
        say(
            f"Dashboard: {dashboard} (`murmur dashboard` prints a new sign-in link)",
            "up.dashboard",
            url=dashboard,
        )
        if dagster:
            say(f"Dagster: {dagster_ui}", "up.dagster", url=dagster_ui)
        if simulator:
            say(
                f"Simulated platforms: {settings.platforms_url}",
                "up.simulator",
                url=settings.platforms_url,
            )
        say(
            f"Analysts: murmur attach --data-dir {settings.data_dir}",
            "up.analysts",
            data_dir=str(settings.data_dir),
        )
        return 0

    try:
        code = run(settings, supervisor, after_api, before_api, with_store=with_store)
    finally:
        for watch in watches:
            watch.stop()
        held.close()
    raise typer.Exit(code)


def _one_up_per_directory(settings: Settings) -> IO[str]:
    """Hold the data directory's ``up`` lock while this ``up`` runs (the kernel drops it).

    Any number of ``serve`` processes may share a directory (replicas); a second ``up`` may
    not: it would start a second simulator, worker and Dagster, and mint a quickstart key
    that revokes the running one's.
    """
    import fcntl

    from warehouse.files import private_dir

    lock = (private_dir(settings.data_dir) / "up.lock").open("a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        pid = lock.read().strip() or "?"
        lock.close()
        raise Refused(
            f"{settings.data_dir} is in use by a running Murmur (pid {pid}, `murmur up`);"
            " stop it first, or pass another --data-dir."
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


# What `murmur up` writes into a Dagster home that has no dagster.yaml: no telemetry (and so no
# telemetry banner), no welcome dialog. An existing dagster.yaml is the user's and left as is.
DAGSTER_YAML = """\
# Written by `murmur up` (murmur/cli/up.py) when this Dagster home had no dagster.yaml;
# it is yours now: `up` never overwrites it.
telemetry:
  enabled: false
nux:
  enabled: false
# Two cores run two runs well: more only queue for the CPU (and time out reaching the code
# server). Runs that rewrite the marts (tag murmur/writes) go one at a time. The queue is
# looked at every second, not every 5: an import's run starts up to 4 s sooner, and so does
# each run waiting behind another (a look is one query of Dagster's run storage).
run_queue:
  max_concurrent_runs: 2
  dequeue_interval_seconds: 1
  tag_concurrency_limits:
    - key: murmur/writes
      limit: 1
"""
# `dagster dev` warns on every start that `dg dev` supersedes it (a package Murmur does not
# install); the one warning is silenced, every other warning still shows.
DAGSTER_ENV = {
    "PYTHONWARNINGS": "ignore:Function `dev_command` is superseded",
    **PLANNED_EVENTS_ENV,
}


def prepare_dagster_home(home: Path) -> Path:
    """Create ``home`` (owner-only) with a dagster.yaml unless it has one; return it."""
    from warehouse.files import private_dir

    private_dir(home)
    config = home / "dagster.yaml"
    if not config.exists() and not (home / "dagster.yml").exists():
        config.write_text(DAGSTER_YAML)
    return home
