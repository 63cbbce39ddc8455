"""How long a ``murmur`` command takes to start: the help, and a command that opens the store.

Each command runs as a user runs it (a new process of the venv's ``murmur``), interleaved with
its reference, and the rows quote medians of wall time and of CPU time (user + system, which
a busy machine inflates less). References, measured in the same run:

- ``murmur --help`` against ``python -c "import typer, rich"``: the floor of any Typer + Rich
  command line (target: within 3x, issue 33);
- ``murmur keys list`` on a store against ``murmur --help``: what opening the publishing half
  and reading it adds (target: within 0.5 s).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import smoke

HELP_RATIO = 3.0
STORE_EXTRA_SECONDS = 0.5


def _murmur() -> list[str]:
    """The console script beside this interpreter (what `make install` puts on the PATH)."""
    script = Path(sys.executable).with_name("murmur")
    return [str(script)] if script.exists() else [sys.executable, "-m", "murmur"]


def _timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(runs: int, warm: bool = True) -> dict[str, dict[str, float]]:
    """Median wall and CPU seconds of each command over ``runs`` interleaved rounds, after a
    round that warms the page cache (``warm``)."""
    with tempfile.TemporaryDirectory(prefix="murmur-startup-") as tmp:
        data_dir = Path(tmp) / "data"
        commands = {
            "bare": [sys.executable, "-c", "import typer, rich"],
            "help": [*_murmur(), "--help"],
            "keys": [*_murmur(), "keys", "list", "--data-dir", str(data_dir)],
        }
        # A store made and migrated first: what a user's second command finds.
        _timed([*_murmur(), "keys", "create", "--data-dir", str(data_dir), "--name", "bench"])
        for argv in commands.values() if warm else ():
            _timed(argv)  # warm the page cache; not counted
        taken: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, argv in commands.items():
                taken[name].append(_timed(argv))
    return {
        name: {
            "wall": statistics.median(w for w, _ in runs_of),
            "cpu": statistics.median(c for _, c in runs_of),
        }
        for name, runs_of in taken.items()
    }


def rows(found: dict[str, dict[str, float]], runs: int) -> list[dict[str, Any]]:
    """The two table rows from ``measure``'s medians."""
    bare, help_, keys = found["bare"], found["help"], found["keys"]

    def fmt(m: dict[str, float]) -> str:
        return f"{m['wall']:.3f} s (CPU {m['cpu']:.3f} s)"

    help_ratio = help_["wall"] / bare["wall"]
    extra = keys["wall"] - help_["wall"]
    return [
        {
            "what": f"`murmur --help`, new process (median of {runs})",
            "measured": fmt(help_),
            "reference": 'python -c "import typer, rich": ' + fmt(bare),
            "ratio": round(help_ratio, 2),
            "target": f"≤ {HELP_RATIO:g}x the bare Typer + Rich start",
            "ok": help_ratio <= HELP_RATIO,
            "figures": found,
        },
        {
            "what": f"`murmur keys list` on a store, new process (median of {runs})",
            "measured": f"{fmt(keys)}: {extra:+.3f} s over the help",
            "reference": "`murmur --help`: " + fmt(help_),
            "ratio": round(keys["wall"] / help_["wall"], 2),
            "target": f"≤ the help + {STORE_EXTRA_SECONDS:g} s",
            "ok": extra <= STORE_EXTRA_SECONDS,
            "figures": found,
        },
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    """The start-up rows of ``murmur bench`` (3 rounds quick, 15 in full, 1 in a smoke run)."""
    runs = (1 if smoke() else 3) if quick else 15
    return rows(measure(runs, warm=not (quick and smoke())), runs)
