"""The Breakouts view and the overview's badge in a real browser, over a store of their own.

The store is made as a user's would be: the test workspace (one connected account per
platform), then hourly readings of own posts written to the lake by the ingest writer, as a
capture writes them (``warehouse.ingest.write_batch``), then the pipeline's asset
``analytics/mart_breakouts`` materialized on that store, as ``murmur pipeline run`` does.
The readings are made so that the detector finds exactly four breakouts:

- an Instagram post growing 20 engagements an hour, then 200 and 220 in its last two hours:
  judged against its own last windows, started an hour ago, ongoing;
- a new Instagram post of the connected account, 300 in its second hour: judged against its
  account's posts at the same age, ongoing;
- a new Instagram post of an account that is not connected (no handle), 300 in its second
  hour: judged against the platform's posts at the same age, ongoing;
- an X post of five days ago, 250 in its seventh hour: its own windows, ended.

Calm posts beside them (20 an hour, every hour) are what the bands are calibrated on.
Every figure shown is read back against the API's answer for the same query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit
from zoneinfo import ZoneInfo

import pytest
from dagster import materialize
from playwright.sync_api import Response

from connectors.base import EngagementSnapshot, PostRecord
from domain.workspaces.keys import ALL_SCOPES, mint_key
from domain.workspaces.service import bootstrap_test_workspace
from pipelines.analytics.assets import mart_breakouts
from pipelines.definitions import resources
from tests.dashboard.conftest import SEED_TIMEOUT, Seed, Seeded, Tab
from tests.servers import StoreSettings
from tests.support import HANG_SECONDS, Api, start_server
from warehouse import workspaces as ws_repo
from warehouse.ingest import IngestBatch, write_batch
from warehouse.rows import Cursor

# One worker builds this module's store and runs its tests (not the simulator's store).
pytestmark = [pytest.mark.timeout(SEED_TIMEOUT), pytest.mark.xdist_group(__name__)]

OpenTab = Callable[..., Tab]
DASH, TIMES = "\u2013", "\u00d7"  # en dash of a band, multiplication sign of a multiple
CALM = 20  # engagements an hour of every post but in its surges
UNCONNECTED = "ig-account-not-connected"
# Platform-shaped ids: long enough to be shortened on the page.
IG_SURGE = "17912345678900001"
IG_NEW = "17912345678900002"
IG_STRANGER = "17912345678900003"
X_SURGE = "1800000000000000042"


@dataclass(frozen=True)
class Planted:
    """One own post's readings: published ``published`` hours before the last capture, read
    every hour ``hours`` times; ``surges`` the hours (1-based) gaining more than CALM."""

    platform: str
    external_id: str
    account: str  # "own" (the connected account) or another account's external id
    published: float
    hours: int
    surges: dict[int, int]


def _plan() -> list[Planted]:
    # enough calm posts that a second window's same-age band has its 20 errors (a first
    # window is not judged, nor calibrated on)
    calm = [Planted("instagram", f"1791000000000{i:04d}", "own", 12 + i, 10, {}) for i in range(22)]
    calm += [Planted("x", f"18000000000000000{i:02d}", "own", 120 + i, 10, {}) for i in range(3)]
    return [
        *calm,
        Planted("instagram", IG_SURGE, "own", 10, 10, {9: 200, 10: 220}),
        Planted("instagram", IG_NEW, "own", 2, 2, {2: 300}),
        Planted("instagram", IG_STRANGER, UNCONNECTED, 2, 2, {2: 300}),
        Planted("x", X_SURGE, "own", 125, 10, {7: 250}),
    ]


@dataclass
class Store:
    seeded: Seeded
    last_capture: datetime


def _write_readings(seeded: Seeded, accounts: dict[str, str], last: datetime) -> None:
    """Each platform's readings as one capture batch of the ingest writer."""
    by_platform: dict[str, IngestBatch] = {}
    for p in _plan():
        batch = by_platform.setdefault(
            p.platform,
            IngestBatch(
                id=f"test:breakouts-view:{p.platform}",
                workspace_id=seeded.seed.workspace_id,
                source=f"connector:{p.platform}",
                partition_key=None,
                started_at=last,
            ),
        )
        published = last - timedelta(hours=p.published)
        author = accounts[p.platform] if p.account == "own" else p.account
        batch.posts.append(
            (
                PostRecord(p.platform, p.external_id, author, f"post {p.external_id}", published),
                "own",
                None,
            )
        )
        total = 0
        for hour in range(1, p.hours + 1):
            total += p.surges.get(hour, CALM)
            batch.snapshots.append(
                EngagementSnapshot(
                    p.platform, p.external_id, published + timedelta(hours=hour), likes=total
                )
            )
    for batch in by_platform.values():
        write_batch(seeded.server.lake, batch)


@pytest.fixture(scope="module")
def planted(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[Store]:
    settings = store_settings(tmp_path_factory.mktemp("breakouts-view") / "data")
    server = start_server(settings)

    def setup(cur: Cursor) -> tuple[str, str, str, dict[str, str]]:
        ws_id = bootstrap_test_workspace(cur)
        ws = ws_repo.get_workspace(cur, ws_id)
        assert ws is not None
        key = mint_key(
            cur, organization_id=ws.organization_id, workspace_ids=[ws_id], scopes=list(ALL_SCOPES)
        ).key
        accounts = {a.platform: a.external_id for a in ws_repo.list_accounts(cur, ws_id)}
        return ws_id, ws.organization_id, key, accounts

    ws_id, org_id, key, accounts = server.store.run(setup)
    api = Api(server.base_url, key)
    seeded = Seeded(Seed(settings.data_dir, ws_id, org_id, key, "", ""), server, api)
    try:
        # The last capture: this hour's start, so every reading is in the past.
        last = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        _write_readings(seeded, accounts, last)
        # The pipeline's asset, as `murmur pipeline run` materializes it, on this store.
        done = materialize(
            [mart_breakouts], resources=resources(settings), tags={"murmur/now": last.isoformat()}
        )
        assert done.success
        yield Store(seeded, last)
    finally:
        api.close()
        server.stop()


@pytest.fixture(scope="module")
def seeded(planted: Store) -> Seeded:
    """This module's store in place of the simulator's: conftest's ``open_tab`` serves its
    tabs (loopback only, no dialog, no uncaught error) from ``seeded``."""
    return planted.seeded


def _breakouts_call(response: Response) -> bool:
    return "/api/public/v1/analytics/breakouts" in response.url


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


def _text(value: str) -> str:
    """Text as a person reads it: Intl's narrow and no-break spaces as spaces."""
    return " ".join(value.replace("\u202f", " ").replace("\xa0", " ").split())


def _one(n: float) -> str:
    """A figure as the page shows engagements (en-US, at most one decimal)."""
    return f"{round(n, 1):,.1f}".removesuffix(".0")


def _when(iso: str, zone: str) -> str:
    """An instant as the page's dateTime shows it in en-US: "Jun 15, 2025, 7:05 AM"."""
    at = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(ZoneInfo(zone))
    hour = at.hour % 12 or 12
    return f"{at:%b} {at.day}, {at.year}, {hour}:{at:%M} {'AM' if at.hour < 12 else 'PM'}"


def _rows(tab: Tab) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = tab.page.eval_on_selector_all(
        ".view-breakouts table.breakouts > tbody > tr[data-breakout]",
        "rows => rows.map(r => ({id: r.dataset.breakout, ongoing: r.dataset.ongoing,"
        " cells: [...r.cells].map(c => c.innerText)}))",
    )
    return found


METHODS = {
    "account_same_age": "its account's posts at the same age",
    "platform_same_age": "the platform's posts at the same age",
}


def test_the_view_shows_the_apis_breakouts_newest_first_with_their_evidence(
    planted: Store, open_tab: OpenTab, screenshots: Path
) -> None:
    seeded = planted.seeded
    zone = "Asia/Tokyo"  # not UTC: times are shown in the dashboard's zone
    tab = open_tab(timezone_id=zone)
    tab.sign_in(seeded.seed.key)
    # the view's call (pages of 50), not the overview badge's (limit=100)
    with tab.page.expect_response(lambda r: _breakouts_call(r) and "limit=50" in r.url) as seen:
        tab.open("breakouts")
    tab.settled("breakouts")
    asked = _query(seen.value.url)
    # The default period: the last 7 days, up to now.
    since = datetime.fromisoformat(asked["since"].replace("Z", "+00:00"))
    assert abs(datetime.now(UTC) - timedelta(days=7) - since) < timedelta(minutes=10)
    answer = seeded.api.ok(seeded.api.get("/analytics/breakouts", params=asked))
    served = answer["items"]
    # The two new posts' breakouts started at the last capture (then by id), then the others.
    assert {b["external_id"] for b in served[:2]} == {IG_NEW, IG_STRANGER}
    assert [b["external_id"] for b in served[2:]] == [IG_SURGE, X_SURGE]
    assert [b["evidence"]["method"] for b in served][2:] == ["own", "own"]

    rows = _rows(tab)
    assert [r["id"] for r in rows] == [b["id"] for b in served]  # newest first, as served
    for row, b in zip(rows, served, strict=True):
        post, started, versus, multiple, method, status, _ = (_text(c) for c in row["cells"])
        assert post.startswith(f"{b['external_id'][:6]}…{b['external_id'][-6:]}")
        assert (
            f"@{b['handle']} on {b['platform']}"
            if b["handle"]
            else f"{b['platform']} · account {b['account_external_id']}"
        ) in post
        assert started == _when(b["started_at"], zone)
        band = f"({_one(b['band']['low'])}{DASH}{_one(b['band']['high'])})"
        assert versus == f"{_one(b['observed'])} vs {_one(b['expected'])} expected {band}"
        assert multiple == f"{round(b['multiple'], 2):g}{TIMES}"
        e = b["evidence"]
        words = METHODS.get(e["method"], f"its own last {e['fit_windows']} windows")
        assert method == words
        assert status == ("ongoing" if b["ongoing"] else "ended")
    assert [r["ongoing"] for r in rows] == ["true", "true", "true", "false"]
    stranger = next(b for b in served if b["external_id"] == IG_STRANGER)
    assert stranger["handle"] is None
    assert stranger["evidence"]["method"] == "platform_same_age"
    # The whole id in the title of its short form.
    titles = tab.page.eval_on_selector_all(
        ".view-breakouts .post-id", "els => els.map(e => e.title)"
    )
    assert titles == [b["external_id"] for b in served]

    # An accessible table: a caption, column headers, each row headed by its post.
    table = tab.page.locator(".view-breakouts table.breakouts")
    caption = table.locator(":scope > caption").inner_text()
    assert "newest first" in caption
    assert f"(times in {zone})" in caption  # the zone, said once for the table's times
    assert table.locator(":scope > thead th[scope=col]").count() == 7
    headed = table.locator(":scope > tbody > tr[data-breakout] > th[scope=row]")
    assert headed.count() == len(served)

    # A row opens the windows it was judged on.
    surge = next(b for b in served if b["external_id"] == IG_SURGE)
    button = tab.page.locator(f'tr[data-breakout="{surge["id"]}"] button')
    detail = tab.page.locator(f'tr[data-evidence-of="{surge["id"]}"]')
    assert button.get_attribute("aria-expanded") == "false"
    assert detail.is_hidden()
    button.click()
    assert button.get_attribute("aria-expanded") == "true"
    assert button.get_attribute("aria-controls") == detail.get_attribute("id")
    assert detail.is_visible()
    windows = detail.locator("table.evidence tbody tr")
    assert windows.count() == len(surge["evidence"]["windows"]) == 2
    assert detail.locator("table.evidence caption").count() == 1
    for i, w in enumerate(surge["evidence"]["windows"]):
        cells = [_text(c) for c in windows.nth(i).locator("th, td").all_inner_texts()]
        assert cells[3] == _one(w["observed"])
        assert cells[4] == _one(w["expected"])
        assert cells[5] == f"{_one(w['band']['low'])}{DASH}{_one(w['band']['high'])}"
    assert windows.first.get_attribute("data-end") == surge["started_at"]
    said = detail.inner_text()
    assert f"{surge['evidence']['calibration_errors']:,} prediction errors" in said

    # Where from: the answer's provenance, as the other analytics views show it.
    where = tab.page.locator(".view-breakouts details.where-from")
    assert where.get_attribute("data-snapshot") == str(answer["provenance"]["snapshot_id"] or "")
    assert where.get_attribute("data-figures") == "observed,expected,band"
    assert tab.page.evaluate("document.documentElement.scrollWidth") <= 1280
    tab.page.screenshot(path=str(screenshots / "breakouts-1280.png"), full_page=True)
    print(f"dashboard screenshots: {screenshots}")


def test_filters_and_more_follow_the_apis_pages(planted: Store, open_tab: OpenTab) -> None:
    seeded = planted.seeded
    everything = seeded.api.list_all(
        "/analytics/breakouts", since=(datetime.now(UTC) - timedelta(days=7)).isoformat()
    )
    tab = open_tab()
    tab.sign_in(seeded.seed.key)
    # Pages of two (the fragment sets the page size): "More" loads the next cursor.
    tab.open("breakouts?since=7d&limit=2")
    tab.settled("breakouts")
    assert len(_rows(tab)) == 2
    more = tab.page.locator(".view-breakouts .breakouts-more button")
    with tab.page.expect_response(lambda r: _breakouts_call(r) and "cursor=" in r.url):
        more.click()
    tab.page.wait_for_function(
        "n => document.querySelectorAll('.view-breakouts tr[data-breakout]').length === n", arg=4
    )
    assert [r["id"] for r in _rows(tab)] == [b["id"] for b in everything]
    assert more.count() == 0  # the last page: no more

    # The platform filter: X's breakout alone, ended.
    with tab.page.expect_response(lambda r: _breakouts_call(r) and "platform=x" in r.url):
        tab.page.select_option("#breakout-platform", "x")
    tab.settled("breakouts")
    rows = _rows(tab)
    assert [r["id"] for r in rows] == [b["id"] for b in everything if b["platform"] == "x"]
    assert _text(rows[0]["cells"][5]) == "ended"
    assert "platform=x" in tab.page.url  # the filters stay in the address

    # The last 24 hours: X's breakout of five days ago is not in them; an empty state says
    # what a breakout is, and that none was found.
    with tab.page.expect_response(_breakouts_call):
        tab.page.select_option("#breakout-since", "24h")
    assert tab.settled("breakouts", "empty") == "empty"
    said = _text(tab.page.inner_text(".view-breakouts .state.empty"))
    assert "A breakout is one of your own posts growing faster than the band" in said
    assert "none started in the last 24 hours on x" in said
    with tab.page.expect_response(_breakouts_call):
        tab.page.select_option("#breakout-platform", "")
    tab.settled("breakouts")
    # still pages of two: the three ongoing ones, two and then one
    ongoing = [b["id"] for b in everything if b["ongoing"]]
    assert [r["id"] for r in _rows(tab)] == ongoing[:2]
    more.click()
    tab.page.wait_for_function(
        "n => document.querySelectorAll('.view-breakouts tr[data-breakout]').length === n", arg=3
    )
    assert [r["id"] for r in _rows(tab)] == ongoing


def test_the_overview_badge_counts_the_ongoing_breakouts_of_the_last_24_hours(
    planted: Store, open_tab: OpenTab, screenshots: Path
) -> None:
    seeded = planted.seeded
    tab = open_tab()
    with tab.page.expect_response(_breakouts_call) as seen:
        tab.sign_in(seeded.seed.key)
    asked = _query(seen.value.url)
    assert asked["limit"] == "100"
    since = datetime.fromisoformat(asked["since"].replace("Z", "+00:00"))
    assert abs(datetime.now(UTC) - timedelta(hours=24) - since) < timedelta(minutes=10)
    answer = seeded.api.ok(seeded.api.get("/analytics/breakouts", params=asked))
    ongoing = sum(1 for b in answer["items"] if b["ongoing"])
    assert ongoing == 3
    line = tab.page.locator(".view-overview .breakout-badge-line")
    tab.page.wait_for_selector(
        ".view-overview .breakout-badge-line[data-state=ready]", timeout=HANG_SECONDS * 1000
    )
    assert line.get_attribute("data-count") == str(ongoing)
    badge = line.locator("a.breakout-badge")
    assert badge.is_visible()
    assert _text(badge.inner_text()) == "3 breakouts ongoing, started in the last 24 hours →"
    tab.page.screenshot(path=str(screenshots / "overview-badge-1280.png"))
    badge.click()
    tab.settled("breakouts")
    assert tab.page.input_value("#breakout-since") == "24h"
    assert len(_rows(tab)) == ongoing


def test_no_badge_at_zero_nor_on_a_refusal_and_a_missing_scope_is_named(
    planted: Store, open_tab: OpenTab
) -> None:
    seeded = planted.seeded

    def empty_workspace(cur: Cursor) -> str:
        return ws_repo.create_workspace(cur, seeded.seed.organization_id, "No breakouts")

    workspace = seeded.server.store.run(empty_workspace)
    tab = open_tab()
    tab.sign_in(seeded.mint(workspace))
    tab.page.wait_for_selector(
        ".view-overview .breakout-badge-line[data-state=ready]",
        state="attached",
        timeout=HANG_SECONDS * 1000,
    )
    line = tab.page.locator(".view-overview .breakout-badge-line")
    assert line.get_attribute("data-count") == "0"
    assert line.is_hidden()

    # A key that may not read analytics: no badge (no figure rather than a wrong one), and the
    # view names the scope, without a Retry (trying again would not grant it).
    refused = open_tab()
    refused.sign_in(seeded.mint(scopes=["posts:read"]))
    refused.page.wait_for_selector(
        ".view-overview .breakout-badge-line[data-state=error]",
        state="attached",
        timeout=HANG_SECONDS * 1000,
    )
    assert refused.page.locator(".view-overview .breakout-badge-line").is_hidden()
    refused.open("breakouts")
    assert refused.settled("breakouts", "error") == "error"
    error = refused.page.locator(".view-breakouts .state.error")
    assert error.get_attribute("data-status") == "403"
    assert error.get_attribute("data-scope") == "analytics:read"
    assert "lacks the analytics:read scope" in error.inner_text()
    assert error.locator("button").count() == 0


def test_the_view_at_a_phones_width(planted: Store, open_tab: OpenTab, screenshots: Path) -> None:
    tab = open_tab(width=390)
    tab.sign_in(planted.seeded.seed.key, view="breakouts")
    tab.settled("breakouts")
    first = tab.page.locator(".view-breakouts tr[data-breakout] button").first
    first.click()
    assert tab.page.locator(".view-breakouts tr.breakout-evidence:not([hidden])").count() == 1
    # Closed evidence stays closed though rows stack into cards (display: block).
    hidden = tab.page.locator(".view-breakouts tr.breakout-evidence[hidden]")
    assert all(not hidden.nth(i).is_visible() for i in range(hidden.count()))
    assert tab.page.evaluate("document.documentElement.scrollWidth") <= 390
    tab.page.screenshot(path=str(screenshots / "breakouts-390.png"), full_page=True)
