"""The simulated world: deterministic, growing, heavy-tailed, in step with `murmur init`."""

from __future__ import annotations

import itertools
import statistics
from datetime import UTC, datetime, timedelta

from domain.workspaces.service import TEST_ACCOUNTS
from simulator.world import N_CREATORS, OWN_ACCOUNTS, PLATFORMS, World, post_number

NOW = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


def test_own_accounts_match_the_test_workspace() -> None:
    for platform in PLATFORMS:
        assert OWN_ACCOUNTS[platform] == TEST_ACCOUNTS[platform]


def test_same_seed_same_world_other_seed_other_world() -> None:
    a, b, c = World(3), World(3), World(4)
    for platform in PLATFORMS:
        own = a.accounts(platform)[0]
        pa = [(p.external_id, p.counters(NOW)) for p in a.posts(own, NOW)]
        pb = [(p.external_id, p.counters(NOW)) for p in b.posts(b.accounts(platform)[0], NOW)]
        pc = [(p.external_id, p.counters(NOW)) for p in c.posts(c.accounts(platform)[0], NOW)]
        assert pa == pb
        assert pa != pc


def test_accounts_per_platform() -> None:
    world = World(1)
    for platform in PLATFORMS:
        kinds = [a.kind for a in world.accounts(platform)]
        assert kinds.count("own") == 1
        assert kinds.count("competitor") == 3
        assert kinds.count("creator") == N_CREATORS
        assert len({a.category for a in world.accounts(platform) if a.kind == "creator"}) >= 5


def test_ids_round_trip_and_posts_are_found_by_id() -> None:
    world = World(2)
    for platform in PLATFORMS:
        for account in world.accounts(platform)[:5]:
            for post in world.posts(account, NOW)[:5]:
                assert post_number(platform, post.external_id) == post.number
                assert world.post(platform, post.external_id) == post


def test_counters_never_go_down_and_saturate() -> None:
    world = World(5)
    account = world.accounts("x")[10]
    for post in world.posts(account, NOW)[:20]:
        series = [post.counters(post.published_at + timedelta(hours=h)) for h in range(0, 400, 7)]
        for earlier, later in itertools.pairwise(series):
            for name in earlier.__dataclass_fields__:
                assert getattr(later, name) >= getattr(earlier, name)
        # A week after the last surge, the curve is within 1% of its final size.
        settled = (post.surge_at or post.published_at) + timedelta(days=10)
        late = post.impressions_at(settled + timedelta(days=30))
        assert post.impressions_at(settled) >= 0.99 * late


def test_final_sizes_are_heavy_tailed_with_some_viral_posts() -> None:
    world = World(9)
    sizes, surges = [], 0
    for account in world.accounts("bluesky"):
        for post in world.posts(account, NOW):
            sizes.append(post.size + post.surge)
            surges += post.surge > 0
    sizes.sort()
    assert len(sizes) > 1000
    # Heavy tail: the top 1% holds far more than 1% of all impressions, and mean >> median.
    top = sum(sizes[-len(sizes) // 100 :]) / sum(sizes)
    assert top > 0.1
    assert statistics.mean(sizes) > 2 * statistics.median(sizes)
    assert 0.01 < surges / len(sizes) < 0.2


def test_the_feed_moves_with_the_clock() -> None:
    world = World(6)
    account = world.accounts("x")[0]
    now_ids = {p.external_id for p in world.posts(account, NOW)}
    later_ids = {p.external_id for p in world.posts(account, NOW + timedelta(days=2))}
    assert later_ids - now_ids  # new posts were published
    assert all(p.published_at <= NOW for p in world.posts(account, NOW))


def test_registered_accounts_are_reproducible() -> None:
    a, b = World(1), World(1)
    ra = a.register("x", "ext-x", "x_handle")
    b.register("instagram", "ext-instagram", "ig")
    rb = b.register("x", "ext-x", "x_handle")
    assert ra == rb
    assert [p.external_id for p in a.posts(ra, NOW)] == [p.external_id for p in b.posts(rb, NOW)]
