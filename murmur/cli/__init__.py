"""The ``murmur`` command line: set up the store, mint keys, serve the API, attach as an analyst.

Each command is a thin function in the module of its concern, registered here in the order
``murmur --help`` lists them. The modules import only typer and rich at their top; what a
command needs (the settings, the store, the API, Dagster) it imports in its body, so that
``--help`` and a command that opens the store pay for nothing else (tests/cli/test_startup.py).
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from murmur.cli import dev, imports, keys, mcp, pipeline, seal, serve, store, up, worker

app = typer.Typer(
    help="Murmur: social publishing with an analytics pipeline.", no_args_is_help=True
)
app.add_typer(keys.app, name="keys")
app.command()(store.init)
app.command()(keys.dashboard)
app.command()(serve.serve)
app.command()(up.up)
app.add_typer(pipeline.app, name="pipeline")
app.command("import")(imports.import_file)
app.command()(dev.simulator)
app.command()(worker.worker)
app.command()(dev.bench)
app.command()(store.attach)
app.add_typer(store.analysts, name="analysts")
app.command()(store.doctor)
app.command()(store.migrate)
app.command()(store.backup)
app.command()(store.restore)
app.add_typer(seal.app, name="seal")
app.command()(mcp.mcp)


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    # Owner-only from a command's first file, not from its first store's: Dagster's instance
    # (`up` opens it before any store) and the simulator's state are written in the data
    # directory too, and children (dagster dev, its code servers) inherit the umask.
    os.umask(0o077)
    # Here rather than at the top: structlog is a cost `murmur --help` need not pay.
    from murmur.logs import configure_logging

    configure_logging(verbose)
