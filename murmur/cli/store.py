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
    """Print the DuckDB SQL that attaches the store read-only: publishing as pub, lake as lake."""
    from warehouse.lake import attach_publishing_sql

    settings = load_settings(data_dir)
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
        bool, typer.Option(help="Read every row of every lake file, not only its footer.")
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
