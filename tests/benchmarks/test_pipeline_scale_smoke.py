"""Smoke run of the pipeline and import rows of ``murmur bench``: rows present, nothing timed."""

from __future__ import annotations

import pytest

from benchmarks.bench import Row
from benchmarks.pipeline_scale import run_pipeline_rows

KEYS = {"what", "measured", "reference", "ratio", "target", "ok", "notes"}


@pytest.mark.xdist_group("bench-import")  # quick_import_rows: one run per worker
def test_quick_rows_are_complete(quick_import_rows: list[Row]) -> None:
    # The import row is the import group's (tests/benchmarks/conftest.py), as the child
    # printed it: the same ``run_pipeline_rows(quick, ("import",))``, not run a second time.
    imported = quick_import_rows[0]
    rows = [
        *run_pipeline_rows(quick=True, only=("build", "incremental")),
        {"what": imported.what, "measured": imported.figure, **imported.detail},
    ]
    whats = [r["what"] for r in rows]
    assert len(rows) == 5
    assert whats[0].startswith("full build")
    assert any(w.startswith("incremental hour") for w in whats)
    assert whats[-1].startswith("import youtube-trending CSV")
    for row in rows:
        # the incremental hour's row also says where its time went, asset by asset
        extra = {"assets"} if row["what"].startswith("incremental hour") else set()
        assert set(row) == KEYS | extra, row
        assert isinstance(row["ok"], bool)
        assert row["ratio"] > 0, row  # both sides ran and measured something
        assert row["measured"]
        assert row["reference"]
    # The pipeline's own checks passed (only the counter-drop warning may fire: the
    # generated counters drop on purpose).
    assert "checks failed: ['counter_drops_reported']" in rows[0]["notes"] or (
        "checks failed: none" in rows[0]["notes"]
    )
    hour = next(r for r in rows if r["what"].startswith("incremental hour ("))
    assert any("stg_engagement_deltas" in name for name in hour["assets"]), hour["assets"]
    assert all(t["long"] > 0 and t["short"] > 0 for t in hour["assets"].values()), hour
    assert "grew most: " in hour["notes"]
    # the marts step's assets only: the insights have their row
    assert not any("mart_insights" in name for name in hour["assets"]), hour["assets"]
