"""Uploads checked as wholly of their type, not just by their first bytes.

Magic bytes only say how a file starts. A file is kept when its whole structure parses and
ends where the file ends (PNG chunks to IEND, GIF blocks to the trailer, JPEG segments to
EOI, WebP's RIFF chunks, MP4/MOV boxes, WebM's EBML elements, PDF's trailer), an image also
decodes completely under a pixel cap, and no other format's signature is inside it (HTML or
script markup, a PDF header in the first KiB, a ZIP directory at the end): those are what
would let another program read the same bytes as something else (a polyglot).
"""

from __future__ import annotations

import mmap
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from core.errors import ErrorDetail
from domain.errors import DomainError, PayloadTooLarge, UnsupportedMediaType

# A few bytes of padding after a format's end marker (NULs, line ends) are what some
# encoders write; anything more, or anything else, is content no decoder of the type reads.
TRAILING_TOLERANCE = 16
# X's maximum (8,192 x 8,192), the largest any target platform takes; a decoded RGBA frame
# of that size is 256 MiB, which bounds what one decode holds.
IMAGE_MAX_PIXELS = 8192 * 8192
# Every frame of an animation is decoded; this bounds the work one upload can ask for.
ANIMATION_MAX_PIXELS = 1 << 29
# Parts (chunks, blocks, segments, boxes, elements) one walk may visit: a million, or one per
# 256 bytes of a larger file. Legitimate files stay far below (a GIF's sub-blocks are 255
# bytes, a video's frames kilobytes); a crafted file of tiny parts is refused after a few
# seconds of CPU at most (about 1.5 s a million).
MAX_PARTS = 1_000_000
PART_BYTES = 256
# Decoding is CPU-bound and memory-heavy: two at a time bound the memory to 2 x 256 MiB
# however many uploads arrive together.
_DECODING = threading.BoundedSemaphore(2)

_PADDING = b"\x00\t\n\r\x0c "
# Markup that makes a file also an HTML page or a script. Tags of four letters and more,
# followed by a delimiter, so that compressed data matches by chance about once in 2**41
# positions: never in practice for an image or a PDF, scanned whole. Video payloads are
# up to 25 times larger, so only their first and last MiB are scanned, where sniffers and
# other formats' readers look.
_MARKUP = re.compile(
    rb"<(?:script|html|body|iframe|object|embed|frameset|!doctype\s+html|\?php)[\s/>]",
    re.IGNORECASE,
)
_VIDEO_WINDOW = 1024 * 1024
# PDF readers accept their header anywhere in the first KiB.
_PDF_MAGIC_WINDOW = 1024
_ZIP_END = b"PK\x05\x06"
_ZIP_DIRECTORY = b"PK\x01\x02"
_ZIP_END_SIZE = 22


def _refuse(issue: str, message: str) -> UnsupportedMediaType:
    return UnsupportedMediaType(message, [ErrorDetail(field="file", issue=issue, message=message)])


def _too_many_pixels(message: str) -> PayloadTooLarge:
    return PayloadTooLarge(
        message, [ErrorDetail(field="file", issue="too_many_pixels", message=message)]
    )


class _Malformed(Exception):
    """The structure of the file breaks at some point (turned into a 415 by ``verify``)."""


class _Parts:
    """Counts the parts a walk visits, and stops it past its limit."""

    def __init__(self, size: int) -> None:
        self.limit = self.left = max(MAX_PARTS, size // PART_BYTES)

    def count(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _Malformed(f"it has more than {self.limit:,} parts")


Walker = Callable[[mmap.mmap, _Parts], int]


@dataclass(frozen=True)
class _Format:
    name: str
    walk: Walker  # returns the offset where the format's own data ends
    pillow: str | None = None  # Pillow's name of the format, for images
    pillow_also: frozenset[str] = frozenset()  # what else Pillow may call the same format
    tolerance: int = TRAILING_TOLERANCE
    whole_scan: bool = True  # scan every byte for markup, or only the ends


# -- images --------------------------------------------------------------------------------


def _png(data: mmap.mmap, parts: _Parts) -> int:
    pos = 8
    first = True
    while True:
        parts.count()
        length, kind = struct.unpack_from(">I4s", data, pos)
        end: int = pos + 12 + length
        if length > 0x7FFFFFFF or end > len(data):
            raise _Malformed(f"the chunk at offset {pos} runs past the end of the file")
        if not kind.isalpha() or (first and kind != b"IHDR"):
            raise _Malformed(f"no PNG chunk (or no IHDR first) at offset {pos}")
        (crc,) = struct.unpack_from(">I", data, end - 4)
        if zlib.crc32(data[pos + 4 : end - 4]) != crc:
            raise _Malformed(f"the {kind.decode()} chunk at offset {pos} fails its CRC")
        first = False
        pos = end
        if kind == b"IEND":
            return pos


def _color_table(flags: int) -> int:
    """Bytes of a GIF colour table announced by a descriptor's packed flags."""
    return 3 * (2 << (flags & 7)) if flags & 0x80 else 0


def _gif_sub_blocks(data: mmap.mmap, pos: int, parts: _Parts) -> int:
    while True:
        parts.count()
        size = data[pos]
        pos += 1 + size
        if size == 0:
            return pos


def _gif(data: mmap.mmap, parts: _Parts) -> int:
    pos = 13 + _color_table(data[10])
    images = 0
    while True:
        parts.count()
        block = data[pos]
        if block == 0x3B:  # trailer
            if not images:
                raise _Malformed("the GIF has no image")
            return pos + 1
        if block == 0x21:  # extension: label, then sub-blocks
            pos = _gif_sub_blocks(data, pos + 2, parts)
        elif block == 0x2C:  # image descriptor, local colour table, LZW code size, data
            pos += 10 + _color_table(data[pos + 9])
            pos = _gif_sub_blocks(data, pos + 1, parts)
            images += 1
        else:
            raise _Malformed(f"no GIF block at offset {pos}")


_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


# In entropy-coded data 0xFF is followed by 0x00 (a stuffed byte) or a restart marker; any
# other byte after it starts the next marker (0xFF itself: fill before one).
_JPEG_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7]")


def _jpeg_entropy_end(data: mmap.mmap, pos: int) -> int:
    """Where a scan's entropy-coded data ends: at the next marker that is not a restart."""
    found = _JPEG_MARKER.search(data, pos)
    if found is None:
        raise _Malformed("a scan runs to the end of the file without EOI")
    return found.start()


def _jpeg_image(data: mmap.mmap, pos: int, parts: _Parts) -> tuple[int, bool]:
    """Where the JPEG whose SOI ends at pos ends, and whether it declares more images (MPF)."""
    frame = scan = multi = False
    while True:
        parts.count()
        if data[pos] != 0xFF:
            raise _Malformed(f"no JPEG marker at offset {pos}")
        while data[pos] == 0xFF:  # fill bytes may precede a marker
            pos += 1
        marker = data[pos]
        pos += 1
        if marker == 0xD9:  # EOI
            if not (frame and scan):
                raise _Malformed("the JPEG ends before a frame and a scan")
            return pos, multi
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:  # markers without a length
            continue
        if marker in (0x00, 0xD8):
            raise _Malformed(f"a misplaced JPEG marker at offset {pos - 2}")
        (length,) = struct.unpack_from(">H", data, pos)
        if length < 2 or pos + length > len(data):
            raise _Malformed(f"the segment at offset {pos - 2} runs past the end of the file")
        frame = frame or marker in _JPEG_FRAMES
        multi = multi or (marker == 0xE2 and data[pos + 2 : pos + 6] == b"MPF\x00")
        pos += length
        if marker == 0xDA:  # start of scan: entropy-coded data follows its header
            scan = True
            pos = _jpeg_entropy_end(data, pos)


def _jpeg(data: mmap.mmap, parts: _Parts) -> int:
    end, multi = _jpeg_image(data, 2, parts)
    # A Multi-Picture file (MPF: phones' HDR gain maps, stereo pairs) is JPEGs end to end,
    # the first one's APP2 segment indexing the others: each must be whole too.
    while multi and data[end : end + 3] == b"\xff\xd8\xff":
        end, _ = _jpeg_image(data, end + 2, parts)
    return end


def _webp(data: mmap.mmap, parts: _Parts) -> int:
    (riff_size,) = struct.unpack_from("<I", data, 4)
    end: int = 8 + riff_size
    if end > len(data):
        raise _Malformed("the RIFF container claims more bytes than the file has")
    pos = 12
    while pos < end:
        parts.count()
        kind, size = struct.unpack_from("<4sI", data, pos)
        if pos == 12 and kind not in (b"VP8 ", b"VP8L", b"VP8X"):
            raise _Malformed("the WebP does not start with a VP8, VP8L or VP8X chunk")
        pos += 8 + size + (size & 1)
    if pos != end:
        raise _Malformed("the last WebP chunk runs past the RIFF container")
    return end


# -- video ---------------------------------------------------------------------------------

# ISO-BMFF brands of video files (major or compatible). HEIC/AVIF brands are refused when
# sniffing already; an ftyp naming none of these is not a video we know.
_MP4_BRANDS = frozenset(
    {
        b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6", b"iso7", b"iso8", b"iso9",
        b"mp41", b"mp42", b"avc1", b"av01", b"M4V ", b"M4VH", b"M4VP", b"qt  ", b"3gp4",
        b"3gp5", b"3gp6", b"3g2a", b"dash", b"cmfc", b"msnv", b"MSNV", b"XAVC", b"f4v ",
        b"mmp4",
    }
)  # fmt: skip


def _is_box_type(kind: bytes) -> bool:
    # Printable ASCII, and the (c) sign Apple's metadata boxes use.
    return all(0x20 <= b <= 0x7E or b == 0xA9 for b in kind)


def _boxes(
    data: mmap.mmap, start: int, end: int, parts: _Parts
) -> Iterator[tuple[bytes, int, int]]:
    """(type, payload start, box end) of each ISO-BMFF box from start, chaining to end exactly."""
    pos = start
    while pos < end:
        parts.count()
        if end - pos < 8:
            raise _Malformed(f"{end - pos} stray bytes at offset {pos}, too few for a box")
        size, kind = struct.unpack_from(">I4s", data, pos)
        header = 8
        if size == 1:  # a 64-bit size follows the type
            (size,) = struct.unpack_from(">Q", data, pos + 8)
            header = 16
        elif size == 0:  # the box extends to the end of its container
            size = end - pos
        if not _is_box_type(kind) or size < header or size > end - pos:
            raise _Malformed(
                f"the bytes at offset {pos} are not a box that fits in the {end - pos} left"
            )
        yield kind, pos + header, pos + size
        pos += size


def _children(
    data: mmap.mmap, start: int, end: int, kind: bytes, parts: _Parts
) -> Iterator[tuple[int, int]]:
    for child, child_start, child_end in _boxes(data, start, end, parts):
        if child == kind:
            yield child_start, child_end


def _has_video_track(data: mmap.mmap, start: int, end: int, parts: _Parts) -> bool:
    for trak in _children(data, start, end, b"trak", parts):
        for mdia in _children(data, *trak, b"mdia", parts):
            for hdlr_start, _ in _children(data, *mdia, b"hdlr", parts):
                # version and flags, pre_defined, then the handler type
                if data[hdlr_start + 8 : hdlr_start + 12] == b"vide":
                    return True
    return False


def _mp4(data: mmap.mmap, parts: _Parts) -> int:
    ftyp: list[tuple[int, int]] = []
    moov: list[tuple[int, int]] = []
    for index, (kind, start, end) in enumerate(_boxes(data, 0, len(data), parts)):
        if kind == b"ftyp":
            if index:
                raise _Malformed("the file does not start with its one ftyp box")
            ftyp.append((start, end))
        elif not index:
            raise _Malformed("the file does not start with an ftyp box")
        elif kind == b"moov":
            moov.append((start, end))
    start, end = ftyp[0]
    if end - start < 8 or (end - start) % 4:
        raise _Malformed("the ftyp box is malformed")
    brands = {data[start : start + 4]} | {data[at : at + 4] for at in range(start + 8, end, 4)}
    if not brands & _MP4_BRANDS:
        raise _Malformed("the ftyp box names no known video brand")
    if len(moov) != 1:
        raise _Malformed("the file has no moov box (or more than one)")
    if not _has_video_track(data, *moov[0], parts):
        raise _Malformed("the movie has no video track")
    return len(data)


_EBML = 0x1A45DFA3
_DOC_TYPE = 0x4282
_SEGMENT = 0x18538067
_INFO, _TRACKS, _CLUSTER = 0x1549A966, 0x1654AE6B, 0x1F43B675
_ATTACHMENTS = 0x1941A469
_TRACK_ENTRY, _TRACK_TYPE = 0xAE, 0x83
_VOID, _CRC32 = 0xEC, 0xBF
# The Segment's children WebM allows (Matroska's Attachments are not among them).
_TOP_LEVEL = frozenset({0x114D9B74, _INFO, _TRACKS, _CLUSTER, 0x1C53BB6B, 0x1043A770, 0x1254C367})
_CLUSTER_CHILDREN = frozenset({0xE7, 0x5854, 0xA7, 0xAB, 0xA3, 0xA0, 0xAF, _VOID, _CRC32})


def _ebml_id(data: mmap.mmap, pos: int) -> tuple[int, int]:
    """An element ID (marker bits kept, as specs write them) and its length."""
    first = data[pos]
    length = 9 - first.bit_length()
    if not 1 <= length <= 4:
        raise _Malformed(f"no EBML element ID at offset {pos}")
    return int.from_bytes(data[pos : pos + length], "big"), length


def _ebml_size(data: mmap.mmap, pos: int) -> tuple[int | None, int]:
    """An element's data size (None: unknown, to its parent's end) and the size's length."""
    first = data[pos]
    length = 9 - first.bit_length()
    if not 1 <= length <= 8:
        raise _Malformed(f"no EBML size at offset {pos}")
    raw = int.from_bytes(data[pos : pos + length], "big") & ((1 << (7 * length)) - 1)
    return (None if raw == (1 << (7 * length)) - 1 else raw), length


def _ebml_element(
    data: mmap.mmap, pos: int, end: int, parts: _Parts
) -> tuple[int, int, int | None]:
    """(ID, data start, data end or None when the size is unknown) of the element at pos."""
    parts.count()
    element, id_length = _ebml_id(data, pos)
    size, size_length = _ebml_size(data, pos + id_length)
    start = pos + id_length + size_length
    if start > end or (size is not None and start + size > end):
        raise _Malformed(f"the element at offset {pos} runs past its parent")
    return element, start, None if size is None else start + size


def _ebml_children(
    data: mmap.mmap, start: int, end: int, parts: _Parts
) -> Iterator[tuple[int, int, int]]:
    pos = start
    while pos < end:
        element, child_start, child_end = _ebml_element(data, pos, end, parts)
        if child_end is None:
            raise _Malformed(f"the element at offset {pos} has an unknown size")
        yield element, child_start, child_end
        pos = child_end


def _cluster_end(data: mmap.mmap, pos: int, end: int, parts: _Parts) -> int:
    """Where a cluster of unknown size (as live recorders write) ends: at the next top level."""
    while pos < end:
        element, _, child_end = _ebml_element(data, pos, end, parts)
        if element in _TOP_LEVEL or element == _ATTACHMENTS:
            return pos
        if element not in _CLUSTER_CHILDREN or child_end is None:
            raise _Malformed(f"an element a cluster cannot hold at offset {pos}")
        pos = child_end
    return pos


def _webm_has_video(data: mmap.mmap, start: int, end: int, parts: _Parts) -> bool:
    for entry, entry_start, entry_end in _ebml_children(data, start, end, parts):
        if entry == _TRACK_ENTRY:
            for field, field_start, field_end in _ebml_children(
                data, entry_start, entry_end, parts
            ):
                if field == _TRACK_TYPE and int.from_bytes(data[field_start:field_end]) == 1:
                    return True
    return False


def _webm(data: mmap.mmap, parts: _Parts) -> int:
    n = len(data)
    element, start, header_end = _ebml_element(data, 0, n, parts)
    if element != _EBML or header_end is None:
        raise _Malformed("the file does not start with an EBML header")
    doc_types = [
        data[child_start:child_end].rstrip(b"\x00")
        for child, child_start, child_end in _ebml_children(data, start, header_end, parts)
        if child == _DOC_TYPE
    ]
    if doc_types != [b"webm"]:
        raise _Malformed("the EBML header's DocType is not webm")
    element, pos, segment_end = _ebml_element(data, header_end, n, parts)
    if element != _SEGMENT:
        raise _Malformed("no Segment follows the EBML header")
    segment_end = n if segment_end is None else segment_end
    seen: set[int] = set()
    video = False
    while pos < segment_end:
        element, child_start, child_end = _ebml_element(data, pos, segment_end, parts)
        if element == _ATTACHMENTS:
            raise _Malformed("WebM carries no attachments (they can hold any file)")
        if element not in _TOP_LEVEL and element not in (_VOID, _CRC32):
            raise _Malformed(f"an element a Segment cannot hold at offset {pos}")
        if child_end is None:
            if element != _CLUSTER:
                raise _Malformed(f"the element at offset {pos} has an unknown size")
            child_end = _cluster_end(data, child_start, segment_end, parts)
        if element == _TRACKS:
            video = video or _webm_has_video(data, child_start, child_end, parts)
        seen.add(element)
        pos = child_end
    if not {_INFO, _TRACKS} <= seen or not video:
        raise _Malformed("the Segment has no Info, no Tracks or no video track")
    return segment_end


# -- documents -------------------------------------------------------------------------------

_PDF_HEADER = re.compile(rb"%PDF-[12]\.[0-9]")
_PDF_TRAILER = re.compile(rb"startxref\s+([0-9]{1,15})\s+%%EOF")
_PDF_XREF = re.compile(rb"\s*(?:xref|[0-9]+\s+[0-9]+\s+obj)")
# Readers look for the trailer in the last KiB.
_PDF_TAIL = 1024


def _pdf(data: mmap.mmap, _parts: _Parts) -> int:
    if not _PDF_HEADER.match(data, 0):
        raise _Malformed("the PDF header is not %PDF-1.x or %PDF-2.x")
    # The last trailer is the file's: incremental updates append theirs.
    trailers = list(_PDF_TRAILER.finditer(data, max(0, len(data) - _PDF_TAIL)))
    if not trailers:
        raise _Malformed("the PDF does not end with startxref and %%EOF")
    trailer = trailers[-1]
    offset = int(trailer.group(1))
    if offset >= len(data) or not _PDF_XREF.match(data, offset):
        raise _Malformed("startxref does not point at a cross-reference section")
    return trailer.end()


_FORMATS: dict[str, _Format] = {
    "image/png": _Format("PNG", _png, pillow="PNG"),
    "image/gif": _Format("GIF", _gif, pillow="GIF"),
    "image/jpeg": _Format("JPEG", _jpeg, pillow="JPEG", pillow_also=frozenset({"MPO"})),
    "image/webp": _Format("WebP", _webp, pillow="WEBP"),
    "video/mp4": _Format("MP4", _mp4, tolerance=0, whole_scan=False),
    "video/quicktime": _Format("MOV", _mp4, tolerance=0, whole_scan=False),
    "video/webm": _Format("WebM", _webm, tolerance=0, whole_scan=False),
    "application/pdf": _Format("PDF", _pdf),
}


# -- foreign content -----------------------------------------------------------------------


def _has_zip_directory(data: mmap.mmap) -> bool:
    """Whether a ZIP reader would open the file: an end record whose directory is in place."""
    floor = max(0, len(data) - _ZIP_END_SIZE - 0xFFFF)  # the end record's comment is < 64 KiB
    pos = data.rfind(_ZIP_END, floor)
    while pos >= 0:
        if pos + _ZIP_END_SIZE <= len(data):
            directory_size, _, comment = struct.unpack_from("<IIH", data, pos + 12)
            if directory_size == 0:
                if pos + _ZIP_END_SIZE + comment == len(data):
                    return True  # an empty archive
            # Readers find the directory just before the end record, whatever the offsets
            # say (they tolerate bytes prepended to the archive).
            elif directory_size <= pos:
                directory = pos - directory_size
                if data[directory : directory + len(_ZIP_DIRECTORY)] == _ZIP_DIRECTORY:
                    return True
        pos = data.rfind(_ZIP_END, floor, pos + len(_ZIP_END) - 1)
    return False


def _foreign(data: mmap.mmap, content_type: str, fmt: _Format) -> str | None:
    """What else the file would pass for, if anything."""
    if fmt.whole_scan:
        markup = _MARKUP.search(data)
    else:
        markup = _MARKUP.search(data, 0, _VIDEO_WINDOW) or _MARKUP.search(
            data, max(0, len(data) - _VIDEO_WINDOW)
        )
    if markup is not None:
        return f"HTML or script markup at offset {markup.start()}"
    if content_type != "application/pdf" and data.find(b"%PDF-", 0, _PDF_MAGIC_WINDOW) >= 0:
        return "a PDF header in its first KiB"
    if _has_zip_directory(data):
        return "a ZIP archive's directory at its end"
    return None


# -- decoding ----------------------------------------------------------------------------------


def _check_pixels(size: tuple[int, int], name: str) -> None:
    width, height = size
    if width * height > IMAGE_MAX_PIXELS:
        raise _too_many_pixels(
            f"The {name} is {width} x {height} pixels; at most {IMAGE_MAX_PIXELS:,} are taken."
        )


def _decode(path: Path, fmt: _Format) -> None:
    """Decode every frame of the image with Pillow, the sniffed format only, under the caps."""
    assert fmt.pillow is not None
    try:
        with _DECODING:
            with Image.open(path, formats=[fmt.pillow]) as image:
                if image.format != fmt.pillow and image.format not in fmt.pillow_also:
                    raise _refuse("malformed", f"The file does not decode as a {fmt.name}.")
                _check_pixels(image.size, fmt.name)
                image.verify()
            with Image.open(path, formats=[fmt.pillow]) as image:
                frames = getattr(image, "n_frames", 1)
                width, height = image.size
                if frames * width * height > ANIMATION_MAX_PIXELS:
                    raise _too_many_pixels(
                        f"The {fmt.name} has {frames} frames of {width} x {height} pixels;"
                        f" at most {ANIMATION_MAX_PIXELS:,} pixels in all are taken."
                    )
                for frame in range(frames):
                    image.seek(frame)
                    _check_pixels(image.size, fmt.name)  # a frame may enlarge a GIF's canvas
                    image.load()
    except DomainError:
        raise
    except Image.DecompressionBombError as exc:
        raise _too_many_pixels(f"The {fmt.name} has too many pixels.") from exc
    # Whatever the decoder raises (OSError, SyntaxError, ValueError, EOFError, zlib.error…)
    # means the same thing here: the bytes are not a whole image of this type.
    except Exception as exc:
        raise _refuse("malformed", f"The file does not decode as a {fmt.name}.") from exc


# -- entry point -------------------------------------------------------------------------------


def verify(path: Path, content_type: str) -> None:
    """Refuse the file (415, or 413 for too many pixels) unless it is wholly ``content_type``."""
    fmt = _FORMATS[content_type]
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        try:
            end = fmt.walk(data, _Parts(len(data)))
        except _Malformed as exc:
            raise _refuse("malformed", f"The file is not a well-formed {fmt.name}: {exc}.") from exc
        except (IndexError, struct.error) as exc:
            raise _refuse("malformed", f"The {fmt.name} ends before its structure does.") from exc
        rest = len(data) - end
        if rest > fmt.tolerance or data[end:].strip(_PADDING):
            raise _refuse(
                "trailing_data",
                f"{rest} bytes follow the end of the {fmt.name} at offset {end}; no decoder"
                " of the type reads them.",
            )
        other = _foreign(data, content_type, fmt)
        if other is not None:
            raise _refuse("polyglot", f"The {fmt.name} also holds {other}.")
    if fmt.pillow is not None:
        _decode(path, fmt)
