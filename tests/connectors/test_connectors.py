"""Each connector over HTTP against the running simulator: paging, batches, growth, failures."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from connectors.base import AuthExpiredError, EngagementSnapshot, RateLimitedError
from connectors.http import HttpConnector
from connectors.instagram.reader import InstagramConnector
from connectors.registry import CREATOR_SEARCH, SUPPORTED, build_connector
from simulator.world import Post, World
from tests.connectors.conftest import SEED, T0, ConnectorFactory, SimServer, Sleeps, own_account

BATCH = {
    "youtube": 50,
    "x": 100,
    "linkedin": 20,
    "tiktok": 20,
    "bluesky": 25,
    "facebook": 50,
    "threads": 1,  # per-thread insights: the API has no batch
    "pinterest": 1,  # per-pin metrics
}
COUNTERS = ("impressions", "reach", "views", "likes", "comments", "shares", "saves", "clicks")


def own_posts(platform: str) -> list[Post]:
    """The own account's visible posts at T0, from the world itself."""
    world = World(SEED)
    account = world.account(platform, own_account(platform).external_id)
    assert account is not None
    return world.posts(account, T0)


def truth(platform: str) -> list[str]:
    """The own account's visible post ids at T0, from the world itself."""
    return [p.external_id for p in own_posts(platform)]


def total(snapshots: list[EngagementSnapshot]) -> int:
    return sum(getattr(s, name) or 0 for s in snapshots for name in COUNTERS)


@pytest.mark.parametrize("platform", SUPPORTED)
def test_paging_returns_every_post_exactly_once(platform: str, connect: ConnectorFactory) -> None:
    connector = connect(platform)
    account = own_account(platform)
    ids = [p.external_id for p in connector.list_posts(account, None)]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(truth(platform))
    assert len(ids) > 5


@pytest.mark.parametrize("platform", SUPPORTED)
def test_since_stops_at_older_posts(platform: str, connect: ConnectorFactory) -> None:
    connector = connect(platform)
    since = T0 - timedelta(days=10)
    posts = list(connector.list_posts(own_account(platform), since))
    everything = list(connector.list_posts(own_account(platform), None))
    assert 0 < len(posts) < len(everything)
    assert {p.external_id for p in posts} == {
        p.external_id for p in everything if p.published_at >= since
    }
    assert all(p.hashtags for p in posts)


@pytest.mark.parametrize("platform", SUPPORTED)
def test_account_snapshot(platform: str, connect: ConnectorFactory) -> None:
    snap = connect(platform).fetch_account(own_account(platform))
    assert snap.followers is not None
    assert snap.followers > 1000
    assert snap.captured_at == T0  # the simulator's Date header, not the local clock


# Instagram's batches depend on which media are reels: see the Instagram tests below.
@pytest.mark.parametrize("platform", [p for p in SUPPORTED if p != "instagram"])
def test_metrics_come_in_platform_batches(platform: str, connect: ConnectorFactory) -> None:
    connector = connect(platform)
    ids = truth(platform)
    before = connector.http.attempts
    snaps = list(connector.fetch_metrics(own_account(platform), ids))
    assert sorted(s.external_id for s in snaps) == sorted(ids)
    assert connector.http.attempts - before == math.ceil(len(ids) / BATCH[platform])
    assert connector.take_errors() == []


@pytest.mark.parametrize("platform", SUPPORTED)
def test_counters_grow_between_clock_advances(
    platform: str, connect: ConnectorFactory, sim: SimServer
) -> None:
    connector = connect(platform)
    account = own_account(platform)
    ids = truth(platform)[:10]
    first = {s.external_id: s for s in connector.fetch_metrics(account, ids)}
    sim.advance(6 * 3600)
    second = {s.external_id: s for s in connector.fetch_metrics(account, ids)}
    assert second.keys() == first.keys()
    for post_id, later in second.items():
        for name in COUNTERS:
            a, b = getattr(first[post_id], name), getattr(later, name)
            assert (a is None) == (b is None)
            assert a is None or b >= a, (post_id, name, a, b)
    assert total(list(second.values())) > total(list(first.values()))
    assert all(s.captured_at == T0 + timedelta(hours=6) for s in second.values())


@pytest.mark.parametrize("platform", ["youtube", "linkedin", "tiktok", "bluesky"])
def test_429_is_retried_after_exactly_retry_after(
    platform: str, connect: ConnectorFactory, sim: SimServer, sleeps: Sleeps
) -> None:
    sim.fault(platform, "429", count=1, retry_after=3)
    snap = connect(platform).fetch_account(own_account(platform))
    assert snap.followers
    assert sleeps.delays == [3.0]


def test_x_429_waits_until_x_rate_limit_reset(
    connect: ConnectorFactory, sim: SimServer, sleeps: Sleeps
) -> None:
    sim.fault("x", "429", count=1, retry_after=4)
    # The reset is an epoch second on the server's clock (pinned to T0): read it on the same.
    connector = connect("x", clock=lambda: T0)
    assert connector.fetch_account(own_account("x")).followers
    assert sleeps.delays == [4.0]


def test_instagram_rate_limit_waits_for_the_usage_header(
    connect: ConnectorFactory, sim: SimServer, sleeps: Sleeps
) -> None:
    # Graph code 4 with estimated_time_to_regain_access in minutes: 1 minute.
    sim.fault("instagram", "429", count=1, retry_after=30)
    assert connect("instagram").fetch_account(own_account("instagram")).followers
    assert sleeps.delays == [60.0]


def test_retry_after_beyond_the_limit_raises(connect: ConnectorFactory, sim: SimServer) -> None:
    sim.fault("youtube", "429", count=1, retry_after=900)
    with pytest.raises(RateLimitedError) as caught:
        connect("youtube", max_retry_after=60).fetch_account(own_account("youtube"))
    assert caught.value.retry_after == 900.0


@pytest.mark.parametrize("platform", SUPPORTED)
@pytest.mark.parametrize("kind", ["500", "503"])
def test_server_errors_twice_then_success(
    platform: str, kind: str, connect: ConnectorFactory, sim: SimServer, sleeps: Sleeps
) -> None:
    sim.fault(platform, kind, count=2)
    connector = connect(platform)
    assert connector.fetch_account(own_account(platform)).followers
    assert sleeps.delays == [0.5, 1.0]  # full jitter, drawn at its ceiling here
    calls = 2 if platform == "linkedin" else 1  # organization, then its follower count
    assert connector.http.attempts == 2 + calls


@pytest.mark.parametrize("platform", SUPPORTED)
def test_expired_token_is_auth_expired(
    platform: str, connect: ConnectorFactory, sim: SimServer, sleeps: Sleeps
) -> None:
    sim.fault(platform, "expired_token", count=1)
    with pytest.raises(AuthExpiredError):
        connect(platform).fetch_account(own_account(platform))
    assert sleeps.delays == []  # never retried


def test_tiktok_token_of_nobody_is_auth_expired(sim: SimServer) -> None:
    connector = build_connector("tiktok", base_url=f"{sim.root}/tiktok", token="act.somebody-else")
    account = own_account("tiktok")
    stranger = type(account)("tiktok", account.external_id, account.handle)
    with pytest.raises(AuthExpiredError):
        connector.fetch_account(stranger)


def test_one_instagram_metric_failing_keeps_the_others(
    connect: ConnectorFactory, sim: SimServer
) -> None:
    connector = connect("instagram")
    assert isinstance(connector, InstagramConnector)
    account = own_account("instagram")
    image = next(p for p in own_posts("instagram") if p.media_type != "video")
    sim.fault("instagram", "metric_error", metric="shares", count=1)
    [snap] = connector.fetch_metrics(account, [image.external_id])
    counters = image.counters(T0)
    assert snap.shares is None
    assert (snap.impressions, snap.reach, snap.likes, snap.saves) == (
        counters.impressions,
        counters.reach,
        counters.likes,
        counters.saves,
    )
    [error] = connector.take_errors()
    assert error["code"] == "metric_unavailable:shares"
    # Reels do not report impressions at all: the rest still arrives.
    reel = next(p for p in own_posts("instagram") if p.media_type == "video")
    [snap] = connector.fetch_metrics(account, [reel.external_id])
    assert snap.impressions is None
    assert snap.likes == reel.counters(T0).likes
    connector.take_errors()


def test_instagram_reels_listed_first_are_asked_for_views(
    connect: ConnectorFactory, sim: SimServer
) -> None:
    connector = connect("instagram")
    account = own_account("instagram")
    listed = list(connector.list_posts(account, None))
    reel = next(p for p in own_posts("instagram") if p.media_type == "video")
    assert reel.external_id in {p.external_id for p in listed}

    [snap] = connector.fetch_metrics(account, [reel.external_id])

    # As Graph documents: views instead of impressions, and nothing refused on the way.
    assert snap.views == reel.counters(T0).impressions
    assert snap.impressions is None
    assert snap.likes == reel.counters(T0).likes
    assert connector.take_errors() == []


def test_instagram_insights_come_50_media_a_call_reels_apart(
    connect: ConnectorFactory, sim: SimServer
) -> None:
    connector = connect("instagram")
    account = own_account("instagram")
    posts = {p.external_id: p for p in own_posts("instagram")}
    listed = [p.external_id for p in connector.list_posts(account, None)]
    reels = [i for i in listed if posts[i].media_type == "video"]
    assert len(reels) >= 2
    assert len(listed) - len(reels) >= 2

    before = connector.http.attempts
    snaps = {s.external_id: s for s in connector.fetch_metrics(account, listed)}

    # One multi-id call per 50 media of each kind, instead of one call per media.
    calls = math.ceil(len(reels) / 50) + math.ceil((len(listed) - len(reels)) / 50)
    assert connector.http.attempts - before == calls
    assert sorted(snaps) == sorted(listed)
    for media_id, snap in snaps.items():
        counters = posts[media_id].counters(T0)
        assert (snap.likes, snap.comments, snap.shares, snap.saves, snap.reach) == (
            counters.likes,
            counters.comments,
            counters.shares,
            counters.saves,
            counters.reach,
        )
        if media_id in reels:
            assert (snap.impressions, snap.views) == (None, counters.impressions)
        else:
            assert (snap.impressions, snap.views) == (counters.impressions, None)
        assert snap.captured_at == T0
    assert connector.take_errors() == []


def test_instagram_batch_refused_then_each_media_alone(
    connect: ConnectorFactory, sim: SimServer
) -> None:
    """Graph fails a multi-id call whole (a gone media, a refused metric): each is asked alone."""
    connector = connect("instagram")
    account = own_account("instagram")
    images = [p for p in own_posts("instagram") if p.media_type != "video"][:4]
    ids = [p.external_id for p in images]
    sim.fault("instagram", "deleted", post_id=ids[1])
    sim.fault("instagram", "metric_error", metric="shares", count=1)

    before = connector.http.attempts
    snaps = {s.external_id: s for s in connector.fetch_metrics(account, ids)}

    assert sorted(snaps) == sorted(ids[:1] + ids[2:])
    for post in images[:1] + images[2:]:
        assert snaps[post.external_id].likes == post.counters(T0).likes
    # The one media asked alone while the fault was due went without shares; not the others.
    assert [s.shares is None for s in snaps.values()].count(True) == 1
    codes = sorted(e["code"] for e in connector.take_errors())
    assert codes == ["metric_unavailable:shares", "not_found"]
    # The refused batch, each media alone, and the refused one again without shares.
    assert connector.http.attempts - before == 1 + len(ids) + 1


@pytest.mark.parametrize("platform", SUPPORTED)
def test_deleted_post_is_omitted_with_an_error_entry(
    platform: str, connect: ConnectorFactory, sim: SimServer
) -> None:
    connector = connect(platform)
    ids = truth(platform)[:5]
    sim.fault(platform, "deleted", post_id=ids[1])
    snaps = list(connector.fetch_metrics(own_account(platform), ids))
    assert sorted(s.external_id for s in snaps) == sorted(ids[:1] + ids[2:])
    errors = [e for e in connector.take_errors() if e["code"] == "not_found"]
    assert [e["external_id"] for e in errors] == [ids[1]]
    assert ids[1] not in {p.external_id for p in connector.list_posts(own_account(platform), None)}


def test_counter_drop_is_injected_once(connect: ConnectorFactory, sim: SimServer) -> None:
    connector = connect("x")
    ids = truth("x")[:3]
    honest = {s.external_id: s.impressions for s in connector.fetch_metrics(own_account("x"), ids)}
    sim.fault("x", "counter_drop", post_id=ids[0], factor=0.5)
    dropped = {s.external_id: s.impressions for s in connector.fetch_metrics(own_account("x"), ids)}
    again = {s.external_id: s.impressions for s in connector.fetch_metrics(own_account("x"), ids)}
    first = honest[ids[0]]
    assert first is not None
    assert dropped[ids[0]] == int(first * 0.5)
    assert int(first * 0.5) < first
    assert dropped[ids[1]] == honest[ids[1]]
    assert again == honest


@pytest.mark.parametrize("platform", CREATOR_SEARCH)
def test_search_creators_then_read_one(platform: str, connect: ConnectorFactory) -> None:
    # TikTok's research window is dated by the client's clock: give it the server's.
    connector = connect(platform, clock=lambda: T0)
    found = list(connector.search_creators("fitness", 5))
    assert 1 <= len(found) <= 5
    assert len({f.external_id for f in found}) == len(found)
    assert all(f.kind == "creator" for f in found)
    snap = connector.fetch_account(found[0])
    assert snap.followers is not None
    posts = list(connector.list_posts(found[0], T0 - timedelta(days=7)))
    if posts:
        metrics = list(connector.fetch_metrics(found[0], [p.external_id for p in posts]))
        assert len(metrics) == len(posts)


def test_unknown_platform_is_refused() -> None:
    with pytest.raises(ValueError, match="supported"):
        build_connector("myspace", base_url="http://127.0.0.1:1")


def test_connectors_share_the_http_layer(connect: ConnectorFactory) -> None:
    assert all(isinstance(connect(p), HttpConnector) for p in SUPPORTED)


def test_at_parameter_reads_the_world_at_another_time(sim: SimServer) -> None:
    account = own_account("bluesky")
    url = f"{sim.root}/bluesky/xrpc/app.bsky.actor.getProfile"
    early = sim.admin.get(url, params={"actor": account.handle, "at": "2025-01-02T00:00:00Z"})
    late = sim.admin.get(url, params={"actor": account.handle})  # the pinned clock, T0
    assert early.headers["date"] == "Thu, 02 Jan 2025 00:00:00 GMT"
    assert early.json()["followersCount"] < late.json()["followersCount"]


@pytest.mark.parametrize("platform", SUPPORTED)
def test_a_connector_as_of_a_past_moment_reads_the_platform_as_it_was(
    platform: str, connect: ConnectorFactory
) -> None:
    """How a new store captures the simulator's past (`murmur pipeline run --history`)."""
    then = T0 - timedelta(days=3, hours=5)
    connector = connect(platform, as_of=then)
    account = own_account(platform)
    world = World(SEED)
    own = world.account(platform, account.external_id)
    assert own is not None

    connector.fetch_account(account)
    posts = list(connector.list_posts(account, then - timedelta(days=14)))
    snaps = {
        s.external_id: s for s in connector.fetch_metrics(account, [p.external_id for p in posts])
    }

    assert connector.server_time == then  # the capture is stamped with the past moment
    expected = [p for p in world.posts(own, then) if p.published_at >= then - timedelta(days=14)]
    assert {p.external_id for p in posts} == {p.external_id for p in expected}
    assert all(p.published_at <= then for p in posts)
    for post in expected:
        assert snaps[post.external_id].likes == post.counters(then).likes


def test_pinterest_discovers_no_creators(connect: ConnectorFactory) -> None:
    # Its API reads the token's own account only: nothing to search, and no call made.
    connector = connect("pinterest")
    assert list(connector.search_creators("fitness", 5)) == []
    assert connector.http.attempts == 0
