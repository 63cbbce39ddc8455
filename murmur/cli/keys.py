"""Who may reach a workspace: API keys minted, listed and revoked, dashboard sign-in links."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from murmur.cli.common import DataDir, Refused, console, err, load_settings, refused

if TYPE_CHECKING:
    from core.settings import Settings
    from warehouse.rows import Cursor
    from warehouse.store import Store
    from warehouse.workspaces import ApiKeyRow

app = typer.Typer(help="Mint, list and revoke API keys.", no_args_is_help=True)


class Mode(StrEnum):
    test = "test"
    live = "live"


@dataclass
class Minted:
    workspace_ids: list[str]
    key_id: str
    key: str
    revoked: list[str] = field(default_factory=list)


def mint(
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


def _open(settings: Settings) -> Store:
    """The store for keys and sign-in links: publishing rows, so the lake is left unprepared.

    Preparing it (DuckDB's extensions loaded, its migrations checked) is most of a command's
    time; the processes that read the lake prepare it.
    """
    return settings.open_store(prepare_lake=False)


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


@app.command("create")
def create(
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
    settings = load_settings(data_dir)
    try:
        with _open(settings) as store:
            minted = mint(
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
        raise refused(exc) from None
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


@app.command("list")
def list_keys(data_dir: DataDir = None) -> None:
    """List API keys (their hints, never the keys): state, expiry, workspaces, scopes, limits."""
    from rich import box
    from rich.table import Table

    from domain.workspaces.keys import ALL_SCOPES
    from warehouse import workspaces as repo
    from warehouse.ids import utcnow

    settings = load_settings(data_dir)
    with _open(settings) as store:
        rows = store.read(repo.list_api_keys)
    if not rows:
        err.print("No keys yet: murmur keys create mints one.")
        return
    now = utcnow()
    # On a terminal a table; piped, the same columns without rules and never wrapped, so that
    # each key stays on one line for grep and ``line.split()[0]`` (the id).
    out = console if console.is_terminal else Console(width=10_000, highlight=False, emoji=False)
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


@app.command("revoke")
def revoke(key_id: str, data_dir: DataDir = None) -> None:
    """Revoke an API key at once."""
    from warehouse import workspaces as repo

    def work(cur: Cursor) -> tuple[bool, ApiKeyRow | None]:
        if repo.revoke_api_key(cur, key_id):
            return True, None
        return False, next((r for r in repo.list_api_keys(cur) if r.id == key_id), None)

    with _open(load_settings(data_dir)) as store:
        done, row = store.run(work)
    if done:
        console.print(f"Revoked {key_id}.", highlight=False)
    elif row is None:
        raise refused(Refused(f"No key {key_id!r} (murmur keys list shows the ids)."))
    else:
        revoked = f"{row.revoked_at:%Y-%m-%d %H:%M:%S}"
        console.print(f"{key_id} was already revoked at {revoked} UTC.", highlight=False)


def dashboard(
    data_dir: DataDir = None,
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", help="Workspace id (default: the test one)."),
    ] = None,
) -> None:
    """Print a one-time sign-in link to the dashboard (valid once, for 10 minutes)."""
    settings = load_settings(data_dir)
    try:
        with _open(settings) as store:
            link, note = sign_in_link(store, settings, workspace)
    except Refused as exc:
        raise refused(exc) from None
    err.print(note, soft_wrap=True, highlight=False)
    typer.echo(link)


def sign_in_link(store: Store, settings: Settings, workspace: str | None) -> tuple[str, str]:
    """A new sign-in link into ``workspace`` (default: the test one), and a line about it."""
    from domain.workspaces.sign_in import LINK_LIFETIME, create_link

    try:
        made = store.run(lambda cur: create_link(cur, workspace))
    except LookupError as exc:
        raise Refused(str(exc)) from None
    from murmur.cli.serving import link_host, running

    minutes = int(LINK_LIFETIME.total_seconds() // 60)
    note = f"Dashboard sign-in link for workspace {made.workspace_id} (once, within {minutes} min):"
    # The port a running API serves, which its command line may have chosen; else the settings'.
    served = running(settings.data_dir)
    host, port = served or (settings.host, settings.port)
    if served is None:
        note = (
            f"No Murmur API serves {settings.data_dir} now: the link is for"
            f" {host}:{port}, as the settings say.\n{note}"
        )
    return made.url(link_host(host), port), note
