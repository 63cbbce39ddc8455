"""The ``murmur`` command line: set up the store, mint keys, serve the API, attach as an analyst."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from murmur.logs import configure_logging
from murmur.settings import Settings
from murmur.supervise import StopSignals, Supervisor
from warehouse.rows import Cursor
from warehouse.store import Secrets, Store, StoreUnavailableError, read_host_file

app = typer.Typer(
    help="Murmur: social publishing with an analytics pipeline.", no_args_is_help=True
)
keys_app = typer.Typer(help="Mint, list and revoke API keys.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
console = Console()
err = Console(stderr=True)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar="MURMUR_DATA_DIR", help="Data directory (default ./data)."),
]


def _settings(data_dir: Path | None, **overrides: object) -> Settings:
    values: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)  # type: ignore[arg-type]


def _open(settings: Settings) -> Store:
    settings.ensure_dirs()
    return Store.connect(
        settings.store_path,
        host_file=settings.host_file,
        quack_token=Secrets.load(settings.data_dir).quack_token,
        lock_timeout=settings.store_lock_timeout_seconds,
    )


def _mint(
    store: Store, workspace: str | None, name: str, mode: str, days: int | None
) -> tuple[str, str, str]:
    from api.auth import mint_key
    from api.workspaces.service import bootstrap_test_workspace
    from warehouse import workspaces as repo

    def work(cur: Cursor) -> tuple[str, str, str]:
        ws_id = workspace or bootstrap_test_workspace(cur)
        ws = repo.get_workspace(cur, ws_id)
        if ws is None:
            raise typer.BadParameter(f"no workspace {ws_id!r}", param_hint="--workspace")
        expires = datetime.now(UTC).replace(tzinfo=None) + timedelta(days=days) if days else None
        minted = mint_key(
            cur,
            organization_id=ws["organization_id"],
            workspace_ids=[ws_id],
            name=name,
            mode=mode,
            expires_at=expires,
        )
        return ws_id, minted.id, minted.key

    return store.run(work)


@app.command()
def init(data_dir: DataDir = None) -> None:
    """Create the store and the test workspace with one test account per platform."""
    from api.workspaces.service import bootstrap_test_workspace

    settings = _settings(data_dir)
    with _open(settings) as store:
        ws_id = store.run(bootstrap_test_workspace)
    console.print(
        f"Store ready at [bold]{settings.store_path}[/]; test workspace [bold]{ws_id}[/]."
    )


@keys_app.command("create")
def keys_create(
    data_dir: DataDir = None,
    workspace: Annotated[
        str | None, typer.Option(help="Workspace id (default: the test one).")
    ] = None,
    name: Annotated[str, typer.Option(help="A label for the key.")] = "default",
    mode: Annotated[str, typer.Option(help="test or live.")] = "test",
    expires_in_days: Annotated[int | None, typer.Option(help="Expire after N days.")] = None,
) -> None:
    """Mint an API key for a workspace and print it once."""
    settings = _settings(data_dir)
    with _open(settings) as store:
        ws_id, key_id, key = _mint(store, workspace, name, mode, expires_in_days)
    err.print(f"Key {key_id} for workspace {ws_id}; it is shown only now:")
    typer.echo(key)


@keys_app.command("list")
def keys_list(data_dir: DataDir = None) -> None:
    """List API keys (their hints, never the keys)."""
    from warehouse import workspaces as repo

    with _open(_settings(data_dir)) as store, store.cursor() as cur:
        for row in repo.list_api_keys(cur):
            state = "revoked" if row["revoked_at"] else "active"
            console.print(
                f"{row['id']}  {row['key_hint']}  {row['name']}  {state}  {row['workspace_ids']}"
            )


@keys_app.command("revoke")
def keys_revoke(key_id: str, data_dir: DataDir = None) -> None:
    """Revoke an API key at once."""
    from warehouse import workspaces as repo

    with _open(_settings(data_dir)) as store:
        done = store.run(lambda cur: repo.revoke_api_key(cur, key_id))
    if not done:
        raise typer.BadParameter(f"no active key {key_id!r}")
    console.print(f"Revoked {key_id}.")


@app.command()
def serve(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    quack_port: Annotated[
        int | None, typer.Option(help="Port of the store's Quack server.")
    ] = None,
) -> None:
    """Serve the API; this process hosts the store and serves it to others over Quack."""
    settings = _settings(data_dir, host=host, port=port, quack_port=quack_port)
    raise typer.Exit(_run(settings, None, lambda watch: 0))


@app.command()
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
    settings = _settings(data_dir, host=host, port=port)
    # A stop signal while the store is open directly must not kill us holding it.
    with StopSignals() as early, _open(settings) as store:
        ws_id, key_id, key = _mint(store, None, "quickstart", "test", None)
    if early.received:
        raise typer.Exit(0)
    env = {**os.environ, "MURMUR_DATA_DIR": str(settings.data_dir.resolve())}
    supervisor = Supervisor()

    def before_api() -> None:
        if simulator:
            supervisor.start(
                "simulator",
                [
                    *_murmur(),
                    "simulator",
                    "--port",
                    str(settings.simulator_port),
                    "--seed",
                    str(settings.simulator_seed),
                ],
                env,
            )

    def after_api(watch: _Watch) -> int:
        if workers:
            supervisor.start("worker", [*_murmur(), "worker"], env)
        if pipeline:
            console.print("Running the pipeline once (platforms → raw → marts)…")
            run = supervisor.start("pipeline", [*_murmur(), "pipeline", "run"], env, restart=False)
            code = watch.until(lambda: run.returncode is not None)
            if code or watch.stopping:
                return code
        if dagster:
            dagster_home = settings.data_dir.resolve() / "dagster"
            dagster_home.mkdir(parents=True, exist_ok=True)
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
                ],
                {**env, "DAGSTER_HOME": str(dagster_home)},
            )
        base = f"http://{settings.host}:{settings.port}/api/public/v1"
        console.print(f"[bold green]Murmur is up[/] on {base}")
        console.print(f"Test workspace: {ws_id}")
        console.print(f"Test API key ({key_id}), shown once: [bold]{key}[/]")
        console.print(f"Try: curl -H 'Authorization: Bearer {key}' {base}/analytics/unified")
        console.print(f"API docs: {base}/docs")
        if dagster:
            console.print(f"Dagster: http://{settings.host}:{settings.dagster_port}")
        if simulator:
            console.print(f"Simulated platforms: {settings.platforms_url}")
        console.print(f"Analysts: murmur attach --data-dir {settings.data_dir}")
        return 0

    raise typer.Exit(_run(settings, supervisor, after_api, before_api))


def _run(
    settings: Settings,
    supervisor: Supervisor | None,
    after_api: Callable[[_Watch], int],
    before_api: Callable[[], None] | None = None,
) -> int:
    """Serve the API and ``supervisor``'s children until told to stop; the exit status."""
    # SIGTERM, SIGINT and SIGHUP stop every child (and what it started), then the API, whose
    # shutdown closes the store and removes store.host.json: status 0. A child that keeps dying
    # or an API that stops on its own stops everything as well: status 1.
    with StopSignals() as signals:
        try:
            api = _Api(settings)
        except StoreUnavailableError as exc:  # the file held by another process, a port taken
            err.print(f"[bold red]Cannot host the store:[/] {exc}")
            return 1
        watch = _Watch(signals, supervisor, api)
        code = 1  # until proven otherwise: an exception below still stops everything
        try:
            if before_api is not None:
                before_api()
            if not api.start(signals):
                code = 0 if watch.stopping else 1
            else:
                code = after_api(watch)
                if code == 0 and not watch.stopping:
                    code = watch.until(lambda: False)
        finally:
            code = _stop(signals, supervisor, api, code)
    return code


# How long the API may take to finish its requests in flight once told to stop, then to close
# the store (a checkpoint) and remove store.host.json.
API_GRACE_SECONDS = 5.0
API_STOP_SECONDS = 60.0


class _Api:
    """The API served by uvicorn in a thread: the main thread is left to signals and children."""

    def __init__(self, settings: Settings) -> None:
        import uvicorn

        from api.app import create_app, open_host_store
        from api.server import server_options

        # Opened here rather than in the app's startup, so that a store that cannot be hosted
        # (its file held, its Quack port taken) is one line, not uvicorn's traceback.
        self.store = open_host_store(settings)
        # In a thread uvicorn installs no signal handlers (it may not); StopSignals does.
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(settings, store=self.store),
                host=settings.host,
                port=settings.port,
                timeout_graceful_shutdown=int(API_GRACE_SECONDS),
                **server_options(),
            )
        )
        self.thread = threading.Thread(target=self.server.run, name="api", daemon=True)

    def start(self, signals: StopSignals) -> bool:
        """Start serving; False when it could not (the reason is logged) or a stop came first."""
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive() or signals.wait(0.05):
                return False
        return True

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> bool:
        """Finish requests in flight and the app's shutdown, then close the store."""
        if self.thread.is_alive():
            self.server.should_exit = True
            self.thread.join(API_STOP_SECONDS)
        if self.thread.is_alive():
            return False
        self.store.close()  # checkpoints, stops Quack, removes store.host.json
        return True


class _Watch:
    """The main loop: wait for a condition while watching signals, children and the API."""

    def __init__(self, signals: StopSignals, supervisor: Supervisor | None, api: _Api) -> None:
        self.signals, self.supervisor, self.api = signals, supervisor, api

    @property
    def stopping(self) -> bool:
        return self.signals.event.is_set()

    def until(self, done: Callable[[], bool]) -> int:
        """0 once ``done()`` or a stop signal; 1 when a child gave up or the API stopped."""
        while not self.signals.event.is_set():
            if self.supervisor is not None and self.supervisor.check() is not None:
                return 1
            if not self.api.alive:
                err.print("[bold red]The API stopped on its own;[/] stopping everything.")
                return 1
            if done():
                return 0
            self.signals.wait(0.2)
        return 0


def _stop(signals: StopSignals, supervisor: Supervisor | None, api: _Api, code: int) -> int:
    """Stop the children first (they use the store), then the API; the exit status."""
    if signals.name:
        err.print(f"{signals.name} received: stopping.")
    if supervisor is not None:
        supervisor.stop()
    if not api.stop():
        err.print(f"[bold red]The API did not stop within {API_STOP_SECONDS:g} s.[/]")
        return code or 1
    return code


def _murmur() -> list[str]:
    return [sys.executable, "-m", "murmur"]


pipeline_app = typer.Typer(help="Run the analytics pipeline.", no_args_is_help=True)
app.add_typer(pipeline_app, name="pipeline")


@pipeline_app.command("run")
def pipeline_run(data_dir: DataDir = None) -> None:
    """Materialize every asset once, in-process, for the partitions that are due."""
    from pipelines.run import run_all

    summary = run_all(_settings(data_dir))
    console.print(summary)


@app.command("import")
def import_file(
    path: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The export file.")],
    format: Annotated[
        str, typer.Option("--format", help="youtube-trending, tweets or instagram-insights.")
    ],
    workspace: Annotated[
        str | None, typer.Option(help="Workspace id (default: the test one).")
    ] = None,
    as_: Annotated[
        str | None,
        typer.Option(
            "--as",
            help="Whose data: own, creator or competitor"
            " (default: instagram-insights own, the others creator).",
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Import a platform export into the store; a malformed file imports nothing."""
    from pipelines.importers import ImportRejectedError, UnknownWorkspaceError, run_import

    try:
        result = run_import(
            path, format, settings=_settings(data_dir), workspace_id=workspace, kind=as_
        )
    except (ImportRejectedError, UnknownWorkspaceError, ValueError) as exc:
        err.print(f"[bold red]Import refused:[/] {exc}")
        raise typer.Exit(1) from exc
    console.print(
        f"Imported {result.path} ({result.format}, {result.encoding}) into {result.workspace_id}"
        f" in {result.seconds:.2f} s: {result.rows_read:,} rows read, {result.posts:,} posts,"
        f" {result.snapshots:,} engagement snapshots, {result.accounts:,} account snapshots,"
        f" {result.duplicates_dropped:,} duplicates dropped,"
        f" {result.conflicts_resolved:,} conflicts resolved."
    )
    for note in result.notes:
        console.print(f"  note: {note}")


@app.command()
def simulator(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8600,
    seed: Annotated[int, typer.Option(help="Seed of the simulated world.")] = 42,
    data_dir: DataDir = None,
) -> None:
    """Serve the simulated platform APIs; what clients publish is kept in DATA_DIR/simulator."""
    from simulator.app import serve as serve_simulator

    serve_simulator(host, port, seed, state_dir=_settings(data_dir).data_dir / "simulator")


@app.command()
def worker(
    data_dir: DataDir = None,
    publishing: Annotated[bool, typer.Option(help="Publish due posts.")] = True,
    engagement: Annotated[
        bool, typer.Option(help="Sync the inbox, send replies, run automations and webhooks.")
    ] = True,
) -> None:
    """Run the workers: publishing on time, inbox and automations, webhook deliveries."""
    from pipelines.engagement.runner import run_engagement
    from pipelines.publishing.worker import run_worker

    settings = _settings(data_dir)
    with StopSignals() as signals:
        # SIGTERM, SIGINT and SIGHUP all end the loops the same way: the current step finishes.
        stop = signals.event
        threads = []
        if publishing:
            threads.append(
                threading.Thread(target=run_worker, args=(settings,), kwargs={"stop": stop})
            )
        if engagement:
            threads.append(
                threading.Thread(target=run_engagement, args=(settings,), kwargs={"stop": stop})
            )
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads) and not signals.wait(0.5):
            pass
        stop.set()
        for thread in threads:
            thread.join(timeout=30)


@app.command()
def bench(
    quick: Annotated[bool, typer.Option(help="A seconds-long smoke version.")] = False,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Where to build the data (default: temp).")
    ] = None,
) -> None:
    """Measure Murmur against its limits, each figure beside its reference, and print the table."""
    from benchmarks.bench import main as run_bench

    run_bench(quick=quick, data_dir=data_dir)


@app.command()
def attach(data_dir: DataDir = None) -> None:
    """Print the DuckDB SQL that opens the store read-only from any DuckDB session."""
    settings = _settings(data_dir)
    info = read_host_file(settings.host_file)
    if info is None:
        typer.echo(f"ATTACH '{settings.store_path.resolve()}' AS murmur (READ_ONLY);\nUSE murmur;")
        return
    token = Secrets.load(settings.data_dir).quack_token
    # Printed for the analyst to paste, never executed here.
    typer.echo(
        "INSTALL quack; LOAD quack;\n"  # noqa: S608
        f"CREATE OR REPLACE SECRET murmur_quack (TYPE quack, TOKEN '{token}');\n"
        f"ATTACH '{info.uri}' AS murmur (READ_ONLY);\n"
        "USE murmur;\n"
        "-- A query over Quack may scan one store table; run joins on the store itself:\n"
        "-- SELECT * FROM murmur.query('SELECT … FROM posts JOIN post_destinations …');"
    )


@app.command()
def doctor(
    data_dir: DataDir = None,
    sample: Annotated[
        int, typer.Option(help="Key values checked per index (the newest rows first).")
    ] = 1000,
    repair: Annotated[
        bool, typer.Option(help="Rebuild stale indexes, tighten loose file modes.")
    ] = True,
) -> None:
    """Check that every index agrees with its table and the files are owner-only; repair."""
    from murmur.doctor import examine

    report = examine(_settings(data_dir), sample=sample, repair=repair)
    keys = sum(f.checked for f in report.findings)
    console.print(
        f"Store opened {report.mode}; {len(report.findings)} indexes checked on {keys:,} key"
        " values."
    )
    for finding in report.findings:
        if not finding.ok:
            state = "rebuilt" if finding.repaired else f"STALE ({finding.error or 'not repaired'})"
            console.print(
                f"  {finding.index.table}.{finding.index.name}: {len(finding.mismatches)} key"
                f" values disagree (lookup vs scan, e.g. {finding.mismatches[0]}): {state}"
            )
    for line in report.repaired:
        console.print(f"  repaired: {line}")
    for path in report.loose_files:
        console.print(f"  readable by others: {path}", soft_wrap=True)
    for line in report.failed:
        err.print(f"  [bold red]failed:[/] {line}")
    if report.stale_host_file and not repair:
        console.print("  store.host.json names a process that is gone")
    console.print("[bold green]Healthy.[/]" if report.healthy else "[bold red]Not healthy.[/]")
    raise typer.Exit(0 if report.healthy else 1)


@app.command()
def migrate(data_dir: DataDir = None) -> None:
    """Upgrade the store's schema in place (the API host also does this when it starts)."""
    from warehouse.migrations import applied

    with _open(_settings(data_dir)) as store, store.cursor() as cur:
        console.print(f"Schema versions applied: {sorted(applied(cur))}")


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    configure_logging(verbose)


if __name__ == "__main__":
    app()
