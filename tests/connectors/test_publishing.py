"""Each publisher over HTTP against the simulator: publish, faults, find_published, inbox."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from connectors.base import (
    AccountRef,
    AuthExpiredError,
    MediaFile,
    PermanentError,
    PublishRequest,
    TransientError,
)
from connectors.http import PlatformHttp
from connectors.publishing import Publishing, normalise
from connectors.registry import (
    PUBLISHING,
    SUPPORTED,
    build_connector,
    build_publisher,
    simulator_base_url,
    simulator_token,
)
from simulator.inbox import KINDS
from tests.connectors.conftest import T0, SimServer, Sleeps, own_account

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64
NEEDS = {"instagram": "image", "pinterest": "image", "tiktok": "video", "youtube": "video"}

PublisherFactory = Callable[..., Publishing[Any]]


@pytest.fixture
def publisher(sim: SimServer, sleeps: Sleeps) -> PublisherFactory:
    """A publisher for a platform over the simulator, sleeping into ``sleeps``."""

    def make(platform: str, **http_options: Any) -> Publishing[Any]:
        options: dict[str, Any] = {"sleep": sleeps, "jitter": lambda ceiling: ceiling}
        options.update(http_options)
        built = build_publisher(
            platform,
            base_url=simulator_base_url(sim.root, platform),
            http=PlatformHttp(**options),
        )
        assert isinstance(built, Publishing)
        return built

    return make


def request_for(platform: str, tmp_path: Path, text: str | None = None) -> PublishRequest:
    """A publishable request: unique text, and the media the platform insists on."""
    media: tuple[MediaFile, ...] = ()
    kind = NEEDS.get(platform)
    if kind == "image":
        path = tmp_path / "photo.png"
        path.write_bytes(PNG)
        media = (MediaFile(str(path), "image", "image/png", alt_text="a photo"),)
    elif kind == "video":
        path = tmp_path / "clip.mp4"
        path.write_bytes(MP4)
        media = (MediaFile(str(path), "video", "video/mp4"),)
    return PublishRequest(
        account=own_account(platform),
        text=text or f"Launch day {uuid.uuid4().hex[:8]} #murmur https://example.com/launch",
        client_ref=f"dst_{uuid.uuid4().hex[:12]}",
        media=media,
    )


def published_texts(sim: SimServer, platform: str) -> dict[str, int]:
    body = sim.admin.get("/_sim/posts", params={"platform": platform}).json()
    counts: dict[str, int] = body["count_by_text"]
    return counts


def test_every_platform_has_a_publisher_and_a_simulator() -> None:
    assert len(PUBLISHING) == 9
    assert set(SUPPORTED) <= set(PUBLISHING)
    for platform in PUBLISHING:
        assert platform in KINDS


@pytest.mark.parametrize("platform", PUBLISHING)
def test_publish_returns_an_id_that_the_listing_shows(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    pub = publisher(platform)
    request = request_for(platform, tmp_path)
    done = pub.publish(request)
    assert done.external_id
    assert done.published_at == T0  # the platform's clock
    assert published_texts(sim, platform)[request.text] == 1
    found = pub.find_published(request, T0)
    assert found is not None
    assert found.external_id == done.external_id
    # Another destination's text is not taken for this one.
    other = request_for(platform, tmp_path)
    assert pub.find_published(other, T0) is None


@pytest.mark.parametrize("platform", SUPPORTED)
def test_a_published_post_lives_in_the_world(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    done = publisher(platform).publish(request_for(platform, tmp_path))
    account = own_account(platform)
    reader = build_connector(
        platform,
        base_url=simulator_base_url(sim.root, platform),
        token=simulator_token(platform, "client"),
        http=PlatformHttp(sleep=lambda s: None),
    )
    listed = [p.external_id for p in reader.list_posts(account, T0 - timedelta(hours=1))]
    assert done.external_id in listed
    sim.advance(6 * 3600)
    snaps = list(reader.fetch_metrics(account, [done.external_id]))
    assert len(snaps) == 1
    counters = [snaps[0].impressions, snaps[0].views, snaps[0].likes]
    assert any(c for c in counters if c)


@pytest.mark.parametrize("platform", PUBLISHING)
def test_429_then_success_publishes_once(
    platform: str, publisher: PublisherFactory, sim: SimServer, sleeps: Sleeps, tmp_path: Path
) -> None:
    sim.fault(platform, "429", on="write", retry_after=1)
    request = request_for(platform, tmp_path)
    pub = publisher(platform)
    done = pub.publish(request)
    assert done.external_id
    assert len(sleeps.delays) >= 1  # waited once, as the platform asked
    assert published_texts(sim, platform)[request.text] == 1


def _refused(
    platform: str,
    publisher: PublisherFactory,
    sim: SimServer,
    tmp_path: Path,
    expected: type[Exception],
    fault: str,
    **options: Any,
) -> Exception:
    """What publishing raises (an ``expected``) when the platform writes ``fault``; nothing of
    the request is published."""
    sim.fault(platform, fault, **options)
    request = request_for(platform, tmp_path)
    with pytest.raises(expected) as caught:
        publisher(platform).publish(request)
    assert request.text not in published_texts(sim, platform)
    return caught.value


@pytest.mark.parametrize("platform", PUBLISHING)
def test_expired_token_is_auth_expired(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    _refused(platform, publisher, sim, tmp_path, AuthExpiredError, "expired_token", on="write")


@pytest.mark.parametrize("platform", PUBLISHING)
def test_rejection_is_permanent_with_the_platform_message(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    error = _refused(
        platform,
        publisher,
        sim,
        tmp_path,
        PermanentError,
        "reject",
        message="media type not supported",
    )
    assert not isinstance(error, AuthExpiredError)
    assert "media type not supported" in str(error)


@pytest.mark.parametrize("platform", PUBLISHING)
def test_timeout_after_commit_is_found_not_reposted(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    sim.fault(platform, "timeout_after_commit", delay=3)
    request = request_for(platform, tmp_path)
    pub = publisher(platform, timeout=0.5)
    with pytest.raises(TransientError) as caught:
        pub.publish(request)
    assert caught.value.code == "timeout"
    assert pub.http.attempts >= 1
    # The worker's retry: look first, and find the post the timed-out call created.
    found = pub.find_published(request, T0)
    assert found is not None
    posts = sim.admin.get("/_sim/posts", params={"platform": platform}).json()["posts"]
    mine = [p for p in posts if p["text"] == request.text]
    assert [p["external_id"] for p in mine] == [found.external_id]


@pytest.mark.parametrize("platform", PUBLISHING)
def test_conversations_come_in_and_replies_land_in_the_thread(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    pub = publisher(platform)
    done = pub.publish(request_for(platform, tmp_path))
    sim.advance(3 * 3600)
    account = own_account(platform)
    found = list(pub.list_conversations(account, T0 - timedelta(days=1)))
    kinds = set(KINDS[platform])
    if not kinds:
        assert found == []
        with pytest.raises(PermanentError):
            pub.reply(account, "anything", "thanks!", "rep_1")
        return
    assert {c.kind for c in found} == kinds
    assert len({c.message_external_id for c in found}) == len(found)
    if "comment" in kinds:
        # The post published above draws comments of its own.
        assert any(c.post_external_id == done.external_id for c in found)
    for kind in sorted(kinds):
        conversation = next(c for c in found if c.kind == kind)
        text = f"Thanks {uuid.uuid4().hex[:6]}"
        sent = pub.reply(account, conversation.external_id, text, f"rep_{kind}")
        assert sent.external_id
        thread = sim.admin.get(
            "/_sim/thread", params={"platform": platform, "id": conversation.external_id}
        )
        assert thread.status_code == 200, thread.text
        assert [r["text"] for r in thread.json()["replies"]][-1:] == [text]
    # Later listings start where the last one ended.
    newest = max(c.received_at for c in found)
    assert all(c.received_at > newest for c in pub.list_conversations(account, newest))


def test_inbox_phrases_repeat(publisher: PublisherFactory) -> None:
    texts = [
        normalise(c.text)
        for platform in ("x", "instagram", "facebook")
        for c in publisher(platform).list_conversations(own_account(platform), None)
    ]
    for phrase in ("how much", "refund", "love this"):
        assert sum(phrase in t for t in texts) >= 2, phrase


def test_normalise_ignores_case_space_and_rewritten_links() -> None:
    assert normalise("Launch  day https://example.com/a\n#Go") == normalise(
        "launch day https://t.co/xyz #go"
    )
    assert normalise("Launch day") != normalise("Launch night")


@pytest.mark.parametrize("platform", PUBLISHING)
def test_a_registered_workspace_account_publishes(
    platform: str, publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    external_id, handle = f"ext-{platform}", f"{platform}_handle"
    registered = sim.admin.post(
        "/_sim/accounts", json={"platform": platform, "external_id": external_id, "handle": handle}
    )
    assert registered.status_code == 201, registered.text
    account = AccountRef(
        platform,
        external_id,
        handle,
        access_token=simulator_token(platform, external_id),
    )
    request = replace(request_for(platform, tmp_path), account=account)
    pub = publisher(platform)
    done = pub.publish(request)
    found = pub.find_published(request, T0)
    assert found is not None
    assert (found.external_id, found.published_at) == (done.external_id, done.published_at)
    posts = sim.admin.get("/_sim/posts", params={"platform": platform, "account": external_id})
    assert posts.json()["count_by_text"] == {request.text: 1}


def test_threads_publish_gives_the_thread_permalink(
    publisher: PublisherFactory, sim: SimServer, tmp_path: Path
) -> None:
    """threads_publish answers with an id alone: the URL comes from GET /{media-id}."""
    pub = publisher("threads")
    request = request_for("threads", tmp_path)
    done = pub.publish(request)
    assert done.url is not None
    assert done.url.startswith("https://www.threads.com/")
    assert done.published_at == T0
    found = pub.find_published(request, T0)
    assert found is not None
    assert (found.external_id, found.url) == (done.external_id, done.url)
