"""`as_of` on every analytics read: a past lake snapshot answers as it did, after later runs.

One store of the module's own: X captures of our account, a tracked competitor and three
creators, written as the connector writes them; one pipeline run, every read noted with the
lake's snapshot then; new captures (a post takes off) and a second run. Then each read again
now (the new figures), by the snapshot's id and by an instant between the runs (the first
figures), and what `as_of` refuses: malformed, unknown, in the future, older than the
retention (a second server on the same store, its retention set to 0 in its environment).
Either store profile (`--store-profile=scale`: the catalog in PostgreSQL, the files on S3).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from connectors.base import AccountSnapshot, EngagementSnapshot, Kind, PostRecord
from core.settings import Settings
from pipelines.analytics import maintenance
from pipelines.run import run_all
from tests.mcp.agent import agent
from tests.servers import StoreSettings
from tests.support import LiveServer, Tenant, assert_error, new_tenant
from tests.support import start_server as serve
from warehouse import store as stores
from warehouse.extensions import connect
from warehouse.ingest import IngestBatch, write_batches

# One worker runs the module (make test: --dist loadgroup): its store is built once.
pytestmark = pytest.mark.xdist_group(__name__)

HOUR = timedelta(hours=1)
NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
STEP = 6 * HOUR  # the captures' cadence: one reading per trend window
START = NOW - 11 * STEP
FIRST_CAPTURES, LATER_CAPTURES = range(10), range(10, 12)
OWN_POSTS = [(f"own-{i}", START - timedelta(days=i % 4, hours=3 * i)) for i in range(8)]
# Own posts whose engagement quadruples from a capture on: before the first run, after it.
TAKES_OFF = {"own-1": 8, "own-2": 10}
# Peers on X: a competitor we track and creators, each with three posts.
PEERS: dict[str, Kind] = {
    "chirply": "competitor",
    "maker_a": "creator",
    "maker_b": "creator",
    "maker_c": "creator",
}


def _captures(tenant: Tenant, post_id: str, steps: range) -> list[IngestBatch]:
    """The X connector's batches at ``steps``: our account, whose first post is the one we
    created through the API, and the peers (``TAKES_OFF``: the posts that trend)."""
    ws = tenant.workspace_id
    batches = []
    for step in steps:
        at = START + step * STEP
        hours = step * STEP / HOUR
        batch = IngestBatch(
            id=f"connector:x:{ws}:{at:%Y-%m-%d-%H:00}",
            workspace_id=ws,
            source="connector:x",
            partition_key=f"{at:%Y-%m-%d-%H:00}",
            started_at=at,
        )
        ours = AccountSnapshot("x", "ext-x", "x_handle", "Our X", int(1000 + 5 * hours), 1, 8, at)
        batch.accounts.append((ours, "own", tenant.accounts["x"]))
        posts: list[tuple[str, datetime, str, Kind, str | None]] = [
            (ext, published, "ext-x", "own", post_id if ext == "own-0" else None)
            for ext, published in OWN_POSTS
        ]
        for k, (handle, kind) in enumerate(PEERS.items()):
            followers = int(5000 * (k + 1) + 20 * hours)
            peer = AccountSnapshot("x", f"id-{handle}", handle, handle, followers, 1, 3, at)
            batch.accounts.append((peer, kind, None))
            posts += [
                (
                    f"{handle}-{j}",
                    START - timedelta(days=j, hours=5 * k),
                    f"id-{handle}",
                    kind,
                    None,
                )
                for j in range(3)
            ]
        for n, (ext, published, account, kind, ours_id) in enumerate(posts):
            text = f"{ext} #launch"
            record = PostRecord("x", ext, account, text, published, hashtags=("launch",))
            batch.posts.append((record, kind, ours_id))
            days = (at - published) / timedelta(days=1)
            takes_off = TAKES_OFF.get(ext)
            boost = 4 if takes_off is not None and step >= takes_off else 1
            base = (10 + 3 * n) * (1 + days) * boost
            batch.snapshots.append(
                EngagementSnapshot(
                    "x",
                    ext,
                    at,
                    impressions=int(40 * base),
                    likes=int(base),
                    comments=int(n + 2 * days),
                    shares=int(days * boost),
                    clicks=int(base / 2),
                )
            )
        batches.append(batch)
    return batches


@dataclass
class World:
    server: LiveServer
    strict: LiveServer  # the same store, its snapshot retention 0 hours
    tenant: Tenant
    post_id: str
    first: dict[str, dict[str, Any]]  # each read's data after the first run
    snapshot: int  # the lake snapshot those reads ran at
    between: datetime  # an instant after the first reads, before the new captures
    later: int  # the lake's snapshot after the second run

    def reads(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """The reads of the module, by name: path and query."""
        return _reads(self.tenant, self.post_id)


def _reads(tenant: Tenant, post_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
    hourly = {
        "from": (NOW - 2 * STEP).isoformat(),
        "to": (NOW + HOUR).isoformat(),
        "granularity": "hour",
        "group_by": "platform",
    }
    return {
        # The default range: with as_of it ends at the snapshot's clock, as it did then.
        "unified": ("/analytics/unified", {}),
        "unified_hourly": ("/analytics/unified", hourly),
        "viral_trends": ("/viral-trends", {}),
        "insights": ("/insights", {}),
        "best_times": ("/insights/best-times", {"account_id": tenant.accounts["x"]}),
        "creators": ("/creators", {}),
        "competitors": ("/competitors", {}),
        "post": (f"/posts/{post_id}/analytics", {}),
    }


def _lake_snapshot(settings: Settings) -> int:
    """The lake's current snapshot, read in a read-only session of the test's own."""
    con = connect()
    try:
        settings.lake.attach(con, read_only=True)
        found = con.execute("SELECT id FROM lake.current_snapshot()").fetchone()
    finally:
        con.close()
    assert found is not None
    return int(found[0])


def _run(settings: Settings) -> None:
    summary = run_all(settings, ingest=False)
    assert summary.success, summary


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[World]:
    settings = store_settings(tmp_path_factory.mktemp("as-of") / "data")
    server = serve(settings)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MURMUR_LAKE_SNAPSHOT_KEEP_HOURS", "0")
        same_store = settings.model_dump(exclude={"lake_snapshot_keep_hours"})
        strict = serve(Settings(**same_store))
    tenant = new_tenant(server)
    try:
        api = tenant.api
        created = api.post("/posts", json={"text": "Launch", "platforms": ["x"], "draft": True})
        post_id = api.ok(created, 201)["post_id"]
        api.ok(api.post("/competitors", json={"platform": "x", "handle": "chirply"}), 201)
        write_batches(server.lake, _captures(tenant, post_id, FIRST_CAPTURES))
        _run(settings)
        snapshot = _lake_snapshot(settings)
        first = {
            name: api.ok(api.get(path, params=query))
            for name, (path, query) in _reads(tenant, post_id).items()
        }
        between = datetime.now(UTC)
        write_batches(server.lake, _captures(tenant, post_id, LATER_CAPTURES))
        _run(settings)
        later = _lake_snapshot(settings)
        assert later > snapshot
        yield World(server, strict, tenant, post_id, first, snapshot, between, later)
    finally:
        tenant.api.close()
        strict.stop()
        server.stop()


def _steady(data: dict[str, Any], query: dict[str, Any]) -> str:
    """``data`` without its clock fields (the freshness; a default range's end), as JSON."""
    found = json.loads(json.dumps(data))
    found["snapshot"].pop("freshness_seconds")
    if "range" in found and "to" not in query:
        found["range"].pop("to")
    return json.dumps(found)


def _figures(data: dict[str, Any]) -> dict[str, Any]:
    """What an answer says of the data, not where it was read or when."""
    return {k: v for k, v in data.items() if k not in {"snapshot", "provenance", "computed_at"}}


def _snapshot_of(data: dict[str, Any]) -> int | None:
    """The answer's own `provenance.snapshot_id`, where it gives one."""
    provenance = data.get("provenance")
    return None if provenance is None else provenance.get("snapshot_id")


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


READS = [  # the names of _reads
    "unified",
    "unified_hourly",
    "viral_trends",
    "insights",
    "best_times",
    "creators",
    "competitors",
    "post",
]


@pytest.mark.parametrize("name", READS)
def test_a_read_as_of_a_snapshot_answers_as_it_did_then(world: World, name: str) -> None:
    path, query = world.reads()[name]
    api = world.tenant.api
    first = world.first[name]
    assert _snapshot_of(first) in (None, world.snapshot)
    now = api.ok(api.get(path, params=query))
    # The second run changed the figures themselves, not only when they were computed.
    assert _figures(now) != _figures(first)
    assert _snapshot_of(now) in (None, world.later)
    for as_of in (world.snapshot, _iso(world.between)):
        then = api.ok(api.get(path, params={**query, "as_of": as_of}))
        assert _steady(then, query) == _steady(first, query), as_of
        assert _snapshot_of(then) in (None, world.snapshot)


def test_current_and_past_reads_never_answer_for_each_other(world: World) -> None:
    """Current, then as of the first snapshot, then current again, twice over: the second
    round is answered from the caches (the marts' reads, the serialized answers, the edge's
    repeats), and each answer is still its own snapshot's."""
    api = world.tenant.api
    reads = world.reads()
    for name in ("unified", "best_times", "competitors"):
        path, query = reads[name]
        current = api.ok(api.get(path, params=query))
        assert _figures(current) != _figures(world.first[name])
        for _ in range(2):
            old = api.ok(api.get(path, params={**query, "as_of": world.snapshot}))
            assert _steady(old, query) == _steady(world.first[name], query), name
            again = api.ok(api.get(path, params=query))
            assert _steady(again, query) == _steady(current, query), name


def test_past_snapshots_stay_attached_a_few_at_a_time(world: World) -> None:
    """Every snapshot from the first reads' to the newest read once: the API's lake session
    keeps the most recently used attached (no more than SNAPSHOTS_ATTACHED), and the first
    again, attached anew, still answers as it did."""
    api = world.tenant.api
    most = stores.SNAPSHOTS_ATTACHED
    snapshots = range(world.snapshot, world.later + 1)
    assert len(snapshots) > most
    for snapshot in snapshots:
        api.ok(api.get("/creators", params={"as_of": snapshot}))
    cur = world.server.store.analytics_cursor()
    try:
        attached = cur.execute(
            "SELECT count(*) FROM duckdb_databases() WHERE database_name LIKE 'lake_at_%'"
        ).fetchone()
    finally:
        cur.close()
    assert attached is not None
    assert 0 < attached[0] <= most
    again = api.ok(api.get("/creators", params={"as_of": world.snapshot}))
    assert _steady(again, {}) == _steady(world.first["creators"], {})


def test_the_analytics_tools_take_as_of(world: World) -> None:
    first = world.first["unified"]
    with agent(world.server, world.tenant.key) as a:
        now = a.ok("get_unified_analytics", {})
        assert _figures(now) != _figures(first)
        for as_of in (world.snapshot, str(world.snapshot), _iso(world.between)):
            then = a.ok("get_unified_analytics", {"as_of": as_of})
            assert _steady(then, {}) == _steady(first, {}), as_of
        competitors = a.ok("list_competitors", {"as_of": world.snapshot})
        assert _steady(competitors, {}) == _steady(world.first["competitors"], {})
        error = a.error("get_insights", {"as_of": "yesterday"}, "VALIDATION_ERROR")
        assert error["details"][0]["field"] == "as_of"


def _refused(server: LiveServer, tenant: Tenant, as_of: str, issue: str) -> str:
    response = tenant.api.http.get(
        server.base_url + "/api/public/v1/viral-trends", params={"as_of": as_of}
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [(d["field"], d["issue"]) for d in error["details"]] == [("as_of", issue)], error
    message: str = error["message"]
    return message


@pytest.mark.parametrize(
    ("as_of", "issue"),
    [
        ("yesterday", "invalid"),
        ("-1", "invalid"),
        ("12.5", "invalid"),
        ("2026-11-25", "invalid"),
        ("2026-11-25T09:00:00", "offset_required"),
    ],
)
def test_a_malformed_as_of_is_refused(world: World, as_of: str, issue: str) -> None:
    message = _refused(world.server, world.tenant, as_of, issue)
    assert "snapshot id" in message or "offset" in message


def test_an_unknown_snapshot_or_a_future_instant_is_refused(world: World) -> None:
    unknown = _refused(world.server, world.tenant, str(world.later + 1000), "unknown_snapshot")
    assert f"the newest is {world.later}" in unknown
    # Snapshot 0, the lake before its first migration: not of the schema this code reads.
    unmigrated = _refused(world.server, world.tenant, "0", "too_old")
    assert "schema was last migrated" in unmigrated
    future = _refused(world.server, world.tenant, _iso(NOW + timedelta(days=1)), "in_future")
    assert "in the future" in future


def test_as_of_older_than_the_retention_is_refused(world: World) -> None:
    # The default retention, 168 hours: an instant a week and a day ago.
    old = _refused(world.server, world.tenant, _iso(NOW - timedelta(days=8)), "too_old")
    assert "168 hours" in old
    assert "oldest `as_of` allowed now is" in old
    # A server whose retention is 0 hours (MURMUR_LAKE_SNAPSHOT_KEEP_HOURS=0): the first
    # snapshot has not been expired (no upkeep ran), yet it is older than the retention.
    for as_of in (str(world.snapshot), _iso(world.between)):
        message = _refused(world.strict, world.tenant, as_of, "too_old")
        assert "0 hours" in message
        assert "oldest `as_of` allowed now is" in message
    # The newest snapshot is always readable: it is the data as it is now.
    api = world.tenant.api
    newest = api.http.get(
        world.strict.base_url + "/api/public/v1/creators", params={"as_of": world.later}
    )
    assert newest.status_code == 200, newest.text
    current = api.ok(api.get("/creators"))
    assert _steady(newest.json()["data"], {}) == _steady(current, {})


def test_the_upkeep_keeps_what_as_of_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MURMUR_LAKE_SNAPSHOT_KEEP_HOURS", "36")
    assert Settings().lake_snapshot_keep_hours == 36
    upkeep = maintenance.LakeUpkeepConfig
    assert maintenance.keep_hours(upkeep()) == 36
    assert maintenance.keep_hours(upkeep(keep_hours=2)) == 2
    monkeypatch.delenv("MURMUR_LAKE_SNAPSHOT_KEEP_HOURS")
    assert "MURMUR_LAKE_SNAPSHOT_KEEP_HOURS" not in os.environ
    assert maintenance.keep_hours(upkeep()) == 168
