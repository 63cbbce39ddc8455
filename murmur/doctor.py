"""``murmur doctor``: is the store sound? Both halves answer, SQLite's own checks, the lake's
files, file modes."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from murmur.settings import Settings
from warehouse.health import disk_full
from warehouse.lake.copy import lake_tables
from warehouse.lake.integrity import catalog_problems, damaged_files


@dataclass
class Report:
    """What the doctor found and what it repaired; ``healthy`` when nothing is left to do."""

    publishing: str = ""  # where the publishing database is, and its schema revision
    lake: str = ""  # where the lake is, and how many tables it holds
    problems: list[str] = field(default_factory=list)
    loose_files: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.problems and not self.loose_files


def _loose(data_dir: Path) -> list[Path]:
    return [
        path
        for path in [data_dir, *data_dir.rglob("*")]
        if not path.is_symlink() and stat.S_IMODE(path.lstat().st_mode) & 0o077
    ]


def examine(settings: Settings, *, repair: bool, deep: bool = False) -> Report:
    """Open both halves, run SQLite's integrity checks, check that every file of the lake's
    current snapshot is there and reads (``deep``: every row), check (and tighten) the files'
    modes."""
    report = Report()
    settings.ensure_dirs()  # makes the data directory owner-only again
    report.problems += catalog_problems(settings.lake)
    try:
        _examine_store(settings, report, deep=deep)
    except Exception as exc:  # reported: what the doctor is for
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if disk_full(settings.data_dir):
            first = f"disk full ({first})"
        report.problems.append(f"the store does not open or read: {first}")
    for path in _loose(settings.data_dir):
        if repair:
            path.chmod(0o700 if path.is_dir() else 0o600)
            report.repaired.append(f"made {path.relative_to(settings.data_dir.parent)} owner-only")
        else:
            report.loose_files.append(str(path.relative_to(settings.data_dir)))
    return report


def _examine_store(settings: Settings, report: Report, *, deep: bool) -> None:
    with settings.open_store() as store:
        engine = store.pub.engine
        report.publishing = (
            f"{engine.dialect.name} {engine.url.render_as_string(hide_password=True)},"
            f" revision {store.pub.revision()}"
        )
        report.problems += [
            f"publishing database: {line}" for line in store.pub.integrity_problems()
        ]
        with store.analytics() as cur:
            tables = lake_tables(cur.raw, alias="lake")  # type: ignore[arg-type]
            damaged = damaged_files(cur.raw, "lake", deep=deep)  # type: ignore[arg-type]
        report.lake = f"{store.lake.catalog}, {len(tables)} tables, files in {store.lake.data}"
        report.problems += [f"lake file: {damage}" for damage in damaged]
