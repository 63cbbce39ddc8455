"""The dashboard's cost: navigation to the overview's last chart, beside its API calls' times.

A headless Debian Chromium (driven by Playwright) opens ``/dashboard/`` signed in with the
bench's key, over the bench's store served by Murmur in its own process. The page marks
``murmur:overview-drawn`` when the overview's last chart is drawn (api/dashboard/static);
the figure is that mark's time since the navigation began, and the reference, measured in
the same page load, is the sum of the durations of the API calls it made before the mark
(Resource Timing). What is left between the two is the page's own cost: loading its
assets, running its scripts and drawing.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import smoke
from benchmarks.seed import create_tenant, grow, open_store

MARK = "murmur:overview-drawn"
TARGET_RATIO = 1.5
TARGET_MS = 1000.0
CHROMIUM_ARGS = [
    "--no-sandbox",  # the bench may run as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

# What the page reads when the overview is drawn: the load's times, from the browser itself.
_TIMINGS = """
(mark) => {
  const drawn = performance.getEntriesByName(mark)[0].startTime;
  const calls = performance.getEntriesByType('resource')
    .filter((e) => e.name.includes('/api/public/v1/') && e.responseEnd <= drawn);
  return {
    drawn_ms: drawn,
    api_ms: calls.reduce((sum, e) => sum + e.duration, 0),
    calls: calls.map((e) => new URL(e.name).pathname),
  };
}
"""


def chromium() -> str:
    """Debian's Chromium (`make browser` installs it); never a browser Playwright downloads."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("no chromium: `make browser` installs Debian's")
    return found


def measure(base: str, key: str, workspace_id: str, loads: int) -> list[dict[str, Any]]:
    """``loads`` fresh page loads of the overview, each in a new browser context."""
    from playwright.sync_api import sync_playwright

    session = json.dumps(
        {"key": key, "keyId": None, "workspaceId": workspace_id, "source": "key", "scopes": []}
    )
    found: list[dict[str, Any]] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        try:
            for _ in range(loads + 1):  # the first load warms the server's caches: dropped
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                # Signed in as the page keeps a session: this tab's sessionStorage.
                context.add_init_script(
                    f"sessionStorage.setItem('murmur.session', {json.dumps(session)});"
                )
                page = context.new_page()
                page.goto(f"{base}/dashboard/#/overview")
                page.wait_for_function(
                    "(m) => performance.getEntriesByName(m).length > 0", arg=MARK, timeout=60_000
                )
                found.append(page.evaluate(_TIMINGS, MARK))
                context.close()
        finally:
            browser.close()
    return found[1:]


def run(quick: bool) -> dict[str, Any]:
    """The bench row: medians over several loads on a store of the bench's shape."""
    from benchmarks.serving import serve

    posts, loads = ((500, 1) if smoke() else (2_000, 3)) if quick else (100_000, 15)
    root = Path(tempfile.mkdtemp(prefix="murmur-bench-dashboard-"))
    try:
        data_dir = root / "data"
        with open_store(data_dir) as store:
            tenant = create_tenant(store)
            grow(store, tenant.workspace_id, 0, posts)
        with serve(data_dir) as base:
            timings = measure(base, tenant.key, tenant.workspace_id, loads)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    drawn = statistics.median(t["drawn_ms"] for t in timings)
    api = statistics.median(t["api_ms"] for t in timings)
    ratio = drawn / api if api else None
    calls = timings[-1]["calls"]
    return {
        "what": f"dashboard overview, navigation to last chart drawn ({posts:,} posts)",
        "measured": f"{drawn:.0f} ms (median of {loads} loads)",
        "reference": f"its {len(calls)} API calls, summed: {api:.0f} ms",
        "ratio": ratio,
        "target": f"≤ {TARGET_RATIO}x its API calls, < {TARGET_MS / 1000:.0f} s",
        "ok": ratio is not None and ratio <= TARGET_RATIO and drawn < TARGET_MS,
        "loads": timings,
    }
