"""Seeding inbound conversations through the real store, as a platform connector would."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from tests.support import LiveServer, Tenant
from warehouse import inbox as inbox_repo


def seed_item(
    server: LiveServer,
    tenant: Tenant,
    text: str = "Hello there",
    *,
    platform: str = "x",
    kind: str = "comment",
    author: str = "alice",
    external_id: str | None = None,
    received_at: datetime | None = None,
) -> str:
    """One inbound message (and its conversation, on first sight); returns the item id."""

    def work(cur: Any) -> str:
        return inbox_repo.upsert_conversation(
            cur,
            tenant.workspace_id,
            tenant.accounts[platform],
            platform,
            kind,
            external_id or f"ext-{uuid.uuid4().hex}",
            author,
            author.title(),
            text,
            received_at or datetime.now(UTC),
        )

    return server.store.run(work)
