"""``murmur doctor``: is the store sound? Both halves answer, SQLite's own checks, the lake's
files, file modes; with ``repair``, loose modes tightened and damaged lake files mended
(murmur/repair.py). A full disk is said as such: checks failing on it are no damage."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from core.settings import Settings
from domain.analytics import publishing as reliability
from murmur.repair import pending, repair_lake
from warehouse.errors import DiskFullError
from warehouse.health import disk_full
from warehouse.ids import utcnow
from warehouse.lake.copy import lake_tables
from warehouse.lake.integrity import Damage, catalog_problems, damaged_files


@dataclass
class Report:
    """What the doctor found and what it repaired; ``healthy`` when nothing is left to do."""

    publishing: str = ""  # where the publishing database is, and its schema revision
    lake: str = ""  # where the lake is, and how many tables it holds
    problems: list[str] = field(default_factory=list)
    loose_files: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    # What publishing needs an operator for, though the store is sound: destinations stuck past
    # twice their lease, tokens expiring within 7 days (the lines /readyz gives; no exit 1).
    warnings: list[str] = field(default_factory=list)

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
    current snapshot is there and reads (``deep``: every page), check the files' modes; with
    ``repair``, tighten the modes and mend the lake (damaged files out, raw ones moved aside,
    derived days rebuilt), then check the lake again."""
    report = Report()
    settings.ensure_dirs()  # makes the data directory owner-only again
    # On a full disk SQLite cannot open a WAL database nor DuckDB write, and each check
    # fails or passes by the bytes another process frees meanwhile: none of it is damage,
    # and a repair (or a restore) would only lose writes.
    full = disk_full(settings.data_dir)
    catalog: list[str] = []
    if not full:
        try:
            catalog = catalog_problems(settings.lake)
        except DiskFullError:
            full = True
    if full:
        report.publishing = report.lake = "not opened: the disk is full"
        report.problems.append(full_disk(settings, "murmur doctor"))
        _modes(settings, report, repair=repair)
        return report
    if catalog:
        # Not mended here: the catalog is the lake's only record of which file holds what.
        more = f" (and {len(catalog) - 1} more)" if len(catalog) > 1 else ""
        report.problems.append(f"{catalog[0]}{more}; restore a backup: `murmur restore`")
    damaged: list[Damage] = []
    try:
        damaged = _examine_store(settings, report, deep=deep, read_lake=not catalog)
    except Exception as exc:  # reported: what the doctor is for
        report.problems.append(f"the store does not open or read: {_first_line(exc, settings)}")
    else:
        if repair and not catalog and (damaged or pending(settings)):
            try:
                outcome = repair_lake(settings, damaged)
                report.repaired += outcome.repaired
                report.problems += outcome.problems
                damaged = _damaged(settings, deep=deep)
            except Exception as exc:  # reported; the next doctor resumes from its plan
                report.problems.append(
                    f"the lake's repair stopped: {_first_line(exc, settings)};"
                    " `murmur doctor` again resumes it"
                )
        elif pending(settings):
            report.problems.append("a repair of the lake was left unfinished: `murmur doctor`")
    report.problems += [f"lake file: {damage}" for damage in damaged]
    if report.problems and disk_full(settings.data_dir):
        # The disk filled while the doctor looked: what failed, failed on it.
        report.problems = [full_disk(settings, "murmur doctor")]
    _modes(settings, report, repair=repair)
    return report


def full_disk(settings: Settings, command: str) -> str:
    """What to say of a full disk under the data directory, and what to do, then ``command``."""
    return (
        f"disk full: the disk under {settings.data_dir} has no space left and every write"
        " fails meanwhile; a full disk is not damage (a restore would only lose the writes"
        f" since the backup): free space, then `{command}` again"
    )


def lake_damage(settings: Settings) -> list[Damage]:
    """Every damaged file of the lake's current snapshot, each of its pages decoded."""
    return _damaged(settings, deep=True)


def _modes(settings: Settings, report: Report, *, repair: bool) -> None:
    for path in _loose(settings.data_dir):
        if repair:
            path.chmod(0o700 if path.is_dir() else 0o600)
            report.repaired.append(f"made {path.relative_to(settings.data_dir.parent)} owner-only")
        else:
            report.loose_files.append(str(path.relative_to(settings.data_dir)))


def _first_line(exc: Exception, settings: Settings) -> str:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"disk full ({first})" if disk_full(settings.data_dir) else first


def _damaged(settings: Settings, *, deep: bool) -> list[Damage]:
    with settings.open_store() as store, store.analytics() as cur:
        return damaged_files(cur.raw, "lake", deep=deep)  # type: ignore[arg-type]


def _examine_store(
    settings: Settings, report: Report, *, deep: bool, read_lake: bool
) -> list[Damage]:
    # Through a damaged catalog the lake is not read at all: which pages a read meets, and so
    # whether it fails, varied with DuckDB's threads; the catalog's own problem says it all.
    with settings.open_store(prepare_lake=read_lake) as store:
        engine = store.pub.engine
        report.publishing = (
            f"{engine.dialect.name} {engine.url.render_as_string(hide_password=True)},"
            f" revision {store.pub.revision()}"
        )
        report.problems += [
            f"publishing database: {line}" for line in store.pub.integrity_problems()
        ]
        report.warnings += store.read(lambda cur: reliability.health(cur, utcnow())).problems()
        if not read_lake:
            report.lake = f"{store.lake.catalog}, not read: its catalog is damaged"
            return []
        with store.analytics() as cur:
            tables = lake_tables(cur.raw, alias="lake")  # type: ignore[arg-type]
            damaged = damaged_files(cur.raw, "lake", deep=deep)  # type: ignore[arg-type]
        report.lake = f"{store.lake.catalog}, {len(tables)} tables, files in {store.lake.data}"
        return damaged
