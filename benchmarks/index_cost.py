"""What dropping the old store's secondary indexes cost the publishing side's reads and writes.

The evidence of ADR 0001's addendum, on the store of before ADR 0002 (one DuckDB file, built
from its schema in tests/store/old_schema): its migration 0008 drops the 15 secondary ART
indexes that DuckDB 1.5.5 can leave stale after a WAL handoff. This measures the repository
calls those indexes served, on one generated store at the bench's scale, first without them
(as that schema ends) and then with the same indexes created again (as before): the
reference is the older schema, the queries are the same.

    python -m benchmarks.index_cost [--posts 100000] [--repeat 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb

from tests.store.old_schema import available, migrate
from warehouse import inbox, posts, publishing
from warehouse.cursor import StoreCursor
from warehouse.rows import Cursor

WORKSPACES = 10
DESTINATIONS_PER_POST = 3
MESSAGES_PER_ITEM = 10


@dataclass(frozen=True)
class Timing:
    """One operation's latency, milliseconds, with and without the secondary indexes."""

    operation: str
    without_p50: float
    without_p99: float
    with_p50: float
    with_p99: float

    @property
    def ratio_p50(self) -> float:
        return self.without_p50 / self.with_p50 if self.with_p50 else float("nan")


def secondary_index_ddl() -> list[str]:
    """The CREATE INDEX statements the migrations before 0008 ran."""
    found: list[str] = []
    for migration in available():
        if migration.version < 8:
            found += re.findall(r"CREATE INDEX [^;]+;", migration.sql)
    return found


def generate(con: Cursor, n_posts: int) -> None:
    """Posts, destinations, attempts and conversations in creation order, as the API writes."""
    items = max(n_posts // 5, 1)
    # Benchmark data only: our own integers in constant SQL, no user input.
    con.execute(f"""
BEGIN TRANSACTION;
INSERT INTO posts (id, workspace_id, text, status, approval_required, tags, media_ids,
                   source, created_at, updated_at)
SELECT 'post_' || lpad(i::VARCHAR, 26, '0'), 'ws_' || (i % {WORKSPACES}), 'text ' || i,
       'published', false, [], [], 'api',
       TIMESTAMP '2026-01-01' + to_milliseconds(i), TIMESTAMP '2026-01-01' + to_milliseconds(i)
FROM range({n_posts}) t(i);
INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform, status,
                               created_at, updated_at)
SELECT 'dst_' || lpad((i * {DESTINATIONS_PER_POST} + k)::VARCHAR, 26, '0'),
       'post_' || lpad(i::VARCHAR, 26, '0'), 'ws_' || (i % {WORKSPACES}), 'acc_' || k, 'x',
       'published', TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01'
FROM range({n_posts}) t(i), range({DESTINATIONS_PER_POST}) u(k);
INSERT INTO publish_attempts (id, destination_id, post_id, workspace_id, worker_id, attempt,
                              outcome, started_at, finished_at)
SELECT 'pat_' || lpad(j::VARCHAR, 26, '0'), 'dst_' || lpad(j::VARCHAR, 26, '0'),
       'post_' || lpad((j // {DESTINATIONS_PER_POST})::VARCHAR, 26, '0'),
       'ws_' || ((j // {DESTINATIONS_PER_POST}) % {WORKSPACES}), 'wrk_1', 1, 'published',
       TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01'
FROM range({n_posts * DESTINATIONS_PER_POST}) t(j);
INSERT INTO inbox_items (id, workspace_id, account_id, platform, kind, external_id,
                         author_handle, status, tags, last_message_at, created_at, updated_at)
SELECT 'inb_' || lpad(i::VARCHAR, 26, '0'), 'ws_' || (i % {WORKSPACES}), 'acc_0', 'x',
       'comment', 'ext' || i, 'someone', 'open', [], TIMESTAMP '2026-01-01',
       TIMESTAMP '2026-01-01', TIMESTAMP '2026-01-01'
FROM range({items}) t(i);
INSERT INTO inbox_messages (id, item_id, workspace_id, direction, author_handle, text,
                            delivery, created_at)
SELECT 'msg_' || lpad(j::VARCHAR, 26, '0'),
       'inb_' || lpad((j // {MESSAGES_PER_ITEM})::VARCHAR, 26, '0'),
       'ws_' || ((j // {MESSAGES_PER_ITEM}) % {WORKSPACES}), 'inbound', 'someone',
       'hello ' || j, 'received', TIMESTAMP '2026-01-01' + to_milliseconds(j)
FROM range({items * MESSAGES_PER_ITEM}) t(j);
COMMIT;
CHECKPOINT;
""")  # noqa: S608


def _pid(i: int) -> str:
    return "post_" + str(i).rjust(26, "0")


def operations(n_posts: int, rng: random.Random) -> dict[str, Callable[[Cursor], Any]]:
    """The repository calls the dropped indexes served, each on a random target."""
    items = max(n_posts // 5, 1)

    def get_post(cur: Cursor) -> Any:
        i = rng.randrange(n_posts)
        found = posts.get_post(cur, f"ws_{i % WORKSPACES}", _pid(i))
        return found, posts.destinations_of(cur, [_pid(i)])

    def page(cur: Cursor) -> Any:
        ws = f"ws_{rng.randrange(WORKSPACES)}"
        rows = posts.list_posts(cur, ws, posts.PostFilter(), None, 50)
        return posts.destinations_of(cur, [r.id for r in rows])

    def attempts(cur: Cursor) -> Any:
        j = rng.randrange(n_posts * DESTINATIONS_PER_POST)
        return publishing.attempts_of(cur, "dst_" + str(j).rjust(26, "0"))

    def messages(cur: Cursor) -> Any:
        i = rng.randrange(items)
        return inbox.list_messages(cur, f"ws_{i % WORKSPACES}", "inb_" + str(i).rjust(26, "0"))

    def create(cur: Cursor) -> Any:
        cur.execute("BEGIN TRANSACTION")
        new = posts.NewPost(
            "ws_0", "bench", posts.PostStatus.SCHEDULED, None, False, [], [], {}, "key_1"
        )
        row = posts.insert_posts(cur, [new])[0]
        accounts = [(f"acc_{k}", "x") for k in range(DESTINATIONS_PER_POST)]
        posts.insert_destinations_of(cur, [(row.id, "ws_0", accounts)])
        cur.execute("COMMIT")

    return {
        "GET /posts/{id}: post + its destinations": get_post,
        "GET /posts: page of 50 + destinations": page,
        "publish attempts of a destination": attempts,
        "inbox messages of a conversation": messages,
        "create a post with 3 destinations (commit)": create,
    }


def _measure(con: duckdb.DuckDBPyConnection, op: Callable[[Cursor], Any], n: int) -> list[float]:
    cur = StoreCursor(con.cursor())
    try:
        for _ in range(min(20, n)):  # warm the buffer pool and the plan caches
            op(cur)
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            op(cur)
            samples.append((time.perf_counter() - start) * 1000)
        return samples
    finally:
        cur.close()


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(n_posts: int, repeat: int, data_dir: Path) -> list[Timing]:
    """Build the store once; time every operation without, then with, the old indexes."""
    con = duckdb.connect(str(data_dir / "index_cost.duckdb"))
    try:
        migrate(con)
        generate(StoreCursor(con), n_posts)
        results: dict[str, dict[str, list[float]]] = {}
        for state in ("without", "with"):
            if state == "with":
                for ddl in secondary_index_ddl():
                    con.execute(ddl)
                con.execute("CHECKPOINT")
            for name, op in operations(n_posts, random.Random(7)).items():
                results.setdefault(name, {})[state] = _measure(con, op, repeat)
    finally:
        con.close()
    return [
        Timing(
            name,
            round(statistics.median(r["without"]), 3),
            round(_p(r["without"], 0.99), 3),
            round(statistics.median(r["with"]), 3),
            round(_p(r["with"], 0.99), 3),
        )
        for name, r in results.items()
    ]


def table(rows: list[Timing], n_posts: int) -> str:
    lines = [
        f"| operation ({n_posts:,} posts) | without: p50 / p99 ms | with (old schema):"
        " p50 / p99 ms | p50 ratio |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.operation} | {r.without_p50:.2f} / {r.without_p99:.2f} |"
            f" {r.with_p50:.2f} / {r.with_p99:.2f} | {r.ratio_p50:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="murmur-index-cost-") as tmp:
        rows = run(args.posts, args.repeat, Path(tmp))
    print(table(rows, args.posts))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
