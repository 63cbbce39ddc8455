"""``as_of``: which past snapshot of the lake an analytics read answers at, and whether the
lake's retention still allows it (docs/api/analytics.md, "as_of"). REST and MCP both call it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from core.settings import Settings
from domain.errors import ValidationFailed
from domain.schemas import iso_z
from warehouse.store import LakeSnapshot, Store

AS_OF_DESCRIPTION = (
    "Answer as of a past moment, exactly as then: a lake snapshot id (`provenance.snapshot_id` "
    "of an earlier answer) or an RFC 3339 instant with an offset (the snapshot current then). "
    "Within the lake's snapshot retention (`lake_snapshot_keep_hours`, 168 by default); "
    "otherwise 400 on `as_of`."
)
_SNAPSHOT_ID = re.compile(r"^[0-9]{1,18}$")
_INVALID = (
    "`as_of` must be a lake snapshot id (a non-negative integer, as `provenance.snapshot_id` "
    "gives it) or an RFC 3339 instant with an offset, such as 2026-11-25T09:00:00Z."
)


def _too_old(what: str, keep_hours: float, oldest: datetime) -> ValidationFailed:
    """``what`` is too old, with the retention and the oldest instant allowed now."""
    return ValidationFailed.on(
        "as_of",
        "too_old",
        f"{what} The lake keeps {keep_hours:g} hours of snapshots (lake_snapshot_keep_hours):"
        f" the oldest `as_of` allowed now is {iso_z(oldest)}.",
    )


def parse_as_of(raw: int | str) -> int | datetime:
    """A snapshot id or an aware instant (UTC); VALIDATION_ERROR on ``as_of`` otherwise."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 0:
            raise ValidationFailed.on("as_of", "invalid", _INVALID)
        return raw
    text = str(raw).strip()
    if _SNAPSHOT_ID.match(text):
        return int(text)
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationFailed.on("as_of", "invalid", _INVALID) from None
    if "T" not in text.upper() and " " not in text:  # a date alone is no instant
        raise ValidationFailed.on("as_of", "invalid", _INVALID)
    if instant.tzinfo is None:
        raise ValidationFailed.on(
            "as_of", "offset_required", "`as_of` needs an offset (`Z` or `+02:00`)."
        )
    return instant.astimezone(UTC)


def resolve_as_of(
    store: Store, settings: Settings, raw: int | str, now: datetime | None = None
) -> LakeSnapshot:
    """The lake snapshot ``as_of`` names, if the retention still allows reading it.

    The rule (docs/api/analytics.md, "as_of"): a snapshot is readable when it was committed
    within the retention (and since the lake's last migration), or is the newest; an instant
    names the snapshot current then, and is itself within the retention and not in the
    future. What the daily upkeep expires is exactly what this refuses, whether it has run
    yet or not.
    """
    asked = parse_as_of(raw)
    now = now or datetime.now(UTC)
    hours = settings.lake_snapshot_keep_hours
    keep = timedelta(hours=hours)
    kept = now - keep
    if isinstance(asked, datetime):
        if asked > now:
            raise ValidationFailed.on(
                "as_of",
                "in_future",
                f"`as_of` {iso_z(asked)} is in the future: the newest allowed is now, "
                f"{iso_z(now)}.",
            )
        if asked < kept:
            what = f"`as_of` {iso_z(asked)} is older than the lake's snapshot retention."
            raise _too_old(what, hours, kept)
        found = store.find_snapshot(at=asked, since=kept)
    else:
        found = store.find_snapshot(snapshot_id=asked, since=kept)
    newest_id, newest_at = found.newest
    # Snapshots of an older schema than the newest's are not read by this code's SQL.
    floor = max(kept, found.schema_since)
    # The oldest instant whose snapshot the rule allows: the first commit at or after the
    # floor (an instant before it names an older snapshot), or the floor when none is newer.
    oldest = floor if newest_at < floor else max(found.first_since or floor, found.schema_since)
    if found.found is None:
        if isinstance(asked, datetime):
            what = f"`as_of` {iso_z(asked)} is before the oldest snapshot the lake keeps."
            raise _too_old(what, hours, oldest)
        if asked > newest_id:
            raise ValidationFailed.on(
                "as_of",
                "unknown_snapshot",
                f"The lake has no snapshot {asked}: the newest is {newest_id}.",
            )
        raise _too_old(f"Snapshot {asked} is no longer kept.", hours, oldest)
    snapshot_id, committed_at = found.found
    newest = snapshot_id == newest_id
    if committed_at < floor and not newest:
        named = (
            f"Snapshot {snapshot_id}"
            if not isinstance(asked, datetime)
            else f"The snapshot current at {iso_z(asked)} ({snapshot_id})"
        )
        why = (
            "before the retention"
            if committed_at < kept
            else f"before the lake's schema was last migrated ({iso_z(found.schema_since)})"
        )
        raise _too_old(f"{named} was committed at {iso_z(committed_at)}, {why}.", hours, oldest)
    clock = asked if isinstance(asked, datetime) else committed_at
    # An answer at it is served while the rule allows it: until its commit (an instant's own
    # moment, for the newest snapshot) leaves the retention; the newest id, while it is so.
    if newest:
        expires = None if not isinstance(asked, datetime) else asked + keep
    else:
        expires = committed_at + keep
    return LakeSnapshot(snapshot_id, committed_at, clock, expires)
