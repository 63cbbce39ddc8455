"""The ``murmur`` command line: set up the store, mint keys, serve the API, attach as an analyst."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from murmur import mcp_command
from murmur.logs import configure_logging
from murmur.settings import Settings
from murmur.supervise import StopSignals, Supervisor
from pipelines import PLANNED_EVENTS_ENV
from warehouse.errors import StoreUnavailableError
from warehouse.rows import Cursor
from warehouse.store import Store

if TYPE_CHECKING:
    from pipelines.run import RunSummary, StepSummary
    from warehouse.workspaces import ApiKeyRow

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
    return settings.open_store()


class Mode(StrEnum):
    test = "test"
    live = "live"


# ``murmur up`` mints a key of this name at each start and revokes the earlier ones (only
# once it hosts the store: never while another Murmur runs on the directory).
QUICKSTART = "quickstart"


class Refused(Exception):
    """A command that cannot do what was asked: one line on stderr, exit status 1."""


@dataclass
class Minted:
    workspace_ids: list[str]
    key_id: str
    key: str
    revoked: list[str] = field(default_factory=list)


def _mint(
    store: Store,
    workspaces: list[str],
    name: str,
    mode: str,
    days: int | None,
    *,
    scopes: list[str] | None = None,
    read_rate_limit: int | None = None,
    write_rate_limit: int | None = None,
    replace: bool = False,
) -> Minted:
    """Mint a key for ``workspaces`` (default: the test one), all of one organization.

    ``replace`` revokes the active keys of the same name for the same workspaces, in the same
    transaction: ``murmur up`` leaves one quickstart key, not one per start.
    """
    from domain.workspaces.keys import mint_key
    from domain.workspaces.service import bootstrap_test_workspace
    from warehouse import workspaces as repo

    def work(cur: Cursor) -> Minted:
        ws_ids = list(dict.fromkeys(workspaces)) or [bootstrap_test_workspace(cur)]
        orgs: dict[str, str] = {}
        for ws_id in ws_ids:
            ws = repo.get_workspace(cur, ws_id)
            if ws is None:
                raise Refused(f"No workspace {ws_id!r}.")
            orgs[ws_id] = ws.organization_id
        if len(set(orgs.values())) > 1:
            raise Refused(
                f"Workspaces {', '.join(ws_ids)} belong to different organizations;"
                " a key belongs to one."
            )
        revoked: list[str] = []
        if replace:
            for row in repo.list_api_keys(cur):
                if (
                    row.name == name
                    and row.revoked_at is None
                    and sorted(row.workspace_ids) == sorted(ws_ids)
                    and repo.revoke_api_key(cur, row.id)
                ):
                    revoked.append(row.id)
        expires = datetime.now(UTC).replace(tzinfo=None) + timedelta(days=days) if days else None
        try:
            minted = mint_key(
                cur,
                organization_id=orgs[ws_ids[0]],
                workspace_ids=ws_ids,
                name=name,
                mode=mode,
                scopes=scopes,
                expires_at=expires,
                read_rate_limit=read_rate_limit,
                write_rate_limit=write_rate_limit,
            )
        except ValueError as exc:
            raise Refused(f"{exc}.") from exc
        return Minted(ws_ids, minted.id, minted.key, revoked)

    return store.run(work)


def _refused(exc: Refused) -> typer.Exit:
    err.print(f"[bold red]Refused:[/] {exc}", soft_wrap=True, highlight=False)
    return typer.Exit(1)


def _scopes(values: list[str] | None) -> list[str] | None:
    """``--scope`` values (repeated or comma-separated), checked against the contract's."""
    if not values:
        return None
    from domain.workspaces.keys import ALL_SCOPES

    scopes = list(dict.fromkeys(s.strip() for v in values for s in v.split(",") if s.strip()))
    unknown = [s for s in scopes if s not in ALL_SCOPES]
    if unknown:
        raise typer.BadParameter(
            f"unknown scope {', '.join(map(repr, unknown))}; the scopes: {' '.join(ALL_SCOPES)}"
        )
    return scopes


@app.command()
def init(data_dir: DataDir = None) -> None:
    """Create the store and the test workspace with one test account per platform."""
    from domain.workspaces.service import bootstrap_test_workspace

    settings = _settings(data_dir)
    with _open(settings) as store:
        ws_id = store.run(bootstrap_test_workspace)
    console.print(
        f"Store ready in [bold]{settings.data_dir}[/]; test workspace [bold]{ws_id}[/].",
        highlight=False,
    )


@keys_app.command("create")
def keys_create(
    data_dir: DataDir = None,
    workspace: Annotated[
        list[str] | None,
        typer.Option(
            "--workspace", help="Workspace id; repeat for several (default: the test one)."
        ),
    ] = None,
    name: Annotated[str, typer.Option(help="A label for the key.")] = "default",
    mode: Annotated[Mode, typer.Option(help="sk_test_… or sk_live_….")] = Mode.test,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            callback=_scopes,
            help="A scope such as posts:read; repeat for several (default: every scope).",
        ),
    ] = None,
    read_rate_limit: Annotated[
        int | None,
        typer.Option(min=1, help="Reads per minute for this key (default MURMUR_READ_RATE_LIMIT)."),
    ] = None,
    write_rate_limit: Annotated[
        int | None,
        typer.Option(
            min=1, help="Writes per minute for this key (default MURMUR_WRITE_RATE_LIMIT)."
        ),
    ] = None,
    expires_in_days: Annotated[int | None, typer.Option(min=1, help="Expire after N days.")] = None,
) -> None:
    """Mint an API key for one or more workspaces and print it once."""
    settings = _settings(data_dir)
    try:
        with _open(settings) as store:
            minted = _mint(
                store,
                workspace or [],
                name,
                mode.value,
                expires_in_days,
                scopes=scope,
                read_rate_limit=read_rate_limit,
                write_rate_limit=write_rate_limit,
            )
    except Refused as exc:
        raise _refused(exc) from None
    err.print(
        f"Key {minted.key_id} for workspace {', '.join(minted.workspace_ids)};"
        " it is shown only now:",
        soft_wrap=True,
        highlight=False,
    )
    typer.echo(minted.key)


def _key_state(row: ApiKeyRow, now: datetime) -> str:
    if row.revoked_at is not None:
        return "revoked"
    expires = row.expires_at
    if isinstance(expires, datetime) and expires <= now:
        return "expired"
    return "active"


@keys_app.command("list")
def keys_list(data_dir: DataDir = None) -> None:
    """List API keys (their hints, never the keys): state, expiry, workspaces, scopes, limits."""
    from rich import box
    from rich.table import Table

    from domain.workspaces.keys import ALL_SCOPES
    from warehouse import workspaces as repo
    from warehouse.ids import utcnow

    settings = _settings(data_dir)
    with _open(settings) as store:
        rows = store.read(repo.list_api_keys)
    if not rows:
        err.print("No keys yet: murmur keys create mints one.")
        return
    now = utcnow()
    # On a terminal a table; piped, the same columns without rules and never wrapped, so that
    # each key stays on one line for grep and ``line.split()[0]`` (the id).
    out = console if console.is_terminal else Console(width=10_000, highlight=False)
    table = Table(
        box=box.SIMPLE_HEAD if out.is_terminal else None,
        show_edge=False,
        pad_edge=False,
        collapse_padding=out.is_terminal,
        highlight=False,
    )
    for column in ("id", "key", "name", "mode", "state", "expires (UTC)"):
        table.add_column(column, no_wrap=column != "name", overflow="fold")
    table.add_column("workspaces", overflow="fold")
    table.add_column("scopes", overflow="fold")
    table.add_column("r/w per min", no_wrap=True)
    for row in rows:
        expires = row.expires_at
        scopes = list(row.scopes)
        reads = row.read_rate_limit or settings.read_rate_limit
        writes = row.write_rate_limit or settings.write_rate_limit
        table.add_row(
            row.id,
            row.key_hint,
            row.name,
            row.mode,
            _key_state(row, now),
            expires.strftime("%Y-%m-%d %H:%M") if expires is not None else "never",
            ",".join(row.workspace_ids),
            "all" if set(scopes) == set(ALL_SCOPES) else ",".join(scopes),
            f"{reads}/{writes}",
        )
    if out.is_terminal:
        out.print(table)
    else:
        with out.capture() as captured:
            out.print(table)
        typer.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


@keys_app.command("revoke")
def keys_revoke(key_id: str, data_dir: DataDir = None) -> None:
    """Revoke an API key at once."""
    from warehouse import workspaces as repo

    def work(cur: Cursor) -> tuple[bool, ApiKeyRow | None]:
        if repo.revoke_api_key(cur, key_id):
            return True, None
        return False, next((r for r in repo.list_api_keys(cur) if r.id == key_id), None)

    with _open(_settings(data_dir)) as store:
        done, row = store.run(work)
    if done:
        console.print(f"Revoked {key_id}.", highlight=False)
    elif row is None:
        raise _refused(Refused(f"No key {key_id!r} (murmur keys list shows the ids)."))
    else:
        revoked = f"{row.revoked_at:%Y-%m-%d %H:%M:%S}"
        console.print(f"{key_id} was already revoked at {revoked} UTC.", highlight=False)


@app.command()
def dashboard(
    data_dir: DataDir = None,
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", help="Workspace id (default: the test one)."),
    ] = None,
) -> None:
    """Print a one-time sign-in link to the dashboard (valid once, for 10 minutes)."""
    settings = _settings(data_dir)
    try:
        with _open(settings) as store:
            link, note = _sign_in_link(store, settings, workspace)
    except Refused as exc:
        raise _refused(exc) from None
    err.print(note, soft_wrap=True, highlight=False)
    typer.echo(link)


def _sign_in_link(store: Store, settings: Settings, workspace: str | None) -> tuple[str, str]:
    """A new sign-in link into ``workspace`` (default: the test one), and a line about it."""
    from domain.workspaces.sign_in import LINK_LIFETIME, create_link

    try:
        made = store.run(lambda cur: create_link(cur, workspace))
    except LookupError as exc:
        raise Refused(str(exc)) from None
    minutes = int(LINK_LIFETIME.total_seconds() // 60)
    note = f"Dashboard sign-in link for workspace {made.workspace_id} (once, within {minutes} min):"
    return made.url(settings.host, settings.port), note


@app.command()
def serve(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1, help="API processes on the port (each opens the store itself; none owns it)."
        ),
    ] = 1,
    replica: Annotated[
        bool, typer.Option(hidden=True, help="Share the port (serve's own).")
    ] = False,
) -> None:
    """Serve the API: this process, and ``--workers`` - 1 more sharing its port."""
    settings = _settings(data_dir, host=host, port=port)
    supervisor = Supervisor() if workers > 1 else None
    env = {**os.environ, "MURMUR_DATA_DIR": str(settings.data_dir.resolve())}
    replica_command = [
        *_murmur(),
        "serve",
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--replica",
    ]

    def start_replicas(watch: _Watch) -> int:
        # The kernel spreads connections over the processes listening with SO_REUSEPORT.
        for number in range(2, workers + 1):
            assert supervisor is not None
            supervisor.start(f"api-{number}", replica_command, env)
        return 0

    shared = replica or workers > 1
    raise typer.Exit(_run(settings, supervisor, start_replicas, shared_port=shared))


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
    try:
        held = _one_up_per_directory(settings)
    except Refused as exc:
        raise _refused(exc) from None
    env = {**os.environ, "MURMUR_DATA_DIR": str(settings.data_dir.resolve())}
    supervisor = Supervisor()
    base = f"http://{settings.host}:{settings.port}/api/public/v1"
    quickstart: list[Minted] = []

    def with_store(store: Store) -> None:
        # Minted once the API's port is this process's: a second `up` on the same port
        # never gets here, so it cannot revoke the running instance's key.
        minted = _mint(store, [], QUICKSTART, "test", None, replace=True)
        quickstart.append(minted)
        # First, before the children's and the pipeline's logs: the one thing to copy.
        console.print(f"Test workspace: {minted.workspace_ids[0]}", highlight=False)
        console.print(
            f"Test API key ({minted.key_id}), shown once: [bold]{minted.key}[/]",
            highlight=False,
            soft_wrap=True,  # never split: the key is copied from this line
        )
        link, note = _sign_in_link(store, settings, minted.workspace_ids[0])
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
                [*_murmur(), "pipeline", "run", *history],
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
        code = _run(settings, supervisor, after_api, before_api, with_store=with_store)
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


def _run(
    settings: Settings,
    supervisor: Supervisor | None,
    after_api: Callable[[_Watch], int],
    before_api: Callable[[], None] | None = None,
    *,
    with_store: Callable[[Store], None] | None = None,
    shared_port: bool = False,
) -> int:
    """Serve the API and ``supervisor``'s children until told to stop; the exit status.

    ``with_store`` runs first, once the store is open and the API's port bound, before
    anything starts.
    """
    # SIGTERM, SIGINT and SIGHUP stop every child (and what it started), then the API, then
    # its store: status 0. A child that keeps dying or an API that stops on its own stops
    # everything as well: status 1.
    with StopSignals() as signals:
        try:
            api = _Api(settings, shared_port=shared_port)
        except StoreUnavailableError as exc:
            err.print(f"[bold red]Cannot open the store:[/] {exc}", soft_wrap=True)
            return 1
        except OSError as exc:  # the port taken by another program (or another Murmur)
            err.print(
                f"[bold red]Refused:[/] {settings.host}:{settings.port} is in use ({exc});"
                " stop what serves it first, or pass another --port.",
                soft_wrap=True,
            )
            return 1
        watch = _Watch(signals, supervisor, api)
        code = 1  # until proven otherwise: an exception below still stops everything
        try:
            if with_store is not None:
                with_store(api.store)
            if before_api is not None and not watch.stopping:
                before_api()
            if watch.stopping or not api.start(signals):
                code = 0 if watch.stopping else 1
            else:
                code = after_api(watch)
                if code == 0 and not watch.stopping:
                    code = watch.until(lambda: False)
        finally:
            code = _stop(signals, supervisor, api, code)
    return code


# How long the API may take to finish its requests in flight once told to stop, then to close
# the store.
API_GRACE_SECONDS = 5.0
API_STOP_SECONDS = 60.0


class _Api:
    """The API served by uvicorn in a thread: the main thread is left to signals and children."""

    def __init__(self, settings: Settings, *, shared_port: bool = False) -> None:
        import uvicorn

        from api.app import create_app
        from api.server import server_options

        # Opened here rather than in the app's startup, so that a store that cannot be opened
        # (a database server down, a bad URL) is one line, not uvicorn's traceback; the port
        # too, so that one taken is refused before anything else starts.
        self.socket = _listen(settings.host, settings.port, shared=shared_port)
        try:
            self.store = settings.open_store()
        except BaseException:
            self.socket.close()
            raise
        # In a thread uvicorn installs no signal handlers (it may not); StopSignals does.
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(settings, store=self.store),
                timeout_graceful_shutdown=int(API_GRACE_SECONDS),
                **server_options(),
            )
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="api", daemon=True
        )

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
        self.store.close()
        self.socket.close()
        return True


def _listen(host: str, port: int, *, shared: bool) -> socket.socket:
    """The API's listening socket; ``shared``: beside other Murmur API processes (replicas)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # SO_REUSEADDR: a restart is not refused for its predecessor's TIME_WAIT connections;
        # a port something else listens on still is, unless every listener shares it.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(False)
    except BaseException:
        sock.close()
        raise
    return sock


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


# What `murmur up` writes into a Dagster home that has no dagster.yaml: no telemetry (and so no
# telemetry banner), no welcome dialog. An existing dagster.yaml is the user's and left as is.
DAGSTER_YAML = """\
# Written by `murmur up` (murmur/cli.py) when this Dagster home had no dagster.yaml;
# it is yours now: `up` never overwrites it.
telemetry:
  enabled: false
nux:
  enabled: false
# Two cores run two runs well: more only queue for the CPU (and time out reaching the code
# server). Runs that rewrite the marts (tag murmur/writes) go one at a time.
run_queue:
  max_concurrent_runs: 2
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


pipeline_app = typer.Typer(help="Run the analytics pipeline.", no_args_is_help=True)
app.add_typer(pipeline_app, name="pipeline")


@pipeline_app.command("run")
def pipeline_run(
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
) -> None:
    """Materialize every asset once, in-process, for the partitions that are due.

    One line per step as it finishes, then a summary; exit status 1 if a step failed.
    """
    from dagster import DagsterInstance

    from pipelines.run import run_all

    if history and not ingest:
        raise typer.BadParameter("--history reads the platforms' past; --no-ingest reads none")
    console.print(
        "Pipeline: ingest the current hour, rebuild the due days, then insights."
        if ingest
        else "Pipeline: no platform reads; rebuild the due days from the store, then insights."
    )
    # With a Dagster home (as `up` gives it) the run is recorded there, so Dagster's UI lists
    # it and its partitions' fill status; without one it leaves no trace.
    instance = DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
    try:
        summary = run_all(
            _settings(data_dir),
            progress=_print_step,
            instance=instance,
            ingest=ingest,
            history=history,
        )
    finally:
        if instance is not None:
            instance.dispose()
    _print_summary(summary)
    if not summary.success or summary.checks_failed:
        raise typer.Exit(1)


def _print_step(step: StepSummary) -> None:
    state = "[green]ok[/]" if step.success else "[bold red]failed[/]"
    checks = f"; checks failed: {', '.join(step.checks_failed)}" if step.checks_failed else ""
    if step.checks_warned:
        checks += f"; checks warned: {', '.join(step.checks_warned)}"
    # Failed reads never fail the ingest step (the run goes on), so they are said here.
    reads = f"; {step.read_failures} reads failed" if step.read_failures else ""
    console.print(
        f"  {step.name:<9} {step.partitions:<24} {step.seconds:7.1f} s  {state}{reads}{checks}",
        highlight=False,
        soft_wrap=True,
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
    console.print(
        f"Pipeline {outcome}: {len(summary.steps)} steps in {summary.seconds:.1f} s;"
        f" hour {summary.hour}; days rebuilt: {days}.",
        highlight=False,
        soft_wrap=True,
    )
    checks = summary.checks_failed
    if checks:
        console.print(
            f"Checks failed: {', '.join(checks)}. The rebuilt days hold data that breaks them:"
            " find the rows (`murmur attach` opens the store; docs/pipeline.md says what each"
            " check tests), correct or re-import them, then run `murmur pipeline run` again.",
            highlight=False,
            soft_wrap=True,
        )
    warned = [c for s in summary.steps for c in s.checks_warned]
    if warned:
        console.print(f"Checks warned: {', '.join(warned)}.", highlight=False)


def _encoding(value: str | None) -> str | None:
    """``--encoding``, refused before the store is opened if Python has no such codec."""
    if value is None:
        return None
    from pipelines.importers.csvfile import check_encoding

    try:
        check_encoding(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


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
    encoding: Annotated[
        str | None,
        typer.Option(
            help="The file's encoding, e.g. cp1252, latin-1, utf-16 (default: UTF-8, or"
            " Windows-1252 for a file with no UTF-8 in it).",
            callback=_encoding,
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Import a platform export into the store; a malformed file imports nothing."""
    from pipelines.importers import ImportRejectedError, UnknownWorkspaceError, run_import

    try:
        result = run_import(
            path,
            format,
            settings=_settings(data_dir),
            workspace_id=workspace,
            kind=as_,
            encoding=encoding,
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
    if result.overlap.shared:
        console.print(
            f"  {result.overlap.shared:,} of its readings (the same post at the same instant)"
            f" were already in the store from another import, {result.overlap.differing:,}"
            " with other counts: each is counted once, with this file's counts (the latest"
            " import's).",
            highlight=False,
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
    worker_id: Annotated[
        str | None, typer.Option(help="The publishing worker's id (default: host and pid).")
    ] = None,
) -> None:
    """Run the workers: publishing on time, inbox and automations, webhook deliveries.

    Their knobs are settings (MURMUR_PUBLISHING_CONCURRENCY, …_POLL_INTERVAL_SECONDS,
    …_LEASE_SECONDS, …_HTTP_TIMEOUT_SECONDS, …_MAX_ATTEMPTS); run as many as you like.
    """
    from workers.engagement.runner import run_engagement
    from workers.publishing.worker import run_worker

    settings = _settings(data_dir)
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
    """Print the DuckDB SQL that attaches the store read-only: publishing as pub, lake as lake."""
    from warehouse.lake import attach_publishing_sql

    settings = _settings(data_dir)
    lake = settings.lake
    lines = [f"INSTALL {lake.kind}; LOAD {lake.kind}; INSTALL ducklake; LOAD ducklake;"]
    secret = lake.secret_sql()
    if secret is not None:
        lines += ["INSTALL httpfs; LOAD httpfs;", f"{secret};"]
    lines += [
        f"{attach_publishing_sql(settings.pub_url)};",
        f"{lake.attach_sql(read_only=True)};",
        # Unqualified names find the lake's tables, then the publishing ones.
        "SET search_path = 'lake,pub';",
        "-- e.g. SELECT p.id, m.day, m.impressions FROM posts p"
        " JOIN mart_post_daily m ON m.post_id = p.id;",
    ]
    # Printed for the analyst to paste, never executed here.
    typer.echo("\n".join(lines))


@app.command()
def doctor(
    data_dir: DataDir = None,
    repair: Annotated[bool, typer.Option(help="Tighten loose file modes.")] = True,
) -> None:
    """Check that both halves of the store open and are sound, and the files are owner-only."""
    from murmur.doctor import examine

    report = examine(_settings(data_dir), repair=repair)
    console.print(f"Publishing database: {report.publishing}", highlight=False, soft_wrap=True)
    console.print(f"Lake: {report.lake}", highlight=False, soft_wrap=True)
    for line in report.problems:
        err.print(f"  [bold red]problem:[/] {line}", highlight=False)
    for line in report.repaired:
        console.print(f"  repaired: {line}", highlight=False)
    for path in report.loose_files:
        console.print(f"  readable by others: {path}", soft_wrap=True)
    console.print("[bold green]Healthy.[/]" if report.healthy else "[bold red]Not healthy.[/]")
    raise typer.Exit(0 if report.healthy else 1)


@app.command()
def migrate(data_dir: DataDir = None) -> None:
    """Move the store of an earlier Murmur (murmur.duckdb) into the publishing database and lake.

    Every row of every table is compared with its source before each half commits; the old
    file is then renamed murmur.duckdb.migrated. With no old store, it brings both halves'
    schemas up to date (as every process also does when it opens the store).
    """
    from murmur.migrate import move_old_store

    settings = _settings(data_dir)
    try:
        moved = move_old_store(settings, on_table=lambda name: err.print(f"  {name}"))
    except StoreUnavailableError as exc:
        err.print(f"[bold red]Cannot migrate:[/] {exc}", soft_wrap=True)
        raise typer.Exit(1) from exc
    if moved is None:
        console.print("No store of an earlier Murmur here; the schemas are up to date.")
        return
    console.print(
        f"Moved {sum(moved.publishing.values()):,} publishing rows ({len(moved.publishing)}"
        f" tables) and {sum(moved.analytics.values()):,} analytics rows"
        f" ({len(moved.analytics)} tables), every row compared; the old file is now"
        f" {moved.kept_as}.",
        highlight=False,
        soft_wrap=True,
    )


app.command("mcp")(mcp_command.mcp)  # murmur/mcp_command.py: docs/mcp.md


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    configure_logging(verbose)


if __name__ == "__main__":
    app()
