"""Operational endpoints outside the public API: liveness, readiness and Prometheus metrics."""
