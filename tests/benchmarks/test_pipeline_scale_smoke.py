"""Smoke run of the pipeline and import rows of ``murmur bench``: rows present, nothing timed."""

from __future__ import annotations

from benchmarks.pipeline_scale import run_pipeline_rows

KEYS = {"what", "measured", "reference", "ratio", "target", "ok", "notes"}


def test_quick_rows_are_complete() -> None:
    rows = run_pipeline_rows(quick=True)
    whats = [r["what"] for r in rows]
    assert len(rows) == 5
    assert whats[0].startswith("full build")
    assert any(w.startswith("incremental hour") for w in whats)
    assert whats[-1].startswith("import youtube-trending CSV")
    for row in rows:
        assert set(row) == KEYS
        assert isinstance(row["ok"], bool)
        assert row["ratio"] > 0, row  # both sides ran and measured something
        assert row["measured"]
        assert row["reference"]
    # The pipeline's own checks passed (only the counter-drop warning may fire: the
    # generated counters drop on purpose).
    assert "checks failed: ['counter_drops_reported']" in rows[0]["notes"] or (
        "checks failed: none" in rows[0]["notes"]
    )
