"""Import one file: read, validate fully, then write it as one ingest batch (all or nothing)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, Unpack

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from core.errors import MurmurError
from core.settings import Settings
from pipelines.importers import instagram, tweets, youtube
from pipelines.importers.common import Context, Parsed
from pipelines.importers.csvfile import CsvTable, check_encoding, file_digest, load
from warehouse import workspaces as ws_repo
from warehouse.ids import naive_utc
from warehouse.ingest import (
    BatchMeta,
    Overlap,
    batch_overlap,
    load_youtube_csv,
    write_frames,
    youtube_csv_columns,
)
from warehouse.rows import Cursor
from warehouse.store import Lakehouse


@dataclass(frozen=True)
class Format:
    """A file format: the columns it needs and how it becomes raw rows."""

    name: str
    required: Callable[[Sequence[str]], tuple[str, ...]]  # of the file's header
    parse: Callable[[CsvTable, Context], Parsed]
    platform: str


FORMATS = {
    f.name: f
    for f in (
        Format("youtube-trending", youtube.required, youtube.parse, "youtube"),
        Format("tweets", lambda _: tweets.REQUIRED, tweets.parse, "x"),
        Format("instagram-insights", lambda _: instagram.REQUIRED, instagram.parse, "instagram"),
    )
}
KINDS = ("own", "competitor", "creator")
# Whose data a format holds unless told (``kind=``, the CLI's ``--as``).
DEFAULT_KINDS = {"youtube-trending": "creator", "tweets": "creator", "instagram-insights": "own"}


class UnknownWorkspaceError(MurmurError, ValueError):
    """The workspace given does not exist."""


@dataclass
class ImportResult:
    """What an import read and wrote."""

    path: str
    format: str
    workspace_id: str
    batch_id: str
    encoding: str
    rows_read: int
    posts: int
    snapshots: int
    accounts: int
    duplicates_dropped: int
    conflicts_resolved: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    direct: bool = False  # read and loaded by DuckDB alone (docs/importers.md)
    # readings (post, instant) another batch holds too: staging keeps the latest ingest's
    overlap: Overlap = field(default_factory=lambda: Overlap(0, 0))


class ImportOptions(TypedDict, total=False):
    """How :func:`import_file` reads a file, which :func:`run_import` passes on as given."""

    kind: str | None
    account: str | None
    encoding: str | None
    progress: bool


def run_import(
    path: Path,
    fmt: str,
    *,
    settings: Settings,
    workspace_id: str | None,
    **options: Unpack[ImportOptions],
) -> ImportResult:
    """Import ``path`` as ``fmt`` into the store of ``settings`` (default: the test workspace)."""
    with settings.open_lakehouse() as store:
        return import_file(store, path, fmt, workspace_id=workspace_id, **options)


def import_file(
    store: Lakehouse,
    path: Path,
    fmt: str,
    *,
    workspace_id: str | None,
    kind: str | None = None,
    account: str | None = None,
    encoding: str | None = None,
    progress: bool = True,
) -> ImportResult:
    """Import ``path`` into an open store; raises ImportRejectedError having written nothing."""
    started = time.perf_counter()
    started_at = datetime.now(UTC)
    spec = FORMATS.get(fmt)
    if spec is None:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if encoding is not None:
        check_encoding(encoding)
    ws_id, own = store.publishing.run(
        lambda cur: _workspace(cur, workspace_id, spec.platform, account)
    )

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not progress,
        transient=False,
    )
    # Default owner per format: an Instagram insights export is the user's own account; the
    # public exports (trending lists, tweet collections) are other people's: creators.
    kind = kind or DEFAULT_KINDS[fmt]
    # The direct path files videos under their channels; an own export goes to the account.
    direct_ok = kind != "own" or own is None
    # The direct path reads UTF-8 only: a file with a named encoding is decoded by the
    # careful path, so --encoding holds whichever path a format has.
    if fmt == "youtube-trending" and encoding is None and direct_ok:
        fast = _youtube_direct(store, path, fmt, ws_id, kind, started, started_at)
        if fast is not None:
            return fast
    with bar:
        size = path.stat().st_size
        task = bar.add_task(f"reading {path.name}", total=size or 1)
        table = load(
            path,
            spec.required,
            encoding=encoding,
            on_progress=lambda n: bar.advance(task, n),
        )
        bar.update(task, description=f"checking {table.frame.height:,} rows")
        parsed = spec.parse(table, Context(kind=kind, own_account=own, now=started_at))
        bar.update(task, description="writing")
        meta = BatchMeta(
            id=f"import:{fmt}:{ws_id}:{table.digest[:16]}",
            workspace_id=ws_id,
            source=f"import:{fmt}",
            partition_key=None,
            started_at=naive_utc(started_at),
            errors=[{"kind": "note", "message": n} for n in table.notes + parsed.notes],
            origin=path.name,
        )
        counts = write_frames(store, meta, parsed.posts, parsed.snapshots, parsed.accounts)
        bar.update(task, description=f"imported {path.name}", completed=size or 1)
    return ImportResult(
        path=str(path),
        format=fmt,
        workspace_id=ws_id,
        batch_id=meta.id,
        encoding=table.encoding,
        rows_read=table.frame.height,
        posts=counts.posts,
        snapshots=counts.snapshots,
        accounts=counts.accounts,
        duplicates_dropped=parsed.duplicates_dropped,
        conflicts_resolved=parsed.conflicts_resolved,
        seconds=round(time.perf_counter() - started, 3),
        notes=table.notes + parsed.notes,
        overlap=batch_overlap(store, meta.id),
    )


def _youtube_direct(
    store: Lakehouse,
    path: Path,
    fmt: str,
    ws_id: str,
    kind: str | None,
    started: float,
    started_at: datetime,
) -> ImportResult | None:
    """A clean UTF-8 youtube-trending file, read and loaded by DuckDB alone (None: declined).

    The careful path (polars, csv module) costs ~4x DuckDB's own read_csv on large files
    (docs/performance.md); it still handles, and explains, everything this one declines.
    """
    columns = youtube_csv_columns(store, path)
    if columns is None:
        return None
    with ThreadPoolExecutor(max_workers=1) as pool:
        # hashlib releases the GIL: the digest (for the batch id) overlaps DuckDB's read.
        digest = pool.submit(file_digest, path)

        def meta() -> BatchMeta:
            return BatchMeta(
                id=f"import:{fmt}:{ws_id}:{digest.result()[:16]}",
                workspace_id=ws_id,
                source=f"import:{fmt}",
                partition_key=None,
                started_at=naive_utc(started_at),
                origin=path.name,
            )

        loaded = load_youtube_csv(
            store, path, columns, youtube.REQUIRED, youtube.CATEGORIES, kind or "creator", meta
        )
        if loaded is None:
            return None
    return ImportResult(
        path=str(path),
        format=fmt,
        workspace_id=ws_id,
        batch_id=meta().id,
        encoding="utf-8",
        rows_read=loaded.rows,
        posts=loaded.counts.posts,
        snapshots=loaded.counts.snapshots,
        accounts=loaded.counts.accounts,
        duplicates_dropped=0,
        conflicts_resolved=0,
        seconds=round(time.perf_counter() - started, 3),
        direct=True,
        overlap=batch_overlap(store, meta().id, loaded.span),
    )


def _workspace(
    cur: Cursor, workspace_id: str | None, platform: str, account: str | None
) -> tuple[str, tuple[str, str, str] | None]:
    from domain.workspaces.service import bootstrap_test_workspace

    if workspace_id is None:
        workspace_id = bootstrap_test_workspace(cur)
    elif ws_repo.get_workspace(cur, workspace_id) is None:
        raise UnknownWorkspaceError(f"no workspace {workspace_id!r}")
    rows = ws_repo.list_accounts(cur, workspace_id, platform=platform)
    if account is not None:
        rows = [r for r in rows if account in (r.id, r.handle, r.external_id)]
        if not rows:
            raise ValueError(f"workspace {workspace_id} has no {platform} account {account!r}")
    own = None
    if len(rows) == 1 or (rows and account is not None):
        row = rows[0]
        own = (row.id, row.external_id, row.handle)
    elif len(rows) > 1 and platform == "instagram":
        handles = ", ".join(r.handle for r in rows)
        raise ValueError(f"workspace {workspace_id} has several {platform} accounts ({handles})")
    return workspace_id, own
