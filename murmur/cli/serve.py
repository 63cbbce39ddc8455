"""``murmur serve``: the API alone, in as many processes as asked, sharing one port."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from murmur.cli.common import (
    AccessLogOption,
    DataDir,
    LogFormatOption,
    console_overrides,
    load_settings,
    use_console,
)

if TYPE_CHECKING:
    from murmur.cli.host import Watch


def serve(
    data_dir: DataDir = None,
    host: Annotated[str | None, typer.Option(help="Interface to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1, help="API processes on the port (each opens the store itself; none owns it)."
        ),
    ] = 1,
    replica: Annotated[
        bool, typer.Option(hidden=True, help="Share the port (serve's own).")
    ] = False,
    log_format: LogFormatOption = None,
    access_log: AccessLogOption = False,
) -> None:
    """Serve the API: this process, and --workers - 1 more sharing its port.

    No line per request unless --access-log; --log-format json for machines.
    """
    from murmur.cli.host import murmur_argv, run
    from murmur.supervise import Supervisor

    settings = load_settings(
        data_dir, host=host, port=port, **console_overrides(log_format, access_log)
    )
    use_console(settings)  # the replicas log as this process does
    supervisor = Supervisor() if workers > 1 else None
    env = {**os.environ, "MURMUR_DATA_DIR": str(settings.data_dir.resolve())}
    replica_command = [
        *murmur_argv(),
        "serve",
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--replica",
    ]

    def start_replicas(watch: Watch) -> int:
        # The kernel spreads connections over the processes listening with SO_REUSEPORT.
        for number in range(2, workers + 1):
            assert supervisor is not None
            supervisor.start(f"api-{number}", replica_command, env)
        return 0

    shared = replica or workers > 1
    raise typer.Exit(run(settings, supervisor, start_replicas, shared_port=shared))
