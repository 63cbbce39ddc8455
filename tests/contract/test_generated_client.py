"""What integrators do first: generate a client from the OpenAPI document and use it.

`openapi-python-client` (the `dev` extra) generates a package from the live server's
document in a temporary directory; a short script then runs through it in a subprocess (so
that this process never imports the generated code): create a post, replay it with the same
Idempotency-Key, page through posts, and meet one typed error.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import BASE_PATH
from tests.support import LiveServer, Tenant, run_checked

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

PACKAGE = "murmur_client"

SCRIPT = textwrap.dedent(
    """
    import datetime
    import json
    import sys
    import uuid

    from murmur_client import AuthenticatedClient
    from murmur_client.api.posts_media import create_post, get_post, list_posts
    from murmur_client.models import (
        EnvelopePagePost,
        EnvelopePost,
        ErrorCode,
        ErrorEnvelope,
        Platform,
        PostCreate,
    )

    base_url, token = sys.argv[1], sys.argv[2]
    client = AuthenticatedClient(base_url=base_url, token=token, timeout=30)
    out = {}

    # Create, then replay with the same key.
    key = str(uuid.uuid4())
    body = PostCreate.from_dict({"text": "Generated!", "platforms": ["x"], "draft": True})
    first = create_post.sync_detailed(client=client, body=body, idempotency_key=key)
    assert first.status_code == 201, first.content
    assert isinstance(first.parsed, EnvelopePost), first.parsed
    post = first.parsed.data
    assert isinstance(post.created_at, datetime.datetime) and post.created_at.tzinfo is not None
    assert post.destinations[0].platform is Platform.X
    again = create_post.sync_detailed(client=client, body=body, idempotency_key=key)
    assert again.status_code == 201
    assert isinstance(again.parsed, EnvelopePost)
    out["created"] = post.id
    out["replayed"] = again.headers.get("Idempotent-Replayed")
    out["replayed_id"] = again.parsed.data.id
    out["request_ids"] = [first.parsed.request_id, again.parsed.request_id]

    # Two more posts, then every post, two at a time.
    for text in ("second", "third"):
        more = PostCreate.from_dict({"text": text, "platforms": ["linkedin"], "draft": True})
        made = create_post.sync(client=client, body=more, idempotency_key=str(uuid.uuid4()))
        assert isinstance(made, EnvelopePost), made
    seen, cursor, pages = [], None, 0
    while True:
        kwargs = {"limit": 2} if cursor is None else {"limit": 2, "cursor": cursor}
        page = list_posts.sync(client=client, **kwargs)
        assert isinstance(page, EnvelopePagePost), page
        pages += 1
        seen += [p.id for p in page.data.items]
        cursor = page.data.pagination.next_cursor
        if not page.data.pagination.has_more:
            break
    out["pages"] = pages
    out["seen"] = seen

    # One error, typed.
    missing = get_post.sync(client=client, post_id="post_does_not_exist")
    assert isinstance(missing, ErrorEnvelope), missing
    assert missing.error.code is ErrorCode.NOT_FOUND
    out["error"] = missing.error.code.value
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def generated(server: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client package generated from the document the live server publishes."""
    where = tmp_path_factory.mktemp("generated-client")
    document = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json", timeout=30)
    assert document.status_code == 200
    spec = where / "openapi.json"
    spec.write_bytes(document.content)
    tool = Path(sys.executable).with_name("openapi-python-client")
    if not tool.exists():
        pytest.fail("openapi-python-client is missing: pip install -e '.[dev]'")
    env = {**os.environ, "PATH": f"{tool.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = run_checked(
        [str(tool), "generate", "--path", str(spec), "--meta", "none", "--output-path", PACKAGE],
        cwd=where,
        env=env,
        timeout=300,
    )
    # Every operation generated: no warning that a piece was left out.
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    return where


def test_every_operation_is_generated_under_its_operation_id(
    server: LiveServer, generated: Path
) -> None:
    document: dict[str, Any] = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json").json()
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)) > 60
    modules = {p.stem for p in (generated / PACKAGE / "api").rglob("*.py")} - {"__init__"}
    assert set(ids) <= modules
    # The inbox automations' bodies no longer clash with the content automations'.
    inbox = generated / PACKAGE / "api" / "inbox"
    assert (inbox / "create_inbox_automation.py").exists()
    assert (inbox / "update_inbox_automation.py").exists()


def test_a_short_script_through_the_generated_client(
    server: LiveServer, tenant: Tenant, generated: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(generated)}
    done = run_checked(
        [sys.executable, "-c", SCRIPT, f"{server.base_url}{BASE_PATH}", tenant.key],
        env=env,
        timeout=120,
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["replayed"] == "true"
    assert out["replayed_id"] == out["created"]
    assert out["request_ids"][0] == out["request_ids"][1]
    assert out["pages"] == 2
    assert len(out["seen"]) == len(set(out["seen"])) == 3
    assert out["seen"][-1] == out["created"]  # newest first
    assert out["error"] == "NOT_FOUND"


def test_the_document_is_ready_for_integrators(server: LiveServer) -> None:
    document: dict[str, Any] = httpx.get(f"{server.base_url}{BASE_PATH}/openapi.json").json()
    assert document["servers"] == [{"url": BASE_PATH, "description": "The public API, v1."}]
    schemas = document["components"]["schemas"]
    assert not [name for name in schemas if name.startswith("api__")]  # no module paths
    assert schemas["Platform"]["enum"][:2] == ["x", "instagram"]
    assert set(schemas["ErrorCode"]["enum"]) >= {"VALIDATION_ERROR", "NOT_FOUND", "RATE_LIMITED"}
    text = json.dumps(document)
    assert text.count('"instagram"') == 1  # the Platform schema's enum, nowhere inline
    for name, schema in schemas.items():
        for field, prop in schema.get("properties", {}).items():
            if field.endswith("_at"):
                branches = prop.get("anyOf", [prop])
                assert {"type": "string", "format": "date-time"} in [
                    {k: b.get(k) for k in ("type", "format")} for b in branches
                ], (name, field)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            ok = next(r for status, r in responses.items() if status.startswith("2"))
            assert {"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Reset"} <= set(ok["headers"])
            if method in {"post", "put", "patch", "delete"}:
                assert "Idempotent-Replayed" in ok["headers"], path
            for status in ("429", "503"):
                assert "Retry-After" in responses[status]["headers"], (path, status)
    assert "ETag" in document["paths"]["/posts"]["get"]["responses"]["200"]["headers"]
