-- Secondary (non-constraint) ART indexes go stale when one DuckDB engine replays a WAL another
-- left behind and checkpoints it at shutdown (DuckDB 1.5.5; duckdb/duckdb#23788). Zone maps serve
-- the same lookups (docs/adr/0001-store.md, addendum), so the store keeps only the indexes its
-- PRIMARY KEY and UNIQUE constraints need. tests/store/test_integrity.py keeps it that way.
DROP INDEX IF EXISTS workspace_members_ws;
DROP INDEX IF EXISTS accounts_ws;
DROP INDEX IF EXISTS media_ws;
DROP INDEX IF EXISTS posts_ws;
DROP INDEX IF EXISTS post_destinations_post;
DROP INDEX IF EXISTS approval_items_batch;
DROP INDEX IF EXISTS approval_items_post;
DROP INDEX IF EXISTS approval_events_item;
DROP INDEX IF EXISTS inbox_messages_item;
DROP INDEX IF EXISTS inbox_drafts_item;
DROP INDEX IF EXISTS queue_items_queue;
DROP INDEX IF EXISTS scheduled_events_ws;
DROP INDEX IF EXISTS publish_attempts_destination;
DROP INDEX IF EXISTS webhook_endpoints_ws;
DROP INDEX IF EXISTS webhook_deliveries_endpoint;
