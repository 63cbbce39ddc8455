"""Posting-time experiments: arms of posting slots, a metric, a plan, and the lift per arm."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from domain.experiments.metrics import Metric
from domain.schemas import Model, UtcDatetime

ArmName = Annotated[
    str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9][A-Za-z0-9 _.:-]*$")
]
Status = Literal["running", "completed", "stopped", "abandoned"]


class ArmSlot(Model):
    """A posting time of an arm: a weekday and an hour, or an hour every day."""

    weekday: int | None = Field(
        default=None, ge=0, le=6, description="0 Monday … 6 Sunday; null: every day."
    )
    time: str = Field(
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        examples=["18:00"],
        description="24-hour HH:MM in the experiment's time zone.",
    )


class ArmIn(Model):
    name: ArmName
    control: bool = Field(default=False, description="Exactly one arm is the control.")
    slots: list[ArmSlot] = Field(min_length=1, max_length=50)


class ExperimentCreate(Model):
    """The body of `POST /experiments`: one plan of `ends_at`, `duration_days`, `target_posts`."""

    name: str = Field(min_length=1, max_length=200)
    account_ids: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        min_length=1, max_length=20, description="Connected accounts whose new posts take part."
    )
    timezone: str = Field(
        default="UTC", min_length=1, max_length=64, description="IANA zone of the arms' slots."
    )
    arms: list[ArmIn] = Field(min_length=2, max_length=6)
    metric: Metric
    ends_at: UtcDatetime | None = Field(default=None, description="No assignment from then on.")
    duration_days: int | None = Field(default=None, ge=1, le=365)
    target_posts: int | None = Field(
        default=None, ge=4, le=10_000, description="Assign this many posts, then stop assigning."
    )
    min_detectable_effect: float = Field(
        default=0.1,
        gt=0,
        le=5,
        description="The relative lift the experiment should be able to find (0.1: 10 %).",
    )
    seed: int | None = Field(
        default=None, ge=0, le=2**53, description="The assignment's seed; default a random one."
    )
    queue_id: str | None = Field(
        default=None,
        max_length=64,
        description="A queue whose new items take part too (scheduled at their arm's slot).",
    )


class ExperimentStop(Model):
    """The body of `POST /experiments/{experiment_id}/stop`."""

    abandon: bool = Field(
        default=False,
        description="Stop whatever the rule says; the results are then marked not conclusive.",
    )
    reason: str | None = Field(default=None, max_length=500)


class Arm(BaseModel):
    name: str
    control: bool
    slots: list[ArmSlot]


class Experiment(BaseModel):
    id: str = Field(examples=["exp_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    name: str
    status: Status = Field(
        description="`running` while it assigns posts; `completed` once its end or post count is"
        " reached; `stopped` early by the rule; `abandoned` by a person."
    )
    account_ids: list[str]
    timezone: str
    arms: list[Arm]
    metric: Metric
    ends_at: UtcDatetime | None
    target_posts: int | None
    min_detectable_effect: float
    seed: int
    queue_id: str | None
    posts_assigned: int
    created_at: UtcDatetime
    stopped_at: UtcDatetime | None
    stop_reason: str | None


class PostExperiment(BaseModel):
    """The arm an experiment drew for a post, and the slot it scheduled the post at."""

    experiment_id: str
    arm: str
    slot_at: UtcDatetime


class MetricSummary(BaseModel):
    mean: float = Field(description="Over the measured posts.")
    geometric_mean: float = Field(
        description="exp(mean ln(1 + metric)) - 1: the typical post, what the lift compares."
    )


class Lift(BaseModel):
    """An arm against the control: the relative change of the typical post, with its interval."""

    estimate: float = Field(description="exp(d) - 1, d the per-account difference of mean z.")
    low: float = Field(description="The 95 % interval's low end (Welch's t on d).")
    high: float
    p_value: float | None
    t: float | None
    degrees_of_freedom: float | None
    accounts: int = Field(description="Accounts with at least 2 measured posts in both arms.")


class ArmResult(BaseModel):
    name: str
    control: bool
    posts_assigned: int
    posts_published: int = Field(description="Assigned posts with a published destination.")
    posts_measured: int = Field(description="Published destinations whose metric is measured.")
    posts_pending: int = Field(
        description="Published destinations without the metric: too young, read too sparsely"
        " there, or, for the rate, on a platform that reports neither impressions nor views."
    )
    metric: MetricSummary | None
    lift: Lift | None = Field(description="Against the control; null for it, or too few posts.")


class ExperimentPostsNeeded(BaseModel):
    per_arm: int | None = Field(
        description="Measured posts each arm needs for the minimum detectable effect (95 %, 80 %"
        " power) at the spread seen so far; null until an arm has 2 measured posts in an account."
    )
    more: int | None = Field(description="How many more measured posts that is, over all arms.")


class ExperimentResults(BaseModel):
    arms: list[ArmResult]
    enough_data: bool = Field(
        description="Every arm has the measured posts the minimum detectable effect needs."
    )
    posts_needed: ExperimentPostsNeeded
    conclusive: bool = Field(
        description="The plan was followed (completed, or stopped by the rule); false while"
        " running (the interval holds at the planned end) and when abandoned."
    )
    can_stop_early: bool = Field(description="The stop rule allows stopping now.")
    stop_rule: str
    method: str
    measured_through: UtcDatetime | None = Field(description="The newest reading read.")
    definitions: dict[str, str]


class ExperimentDetail(Experiment):
    results: ExperimentResults
