"""Labels: every item naming a post or an account says what it is, as its source described it.

Posts and accounts are written through the ingest writer and described by the pipeline's own
staging (the dimensions); the marts naming them are written as the Dagster assets would; the
API is read over the real server. The YouTube FR trending export goes through the importer
and the pipeline, against our own reading of the file with polars.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest

from connectors.base import AccountRef, AccountSnapshot, Kind, PostRecord
from connectors.registry import build_connector, simulator_base_url, simulator_token
from domain.analytics.service import post_label
from pipelines.importers import run_import
from pipelines.run import run_all
from tests.analytics.seed import COUNTERS, seed_snapshots
from tests.connectors.conftest import own_account
from tests.connectors.test_pictures import post_pictures, raw_reader
from tests.servers import StoreSettings
from tests.support import LiveServer, Tenant, new_tenant, start_server, start_simulator
from warehouse.ingest import IngestBatch, write_batch
from warehouse.marts import scripts

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"

VIDEO = "vid_label01"
TWEET = "1800000000000000001"
SKEET = "at://did:plc:labels/app.bsky.feed.post/3kzz"
CHANNEL = "UCchannel0000000000000001"
# Platform text is untrusted: it comes back as the same characters, never interpreted.
MARKUP = "<img src=x onerror=alert(1)>"
LONG_LINE = " ".join(["word"] * 40)  # 199 characters: cut to 100


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _describe(
    server: LiveServer,
    workspace_id: str,
    posts: list[tuple[PostRecord, str | None]],
    accounts: list[tuple[AccountSnapshot, Kind]],
) -> None:
    """Posts and accounts through the ingest writer, then the staging's dimensions upsert."""
    now = _now()
    batch = IngestBatch(
        id=f"test:labels:{workspace_id}",
        workspace_id=workspace_id,
        source="connector:test",
        partition_key=None,
        started_at=now,
        posts=[(record, "own", post_id) for record, post_id in posts],
        accounts=[(snap, kind, None) for snap, kind in accounts],
    )
    write_batch(server.lake, batch)
    # Accounts are described from the snapshots captured on the day staged (the platform's
    # clock); posts from those captured since (the batch's start).
    days = {now.date()} | {snap.captured_at.date() for snap, _ in accounts}
    for day in sorted(days):
        server.lake.execute_script(
            scripts.staging_script(
                day,
                day + timedelta(days=1),
                run_id="test-labels",
                computed_at=now.replace(tzinfo=None),
            ),
            upserts_dimensions=True,
        )


def _post(platform: str, external_id: str, text: str | None, **fields: Any) -> PostRecord:
    return PostRecord(
        platform=platform,
        external_id=external_id,
        account_external_id=fields.pop("account", f"{platform}-author"),
        text=text,
        published_at=_now() - timedelta(hours=5),
        **fields,
    )


def _account(platform: str, external_id: str, handle: str, **fields: Any) -> AccountSnapshot:
    return AccountSnapshot(
        platform=platform,
        external_id=external_id,
        handle=handle,
        display_name=fields.pop("display_name", None),
        followers=1000,
        following=10,
        posts_count=5,
        captured_at=_now(),
        **fields,
    )


def _insert(server: LiveServer, table: str, rows: list[dict[str, Any]]) -> None:
    names = list(rows[0])

    def work(cur: Any) -> None:
        cur.executemany(
            f"INSERT INTO {table} ({', '.join(names)})"  # noqa: S608 - the test's own names
            f" VALUES ({', '.join('?' for _ in names)})",
            [[row[n] for n in names] for row in rows],
        )

    server.lake.run(work)


@pytest.fixture
def described(server: LiveServer, tenant: Tenant) -> Tenant:
    """Described: a YouTube video and channel, a long tweet, a skeet without text, two more."""
    thumb = f"https://i.ytimg.com/vi/{VIDEO}/default.jpg"
    _describe(
        server,
        tenant.workspace_id,
        [
            (
                _post(
                    "youtube",
                    VIDEO,
                    f"Launch day {MARKUP}\nThe description's second line",
                    account=CHANNEL,
                    url=f"https://www.youtube.com/watch?v={VIDEO}",
                    thumbnail_url=thumb,
                ),
                None,
            ),
            (
                _post(
                    "x",
                    TWEET,
                    f"\n   \n  {LONG_LINE}  \nsecond line",
                    url=f"https://x.com/i/web/status/{TWEET}",
                    thumbnail_url="javascript:alert(1)",  # never handed to a page
                ),
                None,
            ),
            (_post("bluesky", SKEET, None, url=None), None),
        ],
        [
            (
                _account(
                    "youtube",
                    CHANNEL,
                    "@chanone",
                    display_name=f"Chan & One {MARKUP}",
                    url="https://www.youtube.com/@chanone",
                    thumbnail_url="https://yt3.ggpht.com/ytc/chanone=s88-c-k-c0x00ffffff-no-rj",
                ),
                "creator",
            ),
            (
                _account(
                    "tiktok",
                    "tt-creator",
                    "tt.creator",
                    display_name="  ",
                    url="https://www.tiktok.com/@tt.creator",
                    thumbnail_url="https://p16-sign-va.tiktokcdn.com/tt.creator.image",
                ),
                "creator",
            ),
            (
                _account(
                    "x",
                    "x-rival",
                    "rivalco",
                    display_name="Rival Co",
                    url="https://x.com/rivalco",
                    thumbnail_url="https://pbs.twimg.com/profile_images/1/rival_normal.jpg",
                ),
                "competitor",
            ),
        ],
    )
    return tenant


def test_viral_trends_name_their_posts_hashtags_and_topics(
    server: LiveServer, described: Tenant
) -> None:
    now = _now().replace(tzinfo=None)
    ws = described.workspace_id
    trends = [
        ("post", VIDEO, "youtube", 9.0),
        ("post", TWEET, "x", 8.0),
        ("post", SKEET, "bluesky", 7.0),
        ("post", "never-described", "x", 6.0),
        ("hashtag", "launch", None, 5.0),
        ("topic", "product launch", None, 4.0),
    ]
    _insert(
        server,
        "mart_viral_trends",
        [
            {
                "workspace_id": ws,
                "entity_type": kind,
                "entity": entity,
                "platform": platform,
                "score": score,
                "status": "emerging",
                "velocity": 10.0,
                "baseline": 1.0,
                "evidence": json.dumps({"window_hours": 6}),
                "window_end": now,
                "computed_at": now,
            }
            for kind, entity, platform, score in trends
        ],
    )
    seed_snapshots(server, ["mart_viral_trends"])
    api = described.api
    items = api.ok(api.get("/viral-trends"))["items"]
    named = {t["entity"]: (t["label"], t["url"], t["thumbnail_url"]) for t in items}
    assert named == {
        # YouTube's text starts with the title: the label, markup and all, as characters
        VIDEO: (
            f"Launch day {MARKUP}",
            f"https://www.youtube.com/watch?v={VIDEO}",
            f"https://i.ytimg.com/vi/{VIDEO}/default.jpg",
        ),
        # the first non-blank line, stripped and cut to 100 characters; no javascript: URL
        TWEET: (LONG_LINE[:99] + "…", f"https://x.com/i/web/status/{TWEET}", None),
        SKEET: (SKEET, None, None),  # no text: its platform id
        "never-described": ("never-described", None, None),
        "launch": ("#launch", None, None),
        "product launch": ("product launch", None, None),
    }
    assert len(named[TWEET][0]) == 100
    # The page's first item by score, and the filters, keep their labels.
    first = api.ok(api.get("/viral-trends", params={"limit": 1, "entity_type": "post"}))
    assert first["items"][0]["label"] == f"Launch day {MARKUP}"


def test_insights_name_the_post_or_account_they_are_about(
    server: LiveServer, described: Tenant
) -> None:
    now = _now().replace(tzinfo=None)
    ws = described.workspace_id
    rows = [
        ("top_content", "youtube", CHANNEL, {"external_id": VIDEO, "url": "https://y.example/v"}),
        ("best_time", "youtube", CHANNEL, {"weekday": 1, "hour": 9}),
        ("top_content", "x", "x-author", {"external_id": "gone", "url": "https://x.com/i/1"}),
        ("recommendation", None, None, {}),
    ]
    _insert(
        server,
        "mart_insights",
        [
            {
                "workspace_id": ws,
                "kind": kind,
                "platform": platform,
                "account_external_id": account,
                "title": f"{kind} {n}",
                "body": "…",
                "score": 1.0 - n / 10,
                "evidence": json.dumps(evidence),
                "computed_at": now,
            }
            for n, (kind, platform, account, evidence) in enumerate(rows)
        ],
    )
    seed_snapshots(server, ["mart_insights", "mart_best_times", "mart_anomalies"])
    api = described.api
    items = api.ok(api.get("/insights"))["items"]
    named = [(i["kind"], i["label"], i["url"], i["thumbnail_url"]) for i in items]
    assert named == [
        (
            "top_content",
            f"Launch day {MARKUP}",
            f"https://www.youtube.com/watch?v={VIDEO}",
            f"https://i.ytimg.com/vi/{VIDEO}/default.jpg",
        ),
        (
            "best_time",
            f"Chan & One {MARKUP}",
            "https://www.youtube.com/@chanone",
            "https://yt3.ggpht.com/ytc/chanone=s88-c-k-c0x00ffffff-no-rj",
        ),
        # a post the dimensions do not know: its id, and the permalink the mart kept
        ("top_content", "gone", "https://x.com/i/1", None),
        ("recommendation", None, None, None),
    ]
    top = api.ok(api.get("/insights", params={"kind": "top_content"}))["items"]
    assert [i["label"] for i in top] == [f"Launch day {MARKUP}", "gone"]


def _ranking(ws: str, kind: str, platform: str, account: str, handle: str, rank: int) -> Any:
    return {
        "workspace_id": ws,
        "kind": kind,
        "platform": platform,
        "account_external_id": account,
        "handle": handle,
        "category": None,
        "followers": 1000,
        "posts": 3,
        "engagement_rate": 0.05,
        "engagement_rate_shrunk": 0.05,
        "growth_rate": 0.0,
        "avg_reach": 10.0,
        "score": 1.0 / rank,
        "rank": rank,
        "parts": json.dumps({}),
        "computed_at": _now().replace(tzinfo=None),
    }


def test_creators_and_competitors_name_their_accounts(
    server: LiveServer, described: Tenant
) -> None:
    ws = described.workspace_id
    _insert(
        server,
        "mart_creator_rankings",
        [
            _ranking(ws, "creator", "youtube", CHANNEL, "@chanone", 1),
            _ranking(ws, "creator", "tiktok", "tt-creator", "tt.creator", 2),
            _ranking(ws, "creator", "instagram", "ig-unknown", "nodims", 3),
            _ranking(ws, "competitor", "x", "x-rival", "rivalco", 1),
        ],
    )
    seed_snapshots(server, ["mart_creator_rankings"])
    api = described.api
    creators = api.ok(api.get("/creators"))["items"]
    assert [(c["label"], c["url"], c["thumbnail_url"]) for c in creators] == [
        (
            f"Chan & One {MARKUP}",
            "https://www.youtube.com/@chanone",
            "https://yt3.ggpht.com/ytc/chanone=s88-c-k-c0x00ffffff-no-rj",
        ),
        # no display name: the @handle
        (
            "@tt.creator",
            "https://www.tiktok.com/@tt.creator",
            "https://p16-sign-va.tiktokcdn.com/tt.creator.image",
        ),
        ("@nodims", None, None),  # ranked, never described: the ranking's handle
    ]

    ranked = api.ok(api.post("/competitors", json={"platform": "x", "handle": "@RivalCo"}), 201)
    unranked = api.ok(
        api.post("/competitors", json={"platform": "pinterest", "handle": "Pin.Maker"}), 201
    )
    listed = {c["id"]: c for c in api.ok(api.get("/competitors"))["items"]}
    rival = listed[ranked["id"]]
    names = (
        "Rival Co",
        "https://x.com/rivalco",
        "https://pbs.twimg.com/profile_images/1/rival_normal.jpg",
    )
    assert (rival["label"], rival["url"], rival["thumbnail_url"]) == names
    ranking = rival["ranking"]
    assert (ranking["label"], ranking["url"], ranking["thumbnail_url"]) == names
    assert (ranked["label"], ranked["url"]) == names[:2]
    # Not read yet: the handle as tracked, and the profile the platform's pattern gives.
    pin = listed[unranked["id"]]
    assert pin["ranking"] is None
    assert (pin["label"], pin["url"], pin["thumbnail_url"]) == (
        "@Pin.Maker",
        "https://www.pinterest.com/Pin.Maker/",
        None,
    )


def test_a_posts_analytics_name_each_destination(server: LiveServer, tenant: Tenant) -> None:
    api = tenant.api
    text = "Our launch, as we wrote it\nwith a second line"
    post = api.ok(
        api.post("/posts", json={"text": text, "platforms": ["x", "bluesky"], "draft": True}),
        201,
    )
    post_id = post["post_id"]
    external = f"x-{post_id}"
    _describe(
        server,
        tenant.workspace_id,
        [
            (
                _post(
                    "x",
                    external,
                    "Our launch, as X shows it\nmore",
                    account="ext-x",
                    url=f"https://x.com/i/web/status/{external}",
                    thumbnail_url="https://pbs.twimg.com/media/ours.jpg",
                ),
                post_id,
            )
        ],
        [],
    )
    day = _now().date()
    counters = dict.fromkeys(("impressions", "reach", "views", "likes", "comments"), 10)
    _insert(
        server,
        "mart_post_daily",
        [
            {
                "workspace_id": tenant.workspace_id,
                "day": day,
                "platform": "x",
                "account_external_id": "ext-x",
                "account_id": tenant.accounts["x"],
                "external_id": external,
                "post_id": post_id,
                "kind": "own",
                **counters,
                "shares": 0,
                "saves": 0,
                "clicks": 0,
                "engagements": 20,
                "engagement_rate": None,
            }
        ],
    )
    seed_snapshots(server, ["mart_post_daily"], [day])
    data = api.ok(api.get(f"/posts/{post_id}/analytics"))
    named = {
        d["platform"]: (d["label"], d["url"], d["thumbnail_url"]) for d in data["destinations"]
    }
    assert named == {
        "x": (
            "Our launch, as X shows it",
            f"https://x.com/i/web/status/{external}",
            "https://pbs.twimg.com/media/ours.jpg",
        ),
        # not published, not read: our own text, no link, no picture
        "bluesky": ("Our launch, as we wrote it", None, None),
    }


# -- as the simulated platforms give them ---------------------------------------------------------

SIM_T0 = datetime(2025, 6, 15, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def sim_root() -> Iterator[str]:
    running = start_simulator(11)
    httpx.post(f"{running.root}/_sim/clock", json={"now": SIM_T0.isoformat()}).raise_for_status()
    yield running.root
    running.stop()


def _read(root: str, ref: AccountRef) -> tuple[AccountSnapshot, list[PostRecord]]:
    """The account and its posts through the platform's reader, as the pipeline reads them."""
    connector = build_connector(
        ref.platform,
        base_url=simulator_base_url(root, ref.platform),
        token=simulator_token(ref.platform, "client"),
    )
    snap = connector.fetch_account(ref)
    return snap, list(connector.list_posts(replace(ref, external_id=snap.external_id), None))


def test_items_carry_what_the_simulated_platforms_gave(
    server: LiveServer, tenant: Tenant, sim_root: str
) -> None:
    """Readers → dimensions → API; expected: each platform's own fields, read here over HTTP."""
    yt_raw, tt_raw, x_raw = (raw_reader(sim_root, p) for p in ("youtube", "tiktok", "x"))
    youtube, videos = _read(sim_root, own_account("youtube"))
    tiktok, clips = _read(sim_root, own_account("tiktok"))
    x, tweets = _read(sim_root, own_account("x"))
    chirply, _ = _read(sim_root, AccountRef("x", "chirply", "chirply", kind="competitor"))
    found = build_connector(
        "youtube",
        base_url=simulator_base_url(sim_root, "youtube"),
        token=simulator_token("youtube", "client"),
    ).search_creators("tech", 1)
    creator, _ = _read(sim_root, next(iter(found)))
    video = videos[0]
    clip = next(c for c in clips if c.thumbnail_url)
    tweet = next(t for t in tweets if t.thumbnail_url)
    post = tenant.api.ok(
        tenant.api.post("/posts", json={"text": "Ours", "platforms": ["x"], "draft": True}), 201
    )
    ws = tenant.workspace_id
    _describe(
        server,
        ws,
        [(video, None), (clip, None), (tweet, post["post_id"])],
        [
            (youtube, "own"),
            (tiktok, "own"),
            (x, "own"),
            (chirply, "competitor"),
            (creator, "creator"),
        ],
    )
    now = _now().replace(tzinfo=None)
    _insert(
        server,
        "mart_viral_trends",
        [
            {
                "workspace_id": ws,
                "entity_type": "post",
                "entity": video.external_id,
                "platform": "youtube",
                "score": 3.0,
                "status": "emerging",
                "velocity": 10.0,
                "baseline": 1.0,
                "evidence": "{}",
                "window_end": now,
                "computed_at": now,
            }
        ],
    )
    _insert(
        server,
        "mart_insights",
        [
            {
                "workspace_id": ws,
                "kind": "top_content",
                "platform": "tiktok",
                "account_external_id": tiktok.external_id,
                "title": "Top post on tiktok",
                "body": "…",
                "score": 0.5,
                "evidence": json.dumps({"external_id": clip.external_id, "url": clip.url}),
                "computed_at": now,
            }
        ],
    )
    _insert(
        server,
        "mart_creator_rankings",
        [
            _ranking(ws, "creator", "youtube", creator.external_id, creator.handle, 1),
            _ranking(ws, "competitor", "x", chirply.external_id, chirply.handle, 1),
        ],
    )
    day = _now().date()
    _insert(
        server,
        "mart_post_daily",
        [
            {
                "workspace_id": ws,
                "day": day,
                "platform": "x",
                "account_external_id": x.external_id,
                "account_id": tenant.accounts["x"],  # the destination's account
                "external_id": tweet.external_id,
                "post_id": post["post_id"],
                "kind": "own",
                **dict.fromkeys(COUNTERS, 1),
                "engagements": 5,
                "engagement_rate": None,
            }
        ],
    )
    seed_snapshots(server, ["mart_viral_trends", "mart_insights", "mart_creator_rankings"])
    seed_snapshots(server, ["mart_post_daily"], [day])
    api = tenant.api

    # The platforms' own fields, read independently.
    uploads = yt_raw("/youtube/v3/channels", {"part": "contentDetails", "id": youtube.external_id})
    playlist = uploads["items"][0]["contentDetails"]["relatedPlaylists"]["uploads"]
    items = yt_raw("/youtube/v3/playlistItems", {"part": "snippet", "playlistId": playlist})
    snippet = next(
        i["snippet"]
        for i in items["items"]
        if i["snippet"]["resourceId"]["videoId"] == video.external_id
    )
    listed = tt_raw(
        "/v2/video/list/",
        {"fields": "id,video_description,share_url,cover_image_url"},
        body={"max_count": 20},
    )["data"]["videos"]
    tt_video = next(v for v in listed if v["id"] == clip.external_id)
    channel = yt_raw("/youtube/v3/channels", {"part": "snippet", "id": creator.external_id})
    channel_snippet = channel["items"][0]["snippet"]
    rival = x_raw("/2/users/by/username/chirply", {"user.fields": "profile_image_url"})["data"]
    x_text = x_raw("/2/tweets", {"ids": tweet.external_id})["data"][0]["text"]
    x_picture = post_pictures("x", x_raw, x.external_id)[tweet.external_id]

    trend = api.ok(api.get("/viral-trends"))["items"][0]
    assert (trend["label"], trend["url"], trend["thumbnail_url"]) == (
        snippet["title"],
        f"https://www.youtube.com/watch?v={video.external_id}",
        snippet["thumbnails"]["default"]["url"],
    )
    top = api.ok(api.get("/insights", params={"kind": "top_content"}))["items"][0]
    assert (top["label"], top["url"], top["thumbnail_url"]) == (
        post_label(tt_video["video_description"], "?"),
        tt_video["share_url"],
        tt_video["cover_image_url"],
    )
    ranked = api.ok(api.get("/creators"))["items"][0]
    assert (ranked["label"], ranked["url"], ranked["thumbnail_url"]) == (
        channel_snippet["title"],
        f"https://www.youtube.com/{channel_snippet['customUrl']}",
        channel_snippet["thumbnails"]["default"]["url"],
    )
    tracked = api.ok(api.post("/competitors", json={"platform": "x", "handle": "chirply"}), 201)
    assert (tracked["label"], tracked["url"], tracked["thumbnail_url"]) == (
        rival["name"],
        f"https://x.com/{rival['username']}",
        rival["profile_image_url"],
    )
    assert tracked["ranking"]["label"] == rival["name"]
    destination = api.ok(api.get(f"/posts/{post['post_id']}/analytics"))["destinations"][0]
    assert (destination["label"], destination["url"], destination["thumbnail_url"]) == (
        post_label(x_text, "?"),
        f"https://x.com/i/web/status/{tweet.external_id}",
        x_picture,
    )
    assert x_picture is not None


# -- the YouTube FR trending export -------------------------------------------------------------


@dataclass
class Imported:
    server: LiveServer
    own: Tenant  # the file as the workspace's own channel: its top content
    creators: Tenant  # the file as others' channels: creators


@pytest.fixture(scope="module")
def fr_imported(
    tmp_path_factory: pytest.TempPathFactory, store_settings: StoreSettings
) -> Iterator[Imported]:
    """The FR file imported into a store of its own, twice, then the pipeline over it."""
    settings = store_settings(tmp_path_factory.mktemp("labels") / "data")
    settings.ensure_dirs()
    server = start_server(settings)
    tenants = {kind: new_tenant(server) for kind in ("own", "creator")}
    try:
        for kind, tenant in tenants.items():
            run_import(
                DATASETS / "youtube_trending_fr.csv",
                "youtube-trending",
                settings=settings,
                workspace_id=tenant.workspace_id,
                kind=kind,
                progress=False,
            )
        summary = run_all(settings, now=datetime(2026, 11, 22, tzinfo=UTC), ingest=False)
        assert summary.success, summary
        yield Imported(server, tenants["own"], tenants["creator"])
    finally:
        for tenant in tenants.values():
            tenant.api.close()
        server.stop()


def _dim_posts(server: LiveServer, workspace_id: str) -> list[tuple[str, str, str | None]]:
    """(external_id, text, thumbnail_url) of the workspace's described posts."""

    def work(cur: Any) -> list[tuple[str, str, str | None]]:
        cur.execute(
            "SELECT external_id, text, thumbnail_url FROM dim_posts WHERE workspace_id = ?",
            [workspace_id],
        )
        return [(str(e), str(t), th) for e, t, th in cur.fetchall()]

    found: list[tuple[str, str, str | None]] = server.lake.run(work)
    return found


def _fr_videos() -> pl.DataFrame:
    """Our own reading: each video's title and thumbnail_link as of its newest trending day."""
    text = (DATASETS / "youtube_trending_fr.csv").read_bytes().decode("utf-8")
    frame = pl.read_csv(io.StringIO(text), infer_schema=False)
    return (
        frame.with_columns(pl.col("trending_date").str.strptime(pl.Date, "%y.%d.%m"))
        .sort("trending_date")
        .group_by("video_id")
        .agg(
            pl.col("title").last(), pl.col("thumbnail_link").last(), pl.col("channel_title").last()
        )
    )


def test_the_youtube_fr_export_is_labelled_by_its_titles_and_thumbnails(
    fr_imported: Imported,
) -> None:
    videos = _fr_videos()
    # A label is the title with surrounding spaces removed (one title ends with a space).
    titles = dict(zip(videos["video_id"], videos["title"].str.strip_chars(), strict=True))
    thumbnails = dict(zip(videos["video_id"], videos["thumbnail_link"], strict=True))

    # Top content names its videos by their titles, with their thumbnails and links.
    top = fr_imported.own.api.list_all("/insights", kind="top_content")
    assert len(top) == 5
    for item in top:
        video = item["evidence"]["external_id"]
        assert item["label"] == titles[video], video
        assert item["thumbnail_url"] == thumbnails[video], video
        assert item["url"] == f"https://www.youtube.com/watch?v={video}"
    # Channels are named by their titles; a title is not a handle (no profile link) and the
    # export has no avatars.
    creators = fr_imported.creators.api.list_all("/creators")
    assert {c["label"] for c in creators} == set(videos["channel_title"].str.strip_chars())
    assert {(c["url"], c["thumbnail_url"]) for c in creators} == {(None, None)}
    # Trends: a video by its title, thumbnail and link (judged against same-age videos: FR
    # videos trend for a few days each); a hashtag or topic (the file's tags) by itself.
    trends = fr_imported.creators.api.list_all("/viral-trends")
    assert {t["entity_type"] for t in trends} == {"post", "hashtag", "topic"}
    for trend in trends:
        entity = trend["entity"]
        expected: tuple[str, str | None, str | None]
        if trend["entity_type"] == "post":
            link = f"https://www.youtube.com/watch?v={entity}"
            expected = (titles[entity], link, thumbnails[entity])
        else:
            expected = ("#" + entity if trend["entity_type"] == "hashtag" else entity, None, None)
        assert (trend["label"], trend["url"], trend["thumbnail_url"]) == expected

    # Every video of both imports, not only those listed: the label of what the dimensions
    # hold is the title, the picture the thumbnail_link.
    for tenant in (fr_imported.own, fr_imported.creators):
        described = _dim_posts(fr_imported.server, tenant.workspace_id)
        assert len(described) == videos.height
        assert {e: post_label(t, e) for e, t, _ in described} == titles
        assert {e: thumb for e, _, thumb in described} == thumbnails
