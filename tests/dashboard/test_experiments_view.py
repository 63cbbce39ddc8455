"""The Experiments view in a real browser, over a store whose experiments were really run.

The store is tests/experiments/conftest.py's ``measured``: the simulator, a real API and store,
two experiments (engagements at 24 h on one Bluesky account; the engagement rate over X,
LinkedIn and Bluesky) whose posts were drawn their arms by the API, published by the real
worker and read by the hourly ingest job at four captures either side of 24 h and 48 h. Every
figure the page shows is read back against ``GET /experiments`` and ``GET /experiments/{id}``
for the same experiment, formatted as the page formats it (en-US).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Route

from domain.workspaces.keys import ALL_SCOPES, mint_key
from tests.dashboard.conftest import SEED_TIMEOUT, Seed, Seeded, Tab
from tests.experiments.conftest import ARMS, Measured, measured
from tests.support import HANG_SECONDS, Api
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor

__all__ = ["measured"]  # the store's fixture, found by pytest in this module

# One worker builds this module's store and runs its tests.
pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group(__name__)]

OpenTab = Callable[..., Tab]
MINUS = "\u2212"
NOT_MEASURED = "not measured yet"
METRICS = {
    "engagements_24h": "engagements at 24 h",
    "engagements_48h": "engagements at 48 h",
    "engagement_rate": "engagement rate at 48 h",
}


@pytest.fixture(scope="module")
def seeded(measured: Measured) -> Iterator[Seeded]:
    """This module's store in place of the simulator's: conftest's ``open_tab`` serves its
    tabs (loopback only, no dialog, no uncaught error) from ``seeded``."""

    def setup(cur: Cursor) -> tuple[str, str]:
        ws = ws_repo.get_workspace(cur, measured.workspace_id)
        assert ws is not None
        key = mint_key(
            cur,
            organization_id=ws.organization_id,
            workspace_ids=[measured.workspace_id],
            scopes=list(ALL_SCOPES),
        ).key
        return ws.organization_id, key

    org_id, key = measured.server.store.run(setup)
    api = Api(measured.server.base_url, key)
    seed = Seed(measured.settings.data_dir, measured.workspace_id, org_id, key, "", "")
    try:
        yield Seeded(seed, measured.server, api)
    finally:
        api.close()


def _text(value: str) -> str:
    """Text as a person reads it: Intl's narrow and no-break spaces as spaces."""
    return " ".join(value.replace("\u202f", " ").replace("\xa0", " ").split())


def _round(value: float, places: str, percent: bool = False) -> Decimal:
    """``value`` rounded as Intl rounds it: its shortest decimal form (the one ``repr``
    writes: Chromium's ICU formats that, not the double's exact binary value), shifted two
    places for a percentage, then rounded half away from zero (Intl's halfExpand)."""
    shortest = Decimal(repr(value))
    return (shortest.scaleb(2) if percent else shortest).quantize(
        Decimal(places), rounding=ROUND_HALF_UP
    )


def _signed(r: float) -> str:
    """A lift as the page writes it: "+12.3 %", "\u22124.1 %" (a minus sign), "0.0 %"."""
    q = _round(r, "0.1", percent=True)
    sign = "+" if q > 0 else MINUS if q < 0 else ""
    return f"{sign}{abs(q):,.1f} %"


def _lift(lift: dict[str, Any] | None) -> str:
    if lift is None:
        return NOT_MEASURED
    return f"{_signed(lift['estimate'])} ({_signed(lift['low'])} to {_signed(lift['high'])})"


def _metric(metric: str, value: float | None) -> str:
    if value is None:
        return NOT_MEASURED
    if metric == "engagement_rate":
        return f"{_round(value, '0.01', percent=True):,.2f}%"
    return f"{_round(value, '0.1'):,.1f}".removesuffix(".0")


def _when(iso: str, zone: str = "UTC") -> str:
    """An instant as the page's dateTime shows it in en-US: "Jun 15, 2025, 7:05 AM (UTC)"."""
    at = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(ZoneInfo(zone))
    hour = at.hour % 12 or 12
    clock = f"{at:%b} {at.day}, {at.year}, {hour}:{at:%M} {'AM' if at.hour < 12 else 'PM'}"
    return f"{clock} ({zone})"


def _leading(detail: dict[str, Any]) -> dict[str, Any] | None:
    arms = [a for a in detail["results"]["arms"] if not a["control"] and a["lift"]]
    return max(arms, key=lambda a: a["lift"]["estimate"]) if arms else None


def _list_rows(tab: Tab) -> list[dict[str, Any]]:
    tab.page.wait_for_function(
        "() => ![...document.querySelectorAll('.view-experiments tr[data-experiment] > td')]"
        ".some(c => c.dataset.state === 'loading')",
        timeout=HANG_SECONDS * 1000,
    )
    found: list[dict[str, Any]] = tab.page.eval_on_selector_all(
        ".view-experiments table.experiments > tbody > tr[data-experiment]",
        "rows => rows.map(r => ({id: r.dataset.experiment, status: r.dataset.status,"
        " href: r.querySelector('a').getAttribute('href'),"
        " cells: [...r.cells].map(c => c.innerText)}))",
    )
    return found


def _arm_rows(tab: Tab) -> dict[str, list[str]]:
    found: list[list[Any]] = tab.page.eval_on_selector_all(
        ".view-experiments table.arms > tbody > tr[data-arm]",
        "rows => rows.map(r => [r.dataset.arm, [...r.cells].map(c => c.innerText)])",
    )
    return {arm: [_text(c) for c in cells] for arm, cells in found}


def _verdicts(tab: Tab) -> dict[str, dict[str, str]]:
    found: list[list[Any]] = tab.page.eval_on_selector_all(
        ".view-experiments ul.verdicts > li",
        "items => items.map(i => [i.dataset.verdict, {value: i.dataset.value, text: i.innerText}])",
    )
    return {name: {"value": v["value"], "text": _text(v["text"])} for name, v in found}


def _assert_chart_drawn(tab: Tab, detail: dict[str, Any]) -> None:
    """Each measured arm's lift a point within its interval's bar, placed on one scale with
    the zero line; an arm without a lift is said to be not measured, never drawn at 0."""
    lifts = {a["name"]: a["lift"] for a in detail["results"]["arms"] if not a["control"]}
    figure = tab.page.locator(".view-experiments figure.chart.intervals")
    assert figure.get_attribute("data-points") == str(sum(1 for v in lifts.values() if v))
    zero_line = tab.page.locator(".interval-chart line.zero")
    assert zero_line.count() == (1 if any(lifts.values()) else 0)  # no axis without a lift
    zero = float(zero_line.get_attribute("x1") or "nan") if zero_line.count() else 0.0
    for arm, lift in lifts.items():
        group = tab.page.locator(f'.interval-chart g[data-arm="{arm}"]')
        assert group.count() == 1, arm
        if lift is None:
            assert group.get_attribute("data-measured") == "no"
            assert group.locator("circle, line").count() == 0
            assert _text(group.locator("text.none").text_content() or "") == NOT_MEASURED
            continue
        bar = group.locator("line.interval")
        x1, x2 = (float(bar.get_attribute(a) or "nan") for a in ("x1", "x2"))
        cx = float(group.locator("circle.estimate").get_attribute("cx") or "nan")
        span = lift["high"] - lift["low"]
        assert x1 < cx < x2
        assert (cx - x1) / (x2 - x1) == pytest.approx((lift["estimate"] - lift["low"]) / span)
        assert (zero - x1) / (x2 - x1) == pytest.approx(-lift["low"] / span)
        assert _text(group.locator("text.value").text_content() or "") == _signed(lift["estimate"])


def _assert_detail(tab: Tab, detail: dict[str, Any]) -> None:
    """The detail page reads the answer's figures back, each formatted, none made up."""
    results, metric = detail["results"], detail["metric"]
    view = tab.page.locator(".view-experiments")
    assert view.get_attribute("data-experiment") == detail["id"]
    assert tab.page.inner_text(".view-experiments h1") == detail["name"]
    summary = _text(tab.page.inner_text(".experiment-summary"))
    assert summary.startswith(f"{detail['status']} · Metric: {METRICS[metric]}")
    if detail["target_posts"] is not None:
        assert f"{detail['posts_assigned']} of {detail['target_posts']} posts assigned" in summary
    rows = _arm_rows(tab)
    assert list(rows) == [a["name"] for a in results["arms"]]  # the API's order
    slots = {a["name"]: a["slots"] for a in detail["arms"]}
    for arm in results["arms"]:
        head, assigned, published, measured_, pending, mean, lift = rows[arm["name"]]
        assert head.startswith(arm["name"])
        assert ("control" in head.split()) is arm["control"]
        for slot in slots[arm["name"]]:
            assert slot["time"] in head
        assert [assigned, published, measured_, pending] == [
            f"{arm[k]:,}"
            for k in ("posts_assigned", "posts_published", "posts_measured", "posts_pending")
        ]
        assert mean == _metric(metric, arm["metric"]["mean"] if arm["metric"] else None)
        if arm["control"]:
            assert lift == "the control"
        else:
            assert lift.startswith(_lift(arm["lift"]))
            if arm["lift"]:
                accounts = arm["lift"]["accounts"]
                assert lift.endswith(f"{accounts} account{'' if accounts == 1 else 's'}")
    _assert_chart_drawn(tab, detail)

    verdicts = _verdicts(tab)
    for name in ("enough_data", "conclusive", "can_stop_early"):
        assert verdicts[name]["value"] == str(results[name]).lower(), name
    needed = results["posts_needed"]
    said = verdicts["enough_data"]["text"]
    if needed["per_arm"] is None:
        assert f"Posts needed: {NOT_MEASURED}" in said
    else:
        assert f"Each arm needs {needed['per_arm']:,} measured posts" in said
        assert f"find a lift of {round(detail['min_detectable_effect'] * 100):g} %" in said
        assert f"{needed['more']:,} more over all arms" in said
    if detail["status"] == "running":
        assert "the interval holds at the planned end" in verdicts["conclusive"]["text"]
    through = tab.page.locator(".view-experiments .measured-through")
    assert through.get_attribute("data-at") == (results["measured_through"] or "")
    if results["measured_through"]:
        assert _when(results["measured_through"]) in _text(through.inner_text())
    else:
        assert NOT_MEASURED in through.inner_text()
    assert _text(tab.page.inner_text(".stop-rule")) == _text(f"Stop rule. {results['stop_rule']}")
    assert _text(tab.page.inner_text(".method-text")) == _text(results["method"])
    # Where from: the answer's definitions of the figures, the newest reading.
    where = tab.page.locator(".view-experiments details.where-from")
    where.locator("summary").click()
    lines = [_text(t) for t in where.locator("li").all_inner_texts()]
    assert f"posts measured: {results['definitions']['posts_measured']}" in lines
    assert f"{metric.replace('_', ' ')}: {results['definitions'][metric]}" in lines
    # Stop early only when the rule allows it; abandoning is there while it runs.
    stop = tab.page.locator(".view-experiments button.stop-early")
    assert stop.count() == (1 if results["can_stop_early"] else 0)
    abandon = tab.page.locator(".view-experiments button.abandon")
    assert abandon.count() == (1 if detail["status"] == "running" else 0)


def test_the_list_shows_every_experiment_with_its_leading_lift(
    seeded: Seeded, measured: Measured, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="experiments")
    tab.settled("experiments")
    served = seeded.api.list_all("/experiments")
    assert {measured.one_account["id"], measured.accounts["id"]} <= {e["id"] for e in served}
    rows = _list_rows(tab)
    assert [r["id"] for r in rows] == [e["id"] for e in served]  # newest first, as served
    for row, e in zip(rows, served, strict=True):
        name, status, metric, posts, lead = (_text(c) for c in row["cells"])
        assert name == f"{e['name']} {e['id']}"
        assert status == e["status"] == row["status"]
        assert metric == METRICS[e["metric"]]
        assert posts == (
            f"{e['posts_assigned']:,}"
            if e["target_posts"] is None
            else f"{e['posts_assigned']:,} of {e['target_posts']:,}"
        )
        detail = seeded.api.ok(seeded.api.get(f"/experiments/{e['id']}"))
        leading = _leading(detail)
        assert lead == (
            NOT_MEASURED if leading is None else f"{leading['name']}: {_lift(leading['lift'])}"
        )
        assert row["href"] == f"#/experiments/{e['id']}"
    # The two experiments run: each has its evening arm's lift.
    for e in (measured.one_account, measured.accounts):
        row = next(r for r in rows if r["id"] == e["id"])
        assert _text(row["cells"][4]).startswith("evening: ")
    caption = tab.page.locator(".view-experiments table.experiments > caption").inner_text()
    assert "newest first" in caption

    # A row opens its experiment.
    tab.page.click(f'tr[data-experiment="{measured.one_account["id"]}"] a')
    tab.page.wait_for_selector(
        f'.view-experiments[data-experiment="{measured.one_account["id"]}"]',
        timeout=HANG_SECONDS * 1000,
    )
    assert tab.page.url.endswith(f"#/experiments/{measured.one_account['id']}")
    assert tab.page.get_attribute('#nav a[data-view="experiments"]', "aria-current") == "page"


def test_more_loads_the_next_page(seeded: Seeded, open_tab: OpenTab) -> None:
    served = seeded.api.list_all("/experiments")
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="experiments?limit=1")
    tab.settled("experiments")
    assert [r["id"] for r in _list_rows(tab)] == [served[0]["id"]]
    more = tab.page.locator(".view-experiments .experiments-more button")
    for n in range(2, len(served) + 1):
        more.click()
        tab.page.wait_for_function(
            "n => document.querySelectorAll('.view-experiments tr[data-experiment]').length === n",
            arg=n,
        )
    assert [r["id"] for r in _list_rows(tab)] == [e["id"] for e in served]
    assert more.count() == 0  # the last page: no more
    said = tab.page.inner_text(".view-experiments .experiments-count")
    assert said == f"{len(served)} experiments shown, newest first."


def test_the_detail_shows_each_arms_figures_as_the_api_gives_them(
    seeded: Seeded, measured: Measured, open_tab: OpenTab, screenshots: Path
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.seed.key)
    for experiment in (measured.accounts, measured.one_account):
        tab.open(f"experiments/{experiment['id']}")
        tab.page.wait_for_selector(
            f'.view-experiments[data-experiment="{experiment["id"]}"][data-state=ready]',
            timeout=HANG_SECONDS * 1000,
        )
        detail = seeded.api.ok(seeded.api.get(f"/experiments/{experiment['id']}"))
        # What the store's run gives: measured posts, a lift each, the rule not met yet.
        assert all(a["posts_measured"] > 0 for a in detail["results"]["arms"])
        assert detail["results"]["can_stop_early"] is False
        assert detail["results"]["conclusive"] is False
        _assert_detail(tab, detail)
        assert tab.page.evaluate("document.documentElement.scrollWidth") <= 1280
        if experiment is measured.one_account:
            tab.page.screenshot(path=str(screenshots / "experiments-1280.png"), full_page=True)
    print(f"dashboard screenshots: {screenshots}")


def _start(seeded: Seeded, measured: Measured, name: str) -> dict[str, Any]:
    """A new experiment with no post yet: every figure of it unmeasured."""
    body = {
        "name": name,
        "account_ids": measured.one_account["account_ids"],
        "arms": ARMS,
        "metric": "engagements_48h",
        "duration_days": 30,
    }
    return seeded.api.ok(seeded.api.post("/experiments", json=body), 201)  # type: ignore[no-any-return]


def test_an_experiment_without_posts_says_not_measured_yet_never_zero(
    seeded: Seeded, measured: Measured, open_tab: OpenTab
) -> None:
    started = _start(seeded, measured, "Nothing measured yet")
    detail = seeded.api.ok(seeded.api.get(f"/experiments/{started['id']}"))
    results = detail["results"]
    assert [a["lift"] for a in results["arms"]] == [None, None]
    assert [a["metric"] for a in results["arms"]] == [None, None]
    assert results["posts_needed"] == {"per_arm": None, "more": None}
    assert results["measured_through"] is None
    tab = open_tab()
    tab.sign_in(seeded.seed.key, view="experiments")
    tab.settled("experiments")
    row = next(r for r in _list_rows(tab) if r["id"] == started["id"])
    assert _text(row["cells"][3]) == "0"
    assert _text(row["cells"][4]) == NOT_MEASURED
    tab.open(f"experiments/{started['id']}")
    tab.page.wait_for_selector(
        f'.view-experiments[data-experiment="{started["id"]}"][data-state=ready]',
        timeout=HANG_SECONDS * 1000,
    )
    rows = _arm_rows(tab)
    assert rows["morning"][5] == rows["evening"][5] == NOT_MEASURED
    assert rows["evening"][6] == NOT_MEASURED
    summary = _text(tab.page.inner_text(".experiment-summary"))
    assert f"0 posts assigned; assigns until {_when(detail['ends_at'])}" in summary
    _assert_chart_drawn(tab, detail)
    assert tab.page.locator(".interval-chart circle").count() == 0
    verdicts = _verdicts(tab)
    assert f"Posts needed: {NOT_MEASURED}" in verdicts["enough_data"]["text"]
    said = _text(tab.page.inner_text(".view-experiments .card.results"))
    assert NOT_MEASURED in tab.page.inner_text(".measured-through")
    # no lift nor metric made up as zero
    assert "0.0 %" not in said
    assert " 0 % " not in f" {said} "


def test_stop_early_is_offered_only_when_the_rule_allows_and_its_refusal_is_said(
    seeded: Seeded, measured: Measured, open_tab: OpenTab
) -> None:
    """The store's experiments are not past half their plan (the rule refuses): the answer is
    rewritten in the browser to say it allows it, so the button shows and its refusal too."""
    experiment = measured.one_account
    tab = open_tab()
    tab.sign_in(seeded.seed.key)

    def allowing(route: Route) -> None:
        answer = route.fetch()
        envelope = answer.json()
        envelope["data"]["results"]["can_stop_early"] = True
        route.fulfill(response=answer, json=envelope)

    tab.page.route(f"**/api/public/v1/experiments/{experiment['id']}", allowing)
    tab.open(f"experiments/{experiment['id']}")
    tab.settled("experiments")
    assert _verdicts(tab)["can_stop_early"]["value"] == "true"
    stop = tab.page.locator(".view-experiments button.stop-early")
    assert stop.inner_text() == "Stop early"
    with tab.page.expect_response(lambda r: r.url.endswith("/stop")) as seen:
        stop.click()
    assert seen.value.status == 409
    refused = tab.page.locator(".view-experiments .stop-outcome .state.error")
    refused.wait_for(timeout=HANG_SECONDS * 1000)
    assert refused.get_attribute("data-code") == "INVALID_STATE"
    assert "Stopping now is refused" in refused.inner_text()
    # still running, as the API says
    assert seeded.api.ok(seeded.api.get(f"/experiments/{experiment['id']}"))["status"] == (
        "running"
    )


def test_abandon_asks_first_and_a_key_without_the_scope_is_told_which(
    seeded: Seeded, measured: Measured, open_tab: OpenTab
) -> None:
    started = _start(seeded, measured, "To be abandoned")
    path = f"experiments/{started['id']}"
    # A key that may read but not write automations: the scope is named, with no Retry.
    reader = open_tab()
    reader.sign_in(seeded.mint(scopes=["analytics:read"]), view=path)
    reader.settled("experiments")
    reader.page.click(".view-experiments button.abandon")
    reader.page.click(".view-experiments button.abandon-confirm")
    refused = reader.page.locator(".view-experiments .stop-outcome .state.error")
    refused.wait_for(timeout=HANG_SECONDS * 1000)
    assert refused.get_attribute("data-status") == "403"
    assert refused.get_attribute("data-scope") == "automations:write"
    assert "lacks the automations:write scope" in refused.inner_text()
    assert refused.locator("button").count() == 0

    tab = open_tab()
    tab.sign_in(seeded.seed.key, view=path)
    tab.settled("experiments")
    confirm = tab.page.locator(".view-experiments .confirm")
    assert confirm.is_hidden()  # nothing happens on the first click but the question
    tab.page.click(".view-experiments button.abandon")
    assert confirm.is_visible()
    assert "cannot be undone" in confirm.inner_text()
    # Keep it running: nothing sent.
    tab.page.click(".view-experiments button.abandon-cancel")
    assert confirm.is_hidden()
    assert seeded.api.ok(seeded.api.get(f"/{path}"))["status"] == "running"
    tab.page.click(".view-experiments button.abandon")
    tab.page.fill("#abandon-reason", "the wrong accounts")
    with tab.page.expect_response(lambda r: r.url.endswith("/stop")) as seen:
        tab.page.click(".view-experiments button.abandon-confirm")
    assert seen.value.request.post_data_json == {"abandon": True, "reason": "the wrong accounts"}
    tab.page.wait_for_selector(
        ".view-experiments[data-status=abandoned]", timeout=HANG_SECONDS * 1000
    )
    after = seeded.api.ok(seeded.api.get(f"/{path}"))
    assert (after["status"], after["stop_reason"]) == ("abandoned", "the wrong accounts")
    _assert_detail(tab, after)
    said = _verdicts(tab)["conclusive"]["text"]
    assert "Not conclusive: it was abandoned" in said
    stopped = _text(tab.page.inner_text(".view-experiments .card.stopping"))
    assert f"Abandoned {_when(after['stopped_at'])}: the wrong accounts." in stopped


def test_no_experiment_says_how_to_start_one(seeded: Seeded, open_tab: OpenTab) -> None:
    def empty_workspace(cur: Cursor) -> str:
        return ws_repo.create_workspace(cur, seeded.seed.organization_id, "No experiments")

    workspace = seeded.server.store.run(empty_workspace)
    tab = open_tab()
    tab.sign_in(seeded.mint(workspace), view="experiments")
    assert tab.settled("experiments", "empty") == "empty"
    said = _text(tab.page.inner_text(".view-experiments .state.empty"))
    assert "No experiment yet" in said
    assert "POST /api/public/v1/experiments" in said
    assert "experiment_id" in said


def test_a_key_without_analytics_read_is_told_which_scope(
    seeded: Seeded, open_tab: OpenTab
) -> None:
    tab = open_tab()
    tab.sign_in(seeded.mint(scopes=["posts:read"]), view="experiments")
    assert tab.settled("experiments", "error") == "error"
    error = tab.page.locator(".view-experiments .state.error")
    assert error.get_attribute("data-status") == "403"
    assert error.get_attribute("data-scope") == "analytics:read"
    assert error.locator("button").count() == 0


def test_the_view_at_a_phones_width(
    seeded: Seeded, measured: Measured, open_tab: OpenTab, screenshots: Path
) -> None:
    tab = open_tab(width=390)
    tab.sign_in(seeded.seed.key, view="experiments")
    tab.settled("experiments")
    assert tab.page.evaluate("document.documentElement.scrollWidth") <= 390
    tab.page.screenshot(path=str(screenshots / "experiments-list-390.png"), full_page=True)
    tab.open(f"experiments/{measured.accounts['id']}")
    tab.page.wait_for_selector(
        f'.view-experiments[data-experiment="{measured.accounts["id"]}"][data-state=ready]',
        timeout=HANG_SECONDS * 1000,
    )
    # The chart is drawn at the phone's width, its point still inside its bar.
    detail = seeded.api.ok(seeded.api.get(f"/experiments/{measured.accounts['id']}"))
    _assert_chart_drawn(tab, detail)
    width = float(tab.page.get_attribute(".interval-chart", "width") or "nan")
    assert width <= 390
    assert tab.page.evaluate("document.documentElement.scrollWidth") <= 390
    tab.page.screenshot(path=str(screenshots / "experiments-390.png"), full_page=True)
