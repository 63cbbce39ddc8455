"""The dashboard, polished (issue 54, point 5): what a new user on a `make up` store saw.

Each test reads the page as a person does (what is shown, in which colour, where) over the
simulator-seeded store of conftest.py: 14 days of history, shorter than the overview's
default range of 28 days.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Response

from tests.dashboard.conftest import SEED_TIMEOUT, Seeded, Tab
from tests.dashboard.test_browser import _by_platform, _query, _series
from tests.support import HANG_SECONDS

pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group("dashboard-browser")]

OpenTab = Callable[..., Tab]
PLATFORMS = (
    "x",
    "instagram",
    "linkedin",
    "tiktok",
    "youtube",
    "bluesky",
    "facebook",
    "threads",
    "pinterest",
)
COUNTERS = ("impressions", "views", "engagements", "posts", "active_posts", "followers")
# Two colours nearer than this (CIEDE2000) read as one on a chart: 20 is well apart.
NEAREST = 20.0
# WCAG 2.1 (1.4.11): a chart's lines and marks at least 3:1 against what is behind them.
CONTRAST = 3.0


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _today() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _first_day_with_data(seeded: Seeded) -> datetime:
    """The first bucket of the API's 28-day answer with a figure: where the data starts."""
    now = datetime.now(UTC)
    rows = _series(
        seeded,
        {
            "from": (_today() - timedelta(days=27)).isoformat(),
            "to": now.isoformat(),
            "granularity": "day",
            "tz": "UTC",
            "group_by": "total",
        },
    )
    first = next(r for r in rows if any(r[c] is not None for c in COUNTERS))
    return _utc(first["bucket"])


def _responses(tab: Tab, match: Callable[[Response], bool]) -> list[Response]:
    seen: list[Response] = []
    tab.page.on("response", lambda r: seen.append(r) if match(r) else None)
    return seen


# Colours: sRGB to CIELAB (D65), CIEDE2000, and WCAG's contrast ratio.


def _rgb(css: str) -> tuple[float, float, float]:
    found = re.match(r"rgba?\((\d+), (\d+), (\d+)", css)
    assert found, css
    r, g, b = (int(v) / 255 for v in found.groups())
    return r, g, b


def _linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _luminance(rgb: tuple[float, float, float]) -> float:
    r, g, b = map(_linear, rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b = map(_linear, rgb)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _ciede2000(c1: tuple[float, float, float], c2: tuple[float, float, float]) -> float:
    (l1, a1, b1), (l2, a2, b2) = c1, c2
    cb = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(cb**7 / (cb**7 + 25**7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360
    h2p = math.degrees(math.atan2(b2, a2p)) % 360
    dh = h2p - h1p
    if c1p * c2p == 0:
        dh = 0
    elif dh > 180:
        dh -= 360
    elif dh < -180:
        dh += 360
    d_l, d_c = l2 - l1, c2p - c1p
    d_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(dh / 2))
    lb, cbp = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        hb = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        hb = (h1p + h2p) / 2
    else:
        hb = (h1p + h2p + (360 if h1p + h2p < 360 else -360)) / 2
    t = (
        1
        - 0.17 * math.cos(math.radians(hb - 30))
        + 0.24 * math.cos(math.radians(2 * hb))
        + 0.32 * math.cos(math.radians(3 * hb + 6))
        - 0.20 * math.cos(math.radians(4 * hb - 63))
    )
    rt = -math.sin(math.radians(60 * math.exp(-(((hb - 275) / 25) ** 2)))) * (
        2 * math.sqrt(cbp**7 / (cbp**7 + 25**7))
    )
    sl = 1 + 0.015 * (lb - 50) ** 2 / math.sqrt(20 + (lb - 50) ** 2)
    sc, sh = 1 + 0.045 * cbp, 1 + 0.015 * cbp * t
    return math.sqrt(
        (d_l / sl) ** 2 + (d_c / sc) ** 2 + (d_h / sh) ** 2 + rt * (d_c / sc) * (d_h / sh)
    )


def test_ciede2000_reads_sharmas_reference_pairs() -> None:
    """The distance the colour test relies on, on Sharma, Wu and Dalal's published pairs."""
    pairs = [
        ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
        ((50.0, -1.3802, -84.2814), (50.0, 0.0, -82.7485), 1.0),
        ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
        ((22.7233, 20.0904, -46.694), (23.0331, 14.973, -42.5619), 2.0373),
    ]
    for first, second, expected in pairs:
        assert _ciede2000(first, second) == pytest.approx(expected, abs=1e-4)


# 1. The default range is the data's span when shorter.


def test_the_default_range_is_the_datas_own_span_when_shorter(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    first = _first_day_with_data(seeded)
    default_start = _today() - timedelta(days=27)
    assert first > default_start, "the seeded history is shorter than 28 days"
    tab = open_tab()
    seen = _responses(tab, _by_platform)
    tab.sign_in(seeded.seed.key)
    tab.settled("overview")
    params = _query(seen[-1].url)
    # The range starts on the data's first day, not 28 days ago with half of it blank.
    assert _utc(params["from"]) == first
    assert all(_utc(_query(r.url)["from"]) == first for r in seen)
    drawn = tab.page.eval_on_selector('[data-chart="by-platform"]', "e => e.dataset.first")
    assert _utc(drawn) == first
    assert tab.page.input_value("#pick-range") == "span"
    picked = tab.page.eval_on_selector("#pick-range", "s => s.selectedOptions[0].textContent")
    assert picked == f"All data: since {first:%b} {first.day}"
    days = (_today() - first).days + 1
    delta = tab.page.inner_text('.kpi[data-metric="engagements"] .delta')
    assert delta.endswith(f"vs the previous {days} days")

    # A range the person picks is kept: the next render of the overview uses it.
    with tab.page.expect_response(lambda r: _by_platform(r)) as asked:
        tab.page.select_option("#pick-range", "28d")
    tab.settled("overview")
    assert _utc(_query(asked.value.url)["from"]) == default_start
    tab.page.click('#nav a[data-view="trends"]')
    tab.settled("trends")
    with tab.page.expect_response(lambda r: _by_platform(r)) as again:
        tab.page.click('#nav a[data-view="overview"]')
    tab.settled("overview")
    assert _utc(_query(again.value.url)["from"]) == default_start
    assert tab.page.input_value("#pick-range") == "28d"


# 2. One colour per platform.


def _swatches(tab: Tab, selector: str) -> dict[str, str]:
    found: dict[str, str] = tab.page.eval_on_selector_all(
        selector,
        "els => Object.fromEntries(els.map(e => [e.dataset.platform,"
        " getComputedStyle(e).backgroundColor]))",
    )
    return found


def _legend(tab: Tab, chart: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = tab.page.eval_on_selector_all(
        f'.chart-figure:has([data-chart="{chart}"]) .legend li.legend-item',
        "els => els.map(li => { const mark = li.querySelector('.legend-swatch');"
        " const box = mark.getBoundingClientRect();"
        " return {name: li.querySelector('.legend-name').textContent, text: li.innerText,"
        " visible: li.checkVisibility() && box.width > 0 && box.height > 0,"
        " color: getComputedStyle(mark).backgroundColor}; })",
    )
    return items


def test_each_platform_has_a_colour_of_its_own_in_every_view(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key)
    tab.settled("overview")
    table = _swatches(tab, ".view-overview table tr[data-platform] .swatch")
    assert set(table) == set(PLATFORMS), "the seeded store has all nine platforms"
    colours = {name: _rgb(css) for name, css in table.items()}
    # Nine colours, none near another.
    for (a, ca), (b, cb) in itertools.combinations(colours.items(), 2):
        distance = _ciede2000(_lab(ca), _lab(cb))
        assert distance >= NEAREST, f"{a} and {b} look alike: ΔE00 {distance:.1f}"
    # Each one stands out from the page and the cards it is drawn on.
    for behind in ("html", ".view-overview .card"):
        ground = _rgb(tab.page.eval_on_selector(behind, "e => getComputedStyle(e).backgroundColor"))
        for name, colour in colours.items():
            assert _contrast(colour, ground) >= CONTRAST, (name, behind)
    # The chart's lines are the table's colours, one map for both.
    legend = {item["name"]: item["color"] for item in _legend(tab, "by-platform")}
    assert legend == table
    # And so is every other view's platform mark.
    tab.page.wait_for_selector(".card.reliability[data-state=ready]", timeout=HANG_SECONDS * 1000)
    reliability = _swatches(tab, ".card.reliability tr[data-platform] .swatch")
    assert reliability
    assert all(table[p] == c for p, c in reliability.items())
    tab.page.click('#nav a[data-view="posts"]')
    tab.settled("posts")
    marks = _swatches(tab, ".view-posts .destination .swatch")
    assert {"x", "bluesky", "linkedin"} <= set(marks)
    assert all(table[p] == c for p, c in marks.items())
    posted = [item["color"] for item in _legend(tab, "post-engagements")]
    assert posted, "the newest published post's chart"
    assert set(posted) <= set(table.values())


# 3. The legend names series without a hover.


def test_every_chart_names_its_series_in_a_legend_without_a_hover(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key)
    tab.settled("overview")
    tab.page.mouse.move(0, 0)  # nowhere near a chart
    platforms = sorted({r["platform"] for r in _series(seeded, _query_of_overview(tab))})
    expected = {
        "by-platform": platforms,
        "engagement-rate": ["engagement rate"],
        "follower-growth": ["net new followers"],
    }
    for chart, names in expected.items():
        items = _legend(tab, chart)
        assert [i["name"] for i in items] == names, chart
        for item in items:
            assert item["visible"], (chart, item)
            assert item["color"] not in ("rgba(0, 0, 0, 0)", "transparent"), (chart, item)
            # a name, not a name waiting for a value ("bluesky: —" until a hover)
            assert item["text"].strip() == item["name"], (chart, item)
    # With the cursor on the chart, the legend adds each series' value at that time.
    box = tab.page.locator('[data-chart="by-platform"] .u-over').bounding_box()
    assert box is not None
    tab.page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    hovered = tab.page.locator('.chart-figure:has([data-chart="by-platform"]) .legend-time')
    hovered.wait_for(state="visible")
    for item in _legend(tab, "by-platform"):
        assert re.fullmatch(rf"{re.escape(item['name'])}: (no data|[\d.,]+[KMB]?)", item["text"])


def _query_of_overview(tab: Tab) -> dict[str, str]:
    """The by-platform query of the overview as drawn (its range, from the figures' box)."""
    span = tab.page.get_attribute(".kpis", "data-range")
    assert span
    start, end = span.split("/")
    return {
        "from": start,
        "to": end,
        "granularity": tab.page.input_value("#pick-granularity"),
        "tz": tab.page.input_value("#pick-tz"),
        "group_by": "platform",
    }


# 4. The header names the workspace and says what the expiry is.


def _said(text: str) -> str:
    return " ".join(text.replace("\u202f", " ").replace("\u00a0", " ").split())


def test_the_header_names_the_workspace_and_when_the_sign_in_expires(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    workspace = seeded.api.ok(seeded.api.get(f"/workspaces/{seeded.seed.workspace_id}"))
    link = seeded.murmur("dashboard", "--workspace", seeded.seed.workspace_id).stdout.strip()
    tab = open_tab()
    tab.page.goto(link)
    tab.settled("overview")
    who = tab.page.locator("#who")
    tab.page.wait_for_function(
        "name => document.getElementById('who').innerText.includes(name)",
        arg=workspace["name"],
        timeout=30_000,  # one call, GET /workspaces/{id}
    )
    stored = tab.page.evaluate("JSON.parse(sessionStorage.getItem('murmur.session'))")
    ends = _utc(stored["expiresAt"])  # the browser's zone is UTC (conftest)
    clock = f"{ends.hour % 12 or 12}:{ends:%M} {'AM' if ends.hour < 12 else 'PM'}"
    assert _said(who.inner_text()) == (
        f"{workspace['name']} · Sign-in expires {ends:%b} {ends.day}, {ends.year}, {clock}"
    )
    assert seeded.seed.workspace_id not in who.inner_text()

    # A pasted key: the workspace's name too, and no expiry it cannot know.
    pasted = open_tab()
    pasted.sign_in(seeded.seed.key)
    pasted.settled("overview")
    assert _said(pasted.page.inner_text("#who")) == workspace["name"]


# 5. One wording when there is nothing before to compare with.


def test_a_change_with_nothing_before_is_said_one_way(seeded: Seeded, open_tab: OpenTab) -> None:
    tab = open_tab()
    # the previous period's call: its totals only (limit=1)
    seen = _responses(
        tab, lambda r: "/analytics/unified" in r.url and _query(r.url).get("limit") == "1"
    )
    tab.sign_in(seeded.seed.key)
    tab.settled("overview")
    previous = seen[-1].json()["data"]["totals"]
    deltas = tab.page.eval_on_selector_all(
        ".view-overview .kpi[data-metric]",
        "els => els.map(k => ({metric: k.dataset.metric, value: k.dataset.value,"
        " said: [...k.querySelector('.delta').childNodes].filter(n => n.nodeType === 3)"
        ".map(n => n.textContent).join('').trim()}))",
    )
    nothing_before = 0
    for delta in deltas:
        before = previous[delta["metric"]]
        if before in (None, 0) and delta["value"] not in ("", "0"):
            assert delta["said"] == "no earlier figure", delta
            nothing_before += 1
        else:
            assert re.fullmatch(
                r"[+\u2212-][\d.,]+(%| pts)|unchanged|no earlier figure", delta["said"]
            )
    assert nothing_before >= 2, "the seeded store's previous period is before its history"
    assert "none before" not in tab.page.inner_text("main")


# 6. No Retry on a permission error.


def _no_retry(tab: Tab, view: str, scope: str) -> None:
    refused = tab.page.locator(f".view-{view} .state.error[data-status='403']").first
    refused.wait_for(timeout=HANG_SECONDS * 1000)
    assert refused.get_attribute("data-scope") == scope, view
    assert f"lacks the {scope} scope" in refused.inner_text(), view
    assert tab.page.locator(f".view-{view} button", has_text="Retry").count() == 0, view


def test_a_permission_error_has_no_retry_in_any_view(seeded: Seeded, open_tab: OpenTab) -> None:
    posts_only = seeded.murmur(
        "keys", "create", "--scope", "posts:read", "--workspace", seeded.seed.workspace_id
    ).stdout.strip()
    tab = open_tab()
    tab.sign_in(posts_only)
    for view in ("overview", "trends", "breakouts", "insights", "rankings"):
        tab.page.click(f'#nav a[data-view="{view}"]')
        tab.settled(view, "error ready")
        _no_retry(tab, view, "analytics:read")
    # The posts show; the newest published one's analytics are refused, with no Retry.
    tab.page.click('#nav a[data-view="posts"]')
    tab.settled("posts")
    _no_retry(tab, "posts", "analytics:read")

    analytics_only = seeded.murmur(
        "keys", "create", "--scope", "analytics:read", "--workspace", seeded.seed.workspace_id
    ).stdout.strip()
    other = open_tab()
    other.sign_in(analytics_only, view="posts")
    other.settled("posts", "error")
    _no_retry(other, "posts", "posts:read")


# 7. The posts view says what it lists.


def test_the_posts_view_says_it_lists_posts_made_through_murmur(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="posts")
    tab.settled("posts")
    about = tab.page.locator(".view-posts h1 + p")
    assert about.is_visible()
    assert about.inner_text().startswith("Posts made through Murmur")
    assert "not listed here" in about.inner_text()


# 8. Creators page beyond 50.


def test_creators_page_beyond_the_first_50_with_more(seeded: Seeded, open_tab: OpenTab) -> None:
    pages: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": 50, **({"cursor": cursor} if cursor else {})}
        pages.append(seeded.api.ok(seeded.api.get("/creators", params=params)))
        cursor = pages[-1]["pagination"]["next_cursor"]
        if not cursor:
            break
    assert len(pages) > 1, "the seeded store ranks more than 50 creators"
    everyone = [c["handle"] for page in pages for c in page["items"]]
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="rankings")
    tab.settled("rankings")
    card = tab.page.locator('.card[data-ranking="creators"]')
    rows = card.locator("table tbody tr")
    more = card.locator("button", has_text="More")
    assert rows.count() == 50
    expected = 50
    for page, following in itertools.pairwise(pages):
        assert more.is_visible()
        with tab.page.expect_request("**/api/public/v1/creators?*") as asked:
            more.click()
        # the next page is the one the answer's cursor names
        assert _query_cursor(asked.value.url) == page["pagination"]["next_cursor"]
        expected += len(following["items"])
        tab.page.wait_for_function(
            "([rows, n]) => document.querySelectorAll(rows).length === n",
            arg=['.card[data-ranking="creators"] table tbody tr', expected],
            timeout=HANG_SECONDS * 1000,
        )
    assert not more.is_visible()
    shown = rows.evaluate_all("rows => rows.map(r => r.dataset.handle)")
    assert shown == everyone
    assert f"{len(everyone)} shown, all of them." in card.inner_text()


def _query_cursor(url: str) -> str | None:
    found = parse_qs(urlsplit(url).query).get("cursor")
    return found[0] if found else None


# 9. The 390 px overview keeps its axis labels.

# Every uPlot the page makes, kept for the test to read (the page's script is untouched).
KEEP_PLOTS = """
(() => {
  let real;
  Object.defineProperty(window, 'uPlot', {configurable: true, get: () => real, set: (U) => {
    real = new Proxy(U, {construct(target, args) {
      const plot = new target(...args);
      (window.__plots ||= []).push(plot);
      return plot;
    }});
  }});
})();
"""

# Per chart: where each tick label is drawn (CSS px in the canvas), how wide it is in the
# axis' font, and whether a title drawn on the canvas fits the length of its axis.
AXES = """
() => (window.__plots || []).filter((u) => u.root.isConnected).map((u) => {
  const ctx = document.createElement('canvas').getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  const width = (text, font) => {
    ctx.font = font;
    return Math.max(...String(text).split('\\n').map((line) => ctx.measureText(line).width));
  };
  return {
    chart: u.root.parentNode.dataset.chart,
    width: u.width,
    height: u.height,
    axes: u.axes.filter((a) => a.show !== false).map((a, i) => ({
      side: a.side,
      pos: a._pos,
      size: a._size,
      title: a.label == null ? null : a.label,
      titleWidth: a.label == null ? 0 : width(a.label, a.labelFont[0]),
      room: a.side % 2 ? u.bbox.height / dpr : u.bbox.width / dpr,
      ticks: (a._values || []).map((v, j) => ({
        text: String(v),
        at: u.valToPos(a._splits[j], a.scale) + (a.side % 2 ? u.bbox.top : u.bbox.left) / dpr,
        width: width(v, a.font[0]),
      })),
    })),
  };
})
"""


def _assert_axes_shown(tab: Tab, width: int) -> None:
    charts = tab.page.evaluate(AXES)
    drawn = tab.page.eval_on_selector_all(
        ".view-overview [data-chart]:has(canvas)", "els => els.map(e => e.dataset.chart)"
    )
    assert "by-platform" in drawn
    assert sorted(c["chart"] for c in charts) == sorted(drawn)
    for chart in charts:
        for axis in chart["axes"]:
            # A title drawn on the canvas longer than its axis is cut at both ends.
            assert axis["titleWidth"] <= axis["room"], (chart["chart"], axis["title"])
            for tick in axis["ticks"]:
                if axis["side"] % 2:  # the y axis: right-aligned in its own box
                    assert tick["width"] <= axis["size"], (chart["chart"], tick)
                    assert 0 <= tick["at"] <= chart["height"], (chart["chart"], tick)
                else:  # the x axis: centred on its time
                    half = tick["width"] / 2
                    assert tick["at"] - half >= 0, (chart["chart"], tick)
                    assert tick["at"] + half <= chart["width"], (chart["chart"], tick)
        # The axes' titles: shown whole, as text, inside the window.
        titles = tab.page.eval_on_selector_all(
            f'.chart-figure:has([data-chart="{chart["chart"]}"]) .axis-title',
            "els => els.map(e => { const r = e.getBoundingClientRect(); return {axis:"
            " e.dataset.axis, text: e.textContent, left: r.left, right: r.right,"
            " visible: e.checkVisibility() && r.width > 0 && r.height > 0,"
            " overflow: e.scrollWidth > e.clientWidth}; })",
        )
        labels = tab.page.eval_on_selector(
            f'[data-chart="{chart["chart"]}"]', "e => [e.dataset.xLabel, e.dataset.yLabel]"
        )
        assert sorted((t["axis"], t["text"]) for t in titles) == [
            ("x", labels[0]),
            ("y", labels[1]),
        ]
        for title in titles:
            assert title["visible"], (chart["chart"], title)
            assert not title["overflow"], (chart["chart"], title)
            assert title["left"] >= 0, (chart["chart"], title)
            assert title["right"] <= width, (chart["chart"], title)


def test_the_390px_overview_keeps_its_axis_labels(seeded: Seeded, open_tab: OpenTab) -> None:
    tab = open_tab(width=390, height=844)
    tab.page.context.add_init_script(KEEP_PLOTS)
    tab.sign_in(seeded.seed.key)
    tab.settled("overview")
    _assert_axes_shown(tab, 390)
    for picker, value in (("#pick-granularity", "week"), ("#pick-range", "48h")):
        with tab.page.expect_response(lambda r: _by_platform(r)):
            tab.page.select_option(picker, value)
        tab.settled("overview")
        _assert_axes_shown(tab, 390)
