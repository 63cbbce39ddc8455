"""What GET /analytics/publishing answers: publishing reliability, counted from the destinations.

Field descriptions stay short (an agent's tools/list carries them); each figure's definition
is in the answer's ``definitions`` and in docs/api/analytics.md.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from domain.schemas import UtcDatetime
from domain.workspaces.schemas import Platform


class ReliabilityRange(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    from_: UtcDatetime = Field(alias="from", description="Inclusive: a post's scheduled time.")
    to: UtcDatetime = Field(description="Exclusive.")


class Figures(BaseModel):
    """One scope's figures; each share names its denominator, null when that is 0."""

    due: int
    published: int
    on_time: int
    on_time_share: float | None = Field(description="on_time / published.")
    lateness_p50_seconds: float | None = Field(description="Null without a published one.")
    lateness_p99_seconds: float | None
    failed: int
    failed_share: float | None = Field(description="failed / (published + failed).")
    failed_by_reason: dict[str, int]
    retried: int
    retried_share: float | None = Field(description="retried / due.")
    pending: int
    publishing: int
    stuck: int
    tokens_expiring: int


class PlatformFigures(BaseModel):
    platform: Platform
    figures: Figures


class AccountFigures(BaseModel):
    account_id: str
    platform: Platform
    handle: str | None
    figures: Figures


class StuckDestination(BaseModel):
    destination_id: str
    post_id: str
    account_id: str
    platform: Platform
    attempts: int
    claimed_by: str | None
    claimed_at: UtcDatetime
    lease_expires_at: UtcDatetime
    stuck_since: UtcDatetime = Field(description="lease_expires_at + its lease.")


class ExpiringToken(BaseModel):
    account_id: str
    platform: Platform
    handle: str
    expires_at: UtcDatetime
    expired: bool


class PublishingReliability(BaseModel):
    range: ReliabilityRange
    platform: Platform | None
    account_id: str | None
    on_time_seconds: float
    totals: Figures
    by_platform: list[PlatformFigures]
    by_account: list[AccountFigures]
    stuck_destinations: list[StuckDestination] = Field(description="The longest held first.")
    tokens_expiring: list[ExpiringToken] = Field(description="The soonest first.")
    definitions: dict[str, str]
    computed_at: UtcDatetime
