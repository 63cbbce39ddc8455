"""What the commands share: the --data-dir option, the settings, the consoles, a refusal."""

from __future__ import annotations

import os
from enum import StrEnum
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


class LogFormat(StrEnum):
    """The console's two formats (the setting ``log_format``)."""

    plain = "plain"
    json = "json"


LogFormatOption = Annotated[
    LogFormat | None,
    typer.Option(
        "--log-format",
        case_sensitive=False,
        help="plain: one readable line per event that matters (default); json: every event"
        " as one JSON object a line. Default: MURMUR_LOG_FORMAT, else plain.",
        show_default=False,
    ),
]
AccessLogOption = Annotated[
    bool,
    typer.Option(
        "--access-log",
        help="Log a line per API request, in either format (default: MURMUR_ACCESS_LOG, else off).",
        show_default=False,
    ),
]


def console_overrides(log_format: LogFormat | None, access_log: bool = False) -> dict[str, object]:
    """The settings the console options give (an option not given: the environment's)."""
    return {
        "log_format": None if log_format is None else log_format.value,
        "access_log": True if access_log else None,
    }


def use_console(settings: Settings) -> None:
    """Log as ``settings`` say, and have every child started from here log the same way."""
    from murmur.logs import ACCESS_LOG_ENV, LOG_FORMAT_ENV, configure_logging

    os.environ[LOG_FORMAT_ENV] = settings.log_format
    os.environ[ACCESS_LOG_ENV] = "true" if settings.access_log else "false"
    configure_logging(log_format=settings.log_format)


def say(
    text: str, event: str, *, stderr: bool = False, level: str = "info", **fields: object
) -> None:
    """A console line of a long-running command: as written (plain), or an event (json).

    ``text`` may hold rich markup; the JSON event carries it as plain ``message``, with
    ``fields`` beside it.
    """
    from murmur.logs import log_format

    if log_format() != "json":
        (err if stderr else console).print(text, highlight=False, soft_wrap=True)
        return
    import structlog
    from rich.text import Text

    logger = structlog.get_logger("murmur.console")
    getattr(logger, level)(event, message=Text.from_markup(text).plain, **fields)


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
