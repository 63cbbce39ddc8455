"""Uploads verified as wholly of their type, over real HTTP (issue 12, point 8).

Each refusal test pins one finding: HTML with `ftyp` at offset 4, a GIF/JS and a PDF/HTML
polyglot, garbage behind an MP4 header, no storage quota. Every refusal must leave neither a
file in the media directory nor a row behind. The files are generated here (Pillow, or box
by box), never shipped.
"""

from __future__ import annotations

import io
import random
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from api.errors import http_status
from api.posts.verify import verify
from core.errors import MurmurError
from core.settings import Settings
from murmur.logs import configure_logging
from tests.posts.helpers import (
    GIF,
    JPEG,
    MOV,
    MP4,
    PDF,
    PNG,
    WEBM,
    WEBP,
    box,
    image,
    mp4,
    pdf,
    upload,
)
from tests.support import LiveServer, Tenant, assert_error, new_tenant, start_server

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

MiB = 1024 * 1024
SCRIPT = b"<script>alert(document.domain)</script>"


def garbage(size: int, seed: int = 8) -> bytes:
    """Reproducible random bytes."""
    return random.Random(seed).randbytes(size)


def png_chunk(kind: bytes, body: bytes) -> bytes:
    """One PNG chunk: length, type, body, CRC."""
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def before_iend(png: bytes, *chunks: bytes) -> bytes:
    """A PNG with chunks inserted just before its IEND chunk (the last 12 bytes)."""
    return png[:-12] + b"".join(chunks) + png[-12:]


def refused(
    server: LiveServer,
    tenant: Tenant,
    content: bytes,
    issue: str,
    *,
    status: int = 415,
    code: str = "UNSUPPORTED_MEDIA_TYPE",
    name: str = "file.bin",
) -> dict[str, Any]:
    """Upload ``content``; expect the refusal, and no file and no row left behind."""
    before = set(server.settings.media_dir.iterdir())
    error = assert_error(upload(tenant.api, content, name=name), status, code)
    assert [(d["field"], d["issue"]) for d in error["details"]] == [("file", issue)], error
    assert set(server.settings.media_dir.iterdir()) == before
    assert tenant.api.list_all("/media") == []
    return error


# -- what must still be accepted ---------------------------------------------------------------


VALID = [
    pytest.param(PNG, "image", "image/png", id="png"),
    pytest.param(image("PNG", mode="RGBA"), "image", "image/png", id="png-rgba"),
    pytest.param(image("PNG", frames=3), "image", "image/png", id="apng"),
    pytest.param(JPEG, "image", "image/jpeg", id="jpeg"),
    pytest.param(image("JPEG", progressive=True), "image", "image/jpeg", id="jpeg-progressive"),
    pytest.param(image("MPO", frames=2), "image", "image/jpeg", id="jpeg-multi-picture"),
    pytest.param(image("GIF"), "image", "image/gif", id="gif"),
    pytest.param(GIF, "image", "image/gif", id="gif-animated"),
    pytest.param(image("WEBP", lossless=True), "image", "image/webp", id="webp-lossless"),
    pytest.param(WEBP, "image", "image/webp", id="webp-animated"),
    pytest.param(MP4, "video", "video/mp4", id="mp4"),
    pytest.param(MOV, "video", "video/quicktime", id="mov"),
    pytest.param(WEBM, "video", "video/webm", id="webm"),
    pytest.param(PDF, "document", "application/pdf", id="pdf"),
]


@pytest.mark.parametrize(("content", "kind", "content_type"), VALID)
def test_valid_files_upload(tenant: Tenant, content: bytes, kind: str, content_type: str) -> None:
    media = tenant.api.ok(upload(tenant.api, content, name="f.bin"), 201)
    assert (media["kind"], media["content_type"], media["size_bytes"]) == (
        kind,
        content_type,
        len(content),
    )


# -- the findings ----------------------------------------------------------------------------


def test_html_with_ftyp_at_offset_4_is_refused(server: LiveServer, tenant: Tenant) -> None:
    # Bytes 4-8 say `ftyp`, and the whole file is an HTML page a browser would render.
    page = b"<!--ftypisom--><html><body>" + SCRIPT + b"</body></html>\n"
    assert page[4:8] == b"ftyp"
    refused(server, tenant, page, "malformed", name="clip.mp4")


def test_mp4_header_followed_by_garbage_is_refused(server: LiveServer, tenant: Tenant) -> None:
    ftyp = box(b"ftyp", b"isom", bytes(4), b"isommp41")
    refused(server, tenant, ftyp + garbage(4 * MiB), "malformed", name="clip.mp4")
    # A whole, valid MP4 with the garbage after it: its boxes no longer chain to the end.
    refused(server, tenant, MP4 + garbage(4 * MiB), "malformed", name="clip.mp4")
    # Well-formed boxes but no movie in them.
    refused(server, tenant, ftyp + box(b"mdat", bytes(64)), "malformed", name="clip.mp4")


def test_gif_js_polyglot_is_refused(server: LiveServer, tenant: Tenant) -> None:
    # The classic: the logical screen's width opens a JS comment (`GIF89a/*`), the trailer
    # is followed by the script; as <script src> it runs, as <img> it shows.
    polyglot = GIF[:6] + b"/*" + GIF[8:] + b"*/=alert(document.domain);"
    refused(server, tenant, polyglot, "trailing_data", name="cat.gif")
    # The same payload inside the GIF, in a comment extension before the trailer.
    comment = b"\x21\xfe" + bytes([len(SCRIPT)]) + SCRIPT + b"\x00"
    refused(server, tenant, GIF[:-1] + comment + GIF[-1:], "polyglot", name="cat.gif")


def test_pdf_html_polyglot_is_refused(server: LiveServer, tenant: Tenant) -> None:
    # A valid PDF (its xref is right) whose first comment is an HTML page.
    page = pdf(b"<html><body>" + SCRIPT + b"</body></html>")
    refused(server, tenant, page, "polyglot", name="deck.pdf")
    # HTML after %%EOF: PDF readers stop at the trailer, browsers read on.
    refused(server, tenant, PDF + b"<html>" + SCRIPT + b"</html>", "trailing_data", name="deck.pdf")


def test_image_with_html_or_zip_inside_is_refused(server: LiveServer, tenant: Tenant) -> None:
    # Markup in a PNG text chunk: a well-formed, decodable PNG that is also an HTML page.
    text = png_chunk(b"tEXt", b"Comment\x00<html><body>" + SCRIPT + b"</body></html>")
    refused(server, tenant, before_iend(PNG, text), "polyglot", name="logo.png")
    # A ZIP in a private chunk, its comment field covering the IEND chunk after it: the file
    # opens as a PNG and as a ZIP archive.
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("index.html", "<p>hi</p>")
    body = archive.getvalue()[:-2] + struct.pack("<H", 12)
    both = before_iend(PNG, png_chunk(b"zzZz", body))
    assert zipfile.is_zipfile(io.BytesIO(both))
    refused(server, tenant, both, "polyglot", name="logo.png")
    # A PDF header in the first KiB of a JPEG (readers look for it there).
    jpeg_pdf = JPEG[:2] + b"\xff\xfe" + struct.pack(">H", 12) + b"%PDF-1.4\n " + JPEG[2:]
    refused(server, tenant, jpeg_pdf, "polyglot", name="photo.jpg")


def test_truncated_corrupt_and_padded_files(server: LiveServer, tenant: Tenant) -> None:
    refused(server, tenant, PNG[:-20], "malformed", name="logo.png")
    refused(server, tenant, JPEG + SCRIPT, "trailing_data", name="photo.jpg")
    refused(server, tenant, WEBP + bytes(100), "trailing_data", name="a.webp")
    refused(server, tenant, WEBM + garbage(1000), "trailing_data", name="a.webm")
    # Chunks well-formed (CRCs right) but image data that does not inflate: only decoding
    # finds it.
    ihdr = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
    bad = b"\x89PNG\r\n\x1a\n" + ihdr + png_chunk(b"IDAT", garbage(64)) + png_chunk(b"IEND", b"")
    refused(server, tenant, bad, "malformed", name="logo.png")
    # The fake files the tests used to upload: right first bytes, nothing behind them.
    refused(server, tenant, b"\x89PNG\r\n\x1a\n" + bytes(200), "malformed", name="logo.png")
    refused(server, tenant, b"%PDF-1.7\n" + bytes(200), "malformed", name="deck.pdf")
    # A few bytes of padding after an end marker are what some encoders write.
    tenant.api.ok(upload(tenant.api, JPEG + b"\x00\x00\r\n"), 201)


def test_decompression_bomb_is_refused(server: LiveServer, tenant: Tenant) -> None:
    # 81 megapixels of one bit each: a few KiB on the wire, 324 MiB once decoded as RGBA.
    out = io.BytesIO()
    Image.new("1", (9000, 9000)).save(out, "PNG")
    assert len(out.getvalue()) < 64 * 1024
    refused(
        server,
        tenant,
        out.getvalue(),
        "too_many_pixels",
        status=413,
        code="PAYLOAD_TOO_LARGE",
        name="bomb.png",
    )


def test_alt_text_takes_no_nul(server: LiveServer, tenant: Tenant) -> None:
    before = set(server.settings.media_dir.iterdir())
    error = assert_error(upload(tenant.api, PNG, alt_text="a\x00b"), 400, "VALIDATION_ERROR")
    assert [(d["field"], d["issue"]) for d in error["details"]] == [
        ("alt_text", "invalid_character")
    ]
    assert set(server.settings.media_dir.iterdir()) == before
    assert tenant.api.list_all("/media") == []


# -- the quota -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_quota() -> Iterator[LiveServer]:
    """A server whose workspaces may hold two copies of PNG, not three."""
    configure_logging()
    with tempfile.TemporaryDirectory() as data_dir:
        live = start_server(
            Settings(
                data_dir=Path(data_dir),
                media_quota_bytes_per_workspace=2 * len(PNG) + len(PNG) // 2,
            )
        )
        try:
            yield live
        finally:
            live.stop()


def test_workspace_media_quota(small_quota: LiveServer) -> None:
    tenant, other = new_tenant(small_quota), new_tenant(small_quota)
    try:
        first = upload(tenant.api, PNG, idempotency_key="first-upload")
        tenant.api.ok(first, 201)
        tenant.api.ok(upload(tenant.api, PNG), 201)
        before = set(small_quota.settings.media_dir.iterdir())
        error = assert_error(upload(tenant.api, PNG), 413, "PAYLOAD_TOO_LARGE")
        assert [(d["field"], d["issue"]) for d in error["details"]] == [("file", "quota_exceeded")]
        assert set(small_quota.settings.media_dir.iterdir()) == before
        assert len(tenant.api.list_all("/media")) == 2
        # A retry of a stored upload adds no bytes: it is replayed, full workspace or not.
        again = upload(tenant.api, PNG, idempotency_key="first-upload")
        assert (again.status_code, again.json()) == (201, first.json())
        assert again.headers["Idempotent-Replayed"] == "true"
        # The quota is per workspace: another one has room of its own.
        other.api.ok(upload(other.api, PNG), 201)
    finally:
        tenant.api.close()
        other.api.close()


# -- the parser on a big file ------------------------------------------------------------------


def test_parser_walks_a_big_mp4_without_reading_it(tmp_path: Path) -> None:
    # 600 MiB of mdat, sparse on disk: the box walk seeks past it.
    path = tmp_path / "big.mp4"
    head = mp4(mdat=b"")[:-8]  # everything up to the mdat box
    size = 600 * MiB
    with path.open("wb") as file:
        file.write(head + struct.pack(">I4sQ", 1, b"mdat", size - len(head)))
        file.truncate(size)
    verify(path, "video/mp4")
    with path.open("ab") as file:
        file.write(garbage(MiB))
    with pytest.raises(MurmurError) as refusal:
        verify(path, "video/mp4")
    assert (http_status(refusal.value), refusal.value.details[0].issue) == (415, "malformed")


def test_a_file_of_tiny_parts_is_refused(tmp_path: Path) -> None:
    # 1.1 million empty GIF extensions in 3.3 MiB: the walk stops at its budget of parts.
    path = tmp_path / "many.gif"
    path.write_bytes(GIF[:-1] + b"\x21\xfe\x00" * 1_100_000 + GIF[-1:])
    with pytest.raises(MurmurError) as refusal:
        verify(path, "image/gif")
    assert refusal.value.details[0].issue == "malformed"
    assert "parts" in refusal.value.message
