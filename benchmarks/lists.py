"""Every paginated list of the publishing database at 300,000 rows, beside posts' list.

A fresh store in a temporary directory gets ``rows`` rows of each list in the bench's
workspace and as many again spread over ten other workspaces (``warehouse.seeding``: one
statement per table). Each list's first page and a deep one (its cursor three quarters of
the way through) are then read in this process through the warehouse function its GET
endpoint calls, in a read transaction as a request has, interleaved round by round with the
same two pages of ``GET /posts`` (indexed by ``(workspace_id, id)`` since migration 0002):
that is each row's reference. Pages are of 50, as the bench's read rows ask. ``python -m
benchmarks.lists --rows 300000`` prints the figures without the rest of ``murmur bench``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from warehouse import analytics, approvals, automation, inbox, posts, webhooks, workspaces
from warehouse.ids import utcnow
from warehouse.rows import Cursor
from warehouse.seeding import TABLES, Layout, seed
from warehouse.store import Store

FULL_ROWS = 300_000
QUICK_ROWS = 3_000
PAGE = 50
TARGET_P99_MS = 5.0
#: Reads of each page: with 200, p99 is the second slowest, not the slowest (one stall).
FULL_READS = 200
QUICK_READS = 20
#: Seeded rows span the last 90 days (each table alike), as benchmarks.seed's posts do.
SPAN = timedelta(days=90)

Read = Callable[[Cursor, Any], list[Any]]


@dataclass(frozen=True)
class ListSpec:
    """One list: its label, how a page is read after a cursor, and its deep page's cursor."""

    name: str
    read: Read
    deep: Callable[[Layout, int], Any]

    def page(self, after: Any) -> Callable[[Cursor], list[Any]]:
        """The read of the page after ``after``, as a transaction runs it."""
        return lambda cur: self.read(cur, after)


def _newest_first(prefix: str) -> Callable[[Layout, int], Any]:
    """The id three quarters of the way down a list newest first by id."""
    return lambda layout, rows: layout.row_id(prefix, layout.own(rows - 1 - 3 * rows // 4))


def specs(layout: Layout) -> list[ListSpec]:
    """Every list, with ``GET /posts`` first: the reference of the others."""
    ws, parent, fetch = layout.workspace_id, layout.parent_id, PAGE + 1
    start, end = layout.row_at(0), layout.row_at(layout.total)

    def inbox_deep(lay: Layout, rows: int) -> tuple[Any, str]:
        i = lay.own(rows - 1 - 3 * rows // 4)
        return lay.row_at(i), lay.row_id("inb", i)

    def queue_deep(lay: Layout, rows: int) -> tuple[int, str]:
        i = lay.own(3 * rows // 4)
        return i, lay.row_id("qi", i)

    def calendar_deep(lay: Layout, rows: int) -> tuple[Any, str]:
        i = lay.own(3 * rows // 4)
        return lay.row_at(i), lay.row_id("evt", i)

    every_status = ["queued", "scheduled", "published", "failed"]
    return [
        ListSpec(
            "posts",
            lambda cur, after: posts.list_posts(cur, ws, posts.PostFilter(), after, fetch),
            _newest_first("post"),
        ),
        ListSpec(
            "media",
            lambda cur, after: posts.list_media(cur, ws, None, after, fetch),
            _newest_first("med"),
        ),
        ListSpec(
            "media, kind=video",
            lambda cur, after: posts.list_media(cur, ws, "video", after, fetch),
            _newest_first("med"),
        ),
        ListSpec(
            "inbox items",
            lambda cur, after: inbox.list_items(cur, ws, after=after, limit=fetch),
            inbox_deep,
        ),
        ListSpec(
            "inbox items, status=open",
            lambda cur, after: inbox.list_items(
                cur, ws, inbox.ItemFilter(status="open"), after=after, limit=fetch
            ),
            inbox_deep,
        ),
        ListSpec(
            "inbox automations",
            lambda cur, after: inbox.list_automations(cur, ws, after=after, limit=fetch),
            _newest_first("iau"),
        ),
        ListSpec(
            "approval batches",
            lambda cur, after: approvals.list_batches(cur, ws, None, after, fetch),
            _newest_first("apb"),
        ),
        ListSpec(
            "content automations",
            lambda cur, after: automation.list_automations(cur, ws, None, after, fetch),
            _newest_first("cau"),
        ),
        ListSpec(
            "destination presets",
            lambda cur, after: automation.list_presets(cur, ws, after, fetch),
            _newest_first("dp"),
        ),
        ListSpec(
            "queues",
            lambda cur, after: automation.list_queues(cur, ws, after, fetch),
            _newest_first("q"),
        ),
        ListSpec(
            "queue items (one queue)",
            lambda cur, after: automation.list_items(cur, ws, parent, every_status, after, fetch),
            queue_deep,
        ),
        ListSpec(
            "scheduled events (calendar)",
            lambda cur, after: automation.list_calendar(
                cur,
                ws,
                start=start,
                end=end,
                kind=None,
                include_canceled=False,
                after=after,
                limit=fetch,
            ),
            calendar_deep,
        ),
        ListSpec(
            "webhook endpoints",
            lambda cur, after: webhooks.list_endpoints(cur, ws, after, fetch),
            _newest_first("whe"),
        ),
        ListSpec(
            "webhook deliveries (one endpoint)",
            lambda cur, after: webhooks.list_deliveries(
                cur, ws, parent, status=None, after=after, limit=fetch
            ),
            _newest_first("whd"),
        ),
        ListSpec(
            "webhook deliveries, status=failed",
            lambda cur, after: webhooks.list_deliveries(
                cur, ws, parent, status="failed", after=after, limit=fetch
            ),
            _newest_first("whd"),
        ),
        ListSpec(
            "accounts",
            lambda cur, after: workspaces.list_accounts(cur, ws, after=after, limit=fetch),
            _newest_first("acc"),
        ),
        ListSpec(
            "accounts, platform=x",
            lambda cur, after: workspaces.list_accounts(
                cur, ws, platform="x", after=after, limit=fetch
            ),
            _newest_first("acc"),
        ),
        ListSpec(
            "members",
            lambda cur, after: workspaces.list_members(cur, ws, after=after, limit=fetch),
            _newest_first("mem"),
        ),
        ListSpec(
            "tracked competitors",
            lambda cur, after: analytics.list_competitors(cur, ws, after, fetch),
            _newest_first("cmp"),
        ),
    ]


def layout_for(rows: int) -> Layout:
    """Twice ``rows`` rows per table (half the bench workspace's) over the last :data:`SPAN`."""
    total = 2 * rows
    end_ms = int(utcnow().timestamp() * 1000)
    step = max(1, int(SPAN.total_seconds() * 1000) // total)
    return Layout(
        total=total, start_ms=end_ms - step * total, step_ms=step, workspace_id="ws_bench"
    )


@contextlib.contextmanager
def open_seeded(data_dir: Path, layout: Layout) -> Iterator[Store]:
    """A new store at ``data_dir`` with every list's rows (:mod:`warehouse.seeding`)."""
    from core.settings import Settings

    # The lake is never read here: not creating it saves seconds of the quick run.
    with Settings(data_dir=data_dir).open_store(prepare_lake=False) as store:
        for table in TABLES:
            # One transaction per table keeps SQLite's write-ahead log to one table's pages.
            store.run(functools.partial(seed, table=table, layout=layout))
        yield store


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def measure(data_dir: Path, rows: int, reads: int) -> dict[str, Any]:
    """Seed the store at ``data_dir`` and time every list's two pages ``reads`` times each."""
    layout = layout_for(rows)
    started = time.monotonic()
    with open_seeded(data_dir, layout) as store:
        seeded_s = time.monotonic() - started
        lists = specs(layout)
        pages = [(spec, page, spec.deep(layout, rows) if page == "deep" else None)
                 for spec in lists for page in ("first", "deep")]  # fmt: skip
        times: dict[tuple[str, str], list[float]] = {(s.name, p): [] for s, p, _ in pages}
        cpu: dict[tuple[str, str], list[float]] = {(s.name, p): [] for s, p, _ in pages}
        sizes: dict[tuple[str, str], int] = {}
        for spec, page, after in pages:  # warm the caches and check each page is full
            sizes[spec.name, page] = len(store.read(spec.page(after)))
            if sizes[spec.name, page] != PAGE + 1:
                raise RuntimeError(f"{spec.name}, {page} page: {sizes[spec.name, page]} rows")
        # Rounds, each reading every page once: drift on a shared machine hits all alike.
        for _ in range(reads):
            for spec, page, after in pages:
                t0, c0 = time.perf_counter(), time.thread_time()
                store.read(spec.page(after))
                times[spec.name, page].append((time.perf_counter() - t0) * 1000)
                # This thread's CPU time: the read's own cost, without the waits for a core.
                cpu[spec.name, page].append((time.thread_time() - c0) * 1000)
    figures = {
        f"{name}/{page}": {
            "p50_ms": round(statistics.median(samples), 3),
            "p99_ms": round(_quantile(samples, 0.99), 3),
            "cpu_p50_ms": round(statistics.median(cpu[name, page]), 3),
            "cpu_p99_ms": round(_quantile(cpu[name, page], 0.99), 3),
            "rows": sizes[name, page],
        }
        for (name, page), samples in times.items()
    }
    return {"rows": rows, "reads": reads, "seed_s": round(seeded_s, 1), "pages": figures}


def _pair(figures: dict[str, Any], name: str) -> str:
    first, deep = figures[f"{name}/first"], figures[f"{name}/deep"]
    return (
        f"first {first['p50_ms']:.2f}/{first['p99_ms']:.2f}, "
        f"deep {deep['p50_ms']:.2f}/{deep['p99_ms']:.2f} ms"
    )


def rows_of(found: dict[str, Any]) -> list[dict[str, Any]]:
    """One bench row per list: both pages' p50/p99 beside posts' in the same run."""
    figures, n = found["pages"], found["rows"]
    names = list(dict.fromkeys(key.split("/")[0] for key in figures))
    ref = _pair(figures, "posts")
    ref_p99 = max(figures["posts/first"]["p99_ms"], figures["posts/deep"]["p99_ms"])
    ref_cpu = "/".join(f"{figures[f'posts/{p}']['cpu_p99_ms']:.2f}" for p in ("first", "deep"))
    out = []
    for name in names[1:]:
        worst = max(figures[f"{name}/first"]["p99_ms"], figures[f"{name}/deep"]["p99_ms"])
        out.append(
            {
                "what": f"list {name}, {n:,} rows beside 10 workspaces (p50/p99, page of {PAGE})",
                "measured": _pair(figures, name),
                "reference": f"posts: {ref}",
                "ratio": worst / ref_p99 if ref_p99 else None,
                "target": f"≤ {TARGET_P99_MS:g} ms p99",
                "ok": worst <= TARGET_P99_MS,
                "notes": "CPU time p99 "
                + "/".join(f"{figures[f'{name}/{p}']['cpu_p99_ms']:.2f}" for p in ("first", "deep"))
                + f" ms (posts' {ref_cpu})",
                "figures": {page: figures[f"{name}/{page}"] for page in ("first", "deep")},
            }
        )
    return out


def run(quick: bool, rows: int | None = None, reads: int | None = None) -> list[dict[str, Any]]:
    """The bench's rows, measured on a store of its own that is removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="murmur-bench-lists-"))
    try:
        found = measure(
            root / "data",
            rows or (QUICK_ROWS if quick else FULL_ROWS),
            reads or (QUICK_READS if quick else FULL_READS),
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows_of(found)


def _cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=FULL_ROWS)
    parser.add_argument("--reads", type=int, default=FULL_READS)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="murmur-bench-lists-"))
    try:
        figures = measure(root / "data", args.rows, args.reads)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for row in rows_of(figures):
        status = "PASS" if row["ok"] else "MISS"
        print(f"{row['what']}: {row['measured']} | {row['reference']} | {status} ({row['notes']})")
    print(f"(seeded in {figures['seed_s']} s)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
