"""The suite on a busy machine: ``make test`` N times in a row beside CPU-bound processes.

``python -m tests.under_load [--runs 3] [--burners 2]`` starts ``--burners`` processes that
spin on the CPU until the end, runs ``make test`` ``--runs`` times in a row from the
repository root, and prints each run's exit status, wall time and the load average. It
exits non-zero at the first failing run. CI does not run it (it triples CI's time); run it
before calling a test change done (issue 17).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _burn() -> None:
    """Spin until killed: the CPU-bound neighbour."""
    n = 0
    while True:
        n = (n * 1_103_515_245 + 12_345) % 2_147_483_648


def main(argv: list[str] | None = None) -> int:
    """Run the suite ``--runs`` times beside ``--burners`` CPU-bound processes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--command", default="make test", help="what one run executes")
    args = parser.parse_args(argv)
    ctx = multiprocessing.get_context("spawn")
    burners = [ctx.Process(target=_burn, daemon=True) for _ in range(args.burners)]
    for burner in burners:
        burner.start()
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            done = subprocess.run(args.command, shell=True, cwd=REPO, check=False)
            took = time.monotonic() - started
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(
                f"[under-load] run {run}/{args.runs}: exit {done.returncode} in {took:.0f} s"
                f" beside {args.burners} CPU-bound processes (load average {load})",
                file=sys.stderr,
                flush=True,
            )
            if done.returncode != 0:
                return done.returncode
    finally:
        for burner in burners:
            burner.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
