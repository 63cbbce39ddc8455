"""The console: one readable line per event that matters (plain), or every event as JSON.

``plain`` (the default, for people) renders the events people act on in words
(``19:42:07  published post_… to x (https://…)``), any other event in one short line, and
leaves out the few that only repeat another line (docs/cli.md, "The console"); ``json`` (for
machines) writes every event as one JSON object a line, the standard library's records
(uvicorn's) and warnings too. The format is the setting ``log_format`` (MURMUR_LOG_FORMAT),
read here from the environment: every command configures its logging before it reads its
settings, and `murmur up` passes the variable to its children, so all of them log alike.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

import structlog

FORMATS = ("plain", "json")
LOG_FORMAT_ENV = "MURMUR_LOG_FORMAT"
ACCESS_LOG_ENV = "MURMUR_ACCESS_LOG"

# What the last configure_logging call set up: a command's options reconfigure what its
# callback configured from the environment, keeping --verbose.
_current: dict[str, Any] = {"verbose": False, "format": "plain"}
_handler: logging.Handler | None = None


def env_log_format() -> str:
    """The format MURMUR_LOG_FORMAT names; plain when unset (a bad value: the settings say)."""
    value = os.environ.get(LOG_FORMAT_ENV, "").strip().lower()
    return value if value in FORMATS else "plain"


def log_format() -> str:
    """The format this process logs in."""
    return str(_current["format"])


def configure_logging(verbose: bool | None = None, log_format: str | None = None) -> None:
    """Log at INFO (DEBUG with ``verbose``) to stderr, as ``log_format`` says (default: the env's).

    Called again (a command's ``--log-format``), it replaces the format and keeps the rest.
    """
    global _handler
    if verbose is None:
        verbose = bool(_current["verbose"])
    chosen = log_format or env_log_format()
    if chosen not in FORMATS:
        raise ValueError(f"log format {chosen!r}: plain or json")
    _current.update(verbose=verbose, format=chosen)
    level = logging.DEBUG if verbose else logging.INFO
    if chosen == "json":
        renderer: Callable[..., str | bytes] = structlog.processors.JSONRenderer()
        stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    else:
        renderer = PlainRenderer(keep_all=verbose)
        stamp = structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=False)
    # The standard library's records (uvicorn's start and stop, a library's warning) in the
    # same format; as logging.basicConfig did, no handler is added where the root has one.
    root = logging.getLogger()
    if _handler is None and not root.handlers:
        _handler = logging.StreamHandler(sys.stderr)
        root.addHandler(_handler)
    if _handler is not None:
        _handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,
                    renderer,
                ],
                foreign_pre_chain=[
                    structlog.stdlib.add_logger_name,
                    structlog.processors.add_log_level,
                    stamp,
                ],
            )
        )
    root.setLevel(level)
    # Machines read every line: a Python warning too becomes a record, not loose text.
    logging.captureWarnings(chosen == "json")
    # Libraries that log every HTTP call or migration step: their warnings are enough.
    for noisy in ("httpx", "httpcore", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


# -- plain --------------------------------------------------------------------------------------

EventDict = MutableMapping[str, Any]
# An event's line in words: (label, text), or None to leave it out of the plain console.
Phrase = Callable[[EventDict], tuple[str, str] | None]
LABEL_WIDTH = 9  # "published"


def _short_run(run_id: object) -> str:
    return str(run_id)[:8]


def _link(event: EventDict) -> str:
    """The run's page in Dagster's UI, else its id."""
    url = event.get("url")
    return f": {url}" if url else f" (run id {event.get('run_id')})"


def _published(event: EventDict) -> tuple[str, str]:
    url = event.get("url")
    how = " (found published by an earlier attempt)" if event.get("recovered") else ""
    return "published", (
        f"{event.get('post')} to {event.get('platform')}" + (f" ({url})" if url else "") + how
    )


def _destination_failed(event: EventDict) -> tuple[str, str]:
    said = ": ".join(str(part) for part in (event.get("code"), event.get("message")) if part)
    return "failed", f"{event.get('post')} on {event.get('platform')}" + (
        f": {said}" if said else ""
    )


def _run(event: EventDict) -> tuple[str, str] | None:
    """A Dagster run seen for the first time: said for an import's run (the others: JSON)."""
    batch = event.get("import_batch")
    if not batch:
        return None
    status = str(event.get("status", "queued")).lower().replace("_", " ")  # NOT_STARTED
    return "import", (
        f"batch {batch} → Dagster run {_short_run(event.get('run_id'))} ({status}){_link(event)}"
    )


def _run_finished(event: EventDict) -> tuple[str, str] | None:
    status = str(event.get("status", "")).upper()
    took = f" after {event['seconds']:.0f} s" if event.get("seconds") is not None else ""
    batch = event.get("import_batch")
    if status == "SUCCESS":
        if not batch:
            return None  # the hourly schedules' runs: Dagster's UI lists them
        return "run", f"Dagster run {_short_run(event.get('run_id'))} for {batch} succeeded{took}"
    what = f" for {batch}" if batch else ""
    partition = f" [{event['partition']}]" if event.get("partition") else ""
    ended = "canceled" if status == "CANCELED" else "failed"
    error = f": {event['error']}" if event.get("error") else ""
    return "failed", (
        f"Dagster run {_short_run(event.get('run_id'))} ({event.get('job')}{partition}){what}"
        f" {ended}{took}{error}{_link(event)}"
    )


def _check_failed(event: EventDict) -> tuple[str, str]:
    partition = f" [{event['partition']}]" if event.get("partition") else ""
    severity = "" if str(event.get("severity", "ERROR")).upper() == "ERROR" else " (a warning)"
    return "check", (
        f"{event.get('asset')} {event.get('check')}{partition} failed{severity}"
        f" in Dagster run {_short_run(event.get('run_id'))}{_link(event)}"
    )


def _request(event: EventDict) -> tuple[str, str]:
    replay = f", replay of {event['replay_of']}" if event.get("replay_of") else ""
    return "request", (
        f"{event.get('method')} {event.get('path')} {event.get('status')}"
        f" in {event.get('ms')} ms ({event.get('request_id')}{replay})"
    )


def _child_started(event: EventDict) -> tuple[str, str]:
    return "started", f"{event.get('child')} (pid {event.get('pid')})"


def _webhook_attempt(event: EventDict) -> tuple[str, str] | None:
    if event.get("status") == "succeeded":
        return None  # delivered: nothing to look at
    response = f" (HTTP {event['response']})" if event.get("response") else ""
    return "webhook", (
        f"{event.get('event_type')} delivery {event.get('delivery')} attempt"
        f" {event.get('attempt')}: {event.get('status')}{response}"
    )


def _omitted(event: EventDict) -> None:
    return None


PHRASES: dict[str, Phrase] = {
    "publishing.published": _published,
    "publishing.destination_failed": _destination_failed,
    # Each destination's line says it; the post's roll-up would only repeat them.
    "publishing.post_settled": _omitted,
    "dagster.run": _run,
    "dagster.run_finished": _run_finished,
    "dagster.check_failed": _check_failed,
    "request": _request,
    "child.started": _child_started,
    "webhook.attempt": _webhook_attempt,
}
# Internals a plain console leaves out: JSON (and --verbose) keeps them.
_NOT_SAID = ("timestamp", "logger")


class PlainRenderer:
    """``HH:MM:SS  label     text``: an event in words, or its name and fields in one line.

    ``keep_all`` (``--verbose``): the events the plain console leaves out are said too, each
    as its name and fields.
    """

    def __init__(self, *, keep_all: bool = False) -> None:
        self.keep_all = keep_all

    def __call__(self, logger: object, name: str, event: EventDict) -> str:
        time = str(event.pop("timestamp", ""))
        level = str(event.pop("level", name)).lower()
        what = str(event.pop("event", ""))
        trace = event.pop("exception", None)
        phrase = PHRASES.get(what)
        said = phrase(event) if phrase is not None else None
        if said is None and phrase is not None and not self.keep_all:
            raise structlog.DropEvent
        if said is None:
            label = level if level in ("warning", "error", "critical") else ""
            # An event that is a sentence ("worker (pid 7) exited …") already names the
            # fields it was given for machines (child=worker): only the others are added.
            sentence = " " in what
            fields = " ".join(
                f"{key}={_value(value)}"
                for key, value in event.items()
                if key not in _NOT_SAID
                and not key.startswith("_")
                and not (sentence and str(value) in what)
            )
            text = " ".join(part for part in (what, fields) if part)
        else:
            label, text = said
        line = f"{time}  {label:<{LABEL_WIDTH}} {text}" if label else f"{time}  {text}"
        return f"{line}\n{trace}" if trace else line


def _value(value: object) -> str:
    """A field as one short token: quoted when it holds spaces, cut at 200 characters."""
    if isinstance(value, dict | list | tuple):
        text = json.dumps(value, default=str, separators=(",", ":"))
    else:
        text = str(value)
    if len(text) > 200:
        text = text[:199] + "…"
    return json.dumps(text, ensure_ascii=False) if (" " in text or not text) else text
