"""What every platform connector returns, and the errors it raises."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from core.errors import MurmurError

Kind = Literal["own", "competitor", "creator"]


@dataclass(frozen=True)
class AccountRef:
    """An account to read: ours (with its token) or a public one we track."""

    platform: str
    external_id: str
    handle: str
    kind: Kind = "own"
    account_id: str | None = None  # our acc_… for a connected account
    access_token: str | None = None


@dataclass(frozen=True)
class AccountSnapshot:
    platform: str
    external_id: str
    handle: str
    display_name: str | None
    followers: int | None
    following: int | None
    posts_count: int | None
    captured_at: datetime  # aware, UTC
    category: str | None = None
    url: str | None = None  # its public page (connectors.platforms.profile_url)
    thumbnail_url: str | None = None  # its picture (avatar, logo), as the platform gives it


@dataclass(frozen=True)
class PostRecord:
    platform: str
    external_id: str
    account_external_id: str
    text: str | None
    published_at: datetime  # aware, UTC
    hashtags: tuple[str, ...] = ()
    media_type: str | None = None
    url: str | None = None
    category: str | None = None
    deleted: bool = False
    thumbnail_url: str | None = None  # its image or video cover, as the platform gives it


@dataclass(frozen=True)
class EngagementSnapshot:
    """Cumulative counters of one post; None where the platform does not report a metric."""

    platform: str
    external_id: str
    captured_at: datetime  # aware, UTC
    impressions: int | None = None
    reach: int | None = None
    views: int | None = None
    likes: int | None = None
    comments: int | None = None
    shares: int | None = None
    saves: int | None = None
    clicks: int | None = None


class ConnectorError(MurmurError):
    """A platform call failed."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class TransientError(ConnectorError):
    """Worth retrying: 5xx, timeouts, connection resets."""


class RateLimitedError(TransientError):
    """429: retry after ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.retry_after = retry_after


class PermanentError(ConnectorError):
    """Retrying will not help: bad request, rejected content, gone."""


class AuthExpiredError(PermanentError):
    """The token is expired or revoked: the account must be reconnected."""


class NotFoundError(PermanentError):
    """The object does not exist (any more) on the platform."""


class Connector(Protocol):
    """Reads one platform. Implementations are httpx clients against the real API's shape."""

    platform: str

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """The account's profile and follower counts now."""
        ...

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """The account's posts published since ``since`` (all when None), following pages."""
        ...

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """Current cumulative counters of these posts; missing metrics are None."""
        ...

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """Public creator accounts matching ``query`` (for creator rankings)."""
        ...


# -- publishing and engagement (the worker's side) ---------------------------------------------


@dataclass(frozen=True)
class MediaFile:
    """A media item to publish: our stored file and what its bytes are."""

    path: str
    kind: Literal["image", "video", "document"]
    content_type: str
    alt_text: str | None = None


@dataclass(frozen=True)
class PublishRequest:
    """One destination of one post, as the worker hands it to the platform."""

    account: AccountRef
    text: str
    client_ref: str  # our destination id (dst_…): how a retry finds an earlier attempt
    media: tuple[MediaFile, ...] = ()
    options: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Published:
    external_id: str
    url: str | None
    published_at: datetime  # aware, UTC


@dataclass(frozen=True)
class Conversation:
    """A comment thread, mention or DM thread with its newest inbound messages."""

    platform: str
    external_id: str
    kind: Literal["comment", "mention", "dm"]
    author_handle: str
    author_name: str | None
    text: str
    message_external_id: str
    received_at: datetime  # aware, UTC
    post_external_id: str | None = None


class Publisher(Protocol):
    """Writes to one platform: posts, and replies in conversations."""

    platform: str

    def publish(self, request: PublishRequest) -> Published:
        """Create the post; raises TransientError, PermanentError or AuthExpiredError."""
        ...

    def find_published(self, request: PublishRequest, since: datetime) -> Published | None:
        """An earlier attempt of this request that reached the platform, if any (checked
        before re-posting after a timeout or a crash, so that a retry never posts twice)."""
        ...

    def list_conversations(
        self, account: AccountRef, since: datetime | None
    ) -> Iterator[Conversation]:
        """Comments, mentions and DMs received since ``since``."""
        ...

    def reply(
        self, account: AccountRef, conversation: str, text: str, client_ref: str
    ) -> Published:
        """Answer in a conversation (a comment reply or a DM)."""
        ...
