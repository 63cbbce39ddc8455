"""The cost-versus-data chart of ``docs/performance.md``, drawn from the benchmark's JSON output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def draw(results: dict[str, Any], out: Path) -> Path | None:
    """Plot each read's single-client p50 latency against the posts in the store; None if empty."""
    points: list[dict[str, Any]] = results.get("scale", [])
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    names = sorted({name for p in points for name in p["p50_ms"]})
    for name in names:
        xs = [p["posts"] for p in points if name in p["p50_ms"]]
        ys = [p["p50_ms"][name] for p in points if name in p["p50_ms"]]
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("posts in the store (marts grow with them)")
    ax.set_ylabel("p50 latency, one client (ms)")
    profile = results.get("meta", {}).get("profile", "embedded")
    ax.set_title(f"Murmur read cost vs data (murmur bench, {profile} profile)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.chart RESULTS.json OUT.png [PROFILE]``: redraw from a saved run
    (of ``PROFILE``, embedded by default, when the file keeps one per profile)."""
    import sys

    args = argv if argv is not None else sys.argv[1:]
    results = json.loads(Path(args[0]).read_text())
    if "meta" not in results:
        results = results[args[2] if len(args) > 2 else "embedded"]
    draw(results, Path(args[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
