"""What people send our accounts: comments, mentions and DMs, seeded and growing with the clock."""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from simulator.world import (
    _B32S,
    _B64,
    INDEX_SPAN,
    PUBLISHED_BASE,
    Account,
    Post,
    World,
    _decode,
    _encode,
    _rng,
)

# Which conversations each platform's API lets an account read (documented per platform).
KINDS: dict[str, tuple[str, ...]] = {
    "x": ("comment", "mention", "dm"),
    "instagram": ("comment", "dm"),
    "facebook": ("comment", "dm"),
    "linkedin": ("comment",),
    "youtube": ("comment",),
    "bluesky": ("comment", "mention"),
    "threads": ("comment",),
    "tiktok": (),
    "pinterest": (),
}
# Events per hour per kind on the account as a whole, and comments per hour on each post
# published through the write APIs during its first two days.
RATE = {"comment": 0.5, "mention": 0.25, "dm": 0.3}
PUBLISHED_COMMENT_RATE = 1.5
PUBLISHED_COMMENT_HOURS = 48
HORIZON = timedelta(days=7)  # how far back a listing looks
SLOTS = 100  # events per account per hour, at most
MAX_HOUR = 2_000_000  # hours since 1970: beyond year 2198 an id is not one of these

# Some phrases repeat on purpose, so inbox automations have something to fire on.
PHRASES = (
    "how much is this?",
    "How much for two?",
    "I want a refund, it arrived broken",
    "refund please",
    "love this!",
    "Love this so much",
    "do you ship to Canada?",
    "when is the next drop?",
    "can you DM me the details?",
    "this did not work for me",
    "where can I buy it?",
    "great post, thanks",
)
_FIRST = ("sam", "alex", "jo", "kim", "lee", "max", "ria", "noa", "eli", "ana", "tom", "zoe")
_LAST = ("runs", "cooks", "codes", "reads", "draws", "plays", "builds", "writes")


@dataclass(frozen=True)
class Event:
    """One inbound message to one of our accounts."""

    account: Account
    number: int  # (hour * INDEX_SPAN + account index) * SLOTS + slot
    kind: str  # comment | mention | dm
    at: datetime
    text: str
    author_id: str
    author_handle: str
    author_name: str
    post: Post | None  # the post a comment is on

    @property
    def platform(self) -> str:
        return self.account.platform

    @property
    def message_id(self) -> str:
        """The platform-shaped id of this message (the number is always recoverable)."""
        return message_id(self.platform, self.kind, self.number, self.account)

    @property
    def thread_id(self) -> str:
        """Where a reply goes: the comment or mention itself, or the DM conversation."""
        if self.kind != "dm":
            return self.message_id
        if self.platform == "x":
            return f"{self.author_id}-{self.number}"
        return f"t_{self.number}"


def message_id(platform: str, kind: str, number: int, account: Account) -> str:
    if kind == "dm":
        return str(number) if platform == "x" else f"m_{number}"
    if platform == "instagram":
        return f"178{number:017d}"
    if platform == "facebook":
        return f"{number}_{number}"
    if platform == "linkedin":
        return f"urn:li:comment:(urn:li:activity:{account.index},{number})"
    if platform == "youtube":
        return "Ugz" + _encode(number, _B64, 22)
    if platform == "bluesky":
        return f"at://did:plc:fan{number % 997:04d}/app.bsky.feed.post/{_encode(number, _B32S, 13)}"
    return str(number)  # x, threads: numeric ids


def number_of(platform: str, external_id: str) -> int | None:
    """The event number inside a message or thread id, or None when it is not one."""
    if platform == "bluesky" and "/" in external_id:
        return _decode(external_id.rsplit("/", 1)[-1], _B32S)
    if platform == "youtube" and external_id.startswith("Ugz"):
        return _decode(external_id[3:], _B64)
    if platform == "instagram" and external_id.startswith("178"):
        return int(external_id[3:])
    digits = re.findall(r"\d+", external_id)
    if not digits:
        return None
    return int(digits[-1]) if not external_id.startswith("t_") else int(digits[0])


def _poisson(r: random.Random, mean: float) -> int:
    limit, count, p = math.exp(-mean), 0, r.random()
    while p > limit and count < 20:
        count += 1
        p *= r.random()
    return count


def _author(world: World, platform: str, number: int) -> tuple[str, str, str]:
    r = _rng(world.seed, "fan", platform, number % 5000)
    first, last = r.choice(_FIRST), r.choice(_LAST)
    handle = f"{first}{last}{number % 5000}"
    if platform == "bluesky":
        handle += ".bsky.social"
    return str(2_000_000_000 + number % 5000), handle, f"{first.title()} {last.title()}"


def hour_events(world: World, account: Account, hour: int) -> list[Event]:
    """The events of one hour (hours since the epoch) on one of our accounts."""
    kinds = KINDS.get(account.platform, ())
    if account.kind != "own" or not kinds:
        return []
    start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(hours=hour)
    end = start + timedelta(hours=1)
    base = (hour * INDEX_SPAN + account.index) * SLOTS
    out: list[Event] = []
    r = _rng(world.seed, "inbox", account.platform, account.external_id, hour)
    # Counts come from the hour's generator, everything else from each event's own, so that
    # a post published later in the hour adds events without changing the earlier ones.
    plan = [kind for kind in kinds for _ in range(_poisson(r, RATE[kind]))]
    recent: list[Post] | None = None
    published: list[Post] = []
    if "comment" in kinds:
        for mine in world.published_posts(account):
            age = (end - mine.published_at).total_seconds() / 3600
            if 0 < age <= PUBLISHED_COMMENT_HOURS + 1:
                pr = _rng(world.seed, "inbox-post", mine.number, hour)
                published.extend(mine for _ in range(_poisson(pr, PUBLISHED_COMMENT_RATE)))
    entries: list[tuple[str, Post | None]] = [(k, None) for k in plan]
    entries += [("comment", p) for p in published]
    for slot, (kind, on) in enumerate(entries[:SLOTS]):
        number = base + slot
        er = _rng(world.seed, "event", account.platform, number)
        at = start + timedelta(seconds=er.uniform(0, 3599))
        post = on
        if kind == "comment" and post is None:
            if recent is None:
                recent = [
                    p
                    for p in world.posts(account, start)
                    if start - p.published_at < timedelta(days=3) and p.number < PUBLISHED_BASE
                ]
            if not recent:
                continue
            post = er.choice(recent[:5])
        if post is not None and at <= post.published_at:
            at = post.published_at + (end - post.published_at) * er.uniform(0.1, 0.9)
        phrase = er.choice(PHRASES)
        author_id, handle, name = _author(world, account.platform, number)
        text = f"@{account.handle.lstrip('@')} {phrase}" if kind == "mention" else phrase
        out.append(Event(account, number, kind, at, text, author_id, handle, name, post))
    return out


def events(world: World, account: Account, since: datetime | None, now: datetime) -> list[Event]:
    """Events on ``account`` after ``since`` (at most HORIZON back) up to ``now``, oldest first."""
    start = max(since or now - HORIZON, now - HORIZON)
    first = int(start.timestamp() // 3600)
    last = int(now.timestamp() // 3600)
    out = [
        e
        for hour in range(first, last + 1)
        for e in hour_events(world, account, hour)
        if start < e.at <= now
    ]
    out.sort(key=lambda e: (e.at, e.number))
    return out


def find(world: World, platform: str, external_id: str, now: datetime) -> Event | None:
    """The event behind a message or thread id, if it exists by ``now``."""
    number = number_of(platform, external_id)
    if number is None:
        return None
    rest = number // SLOTS
    hour, index = divmod(rest, INDEX_SPAN)
    if not 0 < hour < MAX_HOUR:
        return None  # some other id whose digits happen to decode (a post, a container)
    account = next((a for a in world.accounts(platform) if a.index == index), None)
    if account is None:
        return None
    for event in hour_events(world, account, hour):
        if (
            event.number == number
            and event.at <= now
            and external_id in (event.message_id, event.thread_id)
        ):
            return event
    return None
