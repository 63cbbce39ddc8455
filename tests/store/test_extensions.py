"""DuckDB extensions: each file's signature checked once a process, and again once it changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Run in a process of its own, with a home of its own: the process's record of checked files
# starts empty, and DuckDB installs the extension under this home, where the test may change it.
_SCRIPT = """
import json, os, sys
from warehouse.extensions import connect, load_extension

def loaded(con):
    return [r[0] for r in con.execute(
        "SELECT extension_name FROM duckdb_extensions() WHERE loaded AND install_path LIKE ?",
        [os.environ["HOME"] + "%"],
    ).fetchall()]

first, second = connect(), connect()
load_extension(first, "sqlite")
load_extension(second, "sqlite")  # the same file: loaded without a second check
report = {"first": loaded(first), "second": loaded(second)}
path = first.execute(
    "SELECT install_path FROM duckdb_extensions() WHERE extension_name = 'sqlite_scanner'"
).fetchone()[0]
# Another file in its place (a new inode, as an upgrade or an attacker would leave it): one
# byte of its body changed, so that its signature no longer holds.
body = bytearray(open(path, "rb").read())
body[len(body) // 2] ^= 0xFF
with open(path + ".new", "wb") as new:
    new.write(body)
os.replace(path + ".new", path)
third = connect()
try:
    load_extension(third, "sqlite")
    report["changed"] = "loaded"
except Exception as exc:
    report["changed"] = type(exc).__name__ + ": " + str(exc)
json.dump(report, sys.stdout)
"""


def test_a_file_is_checked_once_a_process_and_again_when_it_changes(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        env={**os.environ, "HOME": str(tmp_path)},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["first"] == ["sqlite_scanner"]
    assert report["second"] == ["sqlite_scanner"]
    # The changed file was checked again, and DuckDB refused it.
    assert report["changed"] != "loaded"
    assert "signature" in report["changed"].lower(), report["changed"]
