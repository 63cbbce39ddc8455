"""For trying and measuring Murmur: the simulated platforms, the bench."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from murmur.cli.common import DataDir, load_settings


class Profile(StrEnum):
    """Where ``murmur bench`` builds its stores (ADR 0002's two profiles)."""

    embedded = "embedded"
    scale = "scale"


def simulator(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8600,
    seed: Annotated[int, typer.Option(help="Seed of the simulated world.")] = 42,
    data_dir: DataDir = None,
) -> None:
    """Serve the simulated platform APIs; what clients publish is kept in DATA_DIR/simulator."""
    from simulator.app import serve as serve_simulator

    serve_simulator(host, port, seed, state_dir=load_settings(data_dir).data_dir / "simulator")


def bench(
    quick: Annotated[bool, typer.Option(help="A seconds-long smoke version.")] = False,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Where to build the data (default: temp).")
    ] = None,
    profile: Annotated[
        Profile,
        typer.Option(help="embedded: files; scale: PostgreSQL + S3 started on loopback."),
    ] = Profile.embedded,
    history: Annotated[
        int | None,
        typer.Option(
            metavar="SNAPSHOTS",
            help="Only the history rows: the pipeline and reads over SNAPSHOTS against a tenth.",
        ),
    ] = None,
) -> None:
    """Measure Murmur against its limits, each figure beside its reference, and print the table."""
    from benchmarks.bench import main as run_bench

    if history is not None and profile is not Profile.embedded:
        raise typer.BadParameter("runs on the embedded profile only", param_hint="--history")
    run_bench(quick=quick, data_dir=data_dir, profile=profile.value, history=history)
