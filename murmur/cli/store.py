"""The store's commands: create it, move an earlier one in, check it, attach to it as an analyst."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from murmur.cli.common import DataDir, Refused, console, err, load_settings, refused


def init(data_dir: DataDir = None) -> None:
    """Create the store and the test workspace with one test account per platform."""
    from domain.workspaces.service import bootstrap_test_workspace

    settings = load_settings(data_dir)
    with settings.open_store() as store:
        ws_id = store.run(bootstrap_test_workspace)
    console.print(
        f"Store ready in [bold]{settings.data_dir}[/]; test workspace [bold]{ws_id}[/].",
        highlight=False,
    )


def attach(data_dir: DataDir = None) -> None:
    """Print the DuckDB SQL that attaches the store read-only: publishing as pub, lake as lake.

    At scale it carries the analysts' own role and key (MURMUR_ANALYST_*), never the
    service's; without them it refuses.
    """
    from warehouse.analysts import analyst_lake, analyst_publishing_url
    from warehouse.lake import attach_publishing_sql

    settings = load_settings(data_dir)
    missing = settings.analyst_settings_missing()
    if missing:
        raise refused(
            Refused(
                "at scale an analyst attaches with credentials of their own, never the"
                f" service's: set {', '.join(missing)} (and run `murmur analysts grant`;"
                " docs/operations.md, Analysts at scale)"
            )
        )
    login = settings.analyst_login
    lake, pub_url = settings.lake, settings.pub_url
    if login is not None:
        pub_url = analyst_publishing_url(pub_url, login)
    if login is not None or settings.analyst_s3 is not None:
        lake = analyst_lake(lake, login, settings.analyst_s3)
    lines = [f"INSTALL {lake.kind}; LOAD {lake.kind}; INSTALL ducklake; LOAD ducklake;"]
    secret = lake.secret_sql()
    if secret is not None:
        lines += ["INSTALL httpfs; LOAD httpfs;", f"{secret};"]
    lines += [
        f"{attach_publishing_sql(pub_url)};",
        f"{lake.attach_sql(read_only=True)};",
        # Unqualified names find the lake's tables, then the publishing ones.
        "SET search_path = 'lake,pub';",
        "-- e.g. SELECT p.id, m.day, m.impressions FROM posts p"
        " JOIN mart_post_daily m ON m.post_id = p.id;",
    ]
    # Printed for the analyst to paste, never executed here.
    typer.echo("\n".join(lines))


analysts = typer.Typer(
    help="The analysts' read-only access at scale (what `murmur attach` prints).",
    no_args_is_help=True,
)


@analysts.command("grant")
def grant_analysts(data_dir: DataDir = None) -> None:
    """Create or set right the analysts' read-only PostgreSQL role and its grants (at scale).

    Safe to run again, and to be run again after every upgrade: the role then holds exactly
    these grants, whatever it held before.
    """
    from warehouse.analysts import (
        catalog_conninfo,
        grant_lake_catalog,
        grant_publishing,
        publishing_conninfo,
    )
    from warehouse.errors import StoreError

    settings = load_settings(data_dir)
    lake = settings.lake
    publishing = publishing_conninfo(settings.pub_url)
    if publishing is None and lake.kind != "postgres":
        raise refused(
            Refused(
                "nothing to grant: this store is embedded (files), which an analyst reads under"
                " the file permissions (docs/security.md); a role is for PostgreSQL"
                " (MURMUR_PUBLISHING_URL, MURMUR_LAKE_CATALOG)"
            )
        )
    login = settings.analyst_login
    if login is None:
        raise refused(Refused("set MURMUR_ANALYST_ROLE and MURMUR_ANALYST_PASSWORD first"))
    try:
        # Both schemas as this release has them, so every table there is to grant exists.
        settings.open_store().close()
        done = []
        if publishing is not None:
            done.append(grant_publishing(publishing, login))
        if lake.kind == "postgres":
            done.append(grant_lake_catalog(catalog_conninfo(lake), login))
    except StoreError as exc:
        raise refused(Refused(str(exc))) from None
    for granted in done:
        withheld = f", but {', '.join(granted.withheld)}" if granted.withheld else ""
        console.print(
            f"{login.role} reads {granted.tables} tables of {granted.database}{withheld};"
            " nothing else.",
            highlight=False,
            soft_wrap=True,
        )
    if lake.s3 is not None:
        console.print(
            "The lake's files: MURMUR_ANALYST_S3_KEY_ID must be a key of the bucket's that may"
            " only read (s3:GetObject, s3:ListBucket): the object store's policy is yours to"
            " set (docs/security.md).",
            highlight=False,
            soft_wrap=True,
        )


def doctor(
    data_dir: DataDir = None,
    repair: Annotated[
        bool,
        typer.Option(
            help="Tighten loose file modes and mend the lake: damaged files taken out (raw"
            " ones moved to <data dir>/quarantine/, their loss reported), the derived days"
            " they held or fed rebuilt. --no-repair only reports."
        ),
    ] = True,
    deep: Annotated[
        bool,
        typer.Option(
            help="Decode every page of every column of every lake file, not only its footer."
        ),
    ] = False,
) -> None:
    """Check that both halves of the store open and are sound, and the files are owner-only;
    mend what can be mended."""
    from murmur.doctor import examine

    report = examine(load_settings(data_dir), repair=repair, deep=deep)
    console.print(f"Publishing database: {report.publishing}", highlight=False, soft_wrap=True)
    console.print(f"Lake: {report.lake}", highlight=False, soft_wrap=True)
    for line in report.problems:
        err.print(f"  [bold red]problem:[/] {line}", highlight=False, soft_wrap=True)
    for line in report.repaired:
        console.print(f"  repaired: {line}", highlight=False)
    for path in report.loose_files:
        console.print(f"  readable by others: {path}", soft_wrap=True)
    for line in report.warnings:  # publishing's, not damage: the exit status stays as it is
        err.print(f"  [bold yellow]warning:[/] {line}", highlight=False, soft_wrap=True)
    console.print("[bold green]Healthy.[/]" if report.healthy else "[bold red]Not healthy.[/]")
    raise typer.Exit(0 if report.healthy else 1)


def migrate(data_dir: DataDir = None) -> None:
    """Move the store of an earlier Murmur (murmur.duckdb) into the publishing database and lake.

    Every row of every table is compared with its source before each half commits; the old
    file is then renamed murmur.duckdb.migrated. With no old store, it brings both halves'
    schemas up to date (as every process also does when it opens the store).
    """
    from murmur.migrate import move_old_store
    from warehouse.errors import StoreUnavailableError

    settings = load_settings(data_dir)
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


def backup(
    dest: Annotated[Path, typer.Argument(help="A new folder for the copy.", metavar="DEST")],
    data_dir: DataDir = None,
) -> None:
    """Copy the live embedded store consistently (SQLite's online backup, then its files)."""
    from warehouse.backup import backup as copy_store
    from warehouse.errors import StoreUnavailableError

    settings = load_settings(data_dir)
    if settings.publishing_url is not None or settings.lake.kind != "sqlite":
        raise refused(
            Refused(
                "the scale profile's store is PostgreSQL's and the bucket's: back them up with"
                " their own tools (docs/operations.md, Backups)"
            )
        )
    try:
        copied = copy_store(settings.data_dir, dest)
    except StoreUnavailableError as exc:
        raise refused(Refused(str(exc))) from None
    console.print(
        f"Backed up {settings.data_dir} into {dest}: both databases, {copied.lake_files:,} lake"
        f" files, {copied.media_files:,} media files ({copied.bytes / 1e6:,.1f} MB).",
        highlight=False,
        soft_wrap=True,
    )


def restore(
    source: Annotated[
        Path, typer.Argument(help="A folder `murmur backup` made.", metavar="SOURCE")
    ],
    data_dir: DataDir = None,
) -> None:
    """Bring a backup back into a data directory that holds no store yet."""
    from warehouse.backup import restore as bring_back
    from warehouse.errors import StoreUnavailableError

    settings = load_settings(data_dir)
    try:
        copied = bring_back(source, settings.data_dir)
    except StoreUnavailableError as exc:
        raise refused(Refused(str(exc))) from None
    console.print(
        f"Restored {source} into {settings.data_dir}: {copied.lake_files:,} lake files,"
        f" {copied.media_files:,} media files ({copied.bytes / 1e6:,.1f} MB). `murmur doctor`"
        " checks it.",
        highlight=False,
        soft_wrap=True,
    )
