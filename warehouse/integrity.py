"""Do the store's indexes agree with their tables? Checked at open, reported and repaired.

DuckDB 1.5.5 can serialize an ART index that misses rows when an engine replays a WAL that
another engine left behind and checkpoints it at shutdown (duckdb/duckdb#23788): lookups
through the index then find nothing while a scan finds the rows. Migration 0008 removed the
secondary indexes, which were the ones seen stale, and every open now checkpoints first
(docs/adr/0001-store.md, addendum); this module is the net under both. For each index it
compares, for a sample of key values, the count an equality lookup returns (which DuckDB
answers through the index) with the count a scan returns (``hash(...) = hash(...)`` is not
an index predicate), and rebuilds any index that disagrees.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import duckdb
import structlog

from warehouse.cursor import StoreCursor
from warehouse.errors import StoreError
from warehouse.rows import Cursor

log = structlog.get_logger(__name__)

# Key values checked per index at open: the newest rows are the ones a WAL replay re-inserts,
# so they are where a stale index shows first. ``murmur doctor`` checks more.
OPEN_SAMPLE = 8
# Key values per statement: one UNION ALL of equality lookups, each answered by the index.
_BATCH = 64


@dataclass(frozen=True)
class Index:
    """One ART index: a PRIMARY KEY or UNIQUE constraint's, or a secondary one."""

    table: str
    name: str
    kind: str  # "primary key" | "unique" | "index"
    columns: tuple[str, ...]
    types: tuple[str, ...]
    sql: str | None = None  # the CREATE INDEX statement of a secondary index


@dataclass
class Finding:
    """What checking one index found: values whose lookup and scan counts differ."""

    index: Index
    checked: int
    mismatches: list[tuple[tuple[Any, ...], int, int]] = field(default_factory=list)
    repaired: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def indexes(cur: Cursor) -> list[Index]:
    """Every ART index of the main schema: constraints' and secondary ones."""
    types = {
        (str(t), str(c)): str(dt)
        for t, c, dt in cur.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns()"
            " WHERE database_name = current_database() AND schema_name = 'main'"
        ).fetchall()
    }
    found = []
    for table, kind, name, columns in cur.execute(
        "SELECT table_name, constraint_type, constraint_name, constraint_column_names"
        " FROM duckdb_constraints() WHERE database_name = current_database()"
        " AND schema_name = 'main' AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
        " ORDER BY table_name, constraint_index"
    ).fetchall():
        cols = tuple(str(c) for c in columns)
        found.append(
            Index(
                str(table),
                str(name),
                str(kind).lower(),
                cols,
                tuple(types[(table, c)] for c in cols),
            )
        )
    for table, name, expressions, sql in cur.execute(
        "SELECT table_name, index_name, expressions, sql FROM duckdb_indexes()"
        " WHERE database_name = current_database() AND schema_name = 'main'"
        " ORDER BY table_name, index_name"
    ).fetchall():
        cols = tuple(str(e).strip('"') for e in _expressions(expressions))
        if all((table, c) in types for c in cols):  # expression indexes are not checked
            found.append(
                Index(
                    str(table),
                    str(name),
                    "index",
                    cols,
                    tuple(types[(table, c)] for c in cols),
                    sql,
                )
            )
    return found


def _expressions(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [part.strip() for part in str(value).strip("[]").split(",") if part.strip()]


def check_index(cur: Cursor, index: Index, sample: int) -> Finding:
    """Compare lookup and scan counts for the ``sample`` newest key values of one index."""
    cols = ", ".join(_q(c) for c in index.columns)
    table = _q(index.table)
    not_null = " AND ".join(f"{_q(c)} IS NOT NULL" for c in index.columns)
    values = [
        tuple(row)
        for row in cur.execute(
            f"SELECT DISTINCT {cols} FROM (SELECT {cols} FROM {table}"  # noqa: S608 - catalog names
            f" ORDER BY rowid DESC LIMIT ?) WHERE {not_null}",
            [sample],
        ).fetchall()
    ]
    finding = Finding(index, len(values))
    casts = ", ".join(f"?::{t}" for t in index.types)
    for start in range(0, len(values), _BATCH):
        batch = values[start : start + _BATCH]
        lookups = " UNION ALL ".join(
            f"SELECT {i} AS k, count(*) AS n FROM {table} WHERE "  # noqa: S608 - catalog names
            + " AND ".join(
                f"{_q(c)} = ?::{t}" for c, t in zip(index.columns, index.types, strict=True)
            )
            for i in range(len(batch))
        )
        by_index = dict(cur.execute(lookups, [v for key in batch for v in key]).fetchall())
        # A join on hash() of the columns is no index lookup: these counts come from a scan.
        rows = ", ".join(f"({i}, {casts})" for i in range(len(batch)))
        names = ", ".join(f"v{j}" for j in range(len(index.columns)))
        scanned = cur.execute(
            f"SELECT s.k, count(t.rowid) FROM (VALUES {rows}) s(k, {names})"  # noqa: S608 - catalog names
            f" LEFT JOIN {table} t ON hash({', '.join(f't.{_q(c)}' for c in index.columns)})"
            f" = hash({', '.join(f's.{n}' for n in names.split(', '))}) GROUP BY s.k",
            [v for key in batch for v in key],
        ).fetchall()
        for k, n_scan in scanned:
            n_index = int(by_index.get(k, 0))
            if n_index != int(n_scan):
                finding.mismatches.append((batch[int(k)], n_index, int(n_scan)))
    return finding


def check(cur: Cursor, sample: int = OPEN_SAMPLE) -> list[Finding]:
    """Check every index against its table; findings for each, mismatching or not."""
    return [check_index(cur, index, sample) for index in indexes(cur)]


def repair_script(cur: Cursor, index: Index) -> str:
    """The SQL that rebuilds one index (a constraint's: its whole table), to run atomically."""
    if index.kind == "index" and index.sql:
        return f"DROP INDEX {_q(index.name)};\n{index.sql}"
    # A constraint's index cannot be rebuilt alone: copy the table into a fresh one made by
    # its own DDL (constraints and column order included), then swap the names.
    row = cur.execute(
        "SELECT sql FROM duckdb_tables() WHERE database_name = current_database()"
        " AND schema_name = 'main' AND table_name = ?",
        [index.table],
    ).fetchone()
    assert row is not None
    old, new = _q(index.table), _q(index.table + "__rebuilt")
    ddl = str(row[0]).rstrip().rstrip(";")
    for spelling in (f"CREATE TABLE {index.table}(", f"CREATE TABLE {old}("):
        ddl = ddl.replace(spelling, f"CREATE TABLE {new}(", 1)
    return (
        f"{ddl};\nINSERT INTO {new} SELECT * FROM {old};\n"  # noqa: S608 - catalog names
        f"DROP TABLE {old};\nALTER TABLE {new} RENAME TO {old};"
    )


def repair(cur: Cursor, finding: Finding) -> None:
    """Rebuild an index that disagrees with its table, in one transaction."""
    script = repair_script(cur, finding.index)
    cur.execute("BEGIN TRANSACTION")
    try:
        cur.execute(script)
        cur.execute("COMMIT")
    except BaseException as exc:
        with contextlib.suppress(StoreError):
            cur.execute("ROLLBACK")
        finding.error = str(exc).splitlines()[0]
        raise
    finding.repaired = True


def check_and_repair(con: duckdb.DuckDBPyConnection, sample: int = OPEN_SAMPLE) -> list[Finding]:
    """Check every index; rebuild the ones that disagree, then check those again."""
    cur = StoreCursor(con)  # the engine's connection of a file just opened
    findings = check(cur, sample)
    for finding in findings:
        if finding.ok:
            continue
        log.warning(
            "store.index_stale",
            table=finding.index.table,
            index=finding.index.name,
            mismatches=len(finding.mismatches),
            example=repr(finding.mismatches[0]),
        )
        try:
            repair(cur, finding)
        except StoreError:
            log.error("store.index_repair_failed", index=finding.index.name, error=finding.error)
            continue
        log.warning("store.index_rebuilt", table=finding.index.table, index=finding.index.name)
    if any(f.repaired for f in findings):
        con.execute("CHECKPOINT")
    return findings
