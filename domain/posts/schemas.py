"""Posts, destinations and media as the API takes and shows them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from domain.experiments.schemas import PostExperiment
from domain.posts.options import PlatformOptions
from domain.schemas import Model, UtcDatetime, omitted
from domain.workspaces.schemas import Platform
from warehouse.posts import PostStatus

DestinationStatus = Literal["pending", "publishing", "published", "failed"]
MediaKind = Literal["image", "video", "document"]

# The longest text any platform takes (Facebook); what content automations render up to.
MAX_TEXT = 63_206

Tag = Annotated[str, Field(min_length=1, max_length=64)]
AccountOrPlatform = Annotated[str, Field(min_length=1, max_length=64)]
MediaId = Annotated[str, Field(min_length=1, max_length=64)]


class DestinationRef(Model):
    """A destination named by its connected account."""

    account_id: str = Field(max_length=64, examples=["acc_01j9z3k5v8d2q4x6y7w8e9r0t1"])


class PresetRef(Model):
    """A destination preset: its accounts, with its per-platform options as defaults."""

    preset_id: str = Field(max_length=64, examples=["dp_01j9z3k5v8d2q4x6y7w8e9r0t1"])


Destination = AccountOrPlatform | DestinationRef | PresetRef

_PLATFORMS_DESCRIPTION = (
    'At least one destination: a connected account id (`acc_…`), `{"account_id": "acc_…"}`, '
    "or a platform name that resolves to the workspace's one account on that platform."
)


class PostCreate(Model):
    """The body of `POST /posts`."""

    # No limit of its own: each destination's (Facebook's 63,206 the largest) is a `details`
    # entry on that destination, as the contract has it; the body's 1 MiB bounds the rest.
    text: str = Field(description="Checked against each destination's own limit.")
    platforms: list[Destination] = Field(
        min_length=1, max_length=50, description=_PLATFORMS_DESCRIPTION
    )
    media_ids: list[MediaId] = Field(default_factory=list, max_length=20)
    scheduled_at: UtcDatetime | None = Field(
        default=None, description="When to publish; omitted or null: publish now."
    )
    approval_required: bool = Field(
        default=False, description="Wait for approval even if the workspace does not require it."
    )
    draft: bool = Field(default=False, description="Keep as a draft; nothing is published.")
    tags: list[Tag] = Field(default_factory=list, max_length=50)
    platform_options: PlatformOptions = Field(
        default_factory=dict,
        description="Per-platform options, keyed by platform name; at most 16 KiB as JSON.",
    )
    experiment_id: str | None = Field(
        default=None,
        max_length=64,
        description="A running posting-time experiment: it draws the post's arm at random and"
        " schedules it at that arm's next free slot (`scheduled_at` is then not given).",
    )


class PostUpdate(Model):
    """The body of `PATCH /posts/{post_id}`: only the fields given change.

    Only `scheduled_at` takes null; the others may be left out but not sent as null.
    """

    text: str | None = omitted("Checked against each destination's own limit.")
    platforms: list[Destination] | None = omitted(
        _PLATFORMS_DESCRIPTION, min_length=1, max_length=50
    )
    media_ids: list[MediaId] | None = omitted(max_length=20)
    scheduled_at: UtcDatetime | None = Field(
        default=None, description="A new time; an explicit null means publish as soon as allowed."
    )
    tags: list[Tag] | None = omitted(max_length=50)
    platform_options: PlatformOptions | None = omitted("At most 16 KiB as JSON.")
    draft: bool | None = omitted("`false` submits a draft (for approval or to the schedule).")


class DestinationError(BaseModel):
    code: str | None
    message: str | None


class PostDestination(BaseModel):
    id: str
    account_id: str
    platform: Platform
    status: DestinationStatus
    platform_post_id: str | None
    platform_url: str | None
    error: DestinationError | None
    published_at: UtcDatetime | None


class PostApproval(BaseModel):
    """The post's latest approval item."""

    item_id: str = Field(description="Act on it with `POST /approvals/{item_id}/action`.")
    batch_id: str
    status: Literal["pending", "approved", "rejected", "returned"]


class Post(BaseModel):
    post_id: str = Field(examples=["post_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    id: str = Field(description="Same as `post_id`.")
    workspace_id: str
    status: PostStatus
    text: str
    scheduled_at: UtcDatetime | None
    destinations: list[PostDestination]
    media_ids: list[str]
    tags: list[str]
    platform_options: dict[str, dict[str, Any]]
    approval_required: bool
    approval: PostApproval | None
    version: str = Field(
        description="Changes whenever what a reviewer approves changes (text, media, destinations,"
        " platform options), never with time or status; the `ETag` of `GET /posts/{post_id}`."
    )
    created_at: UtcDatetime
    updated_at: UtcDatetime
    canceled_at: UtcDatetime | None
    published_at: UtcDatetime | None
    experiment: PostExperiment | None = Field(
        default=None, description="The experiment arm drawn for the post, if one scheduled it."
    )


class Media(BaseModel):
    id: str = Field(examples=["med_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    kind: MediaKind
    content_type: str = Field(description="Judged from the file's bytes.")
    size_bytes: int
    sha256: str = Field(description="Hex SHA-256 of the stored bytes.")
    filename: str | None = Field(description="The client's file name, for display only.")
    alt_text: str | None
    created_at: UtcDatetime


class Failure(BaseModel):
    """One reason a post would be refused, as the contract's error `details` entry."""

    field: str = Field(description="Dotted path into the body (`platforms.1`, `text`…).")
    issue: str = Field(description="Machine-readable reason, e.g. `max_length`, `in_past`.")
    message: str


class CheckedDestination(BaseModel):
    account_id: str
    platform: Platform


class PostCheck(BaseModel):
    """A dry run of `POST /posts`: every failure at once, or what would be created; no write."""

    valid: bool = Field(description="Whether `POST /posts` with this body would create the post.")
    errors: list[Failure] = Field(
        description="Every failure: the body's shape, destinations, text limits, media, time."
    )
    status: PostStatus | None = Field(
        description="The state the post would start in (`draft`, `pending_approval`, "
        "`scheduled`); null when invalid."
    )
    scheduled_at: UtcDatetime | None = Field(
        description="When it would publish (now, if none was given and it goes straight to "
        "the schedule); null when invalid or waiting for approval or as a draft without one."
    )
    destinations: list[CheckedDestination] = Field(
        description="The accounts the destinations resolve to (presets and platform names "
        "opened up); empty when invalid."
    )
