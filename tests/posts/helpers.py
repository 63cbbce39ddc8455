"""Bodies and files the posts, media and approvals tests share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.support import Api

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(200)
JPEG = b"\xff\xd8\xff\xe0" + bytes(200)
MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(200)
PDF = b"%PDF-1.7\n" + bytes(200)


def future(hours: int = 24) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def post_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"text": "Launch day!", "platforms": ["linkedin"]}
    body.update(overrides)
    return body


def upload(
    api: Api,
    content: bytes,
    *,
    name: str = "photo.png",
    content_type: str = "image/png",
    alt_text: str | None = None,
    **kw: Any,
) -> httpx.Response:
    form = {"alt_text": alt_text} if alt_text is not None else None
    return api.post("/media/upload", files={"file": (name, content, content_type)}, data=form, **kw)


def create_post(api: Api, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = api.ok(api.post("/posts", json=post_body(**overrides)), 201)
    return data


def upload_id(api: Api, content: bytes = PNG, **kw: Any) -> str:
    media: dict[str, Any] = api.ok(upload(api, content, **kw), 201)
    return str(media["id"])
