"""Media uploads: a multipart body streamed to disk, typed by its bytes, hashed on the way.

The body is never held in memory: the endpoint takes the raw ``Request`` (so FastAPI does not
parse the form) and feeds ``request.stream()`` to python-multipart's streaming parser, which
writes the ``file`` part to a temporary file in the media directory while a SHA-256 runs over
it. Once the part is complete, the file is verified as wholly of the type its first bytes
announced (api/posts/verify.py); that runs inside ``feed``, on the thread pool. The generic
idempotency claim would read the whole body to fingerprint it, so uploads claim their key
themselves once the file's digest is known.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from fastapi import Request
from python_multipart import MultipartParser
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import parse_options_header

from api.posts.verify import verify
from core.errors import ErrorDetail
from domain import text
from domain.errors import PayloadTooLarge, UnsupportedMediaType, ValidationFailed
from warehouse.files import sync_dir

MiB = 1024 * 1024
# Largest file of each kind, and of a whole upload body (the largest file plus the form).
SIZE_LIMITS = {"image": 20 * MiB, "video": 512 * MiB, "document": 100 * MiB}
BODY_LIMIT = 512 * MiB + MiB
MAX_ALT_TEXT = 1000
MAX_FILENAME = 255
_SNIFF_BYTES = 16
_IMAGE_BRANDS = {b"heic", b"heix", b"hevc", b"hevx", b"mif1", b"msf1", b"avif", b"avis"}
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")

OPENAPI_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": (
                                "JPEG, PNG, GIF or WebP image (20 MiB, 8192 x 8192 pixels), "
                                "MP4, MOV or WebM video (512 MiB), or PDF document (100 MiB); "
                                "typed by its bytes and verified as wholly of that type: its "
                                "structure parsed to the last byte, an image decoded, no other "
                                "format inside (415 otherwise). Counts against the workspace's "
                                "media quota (413 `quota_exceeded`)."
                            ),
                        },
                        "alt_text": {"type": "string", "maxLength": MAX_ALT_TEXT},
                    },
                }
            }
        },
    }
}


@dataclass(frozen=True)
class FileType:
    kind: str
    content_type: str
    extension: str


def sniff(head: bytes) -> FileType | None:
    """The type of a file from its first bytes (magic numbers), or None if not accepted."""
    if head.startswith(b"\xff\xd8\xff"):
        return FileType("image", "image/jpeg", "jpg")
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return FileType("image", "image/png", "png")
    if head.startswith((b"GIF87a", b"GIF89a")):
        return FileType("image", "image/gif", "gif")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return FileType("image", "image/webp", "webp")
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in _IMAGE_BRANDS:
            return None
        if brand == b"qt  ":
            return FileType("video", "video/quicktime", "mov")
        return FileType("video", "video/mp4", "mp4")
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return FileType("video", "video/webm", "webm")
    if head.startswith(b"%PDF-"):
        return FileType("document", "application/pdf", "pdf")
    return None


def clean_filename(raw: str | None) -> str | None:
    """The client's file name for display: no directories, no control characters, bounded."""
    if not raw:
        return None
    name = raw.replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE.sub("", name).strip()[:MAX_FILENAME]
    return name or None


def boundary_of(request: Request) -> bytes:
    content_type, params = parse_options_header(request.headers.get("content-type"))
    boundary = params.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise UnsupportedMediaType(
            "Upload with Content-Type multipart/form-data and a `file` field."
        )
    return boundary


class StreamedUpload:
    """Receives the multipart body chunk by chunk; only the file's head stays in memory."""

    def __init__(self, media_dir: Path, boundary: bytes) -> None:
        self.media_dir = media_dir
        self.temp_path = media_dir / f".upload-{uuid.uuid4().hex}.part"
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.body_size = 0
        self.head = b""
        self.type: FileType | None = None
        self.filename: str | None = None
        self.alt_text: bytes | None = None
        self._file: BinaryIO | None = None
        self._file_seen = False
        self._part: str | None = None
        self._header_name = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._part_begin,
                "on_header_field": self._header_field,
                "on_header_value": self._header_value_cb,
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
                "on_part_end": self._part_end,
            },
        )

    # -- parser callbacks ----------------------------------------------------------------

    def _part_begin(self) -> None:
        self._headers = {}
        self._part = None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _header_value_cb(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._header_name.lower()] = self._header_value
        self._header_name = self._header_value = b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        if name == "file":
            if self._file_seen:
                raise ValidationFailed.on("file", "duplicate", "Send one `file` per upload.")
            self._file_seen = True
            raw = options.get(b"filename")
            self.filename = clean_filename(raw.decode("utf-8", "replace") if raw else None)
            self._file = open(self.temp_path, "wb")  # noqa: SIM115 - closed in _part_end/discard
        elif name == "alt_text":
            self.alt_text = b""
        else:
            raise ValidationFailed.on(
                name or "body", "unknown_field", "Only `file` and `alt_text` are accepted."
            )
        self._part = name

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._part == "alt_text":
            assert self.alt_text is not None
            self.alt_text += chunk
            if len(self.alt_text) > 4 * MAX_ALT_TEXT:
                raise ValidationFailed.on(
                    "alt_text", "max_length", f"alt_text takes at most {MAX_ALT_TEXT} characters."
                )
            return
        if self._part != "file" or self._file is None:
            return
        self.size += len(chunk)
        if self.type is None and len(self.head) < _SNIFF_BYTES:
            self.head += chunk[: _SNIFF_BYTES - len(self.head)]
            if len(self.head) >= _SNIFF_BYTES:
                self._judge()
        if self.type is not None and self.size > SIZE_LIMITS[self.type.kind]:
            raise PayloadTooLarge(
                f"An {self.type.kind} may be at most {SIZE_LIMITS[self.type.kind] // MiB} MiB."
            )
        self.sha256.update(chunk)
        self._file.write(chunk)

    def _part_end(self) -> None:
        if self._part == "file" and self._file is not None:
            # On disk before the upload is acknowledged: a power cut must not bring it back empty.
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            if self.size == 0:
                return  # finish() answers `empty`
            if self.type is None:
                self._judge()
            assert self.type is not None
            verify(self.temp_path, self.type.content_type)

    def _judge(self) -> None:
        self.type = sniff(self.head)
        if self.type is None:
            message = (
                "The file is not a JPEG, PNG, GIF, WebP, MP4, MOV, WebM or PDF"
                " (judged from its bytes)."
            )
            raise UnsupportedMediaType(
                message, [ErrorDetail(field="file", issue="unknown_type", message=message)]
            )

    # -- driving -------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        self.body_size += len(chunk)
        if self.body_size > BODY_LIMIT:
            raise PayloadTooLarge(f"An upload body may be at most {BODY_LIMIT // MiB} MiB.")
        try:
            self._parser.write(chunk)
        except MultipartParseError as exc:
            raise ValidationFailed.on(
                "body", "invalid_multipart", "The multipart body is malformed."
            ) from exc

    def finish(self) -> tuple[FileType, str | None]:
        """The file's type and the alt text, once the whole body has arrived."""
        self._parser.finalize()
        if not self._file_seen or self._file is not None:
            raise ValidationFailed.on("file", "required", "The form needs a complete `file` part.")
        if self.size == 0:
            raise ValidationFailed.on("file", "empty", "The file is empty.")
        if self.type is None:
            self._judge()
        assert self.type is not None
        alt: str | None = None
        if self.alt_text is not None:
            try:
                alt = self.alt_text.decode("utf-8").strip() or None
            except UnicodeDecodeError as exc:
                raise ValidationFailed.on("alt_text", "invalid", "alt_text must be UTF-8.") from exc
            if alt is not None and len(alt) > MAX_ALT_TEXT:
                raise ValidationFailed.on(
                    "alt_text", "max_length", f"alt_text takes at most {MAX_ALT_TEXT} characters."
                )
            # Strict UTF-8 cannot carry a lone surrogate, but it can carry a NUL (domain/text.py).
            if alt is not None and not text.is_clean(alt):
                raise ValidationFailed.on("alt_text", text.ISSUE, text.MESSAGE)
        return self.type, alt

    def keep(self, media_id: str) -> str:
        """Move the file to its final name (ours, never the client's); returns the storage key."""
        assert self.type is not None
        storage_key = f"{media_id}.{self.type.extension}"
        os.replace(self.temp_path, self.media_dir / storage_key)
        sync_dir(self.media_dir)  # the new name, too, before the row that points at it
        return storage_key

    def discard(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        with contextlib.suppress(FileNotFoundError):
            self.temp_path.unlink()

    def fingerprint(self) -> str:
        """What the request asks for: the file's digest and its alt text."""
        alt = (self.alt_text or b"").decode("utf-8", "replace")
        return hashlib.sha256(f"{self.sha256.hexdigest()}\0{alt}".encode()).hexdigest()
