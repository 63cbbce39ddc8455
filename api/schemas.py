"""Shapes shared by every resource group: the envelope, errors, pages and UTC timestamps."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, PlainSerializer

T = TypeVar("T")


def _to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _iso_z(value: datetime) -> str:
    text = value.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


UtcDatetime = Annotated[
    AwareDatetime,
    AfterValidator(_to_utc),
    PlainSerializer(_iso_z, return_type=str, when_used="json"),
    Field(description="ISO 8601 with an explicit offset; returned in UTC with `Z`."),
]


class Model(BaseModel):
    """Base of request bodies: unknown fields are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


class ErrorDetail(BaseModel):
    field: str = Field(description="Dotted path into the body, or the query parameter's name.")
    issue: str = Field(description="Machine-readable reason, e.g. `min_items`, `required`.")
    message: str


class ErrorBody(BaseModel):
    code: str = Field(description="Machine-readable code, e.g. `VALIDATION_ERROR`.")
    message: str
    details: list[ErrorDetail] = Field(default_factory=list)


class ErrorEnvelope(BaseModel):
    """Every error response."""

    success: Literal[False] = False
    error: ErrorBody
    request_id: str


class Envelope(BaseModel, Generic[T]):
    """Every successful response."""

    success: Literal[True] = True
    data: T
    request_id: str


class Pagination(BaseModel):
    limit: int
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null at the end."
    )
    has_more: bool


class Page(BaseModel, Generic[T]):
    """One page of a list endpoint."""

    items: list[T]
    pagination: Pagination


class Deleted(BaseModel):
    id: str
    deleted: Literal[True] = True


def ok(data: T) -> Envelope[T]:
    """Wrap a result in the success envelope of the current request."""
    from api.context import request_id_var

    return Envelope(data=data, request_id=request_id_var.get())
