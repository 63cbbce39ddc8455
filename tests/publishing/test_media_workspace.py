"""The worker loads a post's media from the post's own workspace only (issue 32, point 7).

The API accepts only a workspace's own media ids, but the worker must not trust the stored
row: a post whose row names another workspace's media (a bug, a restore, a hand edit) fails
as ``media_missing`` and publishes nothing, rather than sending another tenant's file.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.posts.helpers import upload_id
from tests.publishing.conftest import (
    Sim,
    StartWorker,
    destination_rows,
    post_row,
    settled,
    unique_text,
    wait_for,
)
from tests.support import LiveServer, Tenant, new_tenant


def _post(tenant: Tenant, text: str, media_ids: list[str]) -> dict[str, Any]:
    when = datetime.now(UTC) + timedelta(seconds=1)
    body = {"text": text, "platforms": ["x"], "scheduled_at": when.isoformat()}
    if media_ids:
        body["media_ids"] = media_ids
    data: dict[str, Any] = tenant.api.ok(tenant.api.post("/posts", json=body), 201)
    return data


def test_media_of_another_workspace_is_not_loaded(
    pub_server: LiveServer, pub_tenant: Tenant, sim: Sim, start_worker: StartWorker
) -> None:
    other = new_tenant(pub_server)
    try:
        foreign = upload_id(other.api)
    finally:
        other.api.close()
    own_text, foreign_text = unique_text("Own media"), unique_text("Foreign media")
    own = _post(pub_tenant, own_text, [upload_id(pub_tenant.api)])
    planted = _post(pub_tenant, foreign_text, [])

    def plant(cur: Any) -> None:
        cur.execute("UPDATE posts SET media_ids = ? WHERE id = ?", [[foreign], planted["id"]])

    pub_server.store.run(plant)
    start_worker()
    wait_for(
        lambda: settled(pub_server, own["id"]) and settled(pub_server, planted["id"]),
        "the posts to settle",
    )

    assert post_row(pub_server, own["id"]).status == "published"
    assert sim.count("x", own_text) == 1
    assert post_row(pub_server, planted["id"]).status == "failed"
    (destination,) = destination_rows(pub_server, planted)
    assert destination.error_code == "media_missing"
    assert sim.count("x", foreign_text) == 0
