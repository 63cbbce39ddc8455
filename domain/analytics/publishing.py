"""Publishing reliability: on time, late, failed, retried and stuck destinations, expiring tokens.

Read from the publishing state (the posts' destinations), never the lake: the figures are the
destinations' own rows counted (warehouse/reliability.py). The same reads give /readyz and
`murmur doctor` their lines and /metrics its gauges; the engagement runner sends each stuck
destination and expiring token once as a webhook event (``post.stuck``,
``account.token_expiring``), its marker written with the event. docs/api/analytics.md,
"GET /analytics/publishing", defines each figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.analytics.publishing_schemas import (
    AccountFigures,
    ExpiringToken,
    Figures,
    PlatformFigures,
    PublishingReliability,
    ReliabilityRange,
    StuckDestination,
)
from domain.errors import ValidationFailed
from domain.posts import reads
from domain.schemas import iso_z
from domain.workspaces.service import account_out
from warehouse import posts as posts_repo
from warehouse import reliability as repo
from warehouse import webhooks as webhooks_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import from_db, new_id, to_db
from warehouse.rows import Cursor

#: A destination published within this many seconds of its post's time is on time.
ON_TIME_SECONDS = 60.0
#: Tokens expiring within this long of now are reported (expired ones too).
TOKEN_HORIZON = timedelta(days=7)
DEFAULT_RANGE = timedelta(days=7)
LONGEST_RANGE = timedelta(days=400)
#: Stuck destinations listed in an answer (all are counted).
LISTED = 25
#: Alerts a check sends at most (the next check sends the rest).
ALERTS_PER_CHECK = 200
STUCK_EVENT = "post.stuck"
TOKEN_EVENT = "account.token_expiring"

DEFINITIONS: dict[str, str] = {
    "due": "Destinations of the workspace's posts whose scheduled time is in the range and has"
    " come (posts scheduled, publishing or settled; not drafts, posts awaiting approval or"
    " canceled ones).",
    "published": "Of those, destinations with status published.",
    "on_time": "Published destinations whose published_at is at most 60 s after the post's"
    " scheduled_at.",
    "on_time_share": "on_time / published; null when none was published.",
    "lateness_p50_seconds": "Median of published_at - scheduled_at over the published"
    " destinations (nearest rank; a platform time before the post's counts as 0); null when"
    " none was published.",
    "lateness_p99_seconds": "99th percentile (nearest rank) of the same; null when none.",
    "failed": "Due destinations with status failed.",
    "failed_share": "failed / (published + failed); null when none settled.",
    "failed_by_reason": "failed by the destination's error_code (the platform's error class:"
    " rate_limited, platform_unavailable, timeout, auth_expired, rejected, …).",
    "retried": "Due destinations attempted more than once (attempts > 1): a retry after a 429,"
    " 5xx or timeout, or a takeover of a dead worker's claim.",
    "retried_share": "retried / due; null when none is due.",
    "pending": "Due destinations waiting for their first attempt or a retry.",
    "publishing": "Due destinations a worker holds now (stuck ones included).",
    "stuck": "Due destinations publishing past twice their lease: the lease their worker"
    " claimed them with (MURMUR_PUBLISHING_LEASE_SECONDS, 60 s by default) ran out more than"
    " one lease ago and no worker took them over.",
    "tokens_expiring": "Connected accounts (not disconnected) whose recorded token expiry is"
    " within 7 days of now, expired ones included; not bound by the range.",
}


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class _Tally:
    """One scope's counts as they add up, then its figures."""

    due: int = 0
    published: int = 0
    on_time: int = 0
    failed: int = 0
    pending: int = 0
    publishing: int = 0
    retried: int = 0
    stuck: int = 0
    tokens: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    p50: float | None = None
    p99: float | None = None

    def add(self, row: repo.GroupRow) -> None:
        self.due += row.due
        self.published += row.published
        self.on_time += row.on_time
        self.failed += row.failed
        self.pending += row.pending
        self.publishing += row.publishing
        self.retried += row.retried
        self.stuck += row.stuck

    def figures(self) -> dict[str, Any]:
        return {
            "due": self.due,
            "published": self.published,
            "on_time": self.on_time,
            "on_time_share": _share(self.on_time, self.published),
            "lateness_p50_seconds": self.p50 if self.published else None,
            "lateness_p99_seconds": self.p99 if self.published else None,
            "failed": self.failed,
            "failed_share": _share(self.failed, self.published + self.failed),
            "failed_by_reason": dict(sorted(self.reasons.items())),
            "retried": self.retried,
            "retried_share": _share(self.retried, self.due),
            "pending": self.pending,
            "publishing": self.publishing,
            "stuck": self.stuck,
            "tokens_expiring": self.tokens,
        }


def _range(from_: datetime | None, to: datetime | None, now: datetime) -> tuple[datetime, datetime]:
    """[from, to) in UTC: by default the 7 days before now (or before ``to``)."""
    end = to if to is not None else now
    start = from_ if from_ is not None else end - DEFAULT_RANGE
    if start >= end:
        raise ValidationFailed.on("from", "invalid_range", "`from` must be before `to`.")
    if end - start > LONGEST_RANGE:
        raise ValidationFailed.on("to", "range_too_long", "The range may be at most 400 days long.")
    return start, end


def _stuck_out(row: repo.StuckRow) -> StuckDestination:
    lease = row.lease_expires_at - row.claimed_at
    return StuckDestination.model_validate(
        {
            "destination_id": row.id,
            "post_id": row.post_id,
            "account_id": row.account_id,
            "platform": row.platform,
            "attempts": row.attempts,
            "claimed_by": row.claimed_by,
            "claimed_at": from_db(row.claimed_at),
            "lease_expires_at": from_db(row.lease_expires_at),
            "stuck_since": from_db(row.lease_expires_at + lease),
        }
    )


def _token_out(row: repo.TokenRow, now: datetime) -> ExpiringToken:
    return ExpiringToken(
        account_id=row.account_id,
        platform=row.platform,
        handle=row.handle,
        expires_at=row.expires_at.replace(tzinfo=UTC),
        expired=row.expires_at <= now,
    )


def reliability(
    cur: Cursor,
    workspace_id: str,
    from_: datetime | None,
    to: datetime | None,
    platform: str | None,
    account_id: str | None,
    now: datetime,
) -> PublishingReliability:
    """GET /analytics/publishing: the range's due destinations counted, in total, per platform
    and per account, with the stuck ones and the tokens expiring within 7 days of ``now``."""
    start, end = _range(from_, to, now)
    clock = to_db(now)
    assert clock is not None
    scope = repo.Scope(
        workspace_id, to_db(start) or clock, to_db(end) or clock, clock, platform, account_id
    )
    rows = repo.groups(cur, scope, ON_TIME_SECONDS)
    tokens = repo.tokens_expiring(
        cur,
        clock + TOKEN_HORIZON,
        workspace_id=workspace_id,
        platform=platform,
        account_id=account_id,
    )
    total = _Tally()
    platforms: dict[str, _Tally] = {}
    accounts: dict[str, _Tally] = {}
    account_platform: dict[str, str] = {}
    for row in rows:
        total.add(row)
        platforms.setdefault(row.platform, _Tally()).add(row)
        accounts.setdefault(row.account_id, _Tally()).add(row)
        account_platform[row.account_id] = row.platform
    for token in tokens:
        total.tokens += 1
        platforms.setdefault(token.platform, _Tally()).tokens += 1
        accounts.setdefault(token.account_id, _Tally()).tokens += 1
        account_platform[token.account_id] = token.platform
    for reason in repo.reasons(cur, scope) if total.failed else []:
        for tally in (total, platforms[reason.platform], accounts[reason.account_id]):
            tally.reasons[reason.reason] = tally.reasons.get(reason.reason, 0) + reason.failed
    for ranked in repo.ranked(cur, scope) if total.published else []:
        late = round(max(0.0, float(ranked.late)), 3)
        for tally, rank, count in (
            (total, ranked.rank_all, ranked.count_all),
            (platforms[ranked.platform], ranked.rank_platform, ranked.count_platform),
            (accounts[ranked.account_id], ranked.rank_account, ranked.count_account),
        ):
            if rank == repo.nearest_rank(count, repo.P50):
                tally.p50 = late
            if rank == repo.nearest_rank(count, repo.P99):
                tally.p99 = late
    known = ws_repo.accounts_by_ids(cur, workspace_id, sorted(accounts)) if accounts else {}
    stuck = repo.stuck_in(cur, scope, LISTED) if total.stuck else []
    return PublishingReliability(
        range=ReliabilityRange(from_=start, to=end),
        platform=platform,
        account_id=account_id,
        on_time_seconds=ON_TIME_SECONDS,
        totals=Figures.model_validate(total.figures()),
        by_platform=[
            PlatformFigures.model_validate({"platform": name, "figures": tally.figures()})
            for name, tally in sorted(platforms.items())
        ],
        by_account=[
            AccountFigures.model_validate(
                {
                    "account_id": account,
                    "platform": account_platform[account],
                    "handle": known[account].handle if account in known else None,
                    "figures": accounts[account].figures(),
                }
            )
            for account in sorted(accounts, key=lambda a: (account_platform[a], a))
        ],
        stuck_destinations=[_stuck_out(row) for row in stuck],
        tokens_expiring=[_token_out(token, clock) for token in tokens],
        definitions=DEFINITIONS,
        computed_at=now,
    )


# -- what operators see: /readyz and `murmur doctor` lines, /metrics gauges --------------------


@dataclass(frozen=True)
class Health:
    """Every workspace's stuck destinations and expiring tokens, as the probes report them."""

    now: datetime  # naive UTC: when they were read
    stuck: int
    oldest_stuck: repo.StuckRow | None
    tokens: int
    expired: int
    soonest: repo.TokenRow | None

    def problems(self) -> list[str]:
        """One line each (none when all is well); the service stays ready either way."""
        lines = []
        oldest = self.oldest_stuck
        if self.stuck and oldest is not None:
            many = self.stuck != 1
            since = iso_z(oldest.claimed_at.replace(tzinfo=UTC))
            lines.append(
                f"publishing: {self.stuck} destination{'s' if many else ''} stuck (oldest"
                f" {oldest.id} since {since}): publishing past twice"
                f" {'their' if many else 'its'} lease, no worker took"
                f" {'them' if many else 'it'} over; is `murmur worker` running?"
            )
        soonest = self.soonest
        if self.tokens and soonest is not None:
            many = self.tokens != 1
            tokens = f"{self.tokens} token{'s' if many else ''}"
            day = soonest.expires_at.date().isoformat()
            if soonest.expires_at <= self.now:
                day = f"expired {day}"
            if self.expired:
                said = f"{tokens} expired or expire{'' if many else 's'} within 7 days"
                said += f", {self.expired} expired" if many else ""
            else:
                said = f"{tokens} expire{'' if many else 's'} within 7 days"
            lines.append(
                f"accounts: {said} ({soonest.account_id} on {soonest.platform}, {day});"
                f" reconnect {'them' if many else 'it'}"
            )
        return lines


def health(cur: Cursor, now: datetime) -> Health:
    """The stuck destinations and expiring tokens of every workspace (``now`` naive UTC)."""
    oldest = repo.oldest_stuck(cur, now)
    soonest = repo.soonest_token(cur, now + TOKEN_HORIZON, now)
    return Health(
        now=now,
        stuck=oldest.total if oldest else 0,
        oldest_stuck=oldest,
        tokens=soonest.total if soonest else 0,
        expired=int(soonest.expired) if soonest else 0,
        soonest=soonest,
    )


# -- the alerts: each stuck destination and expiring token sent once as a webhook event -------


def stuck_key(row: repo.StuckRow) -> str:
    """A stuck destination's alert, once per claim (its attempt number: the lease's generation)."""
    return f"{STUCK_EVENT}:{row.id}:{row.attempts}"


def token_key(row: repo.TokenRow) -> str:
    """An expiring token's alert, once per account and expiry (a renewed token is another)."""
    return f"{TOKEN_EVENT}:{row.account_id}:{row.expires_at.isoformat()}"


@dataclass(frozen=True)
class Unsent:
    """What a check found that no earlier check sent."""

    stuck: list[repo.StuckRow]
    tokens: list[repo.TokenRow]

    def __bool__(self) -> bool:
        return bool(self.stuck or self.tokens)


def unsent_alerts(cur: Cursor, now: datetime) -> Unsent:
    """Stuck destinations and expiring tokens (every workspace's) not alerted yet (a read)."""
    stuck = repo.stuck_everywhere(cur, now, ALERTS_PER_CHECK)
    tokens = repo.tokens_expiring(cur, now + TOKEN_HORIZON, limit=ALERTS_PER_CHECK)
    sent = webhooks_repo.alerted(cur, [*map(stuck_key, stuck), *map(token_key, tokens)])
    return Unsent(
        [row for row in stuck if stuck_key(row) not in sent],
        [row for row in tokens if token_key(row) not in sent],
    )


def send_alerts(cur: Cursor, found: Unsent, now: datetime) -> int:
    """Enqueue one webhook event per alert in ``found`` that no one recorded meanwhile, in the
    transaction that records it (so each is sent once, and only if recorded); how many."""
    alerts: dict[str, tuple[webhooks_repo.Alert, dict[str, Any]]] = {}
    for row in found.stuck:
        post = posts_repo.get_post(cur, row.workspace_id, row.post_id)
        if post is None:
            continue
        payload = {
            "post": reads.posts_out(cur, [post])[0].model_dump(mode="json"),
            "destination": _stuck_out(row).model_dump(mode="json"),
        }
        alert = webhooks_repo.Alert(
            stuck_key(row), row.workspace_id, STUCK_EVENT, row.id, new_id("evt")
        )
        alerts[alert.key] = (alert, payload)
    for token in found.tokens:
        account = ws_repo.get_account(cur, token.workspace_id, token.account_id)
        if account is None:
            continue
        payload = {
            "account": account_out(account).model_dump(mode="json"),
            "token": _token_out(token, now).model_dump(mode="json"),
        }
        key = token_key(token)
        alert = webhooks_repo.Alert(
            key, token.workspace_id, TOKEN_EVENT, token.account_id, new_id("evt")
        )
        alerts[key] = (alert, payload)
    return webhooks_repo.send_once(cur, list(alerts.values()), now)
