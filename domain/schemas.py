"""Shapes shared by every feature's inputs and outputs: pages, UTC timestamps, base models."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    PlainSerializer,
    WithJsonSchema,
)
from pydantic_core import CoreSchema, PydanticCustomError

T = TypeVar("T")

# The instants the API takes. Python's datetime stops at years 1 and 9999, so an offset at
# either edge (0001-01-01T00:00:00+14:00) cannot even be converted to UTC, and the services
# add and subtract ranges (a 366-day window, a 30-day default) to what they are given: these
# bounds leave centuries of room on both sides.
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
_RANGE_MESSAGE = "Timestamps must lie from 1900-01-01T00:00:00Z up to 9000-01-01T00:00:00Z."


def _to_utc(value: datetime) -> datetime:
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None  # beyond year 1 or 9999 once the offset is applied
    if utc is None or not EARLIEST <= utc < LATEST:
        raise PydanticCustomError("out_of_range", _RANGE_MESSAGE)
    return utc


def iso_z(value: datetime) -> str:
    text = value.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


UtcDatetime = Annotated[
    AwareDatetime,
    AfterValidator(_to_utc),
    PlainSerializer(iso_z, return_type=str, when_used="json"),
    # The serializer returns a string, which pydantic would document as a bare string in
    # response schemas: say what it is in both directions.
    WithJsonSchema({"type": "string", "format": "date-time"}),
    Field(
        description="ISO 8601 with an explicit offset, from 1900 up to 9000; returned in UTC "
        "with `Z`."
    ),
]


class Named:
    """Documents an annotated type once, as ``#/components/schemas/<name>``, not inline."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema = handler(source)
        return {**schema, "ref": self.name}


def _not_null(schema: dict[str, Any]) -> None:
    """Drop the null branch (and null default) pydantic documents for ``X | None``."""
    schema.pop("default", None)
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1:
            del schema["anyOf"]
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept


def omitted(description: str | None = None, **constraints: Any) -> Any:
    """A field that may be left out but not sent as null: ``x: X | None = omitted()``."""
    # The document shows no null for it, as the contract has it; the model still takes an
    # explicit null (validated exactly like X | None), so that its service refuses it by
    # name (`null` / `not_nullable`) instead of with a type error.
    return Field(default=None, description=description, json_schema_extra=_not_null, **constraints)


class Model(BaseModel):
    """Base of request bodies: unknown fields are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


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


ModelT = TypeVar("ModelT", bound=BaseModel)


def from_row(model: type[ModelT], row: object, **computed: Any) -> ModelT:
    """The response ``model`` of a repository row: each field the row's attribute of that name.

    A dict row (an ad hoc query's, ``warehouse.rows.Row``) gives its key of that name instead.
    Rows keep timestamps naive UTC (warehouse/rows.py); here they become aware, as the API's
    ``UtcDatetime`` requires. ``computed`` gives the fields a row does not hold as such; any
    other field the row lacks is an ``AttributeError`` (a ``KeyError``), so a renamed column
    fails loudly.
    """
    values = dict(computed)
    for name in model.model_fields:
        if name not in values:
            value = row[name] if isinstance(row, Mapping) else getattr(row, name)
            if isinstance(value, datetime) and value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
            values[name] = value
    return model.model_validate(values)
