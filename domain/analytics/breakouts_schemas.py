"""What GET /analytics/breakouts answers, and the ``analytics.breakout`` event carries.

Field descriptions stay short (an agent's tools/list carries them); the method is in the
answer's ``provenance.definitions`` and in docs/api/analytics.md (Breakouts).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from domain.analytics.schemas import Provenance, Snapshot
from domain.schemas import Page, UtcDatetime
from domain.workspaces.schemas import Platform


class Band(BaseModel):
    """The window's prediction interval, in engagements over the window."""

    low: float
    high: float


class BreakoutWindow(BaseModel):
    """One judged window above its band."""

    start: UtcDatetime
    end: UtcDatetime
    hours: float
    age_hours: float = Field(description="The post's age at the window's midpoint.")
    observed: float
    expected: float
    band: Band


class BreakoutEvidence(BaseModel):
    """How the prediction and its band were made."""

    method: Literal["own", "account_same_age", "platform_same_age"] = Field(
        description="own: the post's own earlier windows; else its account's, or platform's, "
        "posts at the same age."
    )
    fit_windows: int = Field(description="own: windows the line went through; else peers'.")
    slope_per_hour: float | None = Field(description="own: ln velocity per hour of age.")
    band_z: float
    sigma: float = Field(description="Robust standard deviation of the errors (ln units).")
    calibration_errors: int = Field(description="How many errors sigma was measured on.")
    calibration_scope: Literal["platform", "workspace"]
    windows: list[BreakoutWindow] = Field(
        description="Every window of the breakout above its band."
    )


class Breakout(BaseModel):
    """An own post growing above the band its own history predicts."""

    id: str = Field(description="Stable: the post and its first window above the band.")
    platform: Platform
    account_id: str | None = Field(description="The connected account (`acc_…`), if any.")
    account_external_id: str
    handle: str | None
    external_id: str = Field(description="The post's id on the platform.")
    post_id: str | None = Field(description="Murmur's post (`post_…`), when published through it.")
    published_at: UtcDatetime
    started_at: UtcDatetime = Field(description="End of the first window above the band.")
    last_breakout_at: UtcDatetime = Field(description="End of the latest window above it.")
    ongoing: bool = Field(description="A window above the band within the last 24 h of data.")
    observed: float = Field(description="Engagements in the first window above the band.")
    expected: float = Field(description="An estimate: what that window was predicted to gain.")
    band: Band
    multiple: float | None = Field(description="observed / expected; null when expected is 0.")
    peak_observed: float = Field(description="The window furthest above its prediction.")
    peak_expected: float
    evidence: BreakoutEvidence


class Breakouts(Page[Breakout]):
    snapshot: Snapshot
    provenance: Provenance
