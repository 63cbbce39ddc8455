"""A seconds-long run of ``murmur bench``: every row of the table is present; nothing is timed."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench import READS, BenchSettings, run_bench, table


def test_quick_bench_prints_every_row(tmp_path: Path) -> None:
    cfg = BenchSettings.for_mode(quick=True, data_dir=tmp_path)
    cfg.colleagues = False  # their rows have their own smoke tests
    cfg.scale_sizes = (200,)
    cfg.posts = 500
    rows = run_bench(cfg)
    whats = [r.what for r in rows]
    for name in READS:
        assert any(w.startswith(name) for w in whats), name
    assert any(w.startswith("POST /posts,") for w in whats)
    assert any(w.startswith("POST /posts while a pipeline writes") for w in whats)
    for row in rows:
        assert row.status in {"PASS", "MISS"}
        assert row.figure
        assert row.target
    writes = [r for r in rows if r.group == "writes"]
    # Fresh idempotency keys: every write of the smoke run was accepted.
    assert all(run["errors"] == 0 for r in writes for run in r.detail["runs"])
    assert "| what |" in table(rows)
    assert not (tmp_path / "data").exists() or (tmp_path / "data" / "murmur.duckdb").exists()


def test_missing_colleague_rows_say_why() -> None:
    from benchmarks.bench import colleague_rows

    rows = colleague_rows("publishing", quick=True, timeout=120)
    assert rows
    assert all(r.status for r in rows)
