"""The bodies of the probe endpoints."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Health(BaseModel):
    """A probe's answer: ``alive`` from /healthz, ``ready`` from /readyz."""

    status: Literal["alive", "ready"]
