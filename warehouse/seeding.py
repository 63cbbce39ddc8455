"""Bulk rows for the benchmarks: one workspace's list beside ten others', in one statement each.

``murmur bench``'s list rows (benchmarks/lists.py) need hundreds of thousands of rows per
table; a row at a time from Python would take minutes, so each table is filled by one
``INSERT … SELECT`` over a recursive CTE. Row ``i`` of a table (``0 <= i < total``) belongs to
the bench's workspace when ``i`` is even, else to one of ten others in turn, so the
workspaces' rows interleave in id and time order as live ones do. Its time is
``start + i * step`` (milliseconds), and its id is what :func:`warehouse.ids.new_id` would
have made at the start of that hour (the same 10 time characters, then ``i`` in 16 digits),
so keyset bounds of ``ids.id_floor`` and the lists' orders hold. Each hour's id head and date
text are computed once (formatting them per row took most of the seeding's time).
:class:`Layout` computes any row's id and time in Python: how the bench finds a deep page's
cursor without a query.
SQLite only: the bench's store is the embedded one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from warehouse.rows import Cursor

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
#: The workspaces beside the bench's own: ``other_0`` … ``other_9``.
OTHERS = 10


@dataclass(frozen=True)
class Layout:
    """Where a seeded table's rows are: their count, first time and spacing, and owners."""

    total: int
    start_ms: int
    step_ms: int
    workspace_id: str
    #: The parent (queue, webhook endpoint) of the bench workspace's rows of a child list.
    parent_id: str = "bench_parent"

    def at_ms(self, i: int) -> int:
        return self.start_ms + i * self.step_ms

    def row_id(self, prefix: str, i: int) -> str:
        hour = self.at_ms(i) // _HOUR_MS * _HOUR_MS
        head = "".join(_ALPHABET[(hour >> (5 * k)) & 31] for k in range(9, -1, -1))
        return f"{prefix}_{head}{i:016d}"

    def row_at(self, i: int) -> datetime:
        return datetime.fromtimestamp(self.at_ms(i) / 1000, UTC).replace(tzinfo=None)

    def own(self, k: int) -> int:
        """The row number of the bench workspace's ``k``-th row (oldest first)."""
        return 2 * k


_HOUR_MS = 3_600_000
_HEAD = " || ".join(
    f"substr('{_ALPHABET}', ((hour * {_HOUR_MS} >> {5 * k}) & 31) + 1, 1)" for k in range(9, -1, -1)
)


def _id_sql(prefix: str) -> str:
    return f"'{prefix}_' || g.head || printf('%016d', g.i)"


#: Each seeded table: its id prefix and its columns' values for row ``g`` (``g.i``, ``g.ms``,
#: ``g.ws``, ``g.parent``); ``{at}`` is the row's time, ``{id:p}`` the id of prefix ``p``.
TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "posts": ("post", {
        "text": "'Benchmark post ' || g.i", "status": "'published'", "published_at": "{at}",
        "approval_required": "0", "tags": "'[]'", "media_ids": "'[]'", "source": "'api'",
    }),
    "media": ("med", {
        "kind": "CASE g.i % 3 WHEN 0 THEN 'video' ELSE 'image' END",
        "content_type": "'image/png'", "size_bytes": "1000 + g.i", "sha256": "'x'",
        "storage_key": "'k' || g.i",
    }),
    "inbox_items": ("inb", {
        "account_id": "'acc'", "platform": "'x'", "kind": "'comment'",
        "external_id": "'ext' || g.i", "author_handle": "'someone'",
        "status": "CASE g.i % 4 WHEN 0 THEN 'closed' ELSE 'open' END", "tags": "'[]'",
        "last_message_at": "{at}",
    }),
    "approval_batches": ("apb", {
        "name": "'batch'", "batch_date": "date(g.ms / 1000, 'unixepoch', '+' || g.i || ' days')",
    }),
    "inbox_automations": ("iau", {
        "name": "'rule'", "enabled": "1", "trigger_type": "'keyword'", "phrases": "'[]'",
        "action": "'tag'", "action_params": "'{{}}'",
    }),
    "content_automations": ("cau", {
        "name": "'feed'", "enabled": "1", "source": "'{{}}'", "schedule": "'{{}}'",
        "target": "'{{}}'",
    }),
    "destination_presets": ("dp", {"name": "'preset ' || g.i", "destinations": "'[]'"}),
    "queues": ("q", {
        "name": "'queue ' || g.i", "timezone": "'UTC'", "slots": "'[]'", "destinations": "'[]'",
    }),
    "queue_items": ("qi", {
        "queue_id": "g.parent", "post_id": "{id:post}", "position": "g.i",
        "status": "CASE g.i % 5 WHEN 0 THEN 'published' ELSE 'queued' END",
    }),
    "scheduled_events": ("evt", {
        "kind": "'note'", "title": "'event ' || g.i", "starts_at": "{at}",
        "status": "CASE g.i % 10 WHEN 0 THEN 'canceled' ELSE 'scheduled' END",
    }),
    "webhook_endpoints": ("whe", {
        "url": "'https://example.com/hook'", "secret": "'s'", "event_types": "'[]'",
        "enabled": "1",
    }),
    "webhook_deliveries": ("whd", {
        "event_id": "'whv' || g.i", "endpoint_id": "g.parent", "event_type": "'post.published'",
        "body": "'{{}}'", "status": "CASE g.i % 3 WHEN 0 THEN 'failed' ELSE 'delivered' END",
        "attempts": "1",
    }),
    "accounts": ("acc", {
        "platform": "CASE g.i % 3 WHEN 0 THEN 'x' WHEN 1 THEN 'threads' ELSE 'bluesky' END",
        "handle": "'h' || g.i", "display_name": "'Account'", "external_id": "'ext' || g.i",
        "status": "'active'", "is_test": "0", "connected_at": "{at}",
    }),
    "workspace_members": ("mem", {
        "email": "'m' || g.i || '@example.com'", "role": "CASE g.i % 4 WHEN 0 THEN 'admin'"
        " ELSE 'editor' END",
    }),
    "tracked_competitors": ("cmp", {"platform": "'x'", "handle": "'rival' || g.i"}),
}  # fmt: skip

# Columns every seeded table has, or has but for one (``updated_at``).
_COMMON = {"id": "{id}", "workspace_id": "g.ws", "created_at": "{at}", "updated_at": "{at}"}
_NO_UPDATED_AT = {"media", "tracked_competitors"}


def insert_sql(table: str) -> str:
    """The statement seeding ``table`` (parameters: :func:`seed`'s)."""
    prefix, values = TABLES[table]
    cols = {**_COMMON, **values}
    if table in _NO_UPDATED_AT:
        del cols["updated_at"]
    exprs = [
        v.replace("{id:post}", _id_sql("post")).replace("{id}", _id_sql(prefix)).format(at="g.at")
        for v in cols.values()
    ]
    return (
        f"INSERT INTO {table} ({', '.join(cols)})"  # noqa: S608 - constants
        " WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < ?),"
        " t AS (SELECT i, ? + i * ? AS ms FROM r),"
        f" hours(hour) AS (SELECT ? / {_HOUR_MS}"
        f"  UNION ALL SELECT hour + 1 FROM hours WHERE hour < ? / {_HOUR_MS}),"
        f" h AS MATERIALIZED (SELECT hour, {_HEAD} AS head,"
        "  strftime('%Y-%m-%d %H:', hour * 3600, 'unixepoch') AS day FROM hours),"
        " g AS MATERIALIZED (SELECT t.i, t.ms, h.head,"
        "  h.day || printf('%02d:%02d.%06d', (t.ms / 60000) % 60, (t.ms / 1000) % 60,"
        "   (t.ms % 1000) * 1000) AS at,"
        f"  CASE WHEN t.i % 2 = 0 THEN ? ELSE 'other_' || ((t.i / 2) % {OTHERS}) END AS ws,"
        "  CASE WHEN t.i % 2 = 0 THEN ? ELSE 'other_parent' END AS parent"
        f"  FROM t JOIN h ON h.hour = t.ms / {_HOUR_MS})"
        f" SELECT {', '.join(exprs)} FROM g"
    )


def seed(cur: Cursor, table: str, layout: Layout) -> None:
    """Fill ``table`` with ``layout.total`` rows (half the bench workspace's)."""
    if cur.dialect != "sqlite":
        raise ValueError("the benchmark's rows are seeded into SQLite only")
    cur.execute(
        insert_sql(table),
        [
            *(layout.total, layout.start_ms, layout.step_ms),
            *(layout.start_ms, layout.at_ms(layout.total)),
            *(layout.workspace_id, layout.parent_id),
        ],
    )
