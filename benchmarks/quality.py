"""What the quality benchmarks (``breakouts_quality``, ``experiments_quality``) share: their
command line and their rows as a Markdown table."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def table(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows (``run_rows``' shape) as a Markdown table."""
    out = ["| what | figure | target | result |", "|---|---|---|---|"]
    for r in rows:
        status = r.get("status") or ("PASS" if r.get("ok") else "MISS")
        notes = r.get("notes")
        result = f"{status} ({notes})" if notes else str(status)
        out.append(f"| {r['what']} | {r['measured']} | {r.get('target', '')} | {result} |")
    return "\n".join(out)


def parse_args(
    argv: Sequence[str] | None, doc: str | None, quick: str, *flags: tuple[str, str]
) -> argparse.Namespace:
    """``--quick`` (helped by ``quick``), then each ``(flag, help)`` of ``flags``, then
    ``--write-docs``: all switches."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick)
    for flag, help_text in flags:
        parser.add_argument(flag, action="store_true", help=help_text)
    parser.add_argument(
        "--write-docs", action="store_true", help="rewrite the block in docs/performance.md"
    )
    return parser.parse_args(argv)
