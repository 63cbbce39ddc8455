"""``murmur up``: the whole product from one command, each part a supervised child process."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer

from murmur.cli.common import DataDir, Refused, console, load_settings, refused
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
) -> None:
    """The whole product on the embedded default: store, key, API, simulator, workers, Dagster."""
    from murmur.cli.host import murmur_argv, run
    from murmur.supervise import Supervisor

    settings = load_settings(data_dir, host=host, port=port)
    try:
        held = _one_up_per_directory(settings)
    except Refused as exc:
        raise refused(exc) from None
    env = {**os.environ, "MURMUR_DATA_DIR": str(settings.data_dir.resolve())}
    # `dagster dev` stops its webserver, daemon and code server one after another, each
    # finishing what it holds: 10 s was not enough on a loaded machine (CI, 2026-12-02).
    supervisor = Supervisor(grace=30.0)
    base = f"http://{settings.host}:{settings.port}/api/public/v1"
    quickstart: list[Minted] = []

    def with_store(store: Store) -> None:
        # Minted once the API's port is this process's: a second `up` on the same port
        # never gets here, so it cannot revoke the running instance's key.
        minted = mint(store, [], QUICKSTART, "test", None, replace=True)
        quickstart.append(minted)
        # First, before the children's and the pipeline's logs: the one thing to copy.
        console.print(f"Test workspace: {minted.workspace_ids[0]}", highlight=False)
        console.print(
            f"Test API key ({minted.key_id}), shown once: [bold]{minted.key}[/]",
            highlight=False,
            soft_wrap=True,  # never split: the key is copied from this line
        )
        link, note = sign_in_link(store, settings, minted.workspace_ids[0])
        console.print(f"{note} {link}", highlight=False, soft_wrap=True)
        if minted.revoked:
            console.print(
                f"Revoked the earlier quickstart key{'s' if len(minted.revoked) > 1 else ''}:"
                f" {', '.join(minted.revoked)}",
                highlight=False,
            )
        console.print(f"Starting Murmur on {base}…", highlight=False)

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
            console.print(
                "Running the pipeline once (platforms → raw → marts"
                f"{'; a new store first captures the last 14 days' if simulator else ''})…"
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
                ],
                dagster_env,
            )
        key = quickstart[0].key
        console.print(f"[bold green]Murmur is up[/] on {base}")
        console.print(
            f"Try: curl -H 'Authorization: Bearer {key}' {base}/analytics/unified",
            highlight=False,
            soft_wrap=True,
        )
        console.print(f"API docs: {base}/docs")
        console.print(
            f"Dashboard: http://{settings.host}:{settings.port}/dashboard/"
            " (`murmur dashboard` prints a new sign-in link)",
            highlight=False,
        )
        if dagster:
            console.print(f"Dagster: http://{settings.host}:{settings.dagster_port}")
        if simulator:
            console.print(f"Simulated platforms: {settings.platforms_url}")
        console.print(f"Analysts: murmur attach --data-dir {settings.data_dir}")
        return 0

    try:
        code = run(settings, supervisor, after_api, before_api, with_store=with_store)
    finally:
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
