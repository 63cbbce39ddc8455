"""Approvals: posts held for review, approved or rejected."""
