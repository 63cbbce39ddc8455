"""Posting-time experiments: create one, assign its new posts an arm and a slot, read its lift."""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from core.errors import ErrorDetail
from domain.errors import InvalidState, ValidationFailed, found
from domain.experiments import metrics, stats
from domain.experiments.schemas import (
    Arm,
    ArmResult,
    ArmSlot,
    Experiment,
    ExperimentCreate,
    ExperimentDetail,
    ExperimentPostsNeeded,
    ExperimentResults,
    ExperimentStop,
    Lift,
    MetricSummary,
    PostExperiment,
    Status,
)
from domain.pagination import PageRequest
from domain.schemas import Page
from domain.slots import WeeklySlot, parse_hhmm, slot_times, zone
from warehouse import automation as automation_repo
from warehouse import experiments as repo
from warehouse import posts as posts_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import from_db, to_db, utcnow
from warehouse.rows import Cursor
from warehouse.store import Transaction

#: A post is scheduled at least this far ahead, so that a slot never starts in the past.
LEAD = timedelta(minutes=5)
#: How far ahead an experiment without an end looks for a free slot.
HORIZON = timedelta(days=366)

METHOD = (
    "Each measured post gives z = ln(1 + metric) (for the engagement rate ln(1 + engagements)"
    " - ln(1 + impressions, else views)). An arm's lift is exp(d) - 1, d the difference of mean"
    " z between the arm and the control within each account, weighted by the account's share of"
    " the measured posts; the 95 % interval is Welch's t interval on d (Welch-Satterthwaite"
    " degrees of freedom). Assignment is at random (seeded), so the lift is the arm's effect."
    " The interval holds at the planned end; read earlier and acted on, it does not."
)
STOP_RULE = (
    "A running experiment may be stopped before its end or post count only when at least half of"
    f" the plan is done and some arm's |t| is at least {stats.EARLY_STOP_T} (two-sided p < 0.001,"
    " Haybittle-Peto); otherwise stopping is refused, unless it is abandoned (its results are"
    " then not conclusive)."
)


def _now() -> datetime:
    return datetime.now(UTC)


def _weekly(slots: Sequence[ArmSlot]) -> list[WeeklySlot]:
    """An arm's slots as weekly slots (an every-day slot is seven)."""
    out: list[WeeklySlot] = []
    for slot in slots:
        hhmm = parse_hhmm(slot.time)
        if hhmm is None:  # the schema's pattern admits only HH:MM
            raise ValueError(slot.time)
        days = range(7) if slot.weekday is None else [slot.weekday]
        out.extend(WeeklySlot(day, *hhmm) for day in days)
    return out


def _arms(row: repo.ExperimentRow) -> list[Arm]:
    return [Arm.model_validate(arm) for arm in row.arms]


def status_of(row: repo.ExperimentRow, assigned: int, now: datetime) -> Status:
    """What the experiment is now: its stored stop, else whether its plan is over."""
    if row.state in ("stopped", "abandoned"):
        return "stopped" if row.state == "stopped" else "abandoned"
    if row.ends_at is not None and from_db(row.ends_at) <= now:  # type: ignore[operator]
        return "completed"
    if row.target_posts is not None and assigned >= row.target_posts:
        return "completed"
    return "running"


def experiment_out(
    row: repo.ExperimentRow, assigned: int, now: datetime | None = None
) -> Experiment:
    return Experiment(
        id=row.id,
        workspace_id=row.workspace_id,
        name=row.name,
        status=status_of(row, assigned, now or _now()),
        account_ids=row.account_ids,
        timezone=row.timezone,
        arms=_arms(row),
        metric=metrics.Metric(row.metric),
        ends_at=from_db(row.ends_at),
        target_posts=row.target_posts,
        min_detectable_effect=row.min_detectable_effect,
        seed=row.seed,
        queue_id=row.queue_id,
        posts_assigned=assigned,
        created_at=from_db(row.created_at),
        stopped_at=from_db(row.stopped_at),
        stop_reason=row.stop_reason,
    )


# -- create, list ------------------------------------------------------------------------------


def _check(
    cur: Cursor, workspace_id: str, body: ExperimentCreate, now: datetime
) -> list[ErrorDetail]:
    details: list[ErrorDetail] = []

    def fail(where: str, issue: str, message: str) -> None:
        details.append(ErrorDetail(field=where, issue=issue, message=message))

    if zone(body.timezone) is None:
        fail("timezone", "unknown_timezone", f"{body.timezone!r} is not an IANA time zone.")
    known = ws_repo.accounts_by_ids(cur, workspace_id, list(body.account_ids))
    for index, account_id in enumerate(body.account_ids):
        if account_id not in known:
            fail(f"account_ids.{index}", "unknown_account", f"No account {account_id!r} here.")
    if len(set(body.account_ids)) != len(body.account_ids):
        fail("account_ids", "duplicate", "An account is named twice.")
    controls = [i for i, arm in enumerate(body.arms) if arm.control]
    if len(controls) != 1:
        fail("arms", "one_control", f"Exactly one arm is the control; {len(controls)} are.")
    names: set[str] = set()
    owners: dict[WeeklySlot, str] = {}
    for index, arm in enumerate(body.arms):
        if arm.name in names:
            fail(f"arms.{index}.name", "duplicate", f"Two arms are called {arm.name!r}.")
        names.add(arm.name)
        for slot in _weekly(arm.slots):
            other = owners.setdefault(slot, arm.name)
            if other != arm.name:
                day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[slot.weekday]
                fail(
                    f"arms.{index}.slots",
                    "shared_slot",
                    f"{day} {slot.time} is in arms {other!r} and {arm.name!r}.",
                )
                break
    plans = [
        p for p in ("ends_at", "duration_days", "target_posts") if getattr(body, p) is not None
    ]
    if len(plans) != 1:
        fail(
            "ends_at",
            "one_plan",
            "Give exactly one of ends_at, duration_days and target_posts"
            f" ({', '.join(plans) or 'none'} given).",
        )
    if body.ends_at is not None and body.ends_at <= now:
        fail("ends_at", "in_past", "ends_at is in the past.")
    if body.target_posts is not None and body.target_posts < 2 * len(body.arms):
        fail(
            "target_posts",
            "too_few",
            f"{body.target_posts} posts cannot give each of {len(body.arms)} arms two.",
        )
    if body.queue_id is not None:
        queue = automation_repo.get_queue(cur, workspace_id, body.queue_id)
        if queue is None:
            fail("queue_id", "unknown_queue", f"No queue {body.queue_id!r} here.")
        else:
            outside = sorted({d["account_id"] for d in queue.destinations} - set(body.account_ids))
            if outside:
                fail(
                    "queue_id",
                    "accounts_outside",
                    f"The queue posts to accounts the experiment does not name: {outside}.",
                )
            elif repo.running_on_queue(cur, body.queue_id):
                fail("queue_id", "queue_taken", "Another experiment runs on this queue.")
    return details


def create_experiment(cur: Cursor, workspace_id: str, body: ExperimentCreate) -> Experiment:
    """Check and store a new experiment; it assigns posts from now on."""
    now = _now()
    details = _check(cur, workspace_id, body, now)
    if details:
        raise ValidationFailed("The experiment is not valid.", details)
    ends_at = body.ends_at
    if body.duration_days is not None:
        ends_at = now + timedelta(days=body.duration_days)
    experiment_id = repo.insert_experiment(
        cur,
        workspace_id,
        {
            "name": body.name,
            "account_ids": list(body.account_ids),
            "timezone": body.timezone,
            "arms": [arm.model_dump(mode="json") for arm in body.arms],
            "metric": body.metric.value,
            "ends_at": to_db(ends_at),
            "target_posts": body.target_posts,
            "min_detectable_effect": body.min_detectable_effect,
            "seed": body.seed if body.seed is not None else secrets.randbelow(2**53),
            "queue_id": body.queue_id,
            "state": "running",
            "stopped_at": None,
            "stop_reason": None,
            "deleted_at": None,
        },
    )
    row = found(repo.get_experiment(cur, workspace_id, experiment_id), "experiment", experiment_id)
    return experiment_out(row, 0, now)


def list_experiments(cur: Cursor, workspace_id: str, page: PageRequest) -> Page[Experiment]:
    """The workspace's experiments, newest first."""
    rows = repo.list_experiments(cur, workspace_id, page.after_value(), page.fetch)
    now = _now()
    return page.page(
        rows, lambda r: experiment_out(r, repo.assignment_count(cur, r.id), now), lambda r: [r.id]
    )


# -- assignment --------------------------------------------------------------------------------


def draw_arm(seed: int, n: int, arms: Sequence[Arm]) -> Arm:
    """The arm of an experiment's ``n``-th post (from 0): a function of its seed and ``n``
    alone, so that anyone can replay the draws; each arm equally likely."""
    return random.Random(f"{seed}:{n}").choice(list(arms))


@dataclass
class Assigner:
    """Draws arms and slots for the new posts of one transaction (one batch of them): what one
    post takes, the next sees, before anything is written."""

    cur: Cursor
    workspace_id: str
    _drawn: dict[str, int] = field(default_factory=dict)
    _taken: dict[str, set[datetime]] = field(default_factory=dict)
    _rows: dict[str, repo.ExperimentRow] = field(default_factory=dict)

    def _experiment(self, experiment_id: str) -> repo.ExperimentRow:
        row = self._rows.get(experiment_id)
        if row is None:
            row = repo.get_experiment(self.cur, self.workspace_id, experiment_id)
            if row is None:
                raise ValidationFailed.on(
                    "experiment_id", "unknown_experiment", f"No experiment {experiment_id!r} here."
                )
            self._rows[experiment_id] = row
            repo.hold_for_draws(self.cur, experiment_id)
            taken = repo.assignments(self.cur, experiment_id)
            self._taken[experiment_id] = {a.slot_at for a in taken}
            self._drawn[experiment_id] = len(taken)
        return row

    def assign(
        self, experiment_id: str, account_ids: Sequence[str], field_name: str = "experiment_id"
    ) -> PostExperiment:
        """The arm drawn for the next post of the experiment and the arm's next free slot."""
        row = self._experiment(experiment_id)
        now = _now()
        status = status_of(row, self._drawn[experiment_id], now)
        if status != "running":
            raise InvalidState(f"Experiment {experiment_id!r} is {status}: it assigns no posts.")
        outside = sorted(set(account_ids) - set(row.account_ids))
        if outside:
            raise ValidationFailed.on(
                field_name,
                "accounts_outside",
                f"The post goes to accounts the experiment does not name: {outside}.",
            )
        arm = draw_arm(row.seed, self._drawn[experiment_id], _arms(row))
        tz = zone(row.timezone)
        if tz is None:  # checked at creation
            raise ValueError(row.timezone)
        until = from_db(row.ends_at) or now + HORIZON
        taken = self._taken[experiment_id]
        for occurrence in slot_times(_weekly(arm.slots), tz, now + LEAD, until):
            slot_at = occurrence.at.replace(tzinfo=None)
            if slot_at not in taken:
                break
        else:
            raise InvalidState(
                f"Arm {arm.name!r} of experiment {experiment_id!r} has no free slot before"
                f" {until.isoformat()}."
            )
        taken.add(slot_at)
        self._drawn[experiment_id] += 1
        return PostExperiment(
            experiment_id=experiment_id, arm=arm.name, slot_at=slot_at.replace(tzinfo=UTC)
        )


def record(cur: Cursor, workspace_id: str, assigned: Sequence[tuple[str, PostExperiment]]) -> None:
    """Write the assignments of posts just inserted ((post id, assignment) each)."""
    now = utcnow()
    repo.insert_assignments(
        cur,
        [
            repo.AssignmentRow(
                post_id=post_id,
                experiment_id=a.experiment_id,
                workspace_id=workspace_id,
                arm=a.arm,
                slot_at=a.slot_at.replace(tzinfo=None),
                assigned_at=now,
            )
            for post_id, a in assigned
        ],
    )


def assignments_of(cur: Cursor, post_ids: Sequence[str]) -> dict[str, PostExperiment]:
    """The experiment arm of each post that has one (as ``Post.experiment`` shows it)."""
    return {
        post_id: PostExperiment(
            experiment_id=row.experiment_id, arm=row.arm, slot_at=row.slot_at.replace(tzinfo=UTC)
        )
        for post_id, row in repo.assignments_of_posts(cur, post_ids).items()
    }


# -- results -----------------------------------------------------------------------------------


@dataclass
class _ArmCount:
    assigned: int = 0
    published: int = 0
    pending: int = 0
    values: list[float] = field(default_factory=list)
    cells: dict[str, list[float]] = field(default_factory=dict)


def _fraction_done(row: repo.ExperimentRow, measured: int, now: datetime) -> float:
    if row.target_posts is not None:
        return min(1.0, measured / row.target_posts)
    created, ends = from_db(row.created_at), from_db(row.ends_at)
    if created is None or ends is None or ends <= created:
        return 1.0
    return min(1.0, (now - created) / (ends - created))


def _lift(comparison: stats.Comparison | None) -> Lift | None:
    if comparison is None:
        return None
    return Lift(
        estimate=comparison.lift,
        low=comparison.low,
        high=comparison.high,
        p_value=comparison.p_value,
        t=comparison.t,
        degrees_of_freedom=comparison.degrees_of_freedom,
        accounts=comparison.accounts,
    )


def _detail(txn: Transaction, row: repo.ExperimentRow) -> ExperimentDetail:
    now = _now()
    cur = txn.cur
    assigned = repo.assignments(cur, row.id)
    metric = metrics.Metric(row.metric)
    destinations = posts_repo.destinations_of(cur, [a.post_id for a in assigned])
    readings: dict[tuple[str, str], list[metrics.Reading]] = {}
    published_at: dict[tuple[str, str], datetime] = {}
    newest: datetime | None = None
    for r in repo.post_readings(txn.analytics, row.workspace_id, [a.post_id for a in assigned]):
        key = (str(r["post_id"]), str(r["external_id"]))
        readings.setdefault(key, []).append(
            metrics.Reading(
                captured_at=r["captured_at"],
                engagements=float(r["engagements"]),
                impressions=float(r["impressions"]),
                views=float(r["views"]),
            )
        )
        if r["published_at"] is not None:
            published_at[key] = r["published_at"]
        newest = r["captured_at"] if newest is None else max(newest, r["captured_at"])
    arms = _arms(row)
    counts = {arm.name: _ArmCount() for arm in arms}
    for a in assigned:
        count = counts[a.arm]
        count.assigned += 1
        live = [d for d in destinations.get(a.post_id, []) if d.status == "published"]
        count.published += bool(live)
        for d in live:
            key = (a.post_id, d.platform_post_id or "")
            measured = (
                metrics.measure(metric, readings[key], published_at[key])
                if key in readings and key in published_at
                else None
            )
            if measured is None:
                count.pending += 1
                continue
            count.values.append(measured.value)
            count.cells.setdefault(d.account_id, []).append(measured.z)
    control = next(arm for arm in arms if arm.control)
    comparisons = {
        arm.name: stats.compare(counts[arm.name].cells, counts[control.name].cells)
        for arm in arms
        if not arm.control
    }
    variance = stats.pooled_variance([c.cells for c in counts.values()])
    per_arm = None if variance is None else stats.posts_per_arm(variance, row.min_detectable_effect)
    more = (
        None if per_arm is None else sum(max(0, per_arm - len(c.values)) for c in counts.values())
    )
    status = status_of(row, len(assigned), now)
    measured_total = sum(len(c.values) for c in counts.values())
    can_stop = status == "running" and stats.may_stop_early(
        list(comparisons.values()), _fraction_done(row, measured_total, now)
    )
    results = ExperimentResults(
        arms=[
            ArmResult(
                name=arm.name,
                control=arm.control,
                posts_assigned=counts[arm.name].assigned,
                posts_published=counts[arm.name].published,
                posts_measured=len(counts[arm.name].values),
                posts_pending=counts[arm.name].pending,
                metric=_summary(counts[arm.name]),
                lift=None if arm.control else _lift(comparisons[arm.name]),
            )
            for arm in arms
        ],
        enough_data=more == 0,
        posts_needed=ExperimentPostsNeeded(per_arm=per_arm, more=more),
        conclusive=status == "completed" or row.state == "stopped",
        can_stop_early=can_stop,
        stop_rule=STOP_RULE,
        method=METHOD,
        measured_through=from_db(newest),
        definitions=metrics.DEFINITIONS,
    )
    base = experiment_out(row, len(assigned), now)
    return ExperimentDetail(**base.model_dump(), results=results)


def _summary(count: _ArmCount) -> MetricSummary | None:
    if not count.values:
        return None
    zs = [z for cell in count.cells.values() for z in cell]
    mean_z = sum(zs) / len(zs)
    return MetricSummary(
        mean=sum(count.values) / len(count.values),
        geometric_mean=math.expm1(mean_z),
    )


def get_experiment(txn: Transaction, workspace_id: str, experiment_id: str) -> ExperimentDetail:
    """The experiment and, per arm, its posts, metric and lift against the control."""
    row = found(
        repo.get_experiment(txn.cur, workspace_id, experiment_id), "experiment", experiment_id
    )
    return _detail(txn, row)


def stop_experiment(
    txn: Transaction, workspace_id: str, experiment_id: str, body: ExperimentStop
) -> ExperimentDetail:
    """Stop a running experiment: by the rule, or abandoned."""
    row = found(
        repo.get_experiment(txn.cur, workspace_id, experiment_id), "experiment", experiment_id
    )
    detail = _detail(txn, row)
    if detail.status != "running":
        raise InvalidState(f"Experiment {experiment_id!r} is {detail.status} already.")
    if body.abandon:
        state, reason = "abandoned", body.reason or "abandoned"
    elif detail.results.can_stop_early:
        state, reason = "stopped", body.reason or "stopped early by the rule"
    else:
        raise InvalidState(f"Stopping now is refused: {STOP_RULE}")
    repo.stop_experiment(txn.cur, workspace_id, experiment_id, state, reason)
    return _detail(
        txn,
        found(
            repo.get_experiment(txn.cur, workspace_id, experiment_id), "experiment", experiment_id
        ),
    )
