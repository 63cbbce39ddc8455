"""What every publisher shares: non-retried writes, text matching for find_published, defaults."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar, Unpack

import httpx

from connectors.base import (
    AccountRef,
    Conversation,
    MediaFile,
    PermanentError,
    Published,
    PublishRequest,
)
from connectors.http import Classifier, HttpConnector, RequestOptions, json_body

URL = re.compile(r"https?://\S+")
SPACE = re.compile(r"\s+")
# The platform's clock and ours may differ; an earlier attempt is looked for this far before
# ``since`` as well.
SKEW = timedelta(minutes=5)
MARKER_PREFIX = "murmur:"
POLLS = 30  # status polls of a processing video before giving up (as TransientError)
POLL_SECONDS = 2.0
RECENT = timedelta(days=7)  # how far back comment listings look at our own posts

R = TypeVar("R", bound=HttpConnector)


def recent_since(since: datetime | None, now: datetime) -> datetime:
    """Where a conversation listing starts: ``since``, but no further back than ``RECENT``."""
    return max(since, now - RECENT) if since is not None else now - RECENT


def normalise(text: str | None) -> str:
    """Text as compared by find_published: NFKC, links as one token (X rewrites them to
    t.co), whitespace collapsed, case folded."""
    folded = unicodedata.normalize("NFKC", text or "")
    folded = URL.sub("<url>", folded)
    return SPACE.sub(" ", folded).strip().casefold()


def marker(request: PublishRequest) -> str:
    """The client_ref as carried where the platform keeps a hidden field for it."""
    return f"{MARKER_PREFIX}{request.client_ref}"


def media_url(media: MediaFile) -> str:
    """A URL the platform can fetch the media from: an http(s) path as is, else a file URI
    (accepted by the simulator; a real platform needs the worker to give public URLs)."""
    if media.path.startswith(("http://", "https://")):
        return media.path
    return Path(media.path).absolute().as_uri()


def media_bytes(media: MediaFile) -> bytes:
    """The media's bytes, for the platforms that take an upload."""
    if media.path.startswith(("http://", "https://")):
        response = httpx.get(media.path, timeout=30.0, follow_redirects=True)
        response.raise_for_status()
        return response.content
    return Path(media.path).read_bytes()


def first_match(
    request: PublishRequest,
    since: datetime,
    candidates: Iterable[tuple[Published, str | None, str | None]],
) -> Published | None:
    """The oldest candidate at or after ``since`` whose marker (when the platform keeps one)
    or normalised text equals the request's."""
    wanted, ref = normalise(request.text), marker(request)
    found: list[Published] = []
    for published, text, mark in candidates:
        if published.published_at < since - SKEW:
            continue
        if (mark is not None and mark == ref) or (mark is None and normalise(text) == wanted):
            found.append(published)
    return min(found, key=lambda p: p.published_at) if found else None


class Publishing(Generic[R]):
    """A platform's write side, over its reader: the same HTTP session, token and clock.

    Composed, not inherited: a publisher reaches what it reads (its posts, to find an
    earlier attempt; its error mapping; its auth headers) through ``self.reader``.
    """

    def __init__(self, reader: R) -> None:
        self.reader = reader
        self.platform = reader.platform
        self.http = reader.http

    def send(
        self,
        method: str,
        path_or_url: str,
        classify: Classifier,
        *,
        idempotent: bool,
        **options: Unpack[RequestOptions],
    ) -> httpx.Response:
        """One request; a write that creates something is ``idempotent=False`` (not retried
        after it may have reached the platform)."""
        url = path_or_url if "://" in path_or_url else self.reader.base_url + path_or_url
        response = self.http.request(
            method, url, classify=classify, idempotent=idempotent, **options
        )
        self.reader.stamp(response)
        return response

    def send_json(self, *args: Any, **kwargs: Any) -> Any:
        """``send`` and the response's JSON body ({} when there is none)."""
        body = json_body(self.send(*args, **kwargs))
        return body if body is not None else {}

    def call(
        self, method: str, path: str, account: AccountRef, *, idempotent: bool, **options: Any
    ) -> httpx.Response:
        """``send`` with the account's credentials, its failures classified by the reader."""
        headers = self.reader.headers_for(account)
        return self.send(
            method, path, self.reader.classify, idempotent=idempotent, headers=headers, **options
        )

    def call_json(self, *args: Any, **kwargs: Any) -> Any:
        """``call`` and the response's JSON body ({} when there is none)."""
        body = json_body(self.call(*args, **kwargs))
        return body if body is not None else {}

    def close(self) -> None:
        """Close the HTTP client's connections."""
        self.reader.close()

    def now(self) -> datetime:
        """The platform's clock as of the last response (its Date header)."""
        return self.reader.server_time.astimezone(UTC)

    def published(self, external_id: str, url: str | None, at: datetime | None = None) -> Published:
        return Published(external_id=external_id, url=url, published_at=at or self.now())

    def publish(self, request: PublishRequest) -> Published:
        """Create the post; raises TransientError, PermanentError or AuthExpiredError."""
        raise NotImplementedError

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """An earlier attempt of this request that reached the platform, if any.

        By default: the account's posts since then (the reader's ``list_posts``) with the same
        normalised text. A platform that keeps a hidden marker, or lists posts elsewhere,
        overrides this.
        """
        posts = self.reader.list_posts(request.account, since - SKEW)
        return first_match(
            request,
            since,
            ((self.published(p.external_id, p.url, p.published_at), p.text, None) for p in posts),
        )

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments, mentions and DMs received since ``since``: none where there is no API."""
        return iter(())

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """Answer in a conversation; platforms without a reply API refuse."""
        raise PermanentError(f"{self.platform} has no API for replies", code="unsupported")
