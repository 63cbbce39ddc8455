"""Outbound webhook endpoints and their delivery log."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from domain.schemas import Model, UtcDatetime
from warehouse.webhooks import EventType

DeliveryStatus = Literal["pending", "succeeded", "failed"]


class EndpointCreate(Model):
    url: str = Field(
        min_length=1,
        max_length=2048,
        description="An http(s) URL that receives the POSTs: no user:password, and a host that is"
        " not loopback, private, link-local… unless the server's allow-list admits it.",
    )
    event_types: list[EventType] = Field(
        min_length=1, max_length=8, description="The events to send; duplicates are dropped."
    )
    description: str | None = Field(default=None, max_length=500)
    enabled: bool = True


class EndpointUpdate(Model):
    """Fields to change; `event_types` is replaced whole."""

    url: str | None = Field(default=None, min_length=1, max_length=2048)
    event_types: list[EventType] | None = Field(default=None, min_length=1, max_length=8)
    description: str | None = Field(default=None, max_length=500)
    enabled: bool | None = None


class Endpoint(BaseModel):
    id: str = Field(examples=["whk_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    url: str
    event_types: list[EventType]
    description: str | None
    enabled: bool
    secret_hint: str = Field(description="The secret's first characters, to tell endpoints apart.")
    created_at: UtcDatetime
    updated_at: UtcDatetime


class EndpointCreated(Endpoint):
    secret: str = Field(
        description="The signing secret (`whsec_…`). Shown only in this response: store it."
    )


class Delivery(BaseModel):
    id: str = Field(examples=["whd_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    endpoint_id: str
    event_id: str = Field(description="The event's `evt_…` id, also the body's `id`.")
    event_type: EventType
    status: DeliveryStatus = Field(
        description="`pending` until a 2xx answer (`succeeded`) or the last attempt (`failed`)."
    )
    attempts: int
    next_attempt_at: UtcDatetime | None = Field(description="When a pending delivery is retried.")
    response_status: int | None = Field(description="The HTTP status of the latest attempt.")
    response_ms: float | None = Field(description="The latest attempt's latency.")
    last_error: str | None
    delivered_at: UtcDatetime | None
    created_at: UtcDatetime
    updated_at: UtcDatetime
