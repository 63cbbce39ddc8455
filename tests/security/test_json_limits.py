"""Free-form JSON the store cannot hold, and dates past the calendar (issue 32, point 7).

Python's decoder accepts ``NaN`` and ``Infinity`` (not JSON; PostgreSQL's ``jsonb`` refuses
them) and nests as deep as its stack allows, while the validators and encoders behind it
stop near 255 levels: the API refuses both at the edge, naming the field.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from domain.text import MAX_DEPTH
from tests.mcp.agent import agent
from tests.posts.helpers import post_body
from tests.support import LiveServer, Tenant, assert_error


def _post_raw(tenant: Tenant, body: str, path: str = "/posts") -> dict[str, Any]:
    response = tenant.api.post(
        path, content=body.encode(), headers={"Content-Type": "application/json"}
    )
    return assert_error(response, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize("spelling", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_in_platform_options_are_refused(tenant: Tenant, spelling: str) -> None:
    body = json.dumps(post_body(platform_options={"x": {"reply_settings": "following"}}))
    body = body.replace('"following"', spelling)
    for path in ("/posts", "/posts/validate"):
        error = _post_raw(tenant, body, path)
        assert error["details"] == [
            {
                "field": "platform_options.x.reply_settings",
                "issue": "not_finite",
                "message": "NaN and Infinity are not JSON numbers.",
            }
        ]
    assert tenant.api.ok(tenant.api.get("/posts", params={"limit": 100}))["items"] == []


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 900])
def test_deeply_nested_free_form_json_is_refused(tenant: Tenant, depth: int) -> None:
    # The body is level 1, platform_options 2, x 3: the innermost object at level ``depth``.
    nested = "[" * (depth - 3) + "]" * (depth - 3)
    body = json.dumps(post_body(platform_options={"x": {"deep": "HOLE"}}))
    body = body.replace('"HOLE"', nested)
    error = _post_raw(tenant, body)
    [detail] = error["details"]
    assert detail["issue"] == "too_deep"
    assert detail["field"].startswith("platform_options.x.deep")


def test_free_form_json_at_the_depth_limit_is_kept(tenant: Tenant) -> None:
    nested: object = {}
    for _ in range(MAX_DEPTH - 4):  # with the body, platform_options, x and {}: MAX_DEPTH
        nested = {"k": nested}
    body = post_body(platform_options={"x": {"reply_settings": "following", "extra": nested}})
    response = tenant.api.post("/posts/validate", json=body)
    assert response.status_code == 200, response.text


def test_an_agents_arguments_have_the_same_depth_limit(server: LiveServer, tenant: Tenant) -> None:
    nested: Any = []
    for _ in range(100):  # past 64, short of the MCP client's own limit
        nested = [nested]
    arguments = {
        "text": "Deep",
        "platforms": ["x"],
        "draft": True,
        "platform_options": {"x": {"deep": nested}},
    }
    with agent(server, tenant.key) as a:
        error = a.error("create_post", arguments, "VALIDATION_ERROR")
        assert error["details"][0]["issue"] == "too_deep"
        assert error["details"][0]["field"].startswith("platform_options.x.deep")
        assert a.ok("list_posts")["items"] == []


def test_an_agents_text_has_the_same_character_rules(server: LiveServer, tenant: Tenant) -> None:
    with agent(server, tenant.key) as a:
        error = a.error(
            "create_post",
            {"text": "Nul\u0000here", "platforms": ["x"], "draft": True},
            "VALIDATION_ERROR",
        )
        assert error["details"][0] == {
            "field": "text",
            "issue": "invalid_character",
            "message": "NUL characters and unpaired UTF-16 surrogates are not allowed.",
        }
        assert a.ok("list_posts")["items"] == []
