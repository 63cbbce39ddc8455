"""Smoke run of benchmarks/new_store.py, embedded: every role reports, nothing timed."""

from __future__ import annotations

from benchmarks.new_store import ROLES, measure


def test_every_phase_reports_every_role_without_errors() -> None:
    result = measure("embedded", seconds=0.25, rate=20.0, day_rows=200)
    assert result["profile"] == "embedded"
    phases = {
        "publishing_alone": {"writer_1", "writer_2"},
        "mixed_load": set(ROLES),
        "publishing_saturated": {"writer_1", "writer_2"},
    }
    for phase, roles in phases.items():
        reported = result[phase]["roles"]
        assert set(reported) == roles, phase
        for role, figures in reported.items():
            assert figures["errors"] == 0, (phase, role, figures["first_error"])
            assert sum(sample["n"] for sample in figures["samples"].values()) > 0, (phase, role)
