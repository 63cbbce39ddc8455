"""Concurrent writes that race on one row are retried by the route, not failed."""

from __future__ import annotations

import threading
from typing import Any

from tests.posts.helpers import post_body
from tests.support import Api, LiveServer, new_tenant


def _at_once(count: int, work: Any) -> list[Any]:
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        barrier.wait()
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_first_posts_of_a_day_share_one_batch(server: LiveServer) -> None:
    """Each creates today's batch if missing; the losers of the unique key run again."""
    tenant = new_tenant(server, approval_required=True)
    clients = [Api(server.base_url, tenant.key) for _ in range(4)]
    responses = _at_once(4, lambda i: clients[i].post("/posts", json=post_body(text=f"p{i}")))
    assert [r.status_code for r in responses] == [201] * 4, [r.text for r in responses]
    batches = tenant.api.list_all("/approvals")
    assert len(batches) == 1
    assert len(batches[0]["items"]) == 4


def test_concurrent_member_changes_all_land(server: LiveServer) -> None:
    tenant = new_tenant(server)
    clients = [Api(server.base_url, tenant.key) for _ in range(3)]
    path = f"/workspaces/{tenant.workspace_id}/members"
    responses = _at_once(
        3,
        lambda i: clients[i].post(path, json={"email": f"m{i}@example.com", "role": "editor"}),
    )
    assert [r.status_code for r in responses] == [201] * 3, [r.text for r in responses]
    assert len(tenant.api.list_all(path)) == 3
