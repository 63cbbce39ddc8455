"""The ``murmur`` command line: set up the store, mint keys, serve the API, attach as an analyst."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from murmur.logs import configure_logging
from murmur.settings import Settings
from warehouse.rows import Cursor
from warehouse.store import Secrets, Store, read_host_file

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
    import uvicorn

    from api.app import create_app

    settings = _settings(data_dir, host=host, port=port, quack_port=quack_port)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
    )


@app.command()
def up(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
) -> None:
    """Everything on the embedded default: store, test workspace, a test key, and the API."""
    settings = _settings(data_dir, host=host, port=port)
    with _open(settings) as store:
        ws_id, key_id, key = _mint(store, None, "quickstart", "test", None)
    base = f"http://{settings.host}:{settings.port}/api/public/v1"
    console.print(f"[bold green]Murmur is starting[/] on {base}")
    console.print(f"Test workspace: {ws_id}")
    console.print(f"Test API key ({key_id}), shown once: [bold]{key}[/]")
    console.print(f"Try: curl -H 'Authorization: Bearer {key}' {base}/accounts")
    console.print(f"Docs: {base}/docs   Analysts: murmur attach --data-dir {settings.data_dir}")
    serve(data_dir=settings.data_dir, host=settings.host, port=settings.port, quack_port=None)


@app.command()
def attach(data_dir: DataDir = None) -> None:
    """Print the DuckDB SQL that opens the store read-only from any DuckDB session."""
    settings = _settings(data_dir)
    info = read_host_file(settings.host_file)
    if info is None:
        typer.echo(f"ATTACH '{settings.store_path.resolve()}' AS murmur (READ_ONLY);\nUSE murmur;")
        return
    token = Secrets.load(settings.data_dir).quack_token
    typer.echo(
        "INSTALL quack; LOAD quack;\n"
        f"CREATE OR REPLACE SECRET murmur_quack (TYPE quack, TOKEN '{token}');\n"
        f"ATTACH '{info.uri}' AS murmur (READ_ONLY);\n"
        "USE murmur;"
    )


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
