"""The httpx layer every connector shares: error mapping, Retry-After, backoff with full jitter."""

from __future__ import annotations

import functools
import random
import re
import ssl
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypedDict, Unpack
from urllib.parse import quote

import httpx

from connectors.base import (
    AccountRef,
    AccountSnapshot,
    AuthExpiredError,
    ConnectorError,
    EngagementSnapshot,
    NotFoundError,
    PermanentError,
    PostRecord,
    RateLimitedError,
    TransientError,
)
from connectors.platforms import profile_url

# A platform's own reading of an error response: returns the error, or None when the
# response is a success (TikTok answers some failures with HTTP 200 and an error body).
Classifier = Callable[[httpx.Response], ConnectorError | None]


class RequestOptions(TypedDict, total=False):
    """What a request may carry besides its method and URL, as httpx takes it."""

    params: Mapping[str, Any] | None
    json: Any
    headers: Mapping[str, str] | None
    content: bytes | None
    data: Mapping[str, Any] | None
    files: Mapping[str, Any] | None


HASHTAG = re.compile(r"(?<![\w&])#(\w{1,100})")


def hashtags_in(text: str | None) -> tuple[str, ...]:
    """The #hashtags of a text, lower-cased, in order, without duplicates."""
    seen: dict[str, None] = {}
    for tag in HASHTAG.findall(text or ""):
        seen.setdefault(tag.lower(), None)
    return tuple(seen)


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a Retry-After value: delay-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; the parser leaves "-0000" naive
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def backoff_ceiling(attempt: int, base_delay: float, max_delay: float) -> float:
    """The cap on the wait after failed attempt ``attempt`` (1-based): base·2^(n-1), capped."""
    return float(min(max_delay, base_delay * (2 ** (attempt - 1))))


def json_body(response: httpx.Response) -> Any:
    """The response's JSON, or None when it is not JSON (proxies answer 502 with HTML)."""
    try:
        return response.json()
    except ValueError:
        return None


def error_for_status(
    response: httpx.Response,
    message: str | None = None,
    code: str | None = None,
    *,
    retry_after: float | None = None,
) -> ConnectorError | None:
    """The generic mapping of an HTTP status onto the error hierarchy; None for 2xx/3xx."""
    status = response.status_code
    if status < 400:
        return None
    text = message or response.reason_phrase or f"HTTP {status}"
    if status == 429:
        return RateLimitedError(text, retry_after=retry_after, status=status, code=code)
    if status >= 500 or status == 408:
        return TransientError(text, status=status, code=code)
    if status == 401:
        return AuthExpiredError(text, status=status, code=code)
    if status in (404, 410):
        return NotFoundError(text, status=status, code=code)
    return PermanentError(text, status=status, code=code)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every platform client: building one reads the
    certificate bundle (~27 ms), and a pipeline run builds a client per platform and thread."""
    return httpx.create_ssl_context()


class PlatformHttp:
    """An httpx client with timeouts that maps platform errors and retries the transient ones."""

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        timeout: float = 15.0,
        max_attempts: int = 5,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        max_retry_after: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[float], float] | None = None,
        clock: Callable[[], datetime] | None = None,
        retry_refused: bool = True,
        stop: threading.Event | None = None,
    ) -> None:
        self.client = client or httpx.Client(
            timeout=httpx.Timeout(timeout, connect=5.0), verify=_tls_context()
        )
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        # Waiting longer than this (a daily quota, a 15-minute window) is the caller's call:
        # the error is raised so the run can move on to the next account.
        self.max_retry_after = max_retry_after
        self.sleep = sleep
        rng = random.Random()
        self.jitter = jitter or (lambda ceiling: rng.uniform(0.0, ceiling))
        self.clock = clock or (lambda: datetime.now(UTC))
        self.attempts = 0  # every HTTP attempt made, for logs and tests
        # A refused connection means nothing listens there: backing off for seconds rarely
        # finds it back, and a reader of many accounts would wait that long for each one.
        self.retry_refused = retry_refused
        # Set when the caller is stopping: a wait before a retry ends, and the error is raised.
        self.stop = stop

    def close(self) -> None:
        self.client.close()

    def delay_for(self, error: TransientError, attempt: int) -> float:
        """The wait after ``attempt`` failed with ``error``: Retry-After, else full jitter."""
        if isinstance(error, RateLimitedError) and error.retry_after is not None:
            return error.retry_after
        return self.jitter(backoff_ceiling(attempt, self.base_delay, self.max_delay))

    def retry_after(self, response: httpx.Response) -> float | None:
        """The Retry-After header of a response, in seconds from now."""
        return parse_retry_after(response.headers.get("Retry-After"), self.clock())

    def request(
        self,
        method: str,
        url: str,
        *,
        classify: Classifier,
        idempotent: bool = True,
        **options: Unpack[RequestOptions],
    ) -> httpx.Response:
        """Send one logical request, retrying transient failures; raise the mapped error.

        ``idempotent=False`` (a write that creates something) retries only what surely did
        not reach the platform: a 429, or a connection that was never made. A timeout or a
        5xx after sending is raised at once as TransientError, because the write may have
        happened: the caller checks the platform (``find_published``) before sending again.
        """
        attempt = 0
        while True:
            attempt += 1
            self.attempts += 1
            unsent = False
            try:
                response = self.client.request(method, url, **options)
                error = classify(response)
            except httpx.ConnectError as exc:
                unsent = True
                if _refused(exc):
                    error = TransientError(f"connection refused: {exc}", code="connection_refused")
                    if not self.retry_refused:
                        raise error from exc
                else:
                    error = TransientError(f"connection error: {exc}", code="connection")
            except httpx.ConnectTimeout as exc:
                unsent = True
                error = TransientError(f"timeout: {exc}", code="timeout")
            except httpx.TimeoutException as exc:
                error = TransientError(f"timeout: {exc}", code="timeout")
            except httpx.TransportError as exc:
                error = TransientError(f"connection error: {exc}", code="connection")
            if error is None:
                return response
            if not isinstance(error, TransientError) or attempt >= self.max_attempts:
                raise error
            if not idempotent and not (unsent or isinstance(error, RateLimitedError)):
                raise error
            delay = self.delay_for(error, attempt)
            if delay > self.max_retry_after or self._stopped_waiting(delay):
                raise error

    def _stopped_waiting(self, delay: float) -> bool:
        """Wait ``delay`` seconds before a retry; whether the caller stopped meanwhile."""
        if self.stop is None:
            self.sleep(delay)
            return False
        return self.stop.wait(delay)


def _refused(exc: BaseException) -> bool:
    """Whether a connect error was the peer refusing (nothing listens on that port)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def parse_time(value: str | int | float) -> datetime:
    """An aware UTC datetime from ISO 8601 (Z, +00:00 or +0000) or Unix seconds."""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    text = value.strip().replace("Z", "+00:00")
    if re.search(r"[+-]\d{4}$", text):  # Graph API writes +0000
        text = f"{text[:-2]}:{text[-2:]}"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    """``items`` in consecutive batches of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def pages(
    fetch: Callable[[dict[str, Any]], Any],
    params: Mapping[str, Any],
    cursor: str,
    next_cursor: Callable[[Any], Any],
    items: str | None = None,
) -> Iterator[Any]:
    """Each page's body from ``fetch``, the next cursor sent as the ``cursor`` parameter,
    until a page names none (or, with ``items``, lists none)."""
    query = dict(params)
    while True:
        body = fetch(query)
        yield body
        after = next_cursor(body)
        if not after or (items is not None and not body.get(items)):
            return
        query = {**params, cursor: after}


def as_int(value: object) -> int | None:
    """An integer counter from a JSON value; None when absent (not reported is not zero)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float | str):
        try:
            return int(float(value))
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class ProfileFields:
    """The keys of a platform's profile object that an account snapshot is read from."""

    handle: str
    display_name: str
    followers: str
    following: str | None = None  # None: the platform does not report it
    posts_count: str | None = None
    thumbnail_url: str | None = None


class HttpConnector:
    """What the platform connectors share: base URL, token, the HTTP layer, non-fatal errors."""

    platform = ""

    def __init__(
        self,
        *,
        base_url: str,
        http: PlatformHttp | None = None,
        token: str | None = None,
        as_of: datetime | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http or PlatformHttp()
        self.token = token
        # Read the platform as it was at ``as_of`` (``?at=`` on every call): only the bundled
        # simulator answers that; it is how a new data directory gets its past captured.
        self.as_of = as_of
        # Per-item failures that did not stop a call (a deleted post in a metrics batch, a
        # metric the platform refused): the pipeline drains them into the batch's errors.
        self.errors: list[dict[str, str]] = []
        # The server's clock (its Date header) at the last response: snapshots are stamped with
        # it, so counters and their capture time come from the same source.
        self.server_time: datetime = self.http.clock()

    # The Connector protocol, implemented by each platform's subclass.

    def fetch_account(self, account: AccountRef) -> AccountSnapshot:
        """The account's profile and follower counts now."""
        raise NotImplementedError

    def list_posts(self, account: AccountRef, since: datetime | None) -> Iterator[PostRecord]:
        """The account's posts published since ``since`` (all when None), following pages."""
        raise NotImplementedError

    def fetch_metrics(
        self, account: AccountRef, external_ids: Sequence[str]
    ) -> Iterator[EngagementSnapshot]:
        """Current cumulative counters of these posts; missing metrics are None."""
        raise NotImplementedError

    def search_creators(self, query: str, limit: int) -> Iterator[AccountRef]:
        """Public creator accounts matching ``query`` (for creator rankings)."""
        raise NotImplementedError

    # What the readers return: the platform is the connector's, the capture time the server's.

    def account_snapshot(
        self,
        external_id: str,
        handle: str,
        display_name: str | None,
        followers: int | None,
        following: int | None = None,
        posts_count: int | None = None,
        *,
        thumbnail_url: str | None = None,
        url: str | None = None,
        category: str | None = None,
    ) -> AccountSnapshot:
        """The account as of the last response; its URL, unless given, its public page by handle."""
        return AccountSnapshot(
            platform=self.platform,
            external_id=external_id,
            handle=handle,
            display_name=display_name,
            followers=followers,
            following=following,
            posts_count=posts_count,
            captured_at=self.server_time,
            category=category,
            url=url or profile_url(self.platform, handle),
            thumbnail_url=thumbnail_url,
        )

    def profile_snapshot(
        self,
        account: AccountRef,
        external_id: str,
        profile: Mapping[str, Any],
        fields: ProfileFields,
        counts: Mapping[str, Any] | None = None,
    ) -> AccountSnapshot:
        """The snapshot of a profile object; its counters from ``counts`` where they are nested."""
        counters = profile if counts is None else counts

        def count(key: str | None) -> int | None:
            return None if key is None else as_int(counters.get(key))

        return self.account_snapshot(
            external_id,
            profile.get(fields.handle) or account.handle,
            profile.get(fields.display_name),
            count(fields.followers),
            count(fields.following),
            count(fields.posts_count),
            thumbnail_url=profile.get(fields.thumbnail_url) if fields.thumbnail_url else None,
        )

    def post_record(
        self,
        account: AccountRef,
        external_id: str,
        text: str | None,
        published_at: datetime,
        *,
        media_type: str | None,
        url: str | None,
        hashtags: tuple[str, ...] = (),
        thumbnail_url: str | None = None,
        deleted: bool = False,
    ) -> PostRecord:
        """One of the account's posts; without the platform's own hashtags, those of its text."""
        return PostRecord(
            platform=self.platform,
            external_id=external_id,
            account_external_id=account.external_id,
            text=text,
            published_at=published_at,
            hashtags=hashtags or hashtags_in(text),
            media_type=media_type,
            url=url,
            deleted=deleted,
            thumbnail_url=thumbnail_url,
        )

    def engagement(self, external_id: str, **counters: int | None) -> EngagementSnapshot:
        """A post's cumulative counters as of the last response (None: not reported)."""
        return EngagementSnapshot(self.platform, external_id, self.server_time, **counters)

    # Errors: every call's response goes through ``classify``.

    def classify(self, response: httpx.Response) -> ConnectorError | None:
        """None for a success; else the error the platform's answer stands for."""
        if response.status_code < 400:
            return None
        body = json_body(response)
        return self.classify_failure(response, body if isinstance(body, dict) else {})

    def classify_failure(
        self, response: httpx.Response, body: dict[str, Any]
    ) -> ConnectorError | None:
        """The error of a failed response, from its JSON object body ({} when it has none)."""
        return error_for_status(response)

    def rate_limited(
        self,
        response: httpx.Response,
        message: str,
        code: str | None,
        *,
        reset_header: str | None = None,
    ) -> RateLimitedError:
        """A 429: wait for Retry-After, else until the epoch second in ``reset_header``."""
        retry = self.http.retry_after(response)
        reset = response.headers.get(reset_header) if reset_header else None
        if retry is None and reset and reset.isdigit():
            retry = max(0.0, int(reset) - self.http.clock().timestamp())
        return RateLimitedError(message, retry_after=retry, status=response.status_code, code=code)

    def close(self) -> None:
        """Close the HTTP client's connections."""
        self.http.close()

    def token_for(self, account: AccountRef | None) -> str | None:
        """The account's own token when it has one, else the connector's."""
        if account is not None and account.access_token:
            return account.access_token
        return self.token

    def headers_for(self, account: AccountRef | None) -> dict[str, str]:
        """The headers carrying the token of :meth:`token_for`: a Bearer token, as most take it."""
        token = self.token_for(account)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def read(self, path: str, account: AccountRef | None, params: Any) -> Any:
        """GET ``path`` with the account's credentials, failures classified by the platform."""
        return self.get(path, self.classify, params, self.headers_for(account))

    def read_pages(
        self,
        path: str,
        account: AccountRef | None,
        params: Mapping[str, Any],
        cursor: str,
        next_cursor: Callable[[Any], Any],
        items: str | None = None,
    ) -> Iterator[Any]:
        """The :func:`pages` of :meth:`read` ``path`` with the account's credentials."""
        return pages(
            lambda query: self.read(path, account, query), params, cursor, next_cursor, items
        )

    def note(self, external_id: str, error: ConnectorError | str, code: str | None = None) -> None:
        """Record a failure that cost one item, not the call."""
        message = str(error)
        if isinstance(error, NotFoundError):
            code = code or "not_found"
        elif isinstance(error, ConnectorError):
            code = code or error.code or type(error).__name__
        self.errors.append(
            {
                "platform": self.platform,
                "external_id": external_id,
                "code": code or "error",
                "message": message,
            }
        )

    def note_missing(self, wanted: Iterable[str], seen: Container[str], message: str) -> None:
        """Record as not found each wanted item that a batch answer left out."""
        for missing in wanted:
            if missing not in seen:
                self.note(missing, message, "not_found")

    def take_errors(self) -> list[dict[str, str]]:
        """The recorded per-item failures, emptying the list."""
        taken, self.errors = self.errors, []
        return taken

    def get(
        self,
        path: str,
        classify: Classifier,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """GET ``path`` under the base URL and return its JSON body."""
        return self._request("GET", path, classify, params, headers)

    def post(
        self,
        path: str,
        classify: Classifier,
        body: Any,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """POST JSON to ``path`` under the base URL and return its JSON body."""
        return self._request("POST", path, classify, params, headers, json=body)

    def _request(
        self,
        method: str,
        path: str,
        classify: Classifier,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        json: Any = None,
    ) -> Any:
        """One call under the base URL, as of ``as_of``: the server's clock kept, its JSON body."""
        url, query = self._at(path, params)
        response = self.http.request(
            method, url, classify=classify, params=query, json=json, headers=headers
        )
        self.stamp(response)
        return json_body(response)

    def _at(self, path: str, params: Any) -> tuple[str, Any]:
        """The URL and query of a call, with ``at`` when reading as of the past."""
        url = self.base_url + path
        if self.as_of is None:
            return url, params
        at = self.as_of.astimezone(UTC).isoformat()
        if params is None:
            # Appended as text: a path may carry a query encoded as its API wants (LinkedIn's
            # Rest.li lists), which parsing and re-encoding would change.
            return f"{url}{'&' if '?' in path else '?'}at={quote(at, safe='')}", None
        # httpx replaces a URL's query with ``params``: the moment goes with them.
        if isinstance(params, Mapping):
            return url, {**params, "at": at}
        return url, [*params, ("at", at)]

    def stamp(self, response: httpx.Response) -> None:
        self.server_time = self.http.clock()
        date = response.headers.get("date")
        if date:
            try:
                parsed = parsedate_to_datetime(date)
            except (TypeError, ValueError, IndexError):
                return
            self.server_time = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(
                UTC
            )
