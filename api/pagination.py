"""The page a list endpoint's query asks for, its cursor checked against the endpoint."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from domain.pagination import CursorCodec, PageRequest


async def page_request(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=100, description="Page size, 1 to 100.")] = 25,
    cursor: Annotated[
        str | None, Query(description="`next_cursor` of the previous page.", max_length=2048)
    ] = None,
) -> PageRequest:
    route = request.scope.get("route")
    endpoint = f"{request.method} {getattr(route, 'path', request.url.path)}"
    codec: CursorCodec = request.app.state.cursor_codec
    after = codec.decode(endpoint, cursor) if cursor else None
    return PageRequest(limit=limit, after=after, endpoint=endpoint, codec=codec)


PageParams = Annotated[PageRequest, Depends(page_request)]
