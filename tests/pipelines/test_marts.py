"""Real materializations on a real store in a temporary directory, seeded with raw rows by SQL."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckSeverity, materialize

from core.settings import Settings
from pipelines.analytics.assets import DAILY_ASSETS, INSIGHT_ASSETS
from pipelines.definitions import resources
from pipelines.partitions import range_tags
from pipelines.run import run_all
from tests.servers import StoreSettings
from warehouse.lake.migrations import available
from warehouse.marts import scripts
from warehouse.marts.definitions import METRICS
from warehouse.store import Lakehouse, StoreCursor

WS = "ws_test"
NOW = datetime(2026, 1, 1)
SNAP_SQL = "INSERT INTO raw_engagement_snapshots VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
# The raw tables' columns as the rows below give them (the lake's later columns stay NULL).
POST_SQL = (
    "INSERT INTO raw_posts (workspace_id, platform, external_id, account_external_id, post_id,"
    " kind, text, hashtags, media_type, url, category, published_at, deleted_at, captured_at,"
    " source, ingest_batch, ingested_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
ACCOUNT_SQL = (
    "INSERT INTO raw_account_snapshots (workspace_id, platform, external_id, account_id, kind,"
    " handle, display_name, followers, following, posts_count, category, captured_at, source,"
    " ingest_batch, ingested_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


@pytest.fixture
def settings(tmp_path: Path, store_settings: StoreSettings) -> Settings:
    return store_settings(tmp_path / "data")


@pytest.fixture
def store(settings: Settings) -> Iterator[Lakehouse]:
    with settings.open_lakehouse() as opened:
        yield opened


def _snap(
    ext: str, at: str, imp: int | None, likes: int | None, comments: int | None
) -> tuple[Any, ...]:
    # (ws, platform, external_id, captured_at, impressions, reach, views, likes, comments,
    #  shares, saves, clicks, source, batch, ingested_at)
    return (WS, "x", ext, at, imp, None, None, likes, comments, None, None, None, "t", "b", NOW)


def _account(
    ext: str, kind: str, handle: str, followers: int, category: str | None, at: object
) -> tuple[Any, ...]:
    # (ws, platform, external_id, account_id, kind, handle, display_name, followers, following,
    #  posts_count, category, captured_at, source, batch, ingested_at)
    return (WS, "x", ext, None, kind, handle, None, followers, 1, 1, category, at, "t", "b", NOW)


def _post(ext: str, account: str, published: str, kind: str = "own") -> tuple[Any, ...]:
    return (
        WS,
        "x",
        ext,
        account,
        None,
        kind,
        "hello #AI",
        ["AI"],
        "text",
        None,
        "tech",
        published,
        None,
        published,
        "t",
        "b",
        NOW,
    )


def _seed_hand(store: Lakehouse) -> None:
    _insert(
        store,
        [_post("p1", "acc1", "2025-06-01 09:00"), _post("p2", "acc1", "2025-06-02 08:00")],
        [
            _snap("p1", "2025-06-01 10:00", 100, 5, 1),
            _snap("p1", "2025-06-01 11:30", 150, 3, 1),  # likes 5 → 3: a drop
            _snap("p1", "2025-06-02 09:00", 200, 9, None),  # comments not reported
            _snap("p2", "2025-06-02 09:00", 40, 4, 2),
        ],
        [
            _account("acc1", "own", "me", 100, None, "2025-06-01 12:00"),
            _account("acc1", "own", "me", 130, None, "2025-06-02 12:00"),
        ],
    )


def _materialize(settings: Settings, day: str) -> Any:
    result = materialize(
        DAILY_ASSETS,
        partition_key=day,
        resources=resources(settings),
        tags={"murmur/now": "2025-06-03T00:00:00+00:00"},
    )
    assert result.success
    return result


def _query(store: Lakehouse, sql: str) -> list[tuple[Any, ...]]:
    with store.cursor() as cur:
        return cur.execute(sql).fetchall()


def _rows(store: Lakehouse, table: str, order: str = "ALL") -> list[tuple[Any, ...]]:
    return _query(store, f"SELECT * FROM {table} ORDER BY {order}")  # noqa: S608


def test_deltas_and_counter_drops_by_hand(store: Lakehouse, settings: Settings) -> None:
    _seed_hand(store)
    first = _materialize(settings, "2025-06-01")
    _materialize(settings, "2025-06-02")
    got = _query(
        store,
        "SELECT external_id, captured_at::VARCHAR, impressions, likes, comments, counter_drops"
        " FROM stg_engagement_deltas ORDER BY external_id, captured_at",
    )
    assert got == [
        ("p1", "2025-06-01 10:00:00", 100, 5, 1, 0),  # first snapshot counts from 0
        ("p1", "2025-06-01 11:30:00", 50, 0, 0, 1),  # 150-100; likes 3 < 5 clamped, 1 drop
        # 200-150; likes 9 against the peak 5 (not the dropped 3); comments NULL → 0
        ("p1", "2025-06-02 09:00:00", 50, 4, 0, 0),
        ("p2", "2025-06-02 09:00:00", 40, 4, 2, 0),
    ]
    drops = [
        e for e in first.get_asset_check_evaluations() if e.check_name == "counter_drops_reported"
    ]
    assert len(drops) == 1
    assert not drops[0].passed
    assert drops[0].severity == AssetCheckSeverity.WARN
    assert drops[0].metadata["counter_drops"].value == 1
    daily = _rows(store, "mart_post_daily", "day, external_id")
    # day 1, p1: likes 5 + comments 1 = 6 engagements over 150 impressions = 0.04
    assert [(r[1], r[5], r[16], r[17]) for r in daily] == [
        (date(2025, 6, 1), "p1", 6, pytest.approx(0.04)),
        (date(2025, 6, 2), "p1", 4, pytest.approx(4 / 50)),
        (date(2025, 6, 2), "p2", 6, pytest.approx(6 / 40)),
    ]
    account = _rows(store, "mart_account_daily", "day")
    # followers: last of the day; growth 130 - 100; engagements of the account's posts
    assert [(r[1], r[7], r[8], r[10]) for r in account] == [
        (date(2025, 6, 1), 100, None, 6),
        (date(2025, 6, 2), 130, 30, 10),
    ]


def test_a_post_read_again_after_a_gap_starts_from_its_last_reading_and_peak(
    store: Lakehouse, settings: Settings
) -> None:
    """Read again 4 days later (in the look-back) and 65 days later (before it): each delta is
    against the post's last known values and running peak, from staging's summary of its days."""
    _insert(
        store,
        [_post("p1", "acc1", "2025-06-01 09:00"), _post("p3", "acc1", "2025-04-01 09:00")],
        [
            _snap("p3", "2025-04-01 12:00", 50, 10, 3),
            _snap("p1", "2025-06-01 10:00", 100, 5, 1),
            _snap("p1", "2025-06-01 11:30", 150, 3, None),  # likes 5 → 3; comments unread
            # likes 2 < the last 3, comments 0 < the last known 1: two drops, nothing added
            _snap("p1", "2025-06-05 09:00", 170, 2, 0),
            _snap("p3", "2025-06-05 09:00", 80, 12, None),
        ],
        [_account("acc1", "own", "me", 100, None, "2025-06-01 12:00")],
    )
    for day in ("2025-04-01", "2025-06-01", "2025-06-05"):
        _materialize(settings, day)
    got = _query(
        store,
        "SELECT external_id, captured_at::VARCHAR, impressions, likes, comments, counter_drops,"
        " first_seen FROM stg_engagement_deltas WHERE day = '2025-06-05' ORDER BY external_id",
    )
    assert got == [
        ("p1", "2025-06-05 09:00:00", 20, 0, 0, 2, False),  # 170 - 150; under the peaks
        ("p3", "2025-06-05 09:00:00", 30, 2, 0, 0, False),  # 80 - 50, 12 - 10
    ]
    summary = "SELECT * FROM stg_post_days ORDER BY ALL"
    kept = _query(store, summary)
    assert [(r[2], str(r[3])) for r in kept] == [
        ("p1", "2025-06-01"),
        ("p1", "2025-06-05"),
        ("p3", "2025-04-01"),
        ("p3", "2025-06-05"),
    ]
    # What the partitions kept is what a rebuild of every day gives, and what migration
    # 0009 fills a staged history with.
    store.execute_script(scripts.post_days_script())
    assert _query(store, summary) == kept
    migration = next(m for m in available() if m.name == "post_days").sql
    fill = migration[migration.index("INSERT INTO stg_post_days") :]
    store.execute_script("DELETE FROM stg_post_days;" + fill)  # noqa: S608 - our own text
    assert _query(store, summary) == kept


def test_an_accounts_daily_rate_divides_the_posts_with_its_basis(
    store: Lakehouse, settings: Settings
) -> None:
    """A photo with impressions and a reel with views only, one day: the rate is the photo's."""
    reel = (WS, "x", "reel", "2025-06-01 10:00", None, None, 1000, 50, 0, None, None, None)
    _insert(
        store,
        [_post("photo", "acc1", "2025-06-01 09:00"), _post("reel", "acc1", "2025-06-01 09:00")],
        [_snap("photo", "2025-06-01 10:00", 100, 5, 1), (*reel, "t", "b", NOW)],
        [_account("acc1", "own", "me", 100, None, "2025-06-01 12:00")],
    )
    _materialize(settings, "2025-06-01")
    ((engagements, rate),) = _query(
        store, "SELECT engagements, engagement_rate FROM mart_account_daily"
    )
    # all 56 engagements counted; the rate is the photo's 6 over its 100 impressions, not
    # 56 / 100 (the reel's 50 likes over impressions it never had)
    assert (engagements, rate) == (56, pytest.approx(0.06))


def test_a_snapshot_seen_by_two_batches_counts_once(store: Lakehouse, settings: Settings) -> None:
    _seed_hand(store)
    later = (*_snap("p1", "2025-06-01 10:00", 120, 6, 1)[:13], "b2", NOW + timedelta(hours=1))
    with store.cursor() as cur:
        cur.execute(SNAP_SQL, list(later))  # the same snapshot, ingested again with new values
    result = _materialize(settings, "2025-06-01")
    with store.cursor() as cur:
        got = cur.execute(
            "SELECT captured_at::VARCHAR, impressions, likes, counter_drops"
            " FROM stg_engagement_deltas ORDER BY captured_at"
        ).fetchall()
        hourly = cur.execute(
            "SELECT hour::VARCHAR, impressions, engagements FROM mart_post_hourly ORDER BY hour"
        ).fetchall()
    # the latest ingest wins: 120 impressions, 6 likes; then 150 and 3 (a drop)
    assert got == [("2025-06-01 10:00:00", 120, 6, 0), ("2025-06-01 11:30:00", 30, 0, 1)]
    assert hourly == [("2025-06-01 10:00:00", 120, 7), ("2025-06-01 11:00:00", 30, 0)]
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    # a reading in two batches is reconciled, not a failure: said in the materialization
    assert checks["raw_snapshot_keys_unique"].passed
    assert checks["stg_keys_unique"].passed
    staged = next(
        e.step_materialization_data.materialization
        for e in result.get_asset_materialization_events()
        if e.asset_key.path[-1] == "stg_engagement_deltas"
    )
    assert staged.metadata["readings_in_several_batches"].value == 1


def test_a_batch_holding_a_reading_twice_fails_the_raw_keys_check(
    store: Lakehouse, settings: Settings
) -> None:
    _seed_hand(store)
    again = (*_snap("p1", "2025-06-01 10:00", 120, 6, 1)[:13], "b", NOW + timedelta(hours=1))
    with store.cursor() as cur:
        cur.execute(SNAP_SQL, list(again))  # a loader's bug: its own batch, the reading twice
    result = _materialize(settings, "2025-06-01")
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["raw_snapshot_keys_unique"].passed
    assert checks["raw_snapshot_keys_unique"].metadata["duplicate_keys"].value == 1
    assert checks["stg_keys_unique"].passed


def test_snapshots_in_one_hour_add_up_in_the_hourly_mart(
    store: Lakehouse, settings: Settings
) -> None:
    _seed_hand(store)
    with store.cursor() as cur:
        cur.execute(SNAP_SQL, list(_snap("p1", "2025-06-01 11:50", 190, 8, 2)))
    _materialize(settings, "2025-06-01")
    hourly = _query(
        store,
        "SELECT hour::VARCHAR, impressions, likes, comments, engagements"
        " FROM mart_post_hourly ORDER BY hour",
    )
    # 11:30 (+50 impressions, likes 5 → 3 clamped) and 11:50 (+40, likes 3 → 8: +3 above
    # the peak 5, comments 1 → 2: +1)
    assert hourly == [("2025-06-01 10:00:00", 100, 5, 1, 6), ("2025-06-01 11:00:00", 90, 3, 1, 4)]


def test_rerunning_a_day_gives_identical_marts(store: Lakehouse, settings: Settings) -> None:
    _seed_hand(store)
    _materialize(settings, "2025-06-01")
    _materialize(settings, "2025-06-02")
    tables = ("stg_engagement_deltas", "mart_post_hourly", "mart_post_daily", "mart_account_daily")
    before = {t: _rows(store, t) for t in tables}
    _materialize(settings, "2025-06-02")
    _materialize(settings, "2025-06-01")
    assert {t: _rows(store, t) for t in tables} == before


def test_a_later_partition_leaves_earlier_ones_untouched(
    store: Lakehouse, settings: Settings
) -> None:
    _seed_hand(store)
    _materialize(settings, "2025-06-01")
    tables = ("stg_engagement_deltas", "mart_post_hourly", "mart_post_daily", "mart_account_daily")
    day1 = {t: _rows(store, t) for t in tables}
    snapshots = _rows(store, "mart_snapshots")
    _materialize(settings, "2025-06-02")
    with store.cursor() as cur:
        for t in tables:
            got = cur.execute(f"SELECT * FROM {t} WHERE day = '2025-06-01' ORDER BY ALL").fetchall()  # noqa: S608
            assert got == day1[t], t
        kept = cur.execute(
            "SELECT * FROM mart_snapshots WHERE partition_key = '2025-06-01' ORDER BY ALL"
        ).fetchall()
    assert kept == snapshots


def _random_seed(store: Lakehouse, days: int = 6) -> None:
    rng = random.Random(7)
    start = datetime(2025, 3, 1)
    snaps, posts = [], []
    for n in range(25):
        ext = f"r{n}"
        pub = start + timedelta(hours=rng.randrange(0, 24 * (days - 2)))
        posts.append(_post(ext, f"acc{n % 3}", str(pub), kind=("own", "competitor", "own")[n % 3]))
        cum = [0] * len(METRICS)
        at = pub
        while at < start + timedelta(days=days):
            at += timedelta(minutes=rng.randrange(20, 300))
            cum = [c + rng.randrange(0, 30) for c in cum]
            if rng.random() < 0.1:
                cum[3] -= rng.randrange(1, 5)  # a like count that goes down now and then
            values = [None if rng.random() < 0.05 else c for c in cum]
            snaps.append((WS, "x", ext, at, *values, "t", "b", NOW))
    accounts = [
        _account(
            f"acc{a}",
            ("own", "competitor", "own")[a],
            f"handle{a}",
            1000 + d * rng.randrange(0, 50),
            "tech",
            start + timedelta(days=d, hours=12),
        )
        for a in range(3)
        for d in range(days)
    ]
    _insert(store, posts, snaps, accounts)


def _insert(
    store: Lakehouse,
    posts: list[tuple[Any, ...]],
    snaps: list[tuple[Any, ...]],
    accounts: list[tuple[Any, ...]],
) -> None:
    """The rows in one lake transaction: without one, each row would be a commit of its own."""

    def work(cur: StoreCursor) -> None:
        cur.executemany(POST_SQL, posts)
        cur.executemany(SNAP_SQL, snaps)
        cur.executemany(ACCOUNT_SQL, accounts)

    store.run(work)


def _reference_engagements(store: Lakehouse) -> dict[date, int]:
    """Deltas computed in Python from the raw rows: the rule of docs/pipeline.md."""
    with store.cursor() as cur:
        raw = cur.execute(
            "SELECT external_id, captured_at, likes, comments, shares, saves, clicks"
            " FROM raw_engagement_snapshots ORDER BY external_id, captured_at"
        ).fetchall()
        published = dict(cur.execute("SELECT external_id, published_at FROM raw_posts").fetchall())
    # A first reading taken after the day of publication (and over an hour after it) is a
    # first-seen total, not growth: it sets the peaks but is left out of the growth marts.
    firsts: dict[str, datetime] = {}
    for ext, at, *_ in raw:
        firsts.setdefault(ext, at)
    peak: dict[tuple[str, int], int] = {}
    per_day: dict[date, int] = defaultdict(int)
    for ext, at, *values in raw:
        pub = published[ext]
        carried = at == firsts[ext] and at.date() != pub.date() and at - pub > timedelta(hours=1)
        for i, v in enumerate(values):
            if v is None:
                continue
            prev = peak.get((ext, i))
            if not carried:
                per_day[at.date()] += v if prev is None else max(v - prev, 0)
            peak[(ext, i)] = v if prev is None else max(prev, v)
    return dict(per_day)


def test_mart_totals_equal_a_direct_sum_over_raw(store: Lakehouse, settings: Settings) -> None:
    _random_seed(store)
    for offset in range(6):
        _materialize(settings, (date(2025, 3, 1) + timedelta(days=offset)).isoformat())
    # the seed's last snapshots spill into 2025-03-07, a day not materialized here
    expected = {d: v for d, v in _reference_engagements(store).items() if d < date(2025, 3, 7)}
    with store.cursor() as cur:
        daily = dict(
            cur.execute("SELECT day, sum(engagements) FROM mart_post_daily GROUP BY day").fetchall()
        )
        hourly = dict(
            cur.execute(
                "SELECT day, sum(engagements) FROM mart_post_hourly GROUP BY day"
            ).fetchall()
        )
    assert daily == expected
    assert hourly == expected


def test_run_all_processes_only_new_days_and_fills_insights(
    store: Lakehouse, settings: Settings
) -> None:
    _random_seed(store)
    store.close()  # run_all opens the file itself (direct mode)
    first = run_all(settings, now=datetime(2025, 3, 7, tzinfo=UTC), ingest=False)
    assert first.success
    assert first.days == [(date(2025, 3, 1), date(2025, 3, 7))]
    again = run_all(settings, now=datetime(2025, 3, 7, 1, tzinfo=UTC), ingest=False)
    assert again.success
    assert again.days == []  # nothing new: no day is rebuilt
    with (
        settings.open_lakehouse() as s,
        s.cursor() as cur,
    ):
        assert cur.execute("SELECT count(*) FROM mart_best_times").fetchone()[0] > 0  # type: ignore[index]
        assert cur.execute("SELECT count(*) FROM mart_creator_rankings").fetchone()[0] > 0  # type: ignore[index]
        kinds = {r[0] for r in cur.execute("SELECT DISTINCT kind FROM mart_insights").fetchall()}
        assert {"top_content"} <= kinds
        marked = cur.execute(
            "SELECT count(*) FROM mart_snapshots WHERE partition_key = 'all'"
        ).fetchone()
        assert marked is not None
        assert marked[0] >= 5


def test_insight_assets_rerun_identically(store: Lakehouse, settings: Settings) -> None:
    _random_seed(store)
    # The six days in one run, as run_all plans them (the day-by-day path is tested above).
    days = range_tags([(date(2025, 3, 1), date(2025, 3, 6))])
    tags = {"murmur/now": "2025-03-07T00:00:00+00:00"}
    assert materialize(DAILY_ASSETS, resources=resources(settings), tags={**tags, **days}).success
    assert materialize(INSIGHT_ASSETS, resources=resources(settings), tags=tags).success
    tables = ("mart_best_times", "mart_viral_trends", "mart_creator_rankings", "mart_insights")
    before = {t: _rows(store, t) for t in tables}
    assert materialize(INSIGHT_ASSETS, resources=resources(settings), tags=tags).success
    assert {t: _rows(store, t) for t in tables} == before


def test_freshness_reads_the_recent_hours_and_the_history_only_when_they_are_empty(
    store: Lakehouse,
) -> None:
    """A scheduled run's freshness check asks for the newest capture of recent hours only."""
    from warehouse.marts import checks

    _seed_hand(store)  # captures of 2025-06-01 and 2025-06-02, the newest 09:00 on the 2nd

    def newest(since: datetime | None) -> datetime | None:
        with store.cursor() as cur:
            return checks.newest_capture(cur, "raw_engagement_snapshots", since)

    assert newest(datetime(2025, 6, 2)) == datetime(2025, 6, 2, 9)
    assert newest(datetime(2025, 6, 2, 9)) == datetime(2025, 6, 2, 9)
    assert newest(datetime(2025, 6, 2, 9, 1)) is None
    assert newest(None) == datetime(2025, 6, 2, 9)


def test_a_run_of_today_judges_freshness_fresh_and_stale(
    store: Lakehouse, settings: Settings
) -> None:
    _seed_hand(store)  # the newest capture: 2025-06-02 09:00

    def raw_fresh(now: str) -> Any:
        result = materialize(
            DAILY_ASSETS,
            partition_key="2025-06-03",
            resources=resources(settings),
            tags={"murmur/now": now},
        )
        assert result.success
        return next(e for e in result.get_asset_check_evaluations() if e.check_name == "raw_fresh")

    fresh = raw_fresh("2025-06-03T10:00:00+00:00")  # 25 h after it: within 26 h
    assert fresh.passed
    assert fresh.metadata["newest_capture"].value == "2025-06-02 09:00:00"
    stale = raw_fresh("2025-06-03T12:00:00+00:00")  # 27 h: none in the recent hours
    assert not stale.passed
    assert stale.metadata["newest_capture"].value == "2025-06-02 09:00:00"
    assert stale.metadata["age_hours"].value == 27.0
