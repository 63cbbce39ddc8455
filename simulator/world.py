"""The simulated world: accounts, posts and engagement as pure functions of (seed, now)."""

from __future__ import annotations

import hashlib
import math
import random
import re
import string
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

PLATFORMS = (
    "youtube",
    "x",
    "instagram",
    "linkedin",
    "tiktok",
    "bluesky",
    "facebook",
    "threads",
    "pinterest",
)

# Mirrors domain.workspaces.service.TEST_ACCOUNTS (a test checks they agree): `murmur init`
# connects these, with external ids "test-<platform>-<handle>".
OWN_ACCOUNTS = {
    "x": ("murmur_test", "Murmur Test"),
    "instagram": ("murmur.test", "Murmur Test"),
    "linkedin": ("murmur-test", "Murmur Test Company"),
    "tiktok": ("murmur.test", "Murmur Test"),
    "youtube": ("@murmurtest", "Murmur Test Channel"),
    "bluesky": ("murmur-test.bsky.social", "Murmur Test"),
    "facebook": ("MurmurTest", "Murmur Test Page"),
    "threads": ("murmur.test", "Murmur Test"),
    "pinterest": ("murmurtest", "Murmur Test Boards"),
}

COMPETITORS = (("chirply", "Chirply"), ("buzzhive", "BuzzHive"), ("postpilot", "PostPilot"))

TOPICS: dict[str, tuple[str, ...]] = {
    "tech": ("ai", "gadgets", "coding", "startups", "python", "opensource"),
    "fitness": ("workout", "running", "yoga", "nutrition", "gym"),
    "food": ("recipes", "vegan", "baking", "streetfood", "coffee"),
    "travel": ("wanderlust", "roadtrip", "hiking", "cityguide", "beaches"),
    "finance": ("investing", "budgeting", "crypto", "personalfinance", "stocks"),
    "gaming": ("esports", "indiegames", "speedrun", "retrogaming", "streaming"),
    "beauty": ("skincare", "makeup", "haircare", "fragrance"),
    "education": ("studytips", "languages", "science", "history", "math"),
    "marketing": ("socialmedia", "contentstrategy", "branding", "seo", "analytics"),
}
CATEGORIES = tuple(c for c in TOPICS if c != "marketing")
ALL_TOPICS = tuple(sorted({t for tags in TOPICS.values() for t in tags}))

# Typical cadence (posts per day) and engagement half-life (hours) per platform.
CADENCE = {
    "youtube": 0.35,
    "x": 2.5,
    "instagram": 0.9,
    "linkedin": 0.6,
    "tiktok": 1.2,
    "bluesky": 2.0,
    "facebook": 0.8,
    "threads": 1.5,
    "pinterest": 1.0,
}
HALF_LIFE_H = {
    "youtube": 40.0,
    "x": 3.0,
    "instagram": 14.0,
    "linkedin": 20.0,
    "tiktok": 30.0,
    "bluesky": 4.0,
    "facebook": 10.0,
    "threads": 5.0,
    "pinterest": 120.0,
}
VIDEO_PLATFORMS = ("youtube", "tiktok")

N_COMPETITORS = len(COMPETITORS)
N_CREATORS = 50
PUBLISHED_BASE = 10**15  # post numbers from here on were published through the write APIs
FIRST_REGISTERED = 1000  # account indexes from here on belong to registered accounts
INDEX_SPAN = 10**7  # account index space inside a post number
WINDOW_DAYS = 30  # how far back an account's feed goes
GROWTH_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
EPOCH_DAY = date(1970, 1, 1)
# Follower growth compounds from GROWTH_EPOCH: over a few centuries it stays a float, over the
# millennia a fabricated id can decode to it overflows math.exp. No generated post lies beyond.
LAST_DAY = (date(2200, 1, 1) - EPOCH_DAY).days

_ADJ = ("daily", "urban", "little", "honest", "bright", "wild", "quiet", "happy", "clever", "lazy")
_NOUN = ("bytes", "bites", "trails", "notes", "lab", "studio", "journal", "corner", "club", "desk")


def _rng(*parts: object) -> random.Random:
    # A string seed is hashed with SHA-512 by random.Random: stable across processes.
    return random.Random(":".join(str(p) for p in parts))


def _digest(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def day_number(moment: datetime) -> int:
    """Days since 1970-01-01 of a UTC moment."""
    return (moment.astimezone(UTC).date() - EPOCH_DAY).days


def day_start(day: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=day)


@dataclass(frozen=True)
class Account:
    """One account on one platform, with the parameters its posts are drawn from."""

    platform: str
    index: int
    external_id: str
    handle: str
    display_name: str
    kind: str  # own | competitor | creator
    category: str
    base_followers: int
    growth_per_year: float
    following: int
    cadence: float  # posts per day
    reach_rate: float  # share of followers an ordinary post reaches
    engagement_rate: float  # likes per impression
    base_posts: int

    def followers(self, now: datetime) -> int:
        """Followers at ``now``: steady exponential growth from a fixed epoch."""
        years = (now - GROWTH_EPOCH).total_seconds() / (365.25 * 86400)
        return int(self.base_followers * math.exp(self.growth_per_year * years))

    def posts_count(self, now: datetime) -> int:
        days = max(0.0, (now - GROWTH_EPOCH).total_seconds() / 86400)
        return self.base_posts + int(days * self.cadence)


@dataclass(frozen=True)
class Counters:
    """Cumulative counters of one post at one moment (every metric; platforms pick theirs)."""

    impressions: int
    reach: int
    views: int
    likes: int
    comments: int
    reposts: int
    quotes: int
    shares: int
    saves: int
    bookmarks: int
    clicks: int

    def scaled(self, factor: float) -> Counters:
        """The counters multiplied by ``factor`` (the injected counter correction)."""
        values = {name: int(getattr(self, name) * factor) for name in self.__dataclass_fields__}
        return Counters(**values)


@dataclass(frozen=True)
class Post:
    """One post, with the parameters of its engagement curve."""

    platform: str
    account: Account
    number: int  # (day * INDEX_SPAN + account index) * 100 + n: decodes back to all three
    external_id: str
    published_at: datetime
    text: str
    hashtags: tuple[str, ...]
    media_type: str
    size: float  # final impressions of the ordinary curve
    tau_hours: float
    surge: float  # extra impressions of a viral burst (0: none)
    surge_at: datetime | None
    surge_tau_hours: float
    rates: dict[str, float] = field(hash=False, compare=False)
    deleted_at: datetime | None = None

    def impressions_at(self, now: datetime) -> float:
        age_h = (now - self.published_at).total_seconds() / 3600
        if age_h <= 0:
            return 0.0
        value = self.size * (1 - math.exp(-age_h / self.tau_hours))
        if self.surge and self.surge_at is not None and now > self.surge_at:
            late_h = (now - self.surge_at).total_seconds() / 3600
            value += self.surge * (1 - math.exp(-late_h / self.surge_tau_hours))
        return value

    def counters(self, now: datetime) -> Counters:
        """Cumulative counters at ``now``: fixed ratios of one rising curve, so none goes down."""
        seen = self.impressions_at(now)
        r = self.rates
        return Counters(
            impressions=int(seen),
            reach=int(seen * r["reach"]),
            views=int(seen * r["views"]),
            likes=int(seen * r["likes"]),
            comments=int(seen * r["comments"]),
            reposts=int(seen * r["reposts"]),
            quotes=int(seen * r["quotes"]),
            shares=int(seen * r["shares"]),
            saves=int(seen * r["saves"]),
            bookmarks=int(seen * r["bookmarks"]),
            clicks=int(seen * r["clicks"]),
        )

    def visible(self, now: datetime) -> bool:
        return self.published_at <= now and (self.deleted_at is None or self.deleted_at > now)


# ---- ids ------------------------------------------------------------------------------------

_TAG = re.compile(r"(?<![\w&])#(\w{1,100})")
_B64 = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
_B32S = "234567abcdefghijklmnopqrstuvwxyz"  # AT Protocol's sortable base32 (TIDs)


def _encode(number: int, alphabet: str, width: int) -> str:
    out = []
    for _ in range(width):
        number, digit = divmod(number, len(alphabet))
        out.append(alphabet[digit])
    return "".join(reversed(out))


def _decode(text: str, alphabet: str) -> int | None:
    number = 0
    for char in text:
        digit = alphabet.find(char)
        if digit < 0:
            return None
        number = number * len(alphabet) + digit
    return number


def post_external_id(platform: str, account: Account, number: int) -> str:
    """The platform-shaped id of post ``number``."""
    if platform == "youtube":
        return _encode(number, _B64, 11)
    if platform == "instagram":
        return f"179{number:017d}"
    if platform == "linkedin":
        return f"urn:li:share:{number}"
    if platform == "tiktok":
        return str(7 * 10**18 + number)
    if platform == "bluesky":
        return f"at://{account.external_id}/app.bsky.feed.post/{_encode(number, _B32S, 13)}"
    if platform == "facebook":
        return f"{account.external_id}_{number}"
    if platform == "threads":
        return f"18{number:017d}"
    return str(number)  # x: a snowflake-looking integer; pinterest: a numeric pin id


def post_number(platform: str, external_id: str) -> int | None:
    """The post number inside a platform-shaped id, or None when it is not one of ours."""
    try:
        if platform == "youtube":
            return _decode(external_id, _B64) if len(external_id) == 11 else None
        if platform == "instagram":
            return int(external_id[3:]) if external_id.startswith("179") else None
        if platform == "linkedin":
            prefix = "urn:li:share:"
            return int(external_id[len(prefix) :]) if external_id.startswith(prefix) else None
        if platform == "tiktok":
            return int(external_id) - 7 * 10**18
        if platform == "bluesky":
            return _decode(external_id.rsplit("/", 1)[-1], _B32S)
        if platform == "facebook":
            return int(external_id.rsplit("_", 1)[-1]) if "_" in external_id else None
        if platform == "threads":
            return int(external_id[2:]) if external_id.startswith("18") else None
        return int(external_id)
    except ValueError:
        return None


def account_external_id(platform: str, index: int) -> str:
    """The platform-shaped id of a generated (competitor or creator) account."""
    salt = _digest(f"{platform}:{index}", 40)
    if platform == "youtube":
        return "UC" + _encode(int(salt, 16), _B64, 22)
    if platform == "instagram":
        return f"17841{index:010d}"
    if platform == "linkedin":
        return str(10_000_000 + index)
    if platform == "tiktok":
        return "-000" + salt[:28]
    if platform == "bluesky":
        return "did:plc:" + _encode(int(salt, 16), _B32S, 24)
    if platform == "facebook":
        return str(100_000_000_000_000 + index)
    if platform == "threads":
        return str(25_000_000_000_000_000 + index)
    if platform == "pinterest":
        return str(500_000_000_000_000_000 + index)
    return str(1_400_000_000_000_000_000 + index * 7919)


def _handle(platform: str, name: str) -> str:
    if platform == "youtube":
        return f"@{name}"
    if platform == "bluesky":
        return f"{name}.bsky.social"
    if platform == "linkedin":
        return name.replace("_", "-")
    return name


# ---- the world ------------------------------------------------------------------------------


class World:
    """Every simulated platform, deterministic given the seed, the clock and registered accounts.

    ``hour_effect`` plants a known time-of-day effect: UTC hour of publication -> multiplier
    of the posts published through the write APIs (``publish``) in that hour. Such a post's
    ordinary curve and surge are both multiplied, so every counter scales by it (up to the
    counters' rounding down); generated posts are untouched, and without an effect (None,
    the default) the world is exactly the one of the seed alone.
    """

    def __init__(self, seed: int = 7, hour_effect: Mapping[int, float] | None = None) -> None:
        self.seed = seed
        self.hour_effect: dict[int, float] = {}
        for hour, multiplier in (hour_effect or {}).items():
            if not (isinstance(hour, int) and 0 <= hour <= 23):
                raise ValueError(f"hour_effect: an hour is 0-23 (UTC), not {hour!r}")
            if not (math.isfinite(multiplier) and multiplier > 0):
                raise ValueError(f"hour_effect: hour {hour}'s multiplier {multiplier!r} is not > 0")
            self.hour_effect[hour] = float(multiplier)
        self._accounts: dict[str, dict[int, Account]] = {p: {} for p in PLATFORMS}
        # Posts created through the write APIs: part of the world from their creation on.
        self._published: dict[str, dict[str, Post]] = {p: {} for p in PLATFORMS}
        self._published_of: dict[tuple[str, int], list[Post]] = {}
        self._next_number = PUBLISHED_BASE
        self._publish_lock = threading.Lock()
        for platform in PLATFORMS:
            handle, name = OWN_ACCOUNTS[platform]
            self._add(self._make(platform, 0, f"test-{platform}-{handle}", handle, name, "own"))
            for i, (slug, brand) in enumerate(COMPETITORS, start=1):
                ext = account_external_id(platform, i)
                self._add(
                    self._make(
                        platform, i, ext, _handle(platform, slug), brand, "competitor", "marketing"
                    )
                )
            for j in range(N_CREATORS):
                index = 1 + N_COMPETITORS + j
                pick = _rng(seed, "creator", platform, index)
                category = CATEGORIES[j % len(CATEGORIES)]
                slug = f"{pick.choice(_ADJ)}{category}{pick.choice(_NOUN)}{j}"
                title = f"{slug.title()}"
                ext = account_external_id(platform, index)
                self._add(
                    self._make(
                        platform, index, ext, _handle(platform, slug), title, "creator", category
                    )
                )

    # accounts

    def _make(
        self,
        platform: str,
        index: int,
        external_id: str,
        handle: str,
        name: str,
        kind: str,
        category: str | None = None,
    ) -> Account:
        r = _rng(self.seed, "account", platform, external_id)
        if kind == "creator":
            followers = int(2000 * r.paretovariate(1.1))  # a few very large creators
        elif kind == "competitor":
            followers = int(r.uniform(20_000, 120_000))
        else:
            followers = int(r.uniform(3_000, 15_000))
        return Account(
            platform=platform,
            index=index,
            external_id=external_id,
            handle=handle,
            display_name=name,
            kind=kind,
            category=category or "marketing",
            base_followers=min(followers, 50_000_000),
            growth_per_year=r.uniform(0.05, 0.6),
            following=int(r.uniform(50, 2000)),
            cadence=CADENCE[platform] * r.uniform(0.5, 1.6),
            reach_rate=r.uniform(0.08, 0.35),
            engagement_rate=r.lognormvariate(math.log(0.03), 0.5),
            base_posts=int(r.uniform(50, 3000)),
        )

    def _add(self, account: Account) -> None:
        self._accounts[account.platform][account.index] = account

    def register(
        self,
        platform: str,
        external_id: str,
        handle: str,
        kind: str = "own",
        category: str | None = None,
        display_name: str | None = None,
    ) -> Account:
        """Make an account exist (a workspace's connected account); idempotent by external id."""
        existing = self.account(platform, external_id)
        if existing is not None:
            return existing
        # The index comes from the id, not the registration order, so it is reproducible.
        index = FIRST_REGISTERED + int(_digest(f"{platform}:{external_id}", 12), 16) % (
            INDEX_SPAN - FIRST_REGISTERED
        )
        while index in self._accounts[platform]:
            index = FIRST_REGISTERED + (index + 1) % (INDEX_SPAN - FIRST_REGISTERED)
        account = self._make(
            platform, index, external_id, handle, display_name or handle, kind, category
        )
        self._add(account)
        return account

    def accounts(self, platform: str) -> list[Account]:
        return sorted(self._accounts[platform].values(), key=lambda a: a.index)

    def account(self, platform: str, key: str) -> Account | None:
        """An account by external id or handle (with or without a leading @)."""
        wanted = key.lower().lstrip("@")
        for account in self._accounts[platform].values():
            if account.external_id == key or account.handle.lower().lstrip("@") == wanted:
                return account
        return None

    def search(self, platform: str, query: str) -> list[Account]:
        """Creators and competitors whose category, handle or name matches, biggest first."""
        q = query.lower().strip().lstrip("#@")
        hits = [
            a
            for a in self._accounts[platform].values()
            if a.kind != "own"
            and (
                not q
                or q == a.category
                or q in a.handle.lower()
                or q in a.display_name.lower()
                or q in TOPICS.get(a.category, ())
            )
        ]
        return sorted(hits, key=lambda a: (-a.base_followers, a.index))

    # trends

    @lru_cache(maxsize=4096)  # noqa: B019 - the world lives as long as the process
    def trending(self, day: int) -> frozenset[str]:
        """Topics trending on ``day``: two per 3-day window, plus one that lingers a week."""
        window = _rng(self.seed, "trend", day // 3)
        week = _rng(self.seed, "trend-week", day // 7)
        return frozenset([*window.sample(ALL_TOPICS, 2), week.choice(ALL_TOPICS)])

    # posts

    def _day_posts(self, account: Account, day: int) -> list[Post]:
        return list(_day_posts(self, account, day))

    def posts(self, account: Account, now: datetime) -> list[Post]:
        """The account's visible posts of the last WINDOW_DAYS, newest first."""
        today = day_number(now)
        out: list[Post] = []
        for day in range(today, today - WINDOW_DAYS - 1, -1):
            out.extend(p for p in reversed(self._day_posts(account, day)) if p.visible(now))
        published = self.published_posts(account)
        if published:
            oldest = day_start(today - WINDOW_DAYS)
            out.extend(p for p in published if p.visible(now) and p.published_at >= oldest)
            out.sort(key=lambda p: (int(p.published_at.timestamp()), p.number), reverse=True)
        return out

    def publish(
        self,
        account: Account,
        text: str,
        media_type: str,
        at: datetime,
        *,
        number: int | None = None,
    ) -> Post:
        """Create a post through a write API: from ``at`` on it has its own engagement curve
        (times the ``hour_effect`` of ``at``'s UTC hour, if any)."""
        # ``number`` restores a post published before a restart: its curve is drawn from the
        # seed and the number, so it comes back exactly as it was.
        with self._publish_lock:
            if number is None:
                number = self._next_number
            elif number < PUBLISHED_BASE:
                raise ValueError(f"published post numbers start at {PUBLISHED_BASE}: {number}")
            self._next_number = max(self._next_number, number + 1)
            pr = _rng(self.seed, "published", account.platform, number)
            tags = tuple(dict.fromkeys(t.lower() for t in _TAG.findall(text)))
            post = shape_post(
                account,
                number,
                at,
                tags,
                pr,
                self.trending(day_number(at)),
                lambda _r: (text, media_type),
                may_vanish=False,
            )
            multiplier = self.hour_effect.get(at.astimezone(UTC).hour, 1.0)
            if multiplier != 1.0:  # the planted time-of-day effect: the whole curve scales
                post = replace(post, size=post.size * multiplier, surge=post.surge * multiplier)
            self._published[account.platform][post.external_id] = post
            self._published_of.setdefault((account.platform, account.index), []).append(post)
            return post

    def published_posts(self, account: Account) -> list[Post]:
        """The posts created through the write APIs for ``account``, oldest first."""
        return list(self._published_of.get((account.platform, account.index), ()))

    def post(self, platform: str, external_id: str) -> Post | None:
        """A post by its platform id (deleted or not, published or not: callers check)."""
        published = self._published[platform].get(external_id)
        if published is not None:
            return published
        number = post_number(platform, external_id)
        # Numbers from PUBLISHED_BASE on belong to the write APIs: one not published here is
        # unknown, never a generated post (decoded as one it would be dated ~4700 AD).
        if number is None or number < 0 or number >= PUBLISHED_BASE:
            return None
        rest, _n = divmod(number, 100)
        day, index = divmod(rest, INDEX_SPAN)
        if day > LAST_DAY:
            return None
        account = self._accounts[platform].get(index)
        if account is None:
            return None
        for post in self._day_posts(account, day):
            if post.number == number and post.external_id == external_id:
                return post
        return None


@lru_cache(maxsize=65536)
def _day_posts(world: World, account: Account, day: int) -> tuple[Post, ...]:
    platform = account.platform
    r = _rng(world.seed, "day", platform, account.external_id, day)
    # Poisson number of posts: Knuth's method is plenty for rates below ~5 a day.
    limit, count, p = math.exp(-account.cadence), 0, r.random()
    while p > limit and count < 20:
        count += 1
        p *= r.random()
    # Publish times cluster in the working day (UTC 8-22), a few at night.
    seconds = sorted(int((r.gauss(15, 3.5) % 24) * 3600 + r.uniform(0, 59)) for _ in range(count))
    trending = world.trending(day)
    posts = []
    for n, second in enumerate(seconds):
        number = (day * INDEX_SPAN + account.index) * 100 + n
        published = day_start(day) + timedelta(seconds=second)
        pr = _rng(world.seed, "post", platform, number)
        topics = TOPICS[account.category]
        tags = pr.sample(topics, k=min(len(topics), pr.randint(1, 3)))
        if pr.random() < 0.35:  # people jump on what is trending
            tags.append(pr.choice(sorted(trending)))
        tags = list(dict.fromkeys(tags))

        def describe(pr: random.Random, tags: list[str] = tags) -> tuple[str, str]:
            media = _media_type(platform, pr)
            words = " ".join(pr.sample(_PHRASES, 2))
            text = f"{words.capitalize()}: {account.category} " + " ".join(f"#{t}" for t in tags)
            return text, media

        posts.append(shape_post(account, number, published, tuple(tags), pr, trending, describe))
    return tuple(posts)


def shape_post(
    account: Account,
    number: int,
    published: datetime,
    tags: tuple[str, ...],
    pr: random.Random,
    trending: frozenset[str],
    describe: Callable[[random.Random], tuple[str, str]],
    *,
    may_vanish: bool = True,
) -> Post:
    """A post with its engagement curve drawn from ``pr`` (generated and published alike)."""
    platform = account.platform
    boost = 2.5 if trending.intersection(tags) else 1.0
    followers = account.followers(published)
    size = followers * account.reach_rate * pr.lognormvariate(0, 0.9) * boost + 5
    viral_p = 0.03 * boost
    surge, surge_at, surge_tau = 0.0, None, 6.0
    if pr.random() < viral_p:  # a late surge: shared by someone big, hours or days later
        surge = size * 4 * pr.paretovariate(1.3)
        surge_at = published + timedelta(hours=pr.uniform(6, 72))
        surge_tau = pr.uniform(2, 12)
    er = account.engagement_rate * pr.lognormvariate(0, 0.35)
    rates = {
        "reach": pr.uniform(0.55, 0.85),
        "views": pr.uniform(0.3, 0.6) if platform in VIDEO_PLATFORMS else 0.0,
        "likes": er,
        "comments": er * pr.uniform(0.02, 0.12),
        "reposts": er * pr.uniform(0.05, 0.25),
        "quotes": er * pr.uniform(0.01, 0.05),
        "shares": er * pr.uniform(0.03, 0.15),
        "saves": er * pr.uniform(0.02, 0.2),
        "bookmarks": er * pr.uniform(0.01, 0.08),
        "clicks": pr.uniform(0.002, 0.02),
    }
    deleted_at = None
    if pr.random() < 0.01 and may_vanish:
        deleted_at = published + timedelta(hours=pr.uniform(1, 120))
    text, media = describe(pr)  # drawn last, so the seeded world stays what it was
    return Post(
        platform=platform,
        account=account,
        number=number,
        external_id=post_external_id(platform, account, number),
        published_at=published,
        text=text,
        hashtags=tags,
        media_type=media,
        size=size,
        tau_hours=HALF_LIFE_H[platform] / math.log(2) * pr.uniform(0.6, 1.5),
        surge=surge,
        surge_at=surge_at,
        surge_tau_hours=surge_tau,
        rates=rates,
        deleted_at=deleted_at,
    )


def _media_type(platform: str, r: random.Random) -> str:
    if platform in VIDEO_PLATFORMS:
        return "video"
    options = {
        "x": ("text", "text", "image", "video", "link"),
        "instagram": ("image", "video", "carousel"),
        "linkedin": ("text", "image", "link", "video"),
        "bluesky": ("text", "text", "image", "link"),
        "facebook": ("text", "image", "link", "video"),
        "threads": ("text", "text", "image"),
        "pinterest": ("image", "image", "video"),
    }[platform]
    return r.choice(options)


_PHRASES = (
    "here is what we learned this week",
    "three things nobody tells you",
    "a quick thread on",
    "behind the scenes of",
    "our favourite tip today",
    "you asked, we answered",
    "new drop is live",
    "big news for the community",
    "small wins matter",
    "the one mistake to avoid",
    "what would you add",
    "try this before friday",
)
