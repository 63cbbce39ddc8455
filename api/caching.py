"""Serialized GET responses kept while the store is unchanged, with ETag and 304 for pollers.

A dashboard polls the same few reads; between two commits anywhere in the store (the
change token, warehouse/changes.py) their answers cannot differ, except for what depends
on the clock. That part is of two kinds. What the data depends on (a range ending now
covers other buckets in the next hour or the next local day) goes into the key as an epoch:
a fixed period of the clock (``period``), or the span of it holding now (``window``: the
bucket of a zone's calendar, kept until it ends). What only describes the data
(``freshness_seconds``, the default range's bounds) is redrawn from the kept model at most
once a second (:meth:`Cached.data_at`), so a new second costs one serialization instead of
sending every read of that second down the full path. A hit costs no thread hop, no
statement and no Pydantic work: the ``data`` bytes are spliced into this request's envelope.

The ETag is a hash of the data without the fields named volatile (``freshness_seconds``
moves every second while the data does not), so a client sending ``If-None-Match`` gets
``304 Not Modified`` until the data itself changes.

A read answered here is also remembered by its raw request (:class:`FastReads`): the same
path, query string, key and workspace header again, under the same change token (and the
same epoch or window, for reads whose data depends on the clock), is answered by the edge
without routing, dependencies or the endpoint: what those would decide (the key, its
scope and workspace, the parsed arguments, the cache entry) cannot have changed, since
every change to keys, members or data is a write that replaces the token. The edge still
does per request what may differ: the key's expiry, its rate budget, the request id, the
access log and the metrics.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel
from starlette.types import Scope

from api.context import request_id_var
from api.deps import Context
from domain.workspaces.keys import ApiKey

JSON = "application/json"

# (path, raw query string, Authorization header, X-Workspace-Id header or None)
Signature = tuple[str, bytes, bytes, bytes | None]


# A model as of a moment (epoch seconds): its fields that only describe the clock redrawn.
Redraw = Callable[[Any, float], BaseModel]

DAY = 86_400


class Cached:
    """A serialized answer and its ETag; with ``redraw``, one whose clock fields follow now."""

    __slots__ = ("_data", "_model", "_redraw", "_second", "etag")

    def __init__(
        self,
        data: bytes,
        etag: str,
        *,
        model: BaseModel | None = None,
        redraw: Redraw | None = None,
        second: int = 0,
    ) -> None:
        self._data = data
        self.etag = etag
        self._model = model
        self._redraw = redraw
        self._second = second

    @property
    def size(self) -> int:
        """Bytes held, as built (a redraw changes a few digits, not the size's order)."""
        return len(self._data)

    def data_at(self, now: float) -> bytes:
        """The serialized data as of ``now`` (redrawn once per second, on the event loop)."""
        if self._redraw is None or self._model is None or int(now) == self._second:
            return self._data
        self._data = self._redraw(self._model, now).model_dump_json(by_alias=True).encode()
        self._second = int(now)
        return self._data


class ResponseCache:
    """An LRU of serialized responses keyed by (arguments, change token), ``max_bytes`` at most."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, Cached] = OrderedDict()
        # Builds under way, on the event loop's thread only: concurrent misses share one.
        self.building: dict[Hashable, asyncio.Future[Cached]] = {}

    def get(self, key: Hashable) -> Cached | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: Hashable, value: Cached) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._entries[key] = value
            self._bytes += value.size
            while self._bytes > self._max_bytes and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size


def _serialize(
    model: BaseModel,
    volatile: dict[str, Any] | None,
    redraw: Redraw | None,
    clock: float | None = None,
) -> Cached:
    """``clock``: an ``as_of`` read's fixed moment, its clock fields drawn there once."""
    now = time.time() if clock is None else clock
    if redraw is not None:
        # Drawn from one clock reading, as every later redraw is: the build read the clock
        # more than once (a default range's end, then the freshness).
        model = redraw(model, now)
    data = model.model_dump_json(by_alias=True).encode()
    stable = model.model_dump_json(by_alias=True, exclude=volatile).encode() if volatile else data
    etag = 'W/"' + hashlib.blake2b(stable, digest_size=12).hexdigest() + '"'
    if redraw is None or clock is not None:
        return Cached(data, etag)
    return Cached(data, etag, model=model, redraw=redraw, second=int(now))


@dataclass(frozen=True, slots=True)
class FastRead:
    """An answered read, and what answering the same request again needs."""

    token: bytes  # the change token the answer was read under
    period: int | None  # seconds per epoch, for answers whose data depends on the clock
    epoch: int  # the clock's epoch the answer was read in (with ``period``)
    cached: Cached
    key: ApiKey
    expires_at: float | None  # the key's expiry in epoch seconds
    bucket: str  # the key's read budget
    limit: int
    route: object  # the matched route, for the metrics' template
    until: float | None = None  # the answer's data holds until then (epoch seconds), if set


class FastReads:
    """Reads answered before, by raw request: the edge answers a repeat while they hold."""

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        # Touched on the event loop's thread only (endpoints and the edge): no lock.
        self._entries: dict[Signature, FastRead] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def remember(self, signature: Signature, entry: FastRead) -> None:
        entries = self._entries
        entries.pop(signature, None)
        entries[signature] = entry
        if len(entries) > self._size:  # oldest first: dicts keep insertion order
            del entries[next(iter(entries))]

    def lookup(self, signature: Signature, token: bytes, now: float) -> FastRead | None:
        """The answer to repeat, if the store, the clock's second and the key still allow it."""
        found = self._entries.get(signature)
        if found is None or found.token != token:
            return None
        if found.period is not None and found.epoch != int(now // found.period):
            return None
        if found.until is not None and now >= found.until:
            return None  # the clock left the span (a bucket) the answer's data was read for
        if found.expires_at is not None and found.expires_at <= now:
            return None  # the full path says why (401, expired)
        return found


def signature(scope: Scope) -> tuple[Signature, bytes | None] | None:
    """A GET's signature and its If-None-Match header; None without exactly one key."""
    authorization: bytes | None = None
    workspace: bytes | None = None
    if_none_match: bytes | None = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            if authorization is not None:
                return None  # which one counts is the full path's business
            authorization = value
        elif name == b"x-workspace-id":
            if workspace is not None:
                return None
            workspace = value
        elif name == b"if-none-match":
            if_none_match = value
    if authorization is None:
        return None
    return (scope["path"], scope["query_string"], authorization, workspace), if_none_match


async def cached_json(
    request: Request,
    ctx: Context,
    key: Hashable,
    build: Callable[[], BaseModel],
    *,
    volatile: dict[str, Any] | None = None,
    period: int | None = None,
    window: tuple[float, float] | None = None,
    redraw: Redraw | None = None,
) -> Response:
    """The success envelope of ``build()``, from the cache when the store has not changed.

    ``period``: the data depends on the clock (a default range ending now), so an answer is
    kept for that many seconds of the clock's epochs (``DAY``, or 1 for an exact moment).
    ``window``: the same for an uneven span of the clock ``[start, end)`` (epoch seconds) that
    holds now, such as the bucket of a local calendar holding it: kept until its end.
    ``redraw``: the model as of another moment, for fields that only describe the clock
    (freshness, a default range's bounds); they should be ``volatile`` too.

    A read ``as_of`` a past snapshot (``ctx.txn.as_of``) answers at that snapshot and its
    clock, both in its key: never the newest data's entry, nor one of another moment. Its
    clock does not move, so its clock fields are drawn once, at that moment; the edge repeats
    it until it leaves the lake's retention (then the full path says 400). ``build`` must
    then read the lake only (``cached_json``'s callers, unified analytics and viral trends).
    """
    cache: ResponseCache = request.app.state.responses
    now = time.time()
    epoch = int(now // period) if period else 0
    until = None
    clock = None
    moment: Hashable = epoch
    as_of = ctx.txn.as_of
    if as_of is not None:
        clock = as_of.clock.timestamp()
        period, epoch, moment = None, 0, ("as_of", as_of.id, clock)
        until = None if as_of.expires_at is None else as_of.expires_at.timestamp()
    elif window is not None:
        epoch, until = int(window[0]), window[1]
        moment = epoch
    # An answer as of a snapshot reads only that snapshot (these reads touch no publishing
    # table): it holds across later writes, so its entry is not the token's.
    full = (key, moment, ctx.workspace_id, ctx.txn.token if as_of is None else None)
    found = cache.get(full) or await _build_once(cache, full, build, volatile, redraw, clock)
    _remember(request, ctx, found, period, epoch, until)
    headers = {"ETag": found.etag}
    if found.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    body = envelope(found.data_at(now), request_id_var.get())
    return Response(body, media_type=JSON, headers=headers)


def _remember(
    request: Request,
    ctx: Context,
    found: Cached,
    period: int | None,
    epoch: int,
    until: float | None,
) -> None:
    """Let the edge answer this very request again while the store is unchanged."""
    fast: FastReads | None = getattr(request.app.state, "fast_reads", None)
    signed = signature(request.scope)
    if fast is None or signed is None or request.method != "GET":
        return
    key = ctx.key
    limit = key.read_rate_limit or request.app.state.settings.read_rate_limit
    fast.remember(
        signed[0],
        FastRead(
            token=ctx.txn.token,
            period=period,
            epoch=epoch,
            cached=found,
            key=key,
            expires_at=None if key.expires_at is None else key.expires_at.timestamp(),
            bucket=f"{key.id}:read",
            limit=limit,
            route=request.scope.get("route"),
            until=until,
        ),
    )


def envelope(data: bytes, request_id: str) -> bytes:
    """The success envelope around serialized ``data``."""
    return b'{"success":true,"data":%b,"request_id":"%b"}' % (data, request_id.encode())


async def _build_once(
    cache: ResponseCache,
    key: Hashable,
    build: Callable[[], BaseModel],
    volatile: dict[str, Any] | None,
    redraw: Redraw | None,
    clock: float | None = None,
) -> Cached:
    """Build ``key``'s response, or wait for the build another request already started."""
    pending = cache.building.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    pending = asyncio.get_running_loop().create_future()
    cache.building[key] = pending
    try:
        found = await run_in_threadpool(_serialize_built, build, volatile, redraw, clock)
    except BaseException as exc:
        pending.set_exception(exc)
        pending.exception()  # the waiters, if any, re-raise it; none is not an error
        raise
    finally:
        del cache.building[key]
    pending.set_result(found)
    cache.put(key, found)
    return found


def _serialize_built(
    build: Callable[[], BaseModel],
    volatile: dict[str, Any] | None,
    redraw: Redraw | None,
    clock: float | None = None,
) -> Cached:
    return _serialize(build(), volatile, redraw, clock)
