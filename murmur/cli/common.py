"""What the commands share: the --data-dir option, the settings, the consoles, a refusal."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

if TYPE_CHECKING:
    from core.settings import Settings

# No emoji codes: a name or path holding ":fire:" is printed as written, and the first print
# does not load rich's emoji table (~60 ms of every command's start-up).
console = Console(emoji=False)
err = Console(stderr=True, emoji=False)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar="MURMUR_DATA_DIR", help="Data directory (default ./data)."),
]


def load_settings(data_dir: Path | None, **overrides: object) -> Settings:
    """The settings, with the options given on the command line over the environment's."""
    # Imported here: pydantic-settings is a cost `murmur --help` need not pay.
    from core.settings import Settings

    values: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)  # type: ignore[arg-type]


class Refused(Exception):
    """A command that cannot do what was asked: one line on stderr, exit status 1."""


def refused(exc: Refused) -> typer.Exit:
    """Say ``exc`` on stderr; the exit to raise."""
    err.print(f"[bold red]Refused:[/] {exc}", soft_wrap=True, highlight=False)
    return typer.Exit(1)
