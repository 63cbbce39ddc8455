"""Bodies and files the posts, media and approvals tests share."""

from __future__ import annotations

import io
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from PIL import Image

from tests.support import Api


# Uploads are verified as wholly of their type (api/posts/verify.py), so the files the tests
# upload are real ones: images made with Pillow, the MP4, WebM and PDF built by hand.
def image(
    fmt: str, size: tuple[int, int] = (32, 24), frames: int = 1, mode: str = "RGB", **save: object
) -> bytes:
    """An image of ``size`` in Pillow's format ``fmt``; PNG, GIF and WebP may be animated."""
    pictures = [
        Image.new(mode, size, (40 * index % 256, 120, 200 - 30 * index % 200))
        for index in range(frames)
    ]
    out = io.BytesIO()
    if frames > 1:
        save.update(save_all=True, append_images=pictures[1:], duration=100, loop=0)
    pictures[0].save(out, fmt, **save)
    return out.getvalue()


def box(kind: bytes, *payload: bytes) -> bytes:
    """One ISO-BMFF box: 32-bit size, type, payload."""
    body = b"".join(payload)
    return struct.pack(">I", 8 + len(body)) + kind + body


def mp4(brand: bytes = b"isom", mdat: bytes = bytes(64)) -> bytes:
    """A minimal MP4 (or MOV, brand ``qt  ``): ftyp, a moov with one video track, an mdat."""
    ftyp = box(b"ftyp", brand, struct.pack(">I", 512), brand, b"mp41")
    mvhd = box(b"mvhd", bytes(12), struct.pack(">II", 1000, 0), bytes(80), struct.pack(">I", 2))
    tkhd = box(b"tkhd", b"\x00\x00\x00\x03", bytes(80))
    mdhd = box(b"mdhd", bytes(12), struct.pack(">IIHH", 1000, 0, 0x55C4, 0))
    hdlr = box(b"hdlr", bytes(8), b"vide", bytes(12), b"VideoHandler\x00")
    stbl = box(
        b"stbl",
        box(b"stsd", bytes(8)),
        box(b"stts", bytes(8)),
        box(b"stsc", bytes(8)),
        box(b"stsz", bytes(12)),
        box(b"stco", bytes(8)),
    )
    minf = box(b"minf", box(b"vmhd", b"\x00\x00\x00\x01", bytes(8)), stbl)
    moov = box(b"moov", mvhd, box(b"trak", tkhd, box(b"mdia", mdhd, hdlr, minf)))
    return ftyp + moov + box(b"mdat", mdat)


def ebml(element: int, *payload: bytes) -> bytes:
    """One EBML element: its ID, an 8-byte size, its payload."""
    body = b"".join(payload)
    ident = element.to_bytes((element.bit_length() + 7) // 8, "big")
    return ident + (len(body) | 1 << 56).to_bytes(8, "big") + body


def webm() -> bytes:
    """A minimal WebM: EBML header, then a Segment with Info, one video track, one cluster."""
    header = ebml(0x1A45DFA3, ebml(0x4286, b"\x01"), ebml(0x4282, b"webm"), ebml(0x4287, b"\x04"))
    info = ebml(0x1549A966, ebml(0x2AD7B1, (1_000_000).to_bytes(3, "big")))
    track = ebml(
        0xAE,
        ebml(0xD7, b"\x01"),
        ebml(0x73C5, b"\x01"),
        ebml(0x83, b"\x01"),
        ebml(0x86, b"V_VP8"),
        ebml(0xE0, ebml(0xB0, b"\x10"), ebml(0xBA, b"\x10")),
    )
    cluster = ebml(0x1F43B675, ebml(0xE7, b"\x00"), ebml(0xA3, b"\x81\x00\x00\x80", bytes(32)))
    return header + ebml(0x18538067, info, ebml(0x1654AE6B, track), cluster)


def pdf(comment: bytes = b"") -> bytes:
    """A one-page PDF with a correct cross-reference table; ``comment`` goes after the header."""
    out = b"%PDF-1.4\n" + (b"%" + comment + b"\n" if comment else b"")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
    ]
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


PNG = image("PNG")
JPEG = image("JPEG")
GIF = image("GIF", frames=3)
WEBP = image("WEBP", frames=2)
MP4 = mp4()
MOV = mp4(b"qt  ")
WEBM = webm()
PDF = pdf()


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
