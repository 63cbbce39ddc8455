"""``murmur doctor``: is the store sound? Indexes against their tables, files, the host file."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from murmur.settings import Settings
from warehouse import integrity
from warehouse.store import read_host_file


@dataclass
class Report:
    """What the doctor found and what it repaired; ``healthy`` when nothing is left to do."""

    mode: str = ""
    findings: list[integrity.Finding] = field(default_factory=list)
    loose_files: list[str] = field(default_factory=list)
    stale_host_file: bool = False
    repaired: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        stale = [f for f in self.findings if not f.ok and not f.repaired]
        return not stale and not self.loose_files and not self.failed


def _loose(data_dir: Path) -> list[Path]:
    return [
        path
        for path in [data_dir, *data_dir.rglob("*")]
        if not path.is_symlink() and stat.S_IMODE(path.lstat().st_mode) & 0o077
    ]


def examine(settings: Settings, *, sample: int, repair: bool) -> Report:
    """Check every index on ``sample`` key values each, the files' modes and the host file."""
    report = Report()
    host_file = settings.host_file
    if host_file.exists() and read_host_file(host_file) is None:
        report.stale_host_file = True  # its process is gone
        if repair:
            host_file.unlink(missing_ok=True)
            report.repaired.append(f"removed {host_file.name} left by a process that is gone")
    settings.ensure_dirs()  # makes the data directory owner-only again
    with settings.open_store() as store:
        report.mode = store.mode
        with store.cursor() as cur:
            report.findings = integrity.check(cur, sample)
            scripts = [
                (f, integrity.repair_script(cur, f.index)) for f in report.findings if not f.ok
            ]
        for finding, script in scripts if repair else []:
            try:
                store.execute_script(script)
            except Exception as exc:  # reported, and the doctor goes on with the others
                finding.error = str(exc).splitlines()[0]
                report.failed.append(f"{finding.index.table}.{finding.index.name}: {exc}")
                continue
            finding.repaired = True
            report.repaired.append(f"rebuilt {finding.index.table}.{finding.index.name}")
    for path in _loose(settings.data_dir):
        if repair:
            path.chmod(0o700 if path.is_dir() else 0o600)
            report.repaired.append(f"made {path.relative_to(settings.data_dir.parent)} owner-only")
        else:
            report.loose_files.append(str(path.relative_to(settings.data_dir)))
    return report
