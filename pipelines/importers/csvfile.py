"""Reading a user's CSV export: encoding, structure, and problems named by their physical line.

Polars parses the whole file at once (every column as text); checks are vectorised
expressions. Only when something is wrong do we walk the file with Python's csv module,
whose ``line_num`` maps a row to the physical line it starts on, counting the header and
newlines inside quoted fields.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from core.errors import MurmurError

ROW = "__row"  # 0-based index of the record among the file's data records
_CHUNK = 8 << 20
# A byte sequence that is valid multi-byte UTF-8 (RFC 3629). A file holding both these and
# invalid bytes mixes encodings; one holding none of them is a legacy 8-bit file.
_UTF8_SEQ = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
FALLBACK_ENCODING = "cp1252"
# A time's trailing UTC offset, as ISO 8601 writes it (+00:00) or without the colon (+0000).
_OFFSET = r"[+-]\d{2}:?\d{2}$"


class ImportRejectedError(MurmurError, ValueError):
    """The file cannot be imported as it is; nothing was written."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        where = f"{file}, line {line}" if line is not None else file
        super().__init__(f"{where}: {problem}")
        self.file = file
        self.line = line
        self.problem = problem


@dataclass
class CsvTable:
    """A parsed file: every column as text, blank lines dropped, ROW numbering the records."""

    name: str
    text: bytes  # the file as UTF-8, as parsed
    frame: pl.DataFrame
    encoding: str
    digest: str
    size: int
    notes: list[str] = field(default_factory=list)

    def line_of(self, row: int) -> int:
        """The 1-based physical line on which data record ``row`` starts."""
        return _line_of_row(self.text.decode("utf-8"), row)

    def reject(self, row: int | None, problem: str) -> ImportRejectedError:
        """An error naming the line of ``row`` (None: the header, line 1).

        A record shorter than the header says so: its missing trailing fields were read as
        empty, which is what the problem is about, not a value the user can see on the line.
        """
        if row is None:
            return ImportRejectedError(self.name, 1, problem)
        line, fields, header = _record_at(self.text.decode("utf-8"), row)
        if fields < header:
            problem += (
                f" (the record has {fields} of the header's {header} fields; missing trailing"
                " fields are read as empty)"
            )
        return ImportRejectedError(self.name, line, problem)


def read_bytes(path: Path, on_progress: Callable[[int], None]) -> tuple[bytes, str]:
    """The file's bytes and their SHA-256, reporting progress in bytes."""
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            chunks.append(chunk)
            on_progress(len(chunk))
    return b"".join(chunks), digest.hexdigest()


def file_digest(path: Path) -> str:
    """The file's SHA-256, streamed (the direct path never holds the file in memory)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def load(
    path: Path,
    required: Callable[[Sequence[str]], Sequence[str]],
    *,
    encoding: str | None,
    on_progress: Callable[[int], None],
) -> CsvTable:
    """Read, decode and parse ``path``; check the header holds the ``required(header)`` columns."""
    raw, digest = read_bytes(path, on_progress)
    name = path.name
    notes: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if encoding is not None and not is_utf8(encoding):
        try:
            # A UTF-16/32 codec drops its BOM; an endian-specific one keeps it as U+FEFF.
            text = raw.decode(encoding).removeprefix("\ufeff").encode("utf-8")
        except (LookupError, UnicodeDecodeError) as exc:
            raise _encoding_error(name, raw, exc, encoding) from exc
        used = encoding
    else:
        text, used = _decode_auto(name, raw, forced=encoding is not None)
        if used != "utf-8":
            notes.append(f"not valid UTF-8; read as {used}")
    if not text.strip():
        raise ImportRejectedError(name, 1, "the file is empty")
    frame = _parse(name, text)
    frame = frame.rename({c: c.strip() for c in frame.columns})
    missing = [c for c in required(frame.columns) if c not in frame.columns]
    if missing:
        raise ImportRejectedError(
            name,
            1,
            f"missing required column(s) {', '.join(missing)} "
            f"(the header has: {', '.join(frame.columns)})",
        )
    frame = frame.with_row_index(ROW)
    # A blank line reads as a record of empty fields: skipped (after numbering, so ROW still
    # maps to the csv module's records). A record with fewer fields than the header reads
    # as empty trailing fields; the formats' checks reject the empty required ones.
    columns = [c for c in frame.columns if c != ROW]
    blank = pl.all_horizontal(pl.col(c) == "" for c in columns)
    frame = frame.filter(~blank)
    return CsvTable(name, text, frame, used, digest, len(raw), notes)


def check_encoding(encoding: str) -> str:
    """Python's name for ``encoding``; ValueError naming it if Python has no such codec."""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise ValueError(
            f"unknown encoding {encoding!r}; give one Python knows, e.g. utf-8, cp1252, latin-1"
            ", utf-16"
        ) from None


def is_utf8(encoding: str) -> bool:
    """Whether ``encoding`` reads as UTF-8 (ASCII is a subset): the checks that find mixes apply."""
    return check_encoding(encoding) in {"utf-8", "ascii"}


def _decode_auto(name: str, raw: bytes, *, forced: bool) -> tuple[bytes, str]:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if forced or _UTF8_SEQ.search(raw):
            # Valid UTF-8 elsewhere: guessing would garble one part or the other.
            raise _encoding_error(name, raw, exc, "utf-8", mixed=not forced) from exc
        try:
            return raw.decode(FALLBACK_ENCODING).encode("utf-8"), FALLBACK_ENCODING
        except UnicodeDecodeError as exc2:
            raise _encoding_error(name, raw, exc2, FALLBACK_ENCODING) from exc2
    return raw, "utf-8"


def _encoding_error(
    name: str, raw: bytes, exc: Exception, encoding: str, *, mixed: bool = False
) -> ImportRejectedError:
    if isinstance(exc, LookupError):
        return ImportRejectedError(name, None, f"unknown encoding {encoding!r}")
    assert isinstance(exc, UnicodeDecodeError)
    line = raw.count(b"\n", 0, exc.start) + 1
    byte = raw[exc.start : exc.start + 1].hex()
    problem = f"byte 0x{byte} is not valid {encoding}"
    if mixed:
        problem += (
            " while other lines are UTF-8 (the file mixes encodings); save it as UTF-8"
            " or name the file's encoding with --encoding (e.g. --encoding cp1252)"
        )
    return ImportRejectedError(name, line, problem)


def _parse(name: str, text: bytes) -> pl.DataFrame:
    try:
        return pl.read_csv(
            io.BytesIO(text),
            infer_schema=False,
            empty_string_is_null=False,
            quote_char='"',
            raise_if_empty=True,
        )
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        line, problem = _locate_structure_error(text.decode("utf-8"))
        if line is None:
            raise ImportRejectedError(name, None, f"not a readable CSV file: {exc}") from exc
        raise ImportRejectedError(name, line, problem) from exc


def _locate_structure_error(text: str) -> tuple[int | None, str]:
    """Walk the file with the csv module to find the first malformed record (error path)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        return 1, f"the header cannot be read ({exc})"
    start = reader.line_num + 1
    try:
        for record in reader:
            if record and len(record) != len(header):
                return start, f"expected {len(header)} fields, found {len(record)}"
            start = reader.line_num + 1
    except csv.Error as exc:
        return start, f"malformed quoting ({exc})"
    return None, ""


def _record_at(text: str, row: int) -> tuple[int, int, int]:
    """Data record ``row``: the line it starts on, its field count and the header's."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = len(next(reader))
    start = reader.line_num + 1
    for index, record in enumerate(reader):
        if index == row:
            return start, len(record), header
        start = reader.line_num + 1
    return start, header, header


def _line_of_row(text: str, row: int) -> int:
    reader = csv.reader(io.StringIO(text, newline=""))
    next(reader)
    start = reader.line_num + 1
    for index, _ in enumerate(reader):
        if index == row:
            return start
        start = reader.line_num + 1
    return start


# -- vectorised checks ---------------------------------------------------------------------


@dataclass
class Problems:
    """Problems found by the checks; the earliest in the file is the one reported."""

    found: list[tuple[int, str]] = field(default_factory=list)

    def check(
        self, frame: pl.DataFrame, bad: pl.Expr, describe: Callable[[str], str], col: str
    ) -> None:
        """Record the first row where ``bad`` holds, described from its raw value of ``col``."""
        hit = frame.lazy().filter(bad).select(ROW, pl.col(col)).head(1).collect()
        if hit.height:
            self.found.append((int(hit[ROW][0]), describe(str(hit[col][0]))))

    def raise_first(self, table: CsvTable) -> None:
        if self.found:
            row, problem = min(self.found)
            raise table.reject(row, problem)


def whole_number(frame: pl.DataFrame, col: str, problems: Problems) -> pl.Expr:
    """``col`` as Int64 (empty → NULL: not reported); non-numbers and negatives are problems."""
    text = pl.col(col).str.strip_chars()
    value = text.cast(pl.Int64, strict=False)
    problems.check(
        frame,
        (text != "") & value.is_null(),
        lambda v: f"column {col!r}: {v!r} is not a whole number",
        col,
    )
    problems.check(frame, value < 0, lambda v: f"column {col!r}: {v!r} is negative", col)
    return pl.when(text == "").then(None).otherwise(value).alias(col)


def required_text(frame: pl.DataFrame, col: str, problems: Problems) -> pl.Expr:
    """``col`` stripped; an empty value is a problem."""
    text = pl.col(col).str.strip_chars()
    problems.check(frame, text == "", lambda _v: f"column {col!r} is empty", col)
    return text.alias(col)


def timestamp(
    frame: pl.DataFrame,
    col: str,
    formats: Sequence[str],
    problems: Problems,
    *,
    required: bool,
) -> pl.Expr:
    """``col`` parsed with the first of ``formats`` that fits, as naive UTC Datetime."""
    text = pl.col(col).str.strip_chars()
    # Newer exports end times with a UTC offset (+00:00, +0200, -05:00): each format with a
    # time reads one too, converted to UTC. A date-only format reads midnight.
    with_time = [f for f in formats if "%H" in f]
    # Offset variants cost a parse of the column each: tried only when some value ends in one.
    offsets = bool(with_time) and bool(frame.select(text.str.contains(_OFFSET).any()).item())
    tried = [text.str.strptime(pl.Datetime("us"), f, strict=False, exact=True) for f in formats]
    if offsets:
        tried += [
            text.str.strptime(pl.Datetime("us"), f + "%z", strict=False, exact=True)
            .dt.convert_time_zone("UTC")
            .dt.replace_time_zone(None)
            for f in with_time
            if not f.endswith(("Z", "%z"))
        ]
    parsed = pl.coalesce(tried)
    shown = " or ".join(formats)
    if with_time:
        shown += " (a time may end with a UTC offset such as +00:00)"
    problems.check(
        frame,
        (text != "") & parsed.is_null(),
        lambda v: f"column {col!r}: {v!r} is not a date in the form {shown}",
        col,
    )
    if required:
        problems.check(frame, text == "", lambda _v: f"column {col!r} is empty", col)
    return pl.when(text == "").then(None).otherwise(parsed).alias(col)
