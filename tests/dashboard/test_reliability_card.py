"""The overview's "Publishing reliability" card in a real browser: what the API answers.

The seeded store (conftest.py) has one post published at once to x and Bluesky, which the
simulator refused on Bluesky (a `reject` fault): two destinations due, one published, one
failed as `rejected`. The card must show the figures of GET /analytics/publishing for the
range it asked (its `data-from`, `data-to`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.dashboard.conftest import FAILING_PLATFORM, SEED_TIMEOUT, Seeded, Tab
from tests.support import HANG_SECONDS

# In the browser tests' group: one xdist worker seeds the store and runs them all.
pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group("dashboard-browser")]


def test_the_overview_card_shows_the_apis_publishing_reliability(
    seeded: Seeded, open_tab: Callable[..., Tab]
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key)
    card = tab.page.locator(".view-overview .card.reliability")
    tab.page.wait_for_selector(
        ".view-overview .card.reliability[data-state=ready]", timeout=HANG_SECONDS * 1000
    )
    assert card.locator("h2").inner_text() == "Publishing reliability"
    params = {"from": card.get_attribute("data-from"), "to": card.get_attribute("data-to")}
    answer = seeded.api.ok(seeded.api.get("/analytics/publishing", params=params))
    totals = answer["totals"]
    # The seeded post: out on x, refused on Bluesky.
    assert totals["failed_by_reason"] == {"rejected": 1}
    assert totals["published"] >= 1
    assert card.get_attribute("data-due") == str(totals["due"])

    shown = {
        name: card.locator(f'.kpi[data-figure="{name}"]')
        for name in ("on_time_share", "lateness", "failed", "retried", "stuck", "tokens_expiring")
    }
    for name, figure in (
        ("on_time_share", "on_time_share"),
        ("lateness", "lateness_p50_seconds"),
        ("failed", "failed"),
        ("retried", "retried"),
        ("stuck", "stuck"),
        ("tokens_expiring", "tokens_expiring"),
    ):
        value = shown[name].get_attribute("data-value")
        expected = totals[figure]
        assert (value == "") if expected is None else float(value or "nan") == expected, name
    assert shown["failed"].locator(".kpi-value").inner_text() == f"{totals['failed']:,}"
    assert f"{totals['on_time']:,} of {totals['published']:,} published" in (
        shown["on_time_share"].inner_text()
    )
    # Failures by reason, and one row per platform of the answer.
    reason = card.locator('table tr[data-reason="rejected"]')
    assert reason.locator("td").inner_text() == "1"
    platforms = card.locator("table tr[data-platform]")
    assert [platforms.nth(i).get_attribute("data-platform") for i in range(platforms.count())] == [
        p["platform"] for p in answer["by_platform"]
    ]
    assert FAILING_PLATFORM in {p["platform"] for p in answer["by_platform"]}
    # Nothing stuck, no token expiring in the seeded store: no alert.
    assert card.locator(".reliability-alerts").count() == 0
