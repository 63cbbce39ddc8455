"""Is the lake whole? Its catalog's own check, and every file its current snapshot names.

A truncated or lost Parquet file, a damaged page inside one, or a catalog SQLite calls
malformed, used to go unseen until a read or a run failed on it. ``damaged_files`` names
each bad file with its table and the days it holds (from the catalog's column statistics);
``first_damaged_file`` is the cheap form the readiness probe asks (each local file's
presence and size). A check that fails on a full disk says so, never that the lake is
damaged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from warehouse.errors import DiskFullError
from warehouse.health import disk_full
from warehouse.lake import Lake
from warehouse.lake.copy import lake_tables

# How long SQLite's check of the catalog may take before the check itself is the problem.
CHECK_SECONDS = 120.0
_CHECK = """
import sqlite3, sys
try:
    con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    pragma = "quick_check" if sys.argv[2] == "quick_check" else "integrity_check"
    print("\\n".join(str(row[0]) for row in con.execute(f"PRAGMA {pragma}")))
except sqlite3.DatabaseError as exc:
    print(exc)
"""
# The column whose statistics say which days a file holds, in order of preference.
_DAY_COLUMNS = ("day", "captured_at", "published_at", "started_at", "computed_at")


@dataclass(frozen=True)
class Damage:
    """One file of the current snapshot that is not as the catalog says."""

    table: str
    path: str
    problem: str
    first: date | None = None  # the first and last days it holds, from the catalog's statistics
    last: date | None = None

    @property
    def days(self) -> str | None:
        """The days it holds: "2025-03-01..2025-03-06", or one day."""
        if self.first is None or self.last is None:
            return None
        return str(self.first) if self.first == self.last else f"{self.first}..{self.last}"

    def __str__(self) -> str:
        held = f", holding {self.days}" if self.days else ""
        return f"{self.table}: {self.path} {self.problem}{held}"


def catalog_problems(lake: Lake, *, quick: bool = False) -> list[str]:
    """SQLite's own check of an embedded catalog; a PostgreSQL catalog answers for itself.

    Raises ``DiskFullError`` when the check fails on a full disk: SQLite cannot open a WAL
    database without room for its shared-memory file ("disk I/O error"), which is no damage.
    """
    if lake.kind != "sqlite":
        return []
    path = Path(lake.catalog.split(":", 1)[1])
    if not path.exists():
        return []  # a lake not created yet: the first writer creates it
    # In a process of its own: this one may hold the catalog through DuckDB's copy of SQLite,
    # whose POSIX locks closing Python's copy would drop (ADR 0002).
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            _CHECK,
            str(path),
            "quick_check" if quick else "integrity_check",
        ],
        capture_output=True,
        text=True,
        timeout=CHECK_SECONDS,
    )
    found = [line for line in done.stdout.splitlines() if line]
    if done.returncode == 0 and found == ["ok"]:
        return []
    if disk_full(path.parent):
        said = found[0] if found else done.stderr.strip()[-300:]
        raise DiskFullError(f"the lake's catalog {path.name} could not be checked ({said})")
    return [f"the lake's catalog {path.name} is damaged: {line}" for line in found[:10]] or [
        f"the lake's catalog {path.name} could not be checked: {done.stderr.strip()[-300:]}"
    ]


def damaged_files(
    con: duckdb.DuckDBPyConnection, alias: str = "lake", *, deep: bool = False
) -> list[Damage]:
    """Every file of the current snapshot that is missing, of another size, or unreadable.

    Each file's footer is read; ``deep`` decodes every column of every row of it as well.
    """
    days = _days_by_file(con, alias)
    found: list[Damage] = []
    # The files are read on a connection of their own: a failed read aborts the transaction
    # it is in, and ``con`` may be in one (the catalog's reads after it would fail).
    with con.cursor() as reader:
        for table in lake_tables(con, alias):
            for path, size in _files(con, alias, table):
                problem = _size_problem(reader, path, size) or _read_problem(
                    reader, path, deep=deep
                )
                if problem is not None:
                    held = days.get(os.path.basename(path), (None, None))
                    found.append(Damage(table, path, problem, *held))
    return found


def current_snapshot(con: duckdb.DuckDBPyConnection, alias: str = "lake") -> int:
    """The lake's latest snapshot id: its files change only with it."""
    row = con.execute(
        f"SELECT max(snapshot_id) FROM __ducklake_metadata_{alias}.ducklake_snapshot"  # noqa: S608
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def snapshot_files(
    con: duckdb.DuckDBPyConnection, alias: str = "lake"
) -> list[tuple[str, str, int | None]]:
    """Every data and delete file of the current snapshot: (table, path, size)."""
    return [
        (table, path, size)
        for table in lake_tables(con, alias)
        for path, size in _files(con, alias, table)
    ]


def first_damaged_file(files: list[tuple[str, str, int | None]]) -> str | None:
    """The readiness probe's look at the lake: the first local file of ``snapshot_files``
    that is missing or of another size than the catalog says, by its table (the probe is
    public: no path). Nothing is read: the doctor reads, and names the file."""
    for table, path, size in files:
        problem = _local_problem(path, size)
        if problem is not None:
            return f"a file of {table} {problem} (`murmur doctor` names it)"
    return None


def _files(con: duckdb.DuckDBPyConnection, alias: str, table: str) -> list[tuple[str, int | None]]:
    """The data and delete files of ``table`` in the current snapshot, with their sizes."""
    rows = con.execute(
        "SELECT data_file, data_file_size_bytes, delete_file, delete_file_size_bytes"
        " FROM ducklake_list_files(?, ?)",
        [alias, table],
    ).fetchall()
    files: list[tuple[str, int | None]] = []
    for data_file, data_size, delete_file, delete_size in rows:
        files.append((str(data_file), data_size))
        if delete_file is not None:
            files.append((str(delete_file), delete_size))
    return files


def _local_problem(path: str, size: int | None) -> str | None:
    """A local file's presence and size against the catalog's (object stores are read)."""
    if "://" in path:
        return None
    try:
        actual = os.stat(path).st_size
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    if size is not None and actual != size:
        return f"has {actual:,} bytes where the catalog says {size:,}"
    return None


def _size_problem(reader: duckdb.DuckDBPyConnection, path: str, size: int | None) -> str | None:
    """A file's presence and size against the catalog's: a local file's by its metadata, an
    object's by the store's listing of it (its bytes are not fetched)."""
    if "://" not in path:
        return _local_problem(path, size)
    try:
        # Only the size is asked for: DuckDB fetches no content of the object.
        row = reader.execute("SELECT size FROM read_blob(?)", [path]).fetchone()
    except duckdb.Error as exc:
        text = str(exc)
        if "404" in text or "no files found" in text.lower():
            return "is missing"
        return f"cannot be read: {text.splitlines()[0] if text else type(exc).__name__}"
    if row is None:
        return "is missing"
    actual = int(row[0])
    if size is not None and actual != size:
        return f"has {actual:,} bytes where the catalog says {size:,}"
    return None


def _read_problem(con: duckdb.DuckDBPyConnection, path: str, *, deep: bool) -> str | None:
    """Whether the file reads: its footer, or with ``deep`` every page of every column."""
    try:
        if deep:
            # A count, even of ``SELECT *``, is answered from the footer's row counts: no
            # page is read, and a damaged one goes unseen. A hash of each column's every
            # value has no statistic to answer it: each page is fetched and decoded.
            con.execute("SELECT bit_xor(hash(COLUMNS(*))) FROM read_parquet(?)", [path])
        else:
            con.execute("SELECT count(*) FROM parquet_metadata(?)", [path])
        con.fetchall()
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # The file is named beside the problem already.
        first = first.replace(f'Failed to read file "{path}": ', "")
        return f"does not read: {first}"
    return None


def _days_by_file(con: duckdb.DuckDBPyConnection, alias: str) -> dict[str, tuple[date, date]]:
    """Each current data file's name and the first and last days it holds, by its day
    column's min and max."""
    meta = f"__ducklake_metadata_{alias}"
    rows = con.execute(
        "SELECT f.path, c.column_name, s.min_value, s.max_value"  # noqa: S608 - the alias is ours
        f" FROM {meta}.ducklake_data_file f"
        f" JOIN {meta}.ducklake_file_column_stats s USING (data_file_id, table_id)"
        f" JOIN {meta}.ducklake_column c ON c.table_id = s.table_id AND c.column_id = s.column_id"
        " WHERE f.end_snapshot IS NULL AND c.end_snapshot IS NULL AND c.column_name IN"
        f" ({', '.join('?' for _ in _DAY_COLUMNS)})",
        list(_DAY_COLUMNS),
    ).fetchall()
    best: dict[str, tuple[int, date, date]] = {}
    for path, column, low, high in rows:
        if low is None or high is None:
            continue
        rank = _DAY_COLUMNS.index(str(column))
        name = os.path.basename(str(path))
        if name not in best or rank < best[name][0]:
            best[name] = (
                rank,
                date.fromisoformat(str(low)[:10]),
                date.fromisoformat(str(high)[:10]),
            )
    return {name: (first, last) for name, (_, first, last) in best.items()}
