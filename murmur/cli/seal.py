"""The key that seals secrets at rest: rotated, values re-sealed, previous keys forgotten."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from murmur.cli.common import DataDir, Refused, console, load_settings, refused

if TYPE_CHECKING:
    from pathlib import Path

    from core.settings import Settings
    from warehouse.rotation import Resealed
    from warehouse.store import Store

app = typer.Typer(
    help="Rotate the key that seals webhook secrets at rest (docs/security.md).",
    no_args_is_help=True,
)

Batch = Annotated[
    int, typer.Option("--batch-size", min=1, help="Values re-sealed per transaction.")
]


def _open(settings: Settings) -> Store:
    # Publishing rows only: the lake is left unprepared (as `murmur keys` leaves it).
    return settings.open_store(prepare_lake=False)


@app.command("rotate")
def rotate(data_dir: DataDir = None, batch_size: Batch = 500) -> None:
    """Write a new sealing key (the old one kept as previous) and re-seal every value under it."""
    done = _reseal(data_dir, batch_size, new_key=True)
    console.print(
        f"Sealing key rotated to {done.key_id}: {done.secrets} webhook secret(s) and"
        f" {done.replies} stored reply(ies) re-sealed. The previous key is kept until"
        " `murmur seal forget-previous`.",
        highlight=False,
    )


@app.command("reseal")
def reseal(data_dir: DataDir = None, batch_size: Batch = 500) -> None:
    """Re-seal under the current key what a previous key still seals (an interrupted rotate)."""
    done = _reseal(data_dir, batch_size, new_key=False)
    console.print(
        f"{done.secrets} webhook secret(s) and {done.replies} stored reply(ies) re-sealed"
        f" under key {done.key_id}.",
        highlight=False,
    )


def _reseal(data_dir: Path | None, batch: int, *, new_key: bool) -> Resealed:
    from warehouse import rotation

    settings = load_settings(data_dir)
    with _open(settings) as store:
        work = rotation.rotate if new_key else rotation.reseal
        return work(store, settings.data_dir, batch=batch)


@app.command("forget-previous")
def forget_previous(data_dir: DataDir = None) -> None:
    """Drop the previous sealing keys; refused while any value is still sealed under one."""
    from warehouse import rotation
    from warehouse.sealing import SealingKeyError

    settings = load_settings(data_dir)
    try:
        with _open(settings) as store:
            dropped = rotation.forget_previous(store, settings.data_dir)
    except SealingKeyError as exc:
        raise refused(Refused(f"{exc}.")) from None
    console.print(f"{dropped} previous sealing key(s) forgotten.", highlight=False)
