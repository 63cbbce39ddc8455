"""The dashboard in a real browser (Debian's Chromium) over a simulator-seeded store.

Every tab routes every request and fails the test on any host but the loopback, on a
dialog, and on an uncaught script error (``open_tab`` in conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Response

from tests.dashboard.conftest import (
    FAILING_PLATFORM,
    REJECTION,
    SEED_TIMEOUT,
    XSS,
    Seeded,
    Tab,
)
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor

# One xdist worker runs them all (`make test` uses --dist loadgroup): the other never sits
# waiting for the seeding while it could run the rest of the suite.
pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group("dashboard-browser")]

VIEWS = ("overview", "trends", "insights", "rankings", "posts")
OpenTab = Callable[..., Tab]


def _query(url: str) -> dict[str, str]:
    return {k: v for k, v in parse_qsl(urlsplit(url).query) if k != "cursor"}


def _by_platform(response: Response, *wanted: str) -> bool:
    """The overview's series by platform, with each of ``wanted`` in its query."""
    url = response.url
    return (
        "/api/public/v1/analytics/unified" in url
        and "group_by=platform" in url
        and all(w in url for w in wanted)
    )


def _series(seeded: Seeded, params: dict[str, str]) -> list[dict[str, Any]]:
    """Every series row of the API's answer for ``params``, following the cursors."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": "100", **({"cursor": cursor} if cursor else {})}
        answer = seeded.api.ok(seeded.api.get("/analytics/unified", params=query))
        rows.extend(answer["series"]["items"])
        cursor = answer["series"]["pagination"]["next_cursor"]
        if not cursor:
            return rows


def _chart(tab: Tab, name: str) -> dict[str, str]:
    drawn: dict[str, str] = tab.page.eval_on_selector(
        f'[data-chart="{name}"]',
        "e => ({...e.dataset, canvas: String(!!e.querySelector('canvas'))})",
    )
    return drawn


def _assert_drawn_from(tab: Tab, seeded: Seeded, params: dict[str, str]) -> None:
    """The by-platform chart shows the API's series for ``params``: its buckets and sums."""
    rows = _series(seeded, params)
    buckets = sorted({r["bucket"] for r in rows})
    metric = [r["engagements"] for r in rows if r["engagements"] is not None]
    drawn = _chart(tab, "by-platform")
    assert drawn["canvas"] == "true"
    assert int(drawn["buckets"]) == len(buckets)
    assert drawn["first"] == buckets[0]
    assert float(drawn["sum"]) == sum(metric)


def test_a_one_time_link_signs_in_once_and_signing_out_revokes_its_key(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    link = seeded.murmur("dashboard", "--workspace", seeded.seed.workspace_id).stdout.strip()
    assert link.startswith(f"{seeded.base_url}/dashboard/#token="), link
    tab = open_tab()
    tab.page.goto(link)
    tab.settled("overview")
    # The token left the address bar at once; the key is in this tab's sessionStorage only.
    assert "token" not in tab.page.url
    stored = tab.page.evaluate("JSON.parse(sessionStorage.getItem('murmur.session'))")
    assert stored["source"] == "link"
    assert stored["workspaceId"] == seeded.seed.workspace_id
    key = stored["key"]
    assert key.startswith("sk_")
    assert tab.page.evaluate("document.cookie") == ""
    assert tab.page.context.cookies() == []
    assert tab.page.evaluate("localStorage.length") == 0

    # The link works once: a second use is refused in the contract's words.
    again = open_tab()
    again.page.goto(link)
    refused = again.page.locator(".signin .state.error")
    refused.wait_for()
    assert refused.get_attribute("data-status") == "401"
    assert "API_KEY_INVALID" in refused.inner_text()
    assert "murmur dashboard" in again.page.inner_text(".signin")
    assert "token" not in again.page.url

    # Signing out forgets the key here and revokes it on the server.
    tab.page.click("#sign-out")
    tab.page.wait_for_selector(".signin")
    assert tab.page.evaluate("sessionStorage.length") == 0
    after = httpx.get(
        f"{seeded.base_url}/api/public/v1/analytics/unified",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert after.status_code == 401


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_draws_its_charts_with_data(
    seeded: Seeded, open_tab: OpenTab, screenshots: Any, width: int
) -> None:
    tab = open_tab(width=width)
    tab.sign_in(seeded.seed.key)
    for view in VIEWS:
        tab.open(view)
        tab.settled(view)
        charts = tab.page.eval_on_selector_all(
            f".view-{view} .chart",
            "els => els.map(e => ({uplot: !e.matches('table, .parts'),"
            " points: Number(e.dataset.points), canvas: !!e.querySelector('canvas')}))",
        )
        assert charts, view
        assert all(c["points"] > 0 for c in charts), (view, charts)
        # uPlot draws on a canvas; the heatmap and the score parts are HTML.
        assert all(c["canvas"] for c in charts if c["uplot"]), (view, charts)
        if view == "rankings" and width == 1280:
            _assert_rankings_say_what_is_measured(tab, seeded)
        # Nothing wider than the window: wide tables scroll in their own box.
        assert tab.page.evaluate("document.documentElement.scrollWidth") <= width, view
        tab.page.screenshot(path=str(screenshots / f"{view}-{width}.png"), full_page=True)
    print(f"dashboard screenshots: {screenshots}")


def _assert_rankings_say_what_is_measured(tab: Tab, seeded: Seeded) -> None:
    """Competitors in rank order; "not measured" rather than a prior; an estimate said so."""
    competitors = seeded.api.ok(seeded.api.get("/competitors", params={"limit": 50}))["items"]
    creators = seeded.api.ok(seeded.api.get("/creators", params={"limit": 50}))["items"]
    shown = {
        caption: tab.page.eval_on_selector_all(
            f'.view-rankings table:has(caption:text("{caption}")) tbody tr',
            "rows => rows.map(r => [r.dataset.handle, r.innerText])",
        )
        for caption in ("Tracked competitors", "Creators by composite score")
    }
    assert [h for h, _ in shown["Tracked competitors"]] == [c["handle"] for c in competitors]
    assert [h for h, _ in shown["Creators by composite score"]] == [c["handle"] for c in creators]
    for (_, text), c in zip(shown["Creators by composite score"], creators, strict=True):
        if c["engagement_rate"] is None:
            assert "not measured" in text
            assert "est." not in text
        else:
            assert f"est. {round(c['engagement_rate_estimate']['value'] * 100, 2):g}%" in text
    assert any(c["engagement_rate"] is None for c in creators), "Bluesky's are not measured"


def test_an_overview_figure_equals_the_apis_answer_for_its_range(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    with tab.page.expect_response(_by_platform) as seen:
        tab.sign_in(seeded.seed.key)
    tab.settled("overview")
    params = _query(seen.value.url)
    assert params["granularity"] == "day"
    assert params["tz"] == "UTC"  # the browser's zone (the context's)
    # The default range: whole days in the zone, today's included, up to now: the last 28, or
    # fewer where the data starts later (the seeded 14 days: tests/dashboard/test_polish.py).
    start = datetime.fromisoformat(params["from"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(params["to"].replace("Z", "+00:00"))
    today = end.replace(hour=0, minute=0, second=0, microsecond=0)
    days = (today - start).days + 1
    assert start.time().isoformat() == "00:00:00"
    assert 1 <= days <= 28
    assert abs(end - datetime.now(UTC)) < timedelta(minutes=10)
    answer = seeded.api.ok(seeded.api.get("/analytics/unified", params=params))
    totals = answer["totals"]
    assert totals["engagements"] > 0
    for metric in ("engagements", "impressions", "views", "posts", "followers"):
        card = f'.kpi[data-metric="{metric}"]'
        assert tab.page.get_attribute(card, "data-value") == str(totals[metric]), metric
        # Shown in the browser's locale (en-US here).
        assert tab.page.inner_text(f"{card} .kpi-value") == f"{totals[metric]:,}", metric
    rate = tab.page.inner_text('.kpi[data-metric="engagement_rate"] .kpi-value')
    assert rate == f"{round(totals['engagement_rate'] * 100, 2):g}%"
    # The rate says what it divides: its basis, the platforms it covers, the share left out.
    said = tab.page.locator('.kpi[data-metric="engagement_rate"] .coverage')
    coverage = totals["engagement_rate_coverage"]
    covered, left = coverage["platforms"], coverage["excluded_platforms"]
    assert (said.get_attribute("data-platforms"), said.get_attribute("data-excluded")) == (
        ",".join(covered),
        ",".join(left),
    )
    # Where from, by a tap: the rate's definition, the lake snapshot, each capture's readings.
    where = tab.page.locator('.kpi[data-metric="engagement_rate"] details.where-from')
    provenance = answer["provenance"]
    assert where.get_attribute("data-snapshot") == str(provenance["snapshot_id"])
    assert not where.locator("ul").is_visible()
    where.locator("summary").click()
    lines = where.locator("li").all_inner_texts()
    assert lines[0] == f"engagement rate: {provenance['definitions']['engagement_rate']}"
    assert lines[1].startswith(f"Read at lake snapshot {provenance['snapshot_id']} ")
    assert len(lines) == 2 + len(provenance["sources"])
    for line, source in zip(lines[2:], provenance["sources"], strict=True):
        assert line.startswith(
            f"capture of {source['platform']} from {source['origin']}: "
            f"{source['readings']:,} readings, "
        )
    assert where.locator("summary").get_attribute("title") == "\n".join(lines)
    share = f"{round(coverage['excluded_engagements_share'] * 100, 2):g}%"
    assert said.inner_text() == (
        f"of {totals['engagement_rate_basis']} · {len(covered)} of {len(covered) + len(left)}"
        f" platforms, {share} of engagements not covered"
    )
    # The change is against as many days just before, as the API answers for them.
    previous = seeded.api.ok(
        seeded.api.get(
            "/analytics/unified",
            params={
                **params,
                "from": (start - timedelta(days=days)).isoformat(),
                "to": start.isoformat(),
            },
        )
    )
    shown = tab.page.get_attribute('.kpi[data-metric="engagements"] .delta', "data-previous")
    assert shown == str(previous["totals"]["engagements"])
    _assert_drawn_from(tab, seeded, params)
    # A benchmark reads this mark (`murmur bench`): the overview's last chart was drawn.
    assert tab.page.evaluate("performance.getEntriesByName('murmur:overview-drawn').length") >= 1


def test_changing_granularity_and_time_zone_redraws_from_the_apis_answer(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key)
    tab.settled("overview")

    with tab.page.expect_response(lambda r: _by_platform(r, "granularity=week")) as seen:
        tab.page.select_option("#pick-granularity", "week")
    tab.settled("overview")
    params = _query(seen.value.url)
    assert params["granularity"] == "week"
    _assert_drawn_from(tab, seeded, params)

    with tab.page.expect_response(lambda r: _by_platform(r, "tz=Asia%2FTokyo")) as seen:
        tab.page.select_option("#pick-tz", "Asia/Tokyo")
    tab.settled("overview")
    params = _query(seen.value.url)
    assert params["tz"] == "Asia/Tokyo"
    assert params["granularity"] == "week"
    # The range starts at midnight in the chosen zone, not in UTC.
    start = datetime.fromisoformat(params["from"].replace("Z", "+00:00"))
    assert start.astimezone(ZoneInfo("Asia/Tokyo")).time().isoformat() == "00:00:00"
    _assert_drawn_from(tab, seeded, params)
    assert _chart(tab, "by-platform")["xLabel"] == "Week (Asia/Tokyo)"  # the x axis

    with tab.page.expect_response(lambda r: _by_platform(r, "granularity=hour")) as seen:
        tab.page.select_option("#pick-range", "48h")  # hours only: the granularity follows
    tab.settled("overview")
    params = _query(seen.value.url)
    assert params["tz"] == "Asia/Tokyo"
    _assert_drawn_from(tab, seeded, params)
    assert _chart(tab, "by-platform")["yLabel"] == "engagements per hour"  # the y axis


def test_viral_trends_show_labels_rising_first(seeded: Seeded, open_tab: OpenTab) -> None:
    """Each row names its trend by its label alone, in the API's order: rising first."""
    served = seeded.api.ok(seeded.api.get("/viral-trends", params={"limit": 50}))["items"]
    assert served, "the seeded store trends"
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="trends")
    tab.settled("trends")
    rows = tab.page.eval_on_selector_all(
        ".view-trends table.trends tbody tr",
        "rows => rows.map(r => ({id: r.dataset.trend, status: r.dataset.status,"
        " what: r.cells[1].innerText.replace(/\\s+/g, ' ').trim()}))",
    )
    assert [r["id"] for r in rows] == [t["id"] for t in served]
    # the label and the kind of entity, never its platform id after a label
    named = [" ".join(f"{t['label']} {t['entity_type']}".split()) for t in served]
    assert [r["what"] for r in rows] == named
    falling = [r["status"] == "declining" for r in rows]
    assert falling == sorted(falling), "a declining trend is listed before a rising one"


def test_a_wrong_key_is_refused_in_the_contracts_words(seeded: Seeded, open_tab: OpenTab) -> None:
    tab = open_tab()
    tab.open()
    tab.page.fill("#api-key", "sk_test_this-is-not-a-key")
    tab.page.click(".signin-form button[type=submit]")
    refused = tab.page.locator(".signin .state.error")
    refused.wait_for()
    assert refused.get_attribute("data-status") == "401"
    assert "Sign in again" in refused.inner_text()
    assert "API_KEY_INVALID" in refused.inner_text()
    assert tab.page.evaluate("sessionStorage.length") == 0


def test_a_key_without_analytics_read_names_the_missing_scope(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    key = seeded.murmur(
        "keys", "create", "--scope", "posts:read", "--workspace", seeded.seed.workspace_id
    ).stdout.strip()
    tab = open_tab()
    tab.sign_in(key)
    assert tab.settled("overview", "error") == "error"
    refused = tab.page.locator(".view-overview .state.error")
    assert refused.get_attribute("data-status") == "403"
    assert refused.get_attribute("data-scope") == "analytics:read"
    assert "lacks the analytics:read scope" in refused.inner_text()
    # What the key may read still shows: its posts.
    tab.open("posts")
    tab.settled("posts")
    assert tab.page.locator(f'[data-post="{seeded.seed.xss_post_id}"]').count() == 1


def test_too_many_requests_says_when_to_retry(seeded: Seeded, open_tab: OpenTab) -> None:
    key = seeded.murmur(
        "keys",
        "create",
        "--scope",
        "analytics:read",
        "--read-rate-limit",
        "1",
        "--workspace",
        seeded.seed.workspace_id,
    ).stdout.strip()
    tab = open_tab()
    tab.sign_in(key)  # its check of the key spends the one read of the minute
    tab.settled("overview", "error")
    limited = tab.page.locator(".view-overview .state.error")
    assert limited.get_attribute("data-status") == "429"
    text = limited.inner_text()
    assert "RATE_LIMITED" in text
    assert re.search(r"Retry in \d+ s \(at ", text), text


def test_platform_text_shows_as_text_and_a_failure_is_loud(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="posts")
    tab.settled("posts")
    text = tab.page.locator(f'[data-post="{seeded.seed.xss_post_id}"] .post-text')
    assert text.inner_text() == XSS
    assert tab.page.locator("img").count() == 0  # nothing was parsed as markup
    # The failure is summed up first, and shown on its post's destination.
    summary = tab.page.locator(".failures")
    assert summary.get_attribute("role") == "alert"
    assert REJECTION in summary.inner_text()
    failed = tab.page.locator(
        f'[data-post="{seeded.seed.published_post_id}"] '
        f'.destination[data-platform="{FAILING_PLATFORM}"] .dest-error'
    )
    assert REJECTION in failed.inner_text()
    assert "rejected" in failed.inner_text()  # the error's code


def test_a_new_workspace_says_what_to_do(seeded: Seeded, open_tab: OpenTab) -> None:
    def empty_workspace(cur: Cursor) -> str:
        return ws_repo.create_workspace(cur, seeded.seed.organization_id, "New and empty")

    workspace = seeded.server.store.run(empty_workspace)
    tab = open_tab()
    # A key of both workspaces: the newest (the empty one) first, the other a pick away.
    tab.sign_in(seeded.mint(workspace, seeded.seed.workspace_id))
    assert tab.page.input_value("#pick-workspace") == workspace
    assert tab.settled("overview", "empty") == "empty"
    said = tab.page.inner_text(".view-overview .state.empty")
    assert "no connected account" in said
    for command in ("murmur init", "murmur import", "murmur pipeline run"):
        assert command in said
    tab.open("posts")
    assert tab.settled("posts", "empty") == "empty"
    assert "POST /api/public/v1/posts" in tab.page.inner_text(".view-posts")
    # Every call names the workspace picked.
    with tab.page.expect_request("**/api/public/v1/posts?*") as asked:
        tab.page.select_option("#pick-workspace", seeded.seed.workspace_id)
    assert asked.value.headers["x-workspace-id"] == seeded.seed.workspace_id
    tab.settled("posts")


def test_the_dashboard_works_by_keyboard(seeded: Seeded, open_tab: OpenTab) -> None:
    tab = open_tab()
    tab.open()
    # The key field has the focus; Enter signs in.
    assert tab.page.evaluate("document.activeElement.id") == "api-key"
    tab.page.keyboard.type(seeded.seed.key)
    tab.page.keyboard.press("Enter")
    tab.settled("overview")
    # Tab walks to the views' links (real links, with a visible focus ring); Enter opens one.
    for _ in range(20):
        tab.page.keyboard.press("Tab")
        if tab.page.evaluate("document.activeElement.dataset.view") == "trends":
            break
    else:
        raise AssertionError("Tab never reached the link to the viral trends")
    ring = tab.page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert ring != "none"
    tab.page.keyboard.press("Enter")
    tab.settled("trends")
    assert tab.page.evaluate("document.activeElement.tagName") == "H1"  # the new view's heading
    # The pickers are form controls: a keyboard changes them.
    tab.page.focus("#trend-status")
    with tab.page.expect_response(lambda r: "status=emerging" in r.url):
        tab.page.keyboard.press("ArrowDown")
    tab.settled("trends", "ready empty")
