"""A seconds-long run of ``murmur bench``: every row of the table is present; nothing is timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.bench import BenchSettings, Row, child_rows, run_bench, table
from benchmarks.servers import ScaleServers
from benchmarks.serving import READS


def test_quick_bench_prints_every_row(tmp_path: Path) -> None:
    cfg = BenchSettings.for_mode(quick=True, data_dir=tmp_path)
    cfg.child_rows = False  # they have smoke tests of their own
    cfg.scale_sizes = ()  # one scale step: the run's own size (each step ~7 s)
    cfg.posts = 500
    rows = run_bench(cfg)
    whats = [r.what for r in rows]
    for name in READS:
        assert any(w.startswith(name) for w in whats), name
    assert any(w.startswith("POST /posts,") for w in whats)
    beside = next(r for r in rows if r.what.endswith("beside six /metrics scrapers"))
    assert beside.reference.startswith("alone: ")
    # Measured beside scrapes that answered, from a process of their own.
    assert all(s["scrapes"] > 0 and not s["errors"] for s in beside.detail["scrapes"])
    assert any(w.startswith("POST /posts while a pipeline writes") for w in whats)
    for row in rows:
        assert row.status in {"PASS", "MISS"}
        assert row.figure
        assert row.target
    reads = [r for r in rows if r.group == "reads"]
    # Each read is measured against its own floor: a separate app answering the same bytes.
    assert all(r.reference.startswith("bare FastAPI app, same body: ") for r in reads)
    assert len(list((tmp_path / "data" / "reference").glob("*.json"))) == len(READS)
    writes = [r for r in rows if r.group == "writes"]
    # Fresh idempotency keys: every write of the smoke run was accepted.
    assert all(run["errors"] == 0 for r in writes for run in r.detail["runs"])
    assert "| what |" in table(rows)
    # The run built its store where it was told to.
    assert list(tmp_path.rglob("publishing.sqlite"))


def test_child_rows_come_back_as_table_rows() -> None:
    from benchmarks.bench import child_rows

    rows = child_rows("publishing", quick=True, timeout=240)
    assert [r.what for r in rows] == ["publishing lateness, 50 posts due within 2 s"]
    assert rows[0].status in {"PASS", "MISS"}
    assert "published once" in rows[0].figure


@pytest.mark.xdist_group("bench-import")  # quick_import_rows: one run per worker
def test_import_rows_have_a_group_of_their_own(quick_import_rows: list[Row]) -> None:
    row, days = quick_import_rows
    assert row.what.startswith("import youtube-trending CSV, 100,000 rows"), row
    assert row.status in {"PASS", "MISS"}
    assert row.ratio is not None
    assert row.ratio > 0
    # the isolated days' row: both files planned into one range, one marts step each
    assert days.what.endswith("on 200 isolated days"), days
    assert days.status in {"PASS", "MISS"}
    assert days.ratio is not None
    assert days.ratio > 0
    figures = days.detail["figures"]
    assert [f["ranges"] for f in figures["isolated"] + figures["consecutive"]] == [1, 1]


def test_the_dashboard_row_measures_a_real_page_load() -> None:
    """Headless Chromium loads the overview; the row sets it beside its own API calls."""
    from benchmarks.bench import child_rows

    (row,) = child_rows("dashboard", quick=True, timeout=240)
    assert row.status in {"PASS", "MISS"}, row
    assert row.what.startswith("dashboard overview, navigation to last chart drawn"), row
    assert row.ratio is not None
    assert row.ratio > 0
    loads = row.detail["loads"]
    assert loads
    # The overview drew from the public API: its unified analytics among the calls.
    assert all(any(c.endswith("/analytics/unified") for c in load["calls"]) for load in loads), (
        loads
    )


def test_startup_rows_time_each_command_beside_its_reference() -> None:
    from benchmarks.bench import child_rows

    help_row, keys_row = child_rows("startup", quick=True, timeout=240)
    assert help_row.what.startswith("`murmur --help`"), help_row
    assert keys_row.what.startswith("`murmur keys list` on a store"), keys_row
    for row in (help_row, keys_row):
        assert row.status in {"PASS", "MISS"}, row
        assert row.ratio is not None
        assert row.ratio > 0
    figures = keys_row.detail["figures"]
    assert set(figures) == {"bare", "help", "keys"}
    assert all(m["wall"] > 0 and m["cpu"] > 0 for m in figures.values())


def test_every_list_has_a_row_beside_posts() -> None:
    """One row per paginated list, measured (not "not measured") beside posts' same pages."""
    from benchmarks.bench import child_rows
    from benchmarks.lists import layout_for, specs

    rows = child_rows("lists", quick=True, timeout=240)
    names = [spec.name for spec in specs(layout_for(1))][1:]  # posts is the reference
    assert len(rows) == len(names), rows
    for name, row in zip(names, rows, strict=True):
        assert row.what.startswith(f"list {name}, 3,000 rows"), row
        assert row.status in {"PASS", "MISS"}, row
        assert row.figure.startswith("first "), row
        assert " deep " in row.figure, row
        assert row.reference.startswith("posts: first "), row
        assert set(row.detail["figures"]) == {"first", "deep"}, row


def test_quick_bench_at_scale_measures_every_row(
    tmp_path: Path, scale_servers: ScaleServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rows on PostgreSQL + S3: the session's servers, whichever the store profile."""
    monkeypatch.setenv(*scale_servers.env().popitem())
    cfg = BenchSettings.for_mode(quick=True, data_dir=tmp_path, profile="scale")
    cfg.child_rows = False  # the publishing row only, below: the others take minutes
    cfg.scale_sizes = ()  # one scale step: the run's own size
    cfg.posts = 500
    rows = run_bench(cfg) + child_rows("publishing", quick=True, timeout=240)
    # The writes: one server, beside a pipeline, then over two replicas of the same store.
    groups = ["reads"] * len(READS) + ["scrapes"] + ["writes"] * 3 + ["publishing"]
    assert [r.group for r in rows] == groups
    replicas = rows[len(READS) + 3]
    assert replicas.what.startswith("POST /posts over 2 replicas"), replicas
    assert replicas.reference.startswith("one server, "), replicas
    # Both replicas took writes, side by side, in every run.
    assert all(
        len(run) == 2 and all(p["requests"] > 0 for p in run) for run in replicas.detail["replicas"]
    )
    for row in rows:
        assert row.status in {"PASS", "MISS"}, row
        assert row.figure
    writes = [r for r in rows if r.group == "writes"]
    assert all(run["errors"] == 0 for r in writes for run in r.detail["runs"])
    # The workers (`murmur worker` children) published from the seeding process's store.
    assert rows[-1].detail["figures"]["exactly_once"]["missing"] == 0
    # The store was on the servers: no file of the embedded profile was made.
    assert (tmp_path / "data").is_dir()
    assert not list(tmp_path.rglob("*.sqlite"))
    assert not list(tmp_path.rglob("*.parquet"))


def test_history_rows_set_a_long_history_beside_a_tenth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`murmur bench --history N --quick`: build, hour and reads over N against N / 10."""
    from benchmarks import bench

    rows = bench.main(quick=True, history=6_000)
    whats = [r.what for r in rows]
    assert whats[0] == "full build (run_all), 6,000 snapshots", whats
    assert whats[1].startswith("incremental hour (+"), whats
    assert whats[1].endswith("marts, 6,000 history"), whats
    assert [w.split(" over ")[0] for w in whats[3:]] == list(READS), whats
    for row in rows:
        assert row.status in {"PASS", "MISS"}, row
        assert row.ratio is not None
        assert row.ratio > 0, row
    assert "over 600" in rows[0].reference, rows[0]
    assert all("; 0 errors;" in r.note for r in rows[3:]), rows
    # Saved beside the profiles' runs, in a block of its own, rewritten by the next run.
    monkeypatch.setattr(bench, "DOCS", tmp_path)
    (tmp_path / "performance.md").write_text(
        f"# Performance\n\n{bench.TABLE_START}\nprofiles\n{bench.TABLE_END}\n\nprose\n"
    )
    (tmp_path / "performance-latest.json").write_text('{"embedded": {"rows": []}}')
    results = {
        "meta": {
            "command": "murmur bench --history 6000",
            "finished": "now",
            "cpus": 2,
            "memory_gb": 24,
            "loadavg_before": [0.1],
            "loadavg_after": [0.2],
            "wall_s": 1.0,
        },
        "rows": [],
    }
    for _ in range(2):
        bench.write_history_docs(rows, results)
    text = (tmp_path / "performance.md").read_text()
    assert text.count(bench.HISTORY_START) == 1
    assert "profiles" in text
    assert "prose" in text
    assert "full build (run_all), 6,000 snapshots" in text
    assert set(json.loads((tmp_path / "performance-latest.json").read_text())) == {
        "embedded",
        "history",
    }
