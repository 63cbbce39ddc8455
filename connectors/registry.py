"""Which platforms have connectors, how to build one, and where the simulator serves each."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from connectors.base import Connector, Publisher
from connectors.bluesky.publisher import BlueskyPublisher
from connectors.bluesky.reader import BlueskyConnector
from connectors.facebook.publisher import FacebookPublisher
from connectors.facebook.reader import FacebookConnector
from connectors.http import HttpConnector, PlatformHttp
from connectors.instagram.publisher import InstagramPublisher
from connectors.instagram.reader import InstagramConnector
from connectors.linkedin.publisher import LinkedInPublisher
from connectors.linkedin.reader import LinkedInConnector
from connectors.pinterest.publisher import PinterestPublisher
from connectors.pinterest.reader import PinterestConnector
from connectors.platforms import PLATFORMS, SPECS
from connectors.publishing import Publishing
from connectors.threads.publisher import ThreadsPublisher
from connectors.threads.reader import ThreadsConnector
from connectors.tiktok.publisher import TikTokPublisher
from connectors.tiktok.reader import TikTokConnector
from connectors.x.publisher import XPublisher
from connectors.x.reader import XConnector
from connectors.youtube.publisher import YouTubePublisher
from connectors.youtube.reader import YouTubeConnector

# Every platform has a reader and a publisher (so the simulator serves all of them).
SUPPORTED = PLATFORMS  # readers
PUBLISHING = PLATFORMS
CREATOR_SEARCH = tuple(name for name, spec in SPECS.items() if spec.creator_search)

# Each platform's package: its reader, and its publisher, which is built over a reader.
CONNECTORS: dict[str, type[HttpConnector]] = {
    "youtube": YouTubeConnector,
    "x": XConnector,
    "instagram": InstagramConnector,
    "linkedin": LinkedInConnector,
    "tiktok": TikTokConnector,
    "bluesky": BlueskyConnector,
    "facebook": FacebookConnector,
    "threads": ThreadsConnector,
    "pinterest": PinterestConnector,
}
PUBLISHERS: dict[str, Callable[[Any], Publishing[Any]]] = {
    "youtube": YouTubePublisher,
    "x": XPublisher,
    "instagram": InstagramPublisher,
    "linkedin": LinkedInPublisher,
    "tiktok": TikTokPublisher,
    "bluesky": BlueskyPublisher,
    "facebook": FacebookPublisher,
    "threads": ThreadsPublisher,
    "pinterest": PinterestPublisher,
}

# The real APIs' base URLs, for when an account is connected to the real platform.
REAL_BASE_URLS = {
    "youtube": "https://www.googleapis.com",
    "x": "https://api.x.com",
    "instagram": "https://graph.facebook.com/v21.0",
    "linkedin": "https://api.linkedin.com",
    "tiktok": "https://open.tiktokapis.com",
    "bluesky": "https://public.api.bsky.app",
    "facebook": "https://graph.facebook.com/v21.0",
    "threads": "https://graph.threads.net/v1.0",
    "pinterest": "https://api.pinterest.com",
}
# Where writes go when that differs from reading (Bluesky writes to the user's PDS).
REAL_WRITE_BASE_URLS = {**REAL_BASE_URLS, "bluesky": "https://bsky.social"}


def build_connector(
    platform: str,
    *,
    base_url: str,
    token: str | None = None,
    http: PlatformHttp | None = None,
    as_of: datetime | None = None,
) -> Connector:
    """A connector for ``platform`` talking to ``base_url`` (a real API or the simulator)."""
    try:
        cls = CONNECTORS[platform]
    except KeyError:
        raise ValueError(
            f"no connector for platform {platform!r}; supported: {', '.join(SUPPORTED)}"
        ) from None
    connector: Connector = cls(base_url=base_url, http=http, token=token, as_of=as_of)
    return connector


def build_publisher(
    platform: str, *, base_url: str, token: str | None = None, http: PlatformHttp | None = None
) -> Publisher:
    """A publisher for ``platform`` talking to ``base_url`` (a real API or the simulator)."""
    try:
        make = PUBLISHERS[platform]
    except KeyError:
        raise ValueError(
            f"no publisher for platform {platform!r}; supported: {', '.join(PUBLISHING)}"
        ) from None
    publisher: Publisher = make(CONNECTORS[platform](base_url=base_url, http=http, token=token))
    return publisher


def simulator_base_url(sim_root: str, platform: str) -> str:
    """Where the bundled simulator serves ``platform``: its root plus /<platform>."""
    if platform not in PUBLISHING:
        raise ValueError(f"the simulator does not serve {platform!r}")
    return f"{sim_root.rstrip('/')}/{platform}"


def simulator_token(platform: str, external_id: str) -> str:
    """An access token the simulator accepts for an account (TikTok's and Pinterest's name the
    account; Bluesky's is the app password createSession takes)."""
    if platform == "tiktok":
        return f"act.{external_id}"
    if platform == "pinterest":
        return f"pina_{external_id}"
    if platform in ("x", "youtube"):  # user-context tokens: the simulator reads the user here
        return f"sim-user-{external_id}"
    return f"sim-token-{platform}"
