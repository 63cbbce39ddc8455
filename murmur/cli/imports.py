"""``murmur import``: a platform's export file into the store, whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from murmur.cli.common import DataDir, console, err, load_settings


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
            settings=load_settings(data_dir),
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
