"""Queue slots across a daylight-saving change, read through the API over HTTP."""

from __future__ import annotations

from tests.support import Tenant


def test_paris_slots_keep_their_wall_clock_time_across_the_spring_change(tenant: Tenant) -> None:
    api = tenant.api
    queue = api.ok(
        api.post(
            "/queues",
            json={
                "name": "Mornings",
                "timezone": "Europe/Paris",
                "slots": [{"weekday": 0, "time": "09:00"}],  # Mondays 09:00 Paris
                "destinations": ["x"],
            },
        ),
        201,
    )
    # Paris moves to summer time on Sunday 2027-03-28.
    page = api.ok(
        api.get(
            f"/queues/{queue['id']}/slots",
            params={"from": "2027-03-15T00:00:00Z", "to": "2027-04-06T00:00:00Z"},
        )
    )
    got = [(s["starts_at"], s["local_time"][11:16]) for s in page["items"]]
    assert got == [
        ("2027-03-15T08:00:00.000Z", "09:00"),  # winter, UTC+1
        ("2027-03-22T08:00:00.000Z", "09:00"),
        ("2027-03-29T07:00:00.000Z", "09:00"),  # summer, UTC+2
        ("2027-04-05T07:00:00.000Z", "09:00"),
    ]
