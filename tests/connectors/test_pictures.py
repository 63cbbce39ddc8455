"""Pictures and profile links: each reader keeps what the platform's API answers, as it answers.

The expected values are read here over HTTP from the simulator in each platform's own shape
(YouTube ``snippet.thumbnails``, X ``includes.media``, Instagram ``thumbnail_url``/
``media_url``, TikTok ``cover_image_url``, …), not through the readers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from connectors.registry import SUPPORTED, simulator_base_url
from simulator.world import OWN_ACCOUNTS
from tests.connectors.conftest import ConnectorFactory, SimServer, own_account

Raw = Callable[..., Any]

PROFILES = {
    "youtube": "https://www.youtube.com/@murmurtest",
    "x": "https://x.com/murmur_test",
    "instagram": "https://www.instagram.com/murmur.test/",
    "linkedin": "https://www.linkedin.com/company/murmur-test/",
    "tiktok": "https://www.tiktok.com/@murmur.test",
    "bluesky": "https://bsky.app/profile/murmur-test.bsky.social",
    "facebook": "https://www.facebook.com/MurmurTest",
    "threads": "https://www.threads.com/@murmur.test",
    "pinterest": "https://www.pinterest.com/murmurtest/",
}


def raw_reader(root: str, platform: str) -> Raw:
    """A plain HTTP call to the simulated platform (at ``root``) with the own account's token."""
    ref = own_account(platform)
    token = ref.access_token or ""
    base = simulator_base_url(root, platform)

    def call(path: str, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        query = dict(params or {})
        if platform in ("instagram", "facebook", "threads"):
            query["access_token"] = token
        headers = {"Authorization": f"Bearer {token}"}
        if body is None:
            response = httpx.get(base + path, params=query, headers=headers)
        else:
            response = httpx.post(base + path, params=query, headers=headers, json=body)
        response.raise_for_status()
        return response.json()

    return call


def avatar(platform: str, raw: Raw, ext: str) -> str | None:
    """The account's picture in the platform's own field."""
    handle = OWN_ACCOUNTS[platform][0]
    if platform == "youtube":
        item = raw("/youtube/v3/channels", {"part": "snippet", "id": ext})["items"][0]
        return str(item["snippet"]["thumbnails"]["default"]["url"])
    if platform == "x":
        user = raw(f"/2/users/by/username/{handle}", {"user.fields": "profile_image_url"})
        return str(user["data"]["profile_image_url"])
    if platform == "instagram":
        return str(raw(f"/{ext}", {"fields": "profile_picture_url"})["profile_picture_url"])
    if platform == "tiktok":
        return str(raw("/v2/user/info/", {"fields": "avatar_url"})["data"]["user"]["avatar_url"])
    if platform == "bluesky":
        return str(raw("/xrpc/app.bsky.actor.getProfile", {"actor": ext})["avatar"])
    if platform == "facebook":
        return str(raw(f"/{ext}", {"fields": "picture"})["picture"]["data"]["url"])
    if platform == "threads":
        found = raw(f"/{ext}", {"fields": "threads_profile_picture_url"})
        return str(found["threads_profile_picture_url"])
    if platform == "pinterest":
        return str(raw("/v5/user_account")["profile_image"])
    return None  # LinkedIn: its logo is a media URN, not a URL


def post_pictures(platform: str, raw: Raw, ext: str) -> dict[str, str | None]:
    """The first page of the account's posts: each one's picture in the platform's fields."""
    if platform == "youtube":
        uploads = raw("/youtube/v3/channels", {"part": "contentDetails", "id": ext})["items"][0]
        playlist = uploads["contentDetails"]["relatedPlaylists"]["uploads"]
        items = raw(
            "/youtube/v3/playlistItems",
            {"part": "snippet", "playlistId": playlist, "maxResults": 50},
        )["items"]
        return {
            i["snippet"]["resourceId"]["videoId"]: i["snippet"]["thumbnails"]["default"]["url"]
            for i in items
        }
    if platform == "x":
        body = raw(
            f"/2/users/{ext}/tweets",
            {
                "max_results": 100,
                "tweet.fields": "attachments",
                "expansions": "attachments.media_keys",
                "media.fields": "type,url,preview_image_url",
            },
        )
        media = {m["media_key"]: m for m in body.get("includes", {}).get("media", [])}
        out: dict[str, str | None] = {}
        for tweet in body["data"]:
            keys = tweet.get("attachments", {}).get("media_keys", [])
            first = media[keys[0]] if keys else {}
            out[tweet["id"]] = first.get("url") or first.get("preview_image_url")
        return out
    if platform in ("instagram", "threads"):
        edge = "media" if platform == "instagram" else "threads"
        fields = "id,media_type,media_url,thumbnail_url"
        data = raw(f"/{ext}/{edge}", {"fields": fields, "limit": 100})["data"]
        return {
            m["id"]: m.get("thumbnail_url")
            or (m.get("media_url") if m.get("media_type") != "VIDEO" else None)
            for m in data
        }
    if platform == "tiktok":
        data = raw("/v2/video/list/", {"fields": "id,cover_image_url"}, body={"max_count": 20})[
            "data"
        ]
        return {v["id"]: v.get("cover_image_url") for v in data["videos"]}
    if platform == "bluesky":
        feed = raw("/xrpc/app.bsky.feed.getAuthorFeed", {"actor": ext, "limit": 100})["feed"]
        return {
            f["post"]["uri"]: (f["post"].get("embed", {}).get("images") or [{}])[0].get("thumb")
            for f in feed
        }
    if platform == "facebook":
        data = raw(f"/{ext}/posts", {"fields": "id,full_picture", "limit": 100})["data"]
        return {p["id"]: p.get("full_picture") for p in data}
    if platform == "pinterest":
        pins = raw("/v5/pins", {"page_size": 100})["items"]
        return {
            p["id"]: p["media"].get("images", {}).get("150x150", {}).get("url")
            or p["media"].get("cover_image_url")
            for p in pins
        }
    return {}  # LinkedIn: its posts name media by URN


@pytest.mark.parametrize("platform", SUPPORTED)
def test_an_account_keeps_its_platforms_picture_and_profile(
    platform: str, connect: ConnectorFactory, sim: SimServer
) -> None:
    ref = own_account(platform)
    snap = connect(platform).fetch_account(ref)
    assert snap.thumbnail_url == avatar(platform, raw_reader(sim.root, platform), ref.external_id)
    assert snap.url == PROFILES[platform]
    if platform != "linkedin":
        assert snap.thumbnail_url is not None
        assert snap.thumbnail_url.startswith("https://")


@pytest.mark.parametrize("platform", SUPPORTED)
def test_a_post_keeps_its_platforms_picture(
    platform: str, connect: ConnectorFactory, sim: SimServer
) -> None:
    ref = own_account(platform)
    records = {p.external_id: p for p in connect(platform).list_posts(ref, None)}
    expected = post_pictures(platform, raw_reader(sim.root, platform), ref.external_id)
    if platform == "linkedin":
        assert {p.thumbnail_url for p in records.values()} == {None}
        return
    assert expected
    assert {e: records[e].thumbnail_url for e in expected} == expected
    pictured = [e for e, url in expected.items() if url]
    assert pictured, "the account's posts include images or videos"
    # Text and link posts have no picture; the others do, whatever their kind.
    assert all(records[e].media_type in ("image", "video", "carousel") for e in pictured)
