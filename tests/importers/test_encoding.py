"""`murmur import --encoding`: a legacy file's titles come back as written; bad names refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from core.settings import Settings
from tests.importers.test_importers import US_HEADER, query
from tests.support import free_port

MURMUR = [sys.executable, "-m", "murmur"]
# "ÉTÉ…" in cp1252 is C9 54 C9 85: C9 85 is also valid UTF-8, so without --encoding the
# file reads as UTF-8 mixed with other bytes, which no importer may guess its way through.
TITLES = ["L'ÉTÉ… à Montréal", "Ça coûte 5 €", "“Niño” señor"]


def _murmur(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MURMUR_DATA_DIR": str(data_dir), "MURMUR_PORT": str(free_port())}
    return subprocess.run(
        [*MURMUR, *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )


def _cp1252_file(tmp_path: Path) -> Path:
    rows = "".join(
        f'{vid}abcdefghi,17.14.11,"{title}",22,100,10,1,5\n'
        for vid, title in zip("abc", TITLES, strict=True)
    )
    path = tmp_path / "trending-fr.csv"
    path.write_bytes((US_HEADER + rows).encode("cp1252"))
    return path


def test_a_cp1252_file_imports_with_encoding_and_its_titles_read_right(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    path = _cp1252_file(tmp_path)
    refused = _murmur(data_dir, "import", str(path), "--format", "youtube-trending")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "--encoding" in refused.stderr
    assert "Traceback" not in refused.stderr

    done = _murmur(
        data_dir, "import", str(path), "--format", "youtube-trending", "--encoding", "cp1252"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(youtube-trending, cp1252)" in done.stdout
    titles = query(Settings(data_dir=data_dir), "SELECT text FROM raw_posts")
    assert sorted(t for (t,) in titles) == sorted(TITLES)


def test_a_utf16_file_imports_with_encoding(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    path = tmp_path / "trending.csv"
    path.write_bytes(
        (US_HEADER + 'aabcdefghi,17.14.11,"Привет, мир",22,1,1,1,1\n').encode("utf-16")
    )
    done = _murmur(
        data_dir, "import", str(path), "--format", "youtube-trending", "--encoding", "utf-16"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert query(Settings(data_dir=data_dir), "SELECT text FROM raw_posts") == [("Привет, мир",)]


def test_an_unknown_encoding_is_refused_in_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    path = _cp1252_file(tmp_path)
    done = _murmur(
        data_dir, "import", str(path), "--format", "youtube-trending", "--encoding", "cp9999"
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if "'cp9999'" in line]) == 1
    assert not done.stdout.strip()
    # Refused before the store was opened: nothing was created.
    assert not (data_dir / "lake.sqlite").exists()
