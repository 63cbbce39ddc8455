"""The benchmark's own data: a test workspace, a key, posts and the marts analytics reads.

Posts are spread evenly over the last 90 days (post ``i`` on day ``i % 90``), each with one
destination and a week of daily mart rows, so every size has the same shape and a 28-day
analytics read covers about 7/90 of the history. Growing the data appends the posts and
destinations to the publishing database and their mart rows to the lake, each half in one
transaction, beside the benchmark's running API (no owner).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from warehouse.cursor import Cursor
from warehouse.sql import literal, rows_of
from warehouse.store import Lakehouse, Store

DAYS = 90
MART_DAYS_PER_POST = 7


@dataclass(frozen=True)
class Tenant:
    """The benchmark's workspace, key and one account to post to."""

    workspace_id: str
    key: str
    account_id: str


def open_store(data_dir: Path) -> Store:
    """The store of ``data_dir``, opened by this process (the benchmark's API opens its own)."""
    from benchmarks.servers import bench_settings

    return bench_settings(data_dir).open_store()


def create_tenant(store: Store) -> Tenant:
    """The test workspace with its accounts and a key with no practical rate limit."""
    from domain.workspaces.keys import mint_key
    from domain.workspaces.service import bootstrap_test_workspace
    from warehouse import workspaces as ws_repo

    def work(cur: object) -> Tenant:
        ws_id = bootstrap_test_workspace(cur)  # type: ignore[arg-type]
        org = ws_repo.first_organization(cur)  # type: ignore[arg-type]
        assert org is not None
        minted = mint_key(
            cur,  # type: ignore[arg-type]
            organization_id=org.id,
            workspace_ids=[ws_id],
            name="bench",
            # The load is the point here, not the per-key budget.
            read_rate_limit=1_000_000_000,
            write_rate_limit=1_000_000_000,
        )
        accounts = ws_repo.list_accounts(cur, ws_id)  # type: ignore[arg-type]
        # A text-only platform: others (Pinterest, Instagram…) require media.
        text_only = next(a for a in accounts if a.platform in ("x", "threads", "bluesky"))
        return Tenant(ws_id, minted.key, text_only.id)

    return store.run(work)


def _new_posts_sql(workspace_id: str, lo: int, hi: int) -> str:
    """The temp table ``bench_new``: posts ``lo``…``hi - 1``, each on one of the accounts."""
    ws, lo_, hi_, days = literal(workspace_id), literal(lo), literal(hi), literal(DAYS)
    return f"""
CREATE OR REPLACE TEMP TABLE bench_accounts AS
    SELECT row_number() OVER (ORDER BY id) - 1 AS n, id, platform, external_id
    FROM pub.accounts WHERE workspace_id = {ws};
CREATE OR REPLACE TEMP TABLE bench_new AS
    SELECT i, 'post_0' || lpad(i::VARCHAR, 25, '0') AS id,
           (current_date - (i % {days})::INTEGER)::TIMESTAMP + INTERVAL 9 HOUR AS ts,
           a.id AS account_id, a.platform, a.external_id AS account_external_id
    FROM range({lo_}, {hi_}) r(i)
    JOIN bench_accounts a ON a.n = i % (SELECT count(*) FROM bench_accounts);
"""  # noqa: S608 - values rendered by literal() only


def marts_script(workspace_id: str) -> str:
    """SQL adding ``bench_new``'s posts, mart rows, trends and snapshots to the lake."""
    ws, days, per = literal(workspace_id), literal(DAYS), literal(MART_DAYS_PER_POST)
    return f"""
INSERT INTO dim_posts BY NAME
    SELECT {ws} AS workspace_id, platform, 'ext' || i AS external_id, account_external_id,
           id AS post_id, 'own' AS kind, [] AS hashtags, ts AS published_at, ts AS captured_at
    FROM bench_new;
INSERT INTO mart_post_daily
    SELECT {ws}, (ts + INTERVAL (d) DAY)::DATE, platform, account_external_id, account_id,
           'ext' || i, id, 'own', 1000 + i % 97, 800 + i % 89, 500 + i % 83, 40 + i % 13,
           5 + i % 7, 3 + i % 5, 2 + i % 3, 7 + i % 11,
           (40 + i % 13) + (5 + i % 7) + (3 + i % 5) + (2 + i % 3) + (7 + i % 11),
           ((40 + i % 13) + (5 + i % 7) + (3 + i % 5) + (2 + i % 3) + (7 + i % 11))
             / (1000 + i % 97)
    FROM bench_new, range({per}) t(d)
    WHERE (ts + INTERVAL (d) DAY)::DATE <= current_date;
INSERT INTO mart_viral_trends
    SELECT {ws}, 'post', 'ext' || i, platform, (i % 1000) / 100.0 + w,
           CASE w WHEN 0 THEN 'emerging' WHEN 1 THEN 'peaking' ELSE 'declining' END,
           10.0 + i % 50, 5.0, '{{"windows": 3}}',
           current_date::TIMESTAMP - INTERVAL (w) HOUR, now()::TIMESTAMP
    FROM bench_new, range(3) t(w)
    WHERE i % 20 = 0;
DELETE FROM dim_accounts WHERE workspace_id = {ws};
INSERT INTO dim_accounts BY NAME
    SELECT {ws} AS workspace_id, platform, external_id, id AS account_id, 'own' AS kind,
           'bench' AS handle, now()::TIMESTAMP AS captured_at
    FROM bench_accounts;
DELETE FROM mart_account_daily WHERE workspace_id = {ws};
INSERT INTO mart_account_daily
    SELECT {ws}, current_date - d::INTEGER, platform, external_id, id, 'own', 'bench',
           10000 + 10 * ({days} - d), 10, 100000, 5000, 0.05
    FROM bench_accounts, range({days}) t(d);
DELETE FROM mart_snapshots WHERE run_id = 'bench';
INSERT INTO mart_snapshots
    SELECT m, strftime(current_date - d::INTEGER, '%Y-%m-%d'), now()::TIMESTAMP, 0,
           now()::TIMESTAMP, 'bench'
    FROM (VALUES ('mart_post_daily'), ('mart_account_daily')) v(m), range({days}) t(d);
INSERT INTO mart_snapshots
    VALUES ('mart_viral_trends', 'all', now()::TIMESTAMP, 0, now()::TIMESTAMP, 'bench');
"""  # noqa: S608 - values rendered by literal() only


def grow(store: Store, workspace_id: str, lo: int, hi: int) -> None:
    """Append posts ``lo``…``hi - 1``: posts and destinations, then their mart rows."""
    if hi <= lo:
        return
    with Lakehouse(store) as lake:
        lake.execute_script(_new_posts_sql(workspace_id, lo, hi))
        with lake.cursor() as cur:
            new = cur.execute(
                "SELECT i, id, ts, account_id, platform FROM bench_new ORDER BY i"
            ).fetchall()

        def publish(pub: Cursor) -> None:
            posts = [
                [post_id, workspace_id, f"Benchmark post {i}", "published", ts, ts, False,
                 ["bench", f"tag{i % 20}"], [], "{}", "api", None, ts, ts]
                for i, post_id, ts, _, _ in new
            ]  # fmt: skip
            destinations = [
                ["dst_0" + str(i).rjust(25, "0"), post_id, workspace_id, account, platform,
                 "published", f"ext{i}", 1, ts, ts, ts]
                for i, post_id, ts, account, platform in new
            ]  # fmt: skip
            for start in range(0, len(posts), 500):
                chunk = posts[start : start + 500]
                pub.execute(
                    "INSERT INTO posts (id, workspace_id, text, status, scheduled_at,"  # noqa: S608 - constants
                    " published_at, approval_required, tags, media_ids, platform_options,"
                    " source, created_by, created_at, updated_at)"
                    f" VALUES {rows_of(14, len(chunk))}",
                    [value for row in chunk for value in row],
                )
                chunk = destinations[start : start + 500]
                pub.execute(
                    "INSERT INTO post_destinations (id, post_id, workspace_id, account_id,"  # noqa: S608 - constants
                    " platform, status, platform_post_id, attempts, published_at, created_at,"
                    f" updated_at) VALUES {rows_of(11, len(chunk))}",
                    [value for row in chunk for value in row],
                )

        store.run(publish)
        lake.execute_script(marts_script(workspace_id))
