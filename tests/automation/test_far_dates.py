"""Windows at the calendar's far end (issue 32, point 7): an answer in the envelope, never 500.

Timestamps lie before 9000-01-01T00:00:00Z (docs/api.md); a ``from`` just before it, whose
default ``to`` (14 days on) lies past it, lists the occurrences that can be spelled.
"""

from __future__ import annotations

from tests.automation.helpers import make_queue
from tests.support import Tenant, assert_error


def test_queue_slots_from_the_last_spellable_day(tenant: Tenant) -> None:
    api = tenant.api
    queue = make_queue(api)  # Europe/Paris, 09:00 and 17:30 every day
    path = f"/queues/{queue['id']}/slots"
    assert api.ok(api.get(path, params={"from": "8999-12-31T23:59:59Z"}))["items"] == []
    last = api.ok(api.get(path, params={"from": "8999-12-31T00:00:00Z"}))["items"]
    assert [s["starts_at"] for s in last] == [
        "8999-12-31T08:00:00.000Z",
        "8999-12-31T16:30:00.000Z",
    ]
    events = api.ok(api.get("/scheduled-events", params={"from": "8999-12-31T23:59:59Z"}))
    assert events["items"] == []


def test_queue_slots_past_the_last_spellable_day_are_refused(tenant: Tenant) -> None:
    queue = make_queue(tenant.api)
    response = tenant.api.get(
        f"/queues/{queue['id']}/slots", params={"from": "9000-01-01T00:00:00Z"}
    )
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "from"
