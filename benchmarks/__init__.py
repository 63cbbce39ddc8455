"""Load measurements behind the architecture decisions (see docs/adr/)."""

from __future__ import annotations

import os

# Set (to anything but "" or "0") by the test suite only (tests/benchmarks): its ``--quick``
# runs at their smallest (one run each, fewer rows, shorter loads, one worker process for a
# run's pipeline steps). They prove each row runs end to end; their figures mean nothing.
# Every child process of a run inherits it; a full run ignores it.
SMOKE_ENV = "MURMUR_BENCH_SMOKE"


def smoke() -> bool:
    """Whether this process's quick run is the test suite's smoke sizing (``SMOKE_ENV``)."""
    return os.environ.get(SMOKE_ENV, "") not in ("", "0")
