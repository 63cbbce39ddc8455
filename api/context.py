"""Per-request context that log lines and error bodies read."""

from __future__ import annotations

from contextvars import ContextVar

request_id_var: ContextVar[str] = ContextVar("request_id", default="req_unknown")
