"""The bodies of the probe endpoints."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Health(BaseModel):
    """A probe's answer: ``alive`` from /healthz, ``ready`` from /readyz."""

    status: Literal["alive", "ready"]


class Readiness(Health):
    """/readyz's answer: ready, and what in the lake is damaged meanwhile."""

    problems: list[str] = Field(
        default_factory=list,
        description="What is wrong while the service stays ready: a lake file or catalog "
        "that analytics reads would fail on (publishing does not read the lake), destinations "
        "stuck past twice their lease, tokens expiring within 7 days. `murmur doctor` says more.",
    )
