"""What every publisher shares: non-retried writes, text matching for find_published, defaults."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from connectors.base import (
    AccountRef,
    Conversation,
    MediaFile,
    PermanentError,
    Published,
    PublishRequest,
)
from connectors.http import Classifier, HttpConnector, json_body

URL = re.compile(r"https?://\S+")
SPACE = re.compile(r"\s+")
# The platform's clock and ours may differ; an earlier attempt is looked for this far before
# ``since`` as well.
SKEW = timedelta(minutes=5)
MARKER_PREFIX = "murmur:"


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


class Publishing(HttpConnector):
    """The write side's plumbing on top of a platform's HTTP connector."""

    platform = ""

    def send(
        self,
        method: str,
        path_or_url: str,
        classify: Classifier,
        *,
        idempotent: bool,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        data: Mapping[str, Any] | None = None,
        files: Mapping[str, Any] | None = None,
    ) -> httpx.Response:
        """One request; a write that creates something is ``idempotent=False`` (not retried
        after it may have reached the platform)."""
        url = path_or_url if "://" in path_or_url else self.base_url + path_or_url
        response = self.http.request(
            method,
            url,
            classify=classify,
            params=params,
            json=json,
            headers=headers,
            content=content,
            data=data,
            files=files,
            idempotent=idempotent,
        )
        self._stamp(response)
        return response

    def send_json(self, *args: Any, **kwargs: Any) -> Any:
        """``send`` and the response's JSON body ({} when there is none)."""
        body = json_body(self.send(*args, **kwargs))
        return body if body is not None else {}

    def now(self) -> datetime:
        """The platform's clock as of the last response (its Date header)."""
        return self.server_time.astimezone(UTC)

    def published(self, external_id: str, url: str | None, at: datetime | None = None) -> Published:
        return Published(external_id=external_id, url=url, published_at=at or self.now())

    def publish(self, request: PublishRequest) -> Published:
        """Create the post; raises TransientError, PermanentError or AuthExpiredError."""
        raise NotImplementedError

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """An earlier attempt of this request that reached the platform, if any."""
        raise NotImplementedError

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
