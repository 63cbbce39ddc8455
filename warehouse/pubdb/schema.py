"""The publishing tables as SQLAlchemy Core metadata: one definition for SQLite and PostgreSQL.

Columns, their order, nullability and keys are today's DuckDB tables' (tests/store/
test_pubdb.py compares them), so ``murmur migrate`` can copy table by table. Two things
differ on purpose: a DuckDB ``VARCHAR[]`` is a JSON array here (:data:`Strings`), the one list
shape both engines index and query; and the secondary indexes DuckDB had to drop (issue 6,
duckdb/duckdb#23788) are back, since neither engine has that bug.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Double,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData()

#: A JSON document (JSONB on PostgreSQL: indexable, compared by value); Python's None is SQL
#: NULL, as in the DuckDB store, not the JSON text ``null``.
Document = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")
#: A list of strings, stored as a JSON array (DuckDB's ``VARCHAR[]`` in the old store).
Strings = Document
#: Naive UTC, as ``warehouse.ids.utcnow()`` gives it.
Timestamp = DateTime(timezone=False)


def _id() -> Column[str]:
    return Column("id", String, primary_key=True)


def _text(name: str, *, nullable: bool = False) -> Column[str]:
    return Column(name, String, nullable=nullable)


def _at(name: str, *, nullable: bool = False) -> Column[object]:
    return Column(name, Timestamp, nullable=nullable)


def _flag(name: str, *, default: bool | None = None) -> Column[bool]:
    return Column(
        name, Boolean, nullable=False, server_default=None if default is None else false()
    )


organizations = Table("organizations", metadata, _id(), _text("name"), _at("created_at"))

workspaces = Table(
    "workspaces",
    metadata,
    _id(),
    _text("organization_id"),
    _text("name"),
    Column("timezone", String, nullable=False, server_default=text("'UTC'")),
    _flag("approval_required", default=False),
    _flag("is_test", default=False),
    _at("created_at"),
    _at("updated_at"),
)

workspace_members = Table(
    "workspace_members",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("email"),
    _text("name", nullable=True),
    _text("role"),
    _at("created_at"),
    _at("updated_at"),
    _at("removed_at", nullable=True),
    # Lists page newest first within their owner through one index (migration 0004).
    Index("workspace_members_ws_id", "workspace_id", "id"),
)

api_keys = Table(
    "api_keys",
    metadata,
    _id(),
    _text("organization_id"),
    _text("name"),
    _text("mode"),
    Column("key_hash", String, nullable=False, unique=True),
    _text("key_hint"),
    Column("scopes", Strings, nullable=False),
    Column("workspace_ids", Strings, nullable=False),
    Column("read_rate_limit", Integer),
    Column("write_rate_limit", Integer),
    _at("created_at"),
    _at("expires_at", nullable=True),
    _at("revoked_at", nullable=True),
)

accounts = Table(
    "accounts",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("platform"),
    _text("handle"),
    _text("display_name"),
    _text("external_id"),
    _text("status"),
    _flag("is_test", default=False),
    Column("follower_count", BigInteger),
    _at("connected_at"),
    _at("created_at"),
    _at("updated_at"),
    Index("accounts_ws_id", "workspace_id", "id"),
)

media = Table(
    "media",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("kind"),
    _text("content_type"),
    Column("size_bytes", BigInteger, nullable=False),
    _text("sha256"),
    _text("filename", nullable=True),
    _text("storage_key"),
    _at("created_at"),
    _text("alt_text", nullable=True),
    Index("media_ws_id", "workspace_id", "id"),
)

posts = Table(
    "posts",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("text"),
    _text("status"),
    _at("scheduled_at", nullable=True),
    _at("published_at", nullable=True),
    _flag("approval_required", default=False),
    Column("tags", Strings, nullable=False),
    Column("media_ids", Strings, nullable=False),
    Column("platform_options", Document),
    Column("source", String, nullable=False, server_default=text("'api'")),
    _text("created_by", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    _at("canceled_at", nullable=True),
    Index("posts_ws_id", "workspace_id", "id"),
    # The calendar reads a workspace's scheduled posts by time.
    Index("posts_ws_scheduled", "workspace_id", "scheduled_at", "id"),
)

post_destinations = Table(
    "post_destinations",
    metadata,
    _id(),
    _text("post_id"),
    _text("workspace_id"),
    _text("account_id"),
    _text("platform"),
    _text("status"),
    _text("platform_post_id", nullable=True),
    _text("platform_url", nullable=True),
    _text("error_code", nullable=True),
    _text("error_message", nullable=True),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    _at("next_attempt_at", nullable=True),
    _text("claimed_by", nullable=True),
    _at("lease_expires_at", nullable=True),
    _at("published_at", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    _at("first_attempt_at", nullable=True),
    Index("post_destinations_post", "post_id"),
    # The publishing worker's claim reads due rows by status and time.
    Index("post_destinations_due", "status", "next_attempt_at"),
)

approval_batches = Table(
    "approval_batches",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("name"),
    Column("batch_date", Date, nullable=False),
    _at("created_at"),
    _at("updated_at"),
    UniqueConstraint("workspace_id", "batch_date"),
    Index("approval_batches_ws_id", "workspace_id", "id"),
)

approval_items = Table(
    "approval_items",
    metadata,
    _id(),
    _text("batch_id"),
    _text("workspace_id"),
    _text("post_id"),
    _text("status"),
    _text("comment", nullable=True),
    _text("decided_by", nullable=True),
    _at("decided_at", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    Index("approval_items_batch", "batch_id"),
    Index("approval_items_post", "post_id"),
)

approval_events = Table(
    "approval_events",
    metadata,
    _id(),
    _text("item_id"),
    _text("workspace_id"),
    _text("action"),
    _text("actor"),
    _text("comment", nullable=True),
    _at("created_at"),
    Index("approval_events_item", "item_id"),
)

inbox_items = Table(
    "inbox_items",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("account_id"),
    _text("platform"),
    _text("kind"),
    _text("external_id"),
    _text("post_id", nullable=True),
    _text("author_handle"),
    _text("author_name", nullable=True),
    _text("status"),
    _at("snoozed_until", nullable=True),
    Column("tags", Strings, nullable=False),
    _text("assignee", nullable=True),
    _at("last_message_at"),
    _at("created_at"),
    _at("updated_at"),
    UniqueConstraint("workspace_id", "platform", "external_id"),
    # The inbox lists by newest activity.
    Index("inbox_items_ws_activity", "workspace_id", "last_message_at", "id"),
)

inbox_messages = Table(
    "inbox_messages",
    metadata,
    _id(),
    _text("item_id"),
    _text("workspace_id"),
    _text("direction"),
    _text("author_handle"),
    _text("text"),
    _text("external_id", nullable=True),
    _text("delivery"),
    _text("sent_by", nullable=True),
    _at("created_at"),
    _text("claimed_by", nullable=True),
    _at("lease_expires_at", nullable=True),
    Column("delivery_attempts", Integer, server_default=text("0")),
    _at("next_attempt_at", nullable=True),
    _text("delivery_error", nullable=True),
    # An item's messages in order, and its preview (the newest).
    Index("inbox_messages_item_time", "item_id", "created_at", "id"),
)

inbox_drafts = Table(
    "inbox_drafts",
    metadata,
    _id(),
    _text("item_id"),
    _text("workspace_id"),
    _text("text"),
    _text("source"),
    Column("confidence", Double, nullable=False),
    _at("created_at"),
    Index("inbox_drafts_item_id", "item_id", "id"),
)

inbox_sync_state = Table(
    "inbox_sync_state",
    metadata,
    Column("account_id", String, primary_key=True),
    _text("workspace_id"),
    _at("synced_until", nullable=True),
    _text("last_error", nullable=True),
    _at("updated_at"),
)

inbox_automations = Table(
    "inbox_automations",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("name"),
    _flag("enabled"),
    _text("trigger_type"),
    Column("phrases", Strings, nullable=False),
    _text("intent", nullable=True),
    _text("action"),
    Column("action_params", Document, nullable=False),
    _at("created_at"),
    _at("updated_at"),
    _at("deleted_at", nullable=True),
    Index("inbox_automations_ws_id", "workspace_id", "id"),
)

inbox_automation_runs = Table(
    "inbox_automation_runs",
    metadata,
    _id(),
    _text("automation_id"),
    _text("item_id"),
    _text("workspace_id"),
    _text("action"),
    _text("outcome"),
    _at("created_at"),
)

inbox_automation_marks = Table(
    "inbox_automation_marks",
    metadata,
    Column("message_id", String, primary_key=True),
    _text("workspace_id"),
    _at("created_at"),
)

destination_presets = Table(
    "destination_presets",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("name"),
    Column("destinations", Document, nullable=False),
    _at("created_at"),
    _at("updated_at"),
    _at("deleted_at", nullable=True),
    Index("destination_presets_ws_id", "workspace_id", "id"),
)

content_automations = Table(
    "content_automations",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("name"),
    _flag("enabled"),
    Column("source", Document, nullable=False),
    Column("schedule", Document, nullable=False),
    Column("target", Document, nullable=False),
    _at("last_run_at", nullable=True),
    _at("next_run_at", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    _at("deleted_at", nullable=True),
    Index("content_automations_ws_id", "workspace_id", "id"),
)

content_automation_state = Table(
    "content_automation_state",
    metadata,
    Column("automation_id", String, primary_key=True),
    Column("position", Integer, nullable=False),
    _at("updated_at"),
)

content_automation_seen = Table(
    "content_automation_seen",
    metadata,
    _text("automation_id"),
    _text("item_key"),
    _text("post_id", nullable=True),
    _at("created_at"),
    PrimaryKeyConstraint("automation_id", "item_key"),
)

queues = Table(
    "queues",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("name"),
    _text("timezone"),
    Column("slots", Document, nullable=False),
    Column("destinations", Document, nullable=False),
    _at("created_at"),
    _at("updated_at"),
    _at("deleted_at", nullable=True),
    Index("queues_ws_id", "workspace_id", "id"),
)

queue_items = Table(
    "queue_items",
    metadata,
    _id(),
    _text("queue_id"),
    _text("workspace_id"),
    _text("post_id"),
    Column("position", Integer, nullable=False),
    _text("status"),
    _at("slot_at", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    Index("queue_items_queue_position", "queue_id", "position", "id"),
    # Whether a post is queued (the calendar's scheduled posts), and the scheduled slots.
    Index("queue_items_post", "post_id"),
    Index("queue_items_ws_slot", "workspace_id", "status", "slot_at", "id"),
)

scheduled_events = Table(
    "scheduled_events",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("kind"),
    _text("title"),
    _at("starts_at"),
    _text("status"),
    _text("ref_type", nullable=True),
    _text("ref_id", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    _at("canceled_at", nullable=True),
    Index("scheduled_events_ws_start", "workspace_id", "starts_at", "id"),
)

publish_attempts = Table(
    "publish_attempts",
    metadata,
    _id(),
    _text("destination_id"),
    _text("post_id"),
    _text("workspace_id"),
    _text("worker_id"),
    Column("attempt", Integer, nullable=False),
    _text("outcome"),
    _text("platform_post_id", nullable=True),
    _text("error_code", nullable=True),
    _text("error_message", nullable=True),
    _at("started_at"),
    _at("finished_at"),
    Index("publish_attempts_destination", "destination_id"),
)

publishing_workers = Table(
    "publishing_workers",
    metadata,
    _id(),
    _text("hostname"),
    Column("pid", Integer, nullable=False),
    Column("concurrency", Integer, nullable=False),
    _at("started_at"),
    _at("heartbeat_at"),
    _at("stopped_at", nullable=True),
)

tracked_competitors = Table(
    "tracked_competitors",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("platform"),
    _text("handle"),
    _at("created_at"),
    _at("deleted_at", nullable=True),
    Index("tracked_competitors_ws_id", "workspace_id", "id"),
)

webhook_endpoints = Table(
    "webhook_endpoints",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("url"),
    _text("secret"),
    _text("description", nullable=True),
    Column("event_types", Strings, nullable=False),
    _flag("enabled"),
    _at("created_at"),
    _at("updated_at"),
    _at("deleted_at", nullable=True),
    Index("webhook_endpoints_ws_id", "workspace_id", "id"),
)

webhook_events = Table(
    "webhook_events",
    metadata,
    _id(),
    _text("workspace_id"),
    _text("event_type"),
    _text("payload"),
    _at("created_at"),
    _at("dispatched_at", nullable=True),
)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    _id(),
    _text("event_id"),
    _text("endpoint_id"),
    _text("workspace_id"),
    _text("event_type"),
    _text("body"),
    _text("status"),
    Column("attempts", Integer, nullable=False),
    _at("next_attempt_at", nullable=True),
    _text("claimed_by", nullable=True),
    _at("lease_expires_at", nullable=True),
    Column("response_status", Integer),
    Column("response_ms", Double),
    _text("last_error", nullable=True),
    _at("delivered_at", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    UniqueConstraint("event_id", "endpoint_id"),
    Index("webhook_deliveries_endpoint_id", "endpoint_id", "id"),
    # The dispatcher's claim reads due deliveries by status and time.
    Index("webhook_deliveries_due", "status", "next_attempt_at"),
)

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    _text("api_key_id"),
    _text("method"),
    _text("path"),
    _text("key"),
    _text("fingerprint"),
    _text("status"),
    Column("response_status", Integer),
    _text("response_body", nullable=True),
    _at("locked_until"),
    _at("created_at"),
    _at("expires_at"),
    PrimaryKeyConstraint("api_key_id", "method", "path", "key"),
    # Expired records are purged by time.
    Index("idempotency_keys_expiry", "expires_at"),
)

#: Tables added since ADR 0002 moved the store. The DuckDB store never had them, so
#: ``murmur migrate`` has nothing to copy into them, and :data:`metadata` stays the DuckDB
#: store's tables column for column; Alembic builds both (:data:`every_table`).
added = MetaData()

# One-time sign-in links (`murmur dashboard`): the token's SHA-256, never the token; a link
# is used once (``used_at``), and ``key_id`` names the key its use minted, so that signing
# out revokes only keys that a link made (docs/security.md, "Sign-in links").
sign_in_links = Table(
    "sign_in_links",
    added,
    Column("token_hash", String, primary_key=True),
    _text("workspace_id"),
    _at("created_at"),
    _at("expires_at"),
    _at("used_at", nullable=True),
    _text("key_id", nullable=True),
    Index("sign_in_links_key", "key_id"),
    # Links long expired are purged by time.
    Index("sign_in_links_expiry", "expires_at"),
)

# When a connected account's token expires, as recorded when it was connected (no row: no
# known expiry). Read by GET /analytics/publishing, /readyz, /metrics and `murmur doctor`.
token_expiries = Table(
    "token_expiries",
    added,
    Column("account_id", String, primary_key=True),
    _text("workspace_id"),
    _at("expires_at"),
    _at("recorded_at"),
    # Tokens expiring soon are read by time.
    Index("token_expiries_expiry", "expires_at"),
)

# The webhook events of publishing reliability, sent once each: one row per stuck destination
# and claim (``post.stuck:<dst>:<attempt>``) and per account and token expiry
# (``account.token_expiring:<acc>:<expires_at>``), written with the event it enqueues.
webhook_alerts = Table(
    "webhook_alerts",
    added,
    Column("alert_key", String, primary_key=True),
    _text("workspace_id"),
    _text("event_type"),
    _text("subject_id"),
    _text("event_id"),
    _at("created_at"),
)

# Posting-time experiments (docs/api/experiments.md): the arms and the plan as created; the
# posts each assigned an arm at random (seeded), one row per post, written with the post.
experiments = Table(
    "experiments",
    added,
    _id(),
    _text("workspace_id"),
    _text("name"),
    Column("account_ids", Strings, nullable=False),
    _text("timezone"),
    Column("arms", Document, nullable=False),
    _text("metric"),
    _at("ends_at", nullable=True),
    Column("target_posts", Integer, nullable=True),
    Column("min_detectable_effect", Double, nullable=False),
    Column("seed", BigInteger, nullable=False),
    _text("queue_id", nullable=True),
    _text("state"),
    _at("stopped_at", nullable=True),
    _text("stop_reason", nullable=True),
    _at("created_at"),
    _at("updated_at"),
    _at("deleted_at", nullable=True),
    # Pages of a workspace's experiments, and a queue's running one.
    Index("experiments_ws_id", "workspace_id", "id"),
    Index("experiments_queue", "queue_id"),
)

experiment_posts = Table(
    "experiment_posts",
    added,
    Column("post_id", String, primary_key=True),
    _text("experiment_id"),
    _text("workspace_id"),
    _text("arm"),
    _at("slot_at"),
    _at("assigned_at"),
    Index("experiment_posts_experiment", "experiment_id", "slot_at"),
)

#: Every publishing table in one MetaData (copies of the tables above): what Alembic builds
#: and what the database is compared with.
every_table = MetaData()
for _table in (*metadata.sorted_tables, *added.sorted_tables):
    _table.to_metadata(every_table)
