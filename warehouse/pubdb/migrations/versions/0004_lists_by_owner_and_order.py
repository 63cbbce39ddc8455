"""Every list pages through one index of its owner and order, as posts do since 0002.

The DuckDB era left one-column indexes (or none): a page of 50 sorted every row of its
workspace, queue or endpoint, and the calendar scanned every queue item for each scheduled
post. Measured by `murmur bench` (docs/performance.md, "Lists at 300,000 rows").

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27 14:00:00

"""

from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WS_ID = ["workspace_id", "id"]
# (table, the new index, its columns)
INDEXES: list[tuple[str, str, list[str]]] = [
    ("workspace_members", "workspace_members_ws_id", WS_ID),
    ("accounts", "accounts_ws_id", WS_ID),
    ("media", "media_ws_id", WS_ID),
    ("posts", "posts_ws_scheduled", ["workspace_id", "scheduled_at", "id"]),
    ("approval_batches", "approval_batches_ws_id", WS_ID),
    ("inbox_items", "inbox_items_ws_activity", ["workspace_id", "last_message_at", "id"]),
    ("inbox_messages", "inbox_messages_item_time", ["item_id", "created_at", "id"]),
    ("inbox_drafts", "inbox_drafts_item_id", ["item_id", "id"]),
    ("inbox_automations", "inbox_automations_ws_id", WS_ID),
    ("destination_presets", "destination_presets_ws_id", WS_ID),
    ("content_automations", "content_automations_ws_id", WS_ID),
    ("queues", "queues_ws_id", WS_ID),
    ("queue_items", "queue_items_queue_position", ["queue_id", "position", "id"]),
    ("queue_items", "queue_items_post", ["post_id"]),
    ("queue_items", "queue_items_ws_slot", ["workspace_id", "status", "slot_at", "id"]),
    ("scheduled_events", "scheduled_events_ws_start", ["workspace_id", "starts_at", "id"]),
    ("tracked_competitors", "tracked_competitors_ws_id", WS_ID),
    ("webhook_endpoints", "webhook_endpoints_ws_id", WS_ID),
    ("webhook_deliveries", "webhook_deliveries_endpoint_id", ["endpoint_id", "id"]),
]
# The one-column index each new one replaces: its name and column.
REPLACED: dict[str, tuple[str, str]] = {
    "workspace_members_ws_id": ("workspace_members_ws", "workspace_id"),
    "accounts_ws_id": ("accounts_ws", "workspace_id"),
    "media_ws_id": ("media_ws", "workspace_id"),
    "inbox_messages_item_time": ("inbox_messages_item", "item_id"),
    "inbox_drafts_item_id": ("inbox_drafts_item", "item_id"),
    "queue_items_queue_position": ("queue_items_queue", "queue_id"),
    "scheduled_events_ws_start": ("scheduled_events_ws", "workspace_id"),
    "webhook_endpoints_ws_id": ("webhook_endpoints_ws", "workspace_id"),
    "webhook_deliveries_endpoint_id": ("webhook_deliveries_endpoint", "endpoint_id"),
}


def upgrade() -> None:
    """Upgrade schema."""
    for table, name, columns in INDEXES:
        op.create_index(name, table, columns)
        if name in REPLACED:
            op.drop_index(REPLACED[name][0], table_name=table)


def downgrade() -> None:
    """Downgrade schema."""
    for table, name, _ in reversed(INDEXES):
        if name in REPLACED:
            old, column = REPLACED[name]
            op.create_index(old, table, [column])
        op.drop_index(name, table_name=table)
