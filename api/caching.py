"""Serialized GET responses kept while the store is unchanged, with ETag and 304 for pollers.

A dashboard polls the same few reads; between two commits anywhere in the store (the
change token, warehouse/changes.py) their answers cannot differ, except for what depends
on the clock, which the caller puts in the key (analytics: the second, for
``freshness_seconds``). A hit costs no thread hop, no statement and no Pydantic work:
the ``data`` bytes are spliced into this request's envelope.

The ETag is a hash of the data without the fields named volatile (``freshness_seconds``
moves every second while the data does not), so a client sending ``If-None-Match`` gets
``304 Not Modified`` until the data itself changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from api.context import request_id_var
from api.deps import Context

JSON = "application/json"


@dataclass(frozen=True)
class Cached:
    data: bytes
    etag: str


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
                self._bytes -= len(old.data)
            self._entries[key] = value
            self._bytes += len(value.data)
            while self._bytes > self._max_bytes and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= len(evicted.data)


def _serialize(model: BaseModel, volatile: dict[str, Any] | None) -> Cached:
    data = model.model_dump_json(by_alias=True).encode()
    stable = model.model_dump_json(by_alias=True, exclude=volatile).encode() if volatile else data
    return Cached(data, 'W/"' + hashlib.blake2b(stable, digest_size=12).hexdigest() + '"')


async def cached_json(
    request: Request,
    ctx: Context,
    key: Hashable,
    build: Callable[[], BaseModel],
    *,
    volatile: dict[str, Any] | None = None,
) -> Response:
    """The success envelope of ``build()``, from the cache when the store has not changed."""
    cache: ResponseCache = request.app.state.responses
    full = (key, ctx.workspace_id, ctx.txn.token)
    found = cache.get(full) or await _build_once(cache, full, build, volatile)
    headers = {"ETag": found.etag}
    if found.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    body = b'{"success":true,"data":%b,"request_id":"%b"}' % (
        found.data,
        request_id_var.get().encode(),
    )
    return Response(body, media_type=JSON, headers=headers)


async def _build_once(
    cache: ResponseCache,
    key: Hashable,
    build: Callable[[], BaseModel],
    volatile: dict[str, Any] | None,
) -> Cached:
    """Build ``key``'s response, or wait for the build another request already started."""
    pending = cache.building.get(key)
    if pending is not None:
        return await asyncio.shield(pending)
    pending = asyncio.get_running_loop().create_future()
    cache.building[key] = pending
    try:
        found = await run_in_threadpool(_serialize_built, build, volatile)
    except BaseException as exc:
        pending.set_exception(exc)
        pending.exception()  # the waiters, if any, re-raise it; none is not an error
        raise
    finally:
        del cache.building[key]
    pending.set_result(found)
    cache.put(key, found)
    return found


def _serialize_built(build: Callable[[], BaseModel], volatile: dict[str, Any] | None) -> Cached:
    return _serialize(build(), volatile)
