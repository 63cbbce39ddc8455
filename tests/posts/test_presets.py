"""A destination preset stands wherever a destination does."""

from __future__ import annotations

from typing import Any

from tests.posts.helpers import post_body
from tests.support import Tenant, assert_error

FOLLOWING = {"reply_settings": "following"}


def _preset(tenant: Tenant, name: str, options: dict[str, dict[str, str]]) -> Any:
    """A new destination preset of the tenant's accounts on these platforms, with options."""
    destinations = [
        {"account_id": tenant.accounts[platform], "options": given}
        for platform, given in options.items()
    ]
    return tenant.api.ok(
        tenant.api.post("/destination-presets", json={"name": name, "destinations": destinations}),
        201,
    )


def test_a_preset_expands_to_its_accounts_and_options(tenant: Tenant) -> None:
    api = tenant.api
    preset = _preset(tenant, "Launch set", {"x": FOLLOWING, "linkedin": {}})
    body = post_body(platforms=[{"preset_id": preset["id"]}, "bluesky"])
    post = api.ok(api.post("/posts", json=body), 201)
    assert [d["platform"] for d in post["destinations"]] == ["x", "linkedin", "bluesky"]
    assert post["platform_options"]["x"] == {"reply_settings": "following"}


def test_the_posts_own_options_win_over_the_presets(tenant: Tenant) -> None:
    api = tenant.api
    preset = _preset(tenant, "X only", {"x": FOLLOWING})
    body = post_body(
        platforms=[{"preset_id": preset["id"]}],
        platform_options={"x": {"reply_settings": "mentionedUsers"}},
    )
    post = api.ok(api.post("/posts", json=body), 201)
    assert post["platform_options"]["x"] == {"reply_settings": "mentionedUsers"}


def test_an_unknown_preset_is_a_validation_error(tenant: Tenant) -> None:
    response = tenant.api.post("/posts", json=post_body(platforms=[{"preset_id": "dps_nope"}]))
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"][0]["field"] == "platforms.0.preset_id"
    assert error["details"][0]["issue"] == "unknown_preset"
