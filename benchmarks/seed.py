"""The benchmark's own data: a test workspace, a key, posts and the marts analytics reads.

Posts are spread evenly over the last 90 days (post ``i`` on day ``i % 90``), each with one
destination and a week of daily mart rows, so every size has the same shape and a 28-day
analytics read covers about 7/90 of the history. Growing the data appends rows through
``Store.execute_script`` (server-side over Quack when the benchmark's API is up).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from warehouse.sql import literal
from warehouse.store import Secrets, Store

DAYS = 90
MART_DAYS_PER_POST = 7


@dataclass(frozen=True)
class Tenant:
    """The benchmark's workspace, key and one account to post to."""

    workspace_id: str
    key: str
    account_id: str


def open_store(data_dir: Path) -> Store:
    """The store of ``data_dir``: through its host when the benchmark API runs, else directly."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return Store.connect(
        data_dir / "murmur.duckdb",
        host_file=data_dir / "store.host.json",
        quack_token=Secrets.load(data_dir).quack_token,
    )


def create_tenant(store: Store) -> Tenant:
    """The test workspace with its accounts and a key with no practical rate limit."""
    from api.auth import mint_key
    from api.workspaces.service import bootstrap_test_workspace
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


def grow_script(workspace_id: str, lo: int, hi: int) -> str:
    """SQL adding posts ``lo``…``hi - 1`` with destinations, mart rows, trends and snapshots.

    Rendered for ``execute_script`` (Quack cannot bind): only the workspace id (a string
    we generated) and integers go through ``warehouse.sql.literal``.
    """
    ws, lo_, hi_ = literal(workspace_id), literal(lo), literal(hi)
    days, per = literal(DAYS), literal(MART_DAYS_PER_POST)
    return f"""
CREATE TEMP TABLE bench_accounts AS
    SELECT row_number() OVER (ORDER BY id) - 1 AS n, id, platform, external_id
    FROM accounts WHERE workspace_id = {ws};
CREATE TEMP TABLE bench_new AS
    SELECT i, 'post_0' || lpad(i::VARCHAR, 25, '0') AS id,
           (current_date - (i % {days})::INTEGER)::TIMESTAMP + INTERVAL 9 HOUR AS ts,
           a.id AS account_id, a.platform, a.external_id AS account_external_id
    FROM range({lo_}, {hi_}) r(i)
    JOIN bench_accounts a ON a.n = i % (SELECT count(*) FROM bench_accounts);
INSERT INTO posts (id, workspace_id, text, status, scheduled_at, published_at,
                   approval_required, tags, media_ids, platform_options, source, created_by,
                   created_at, updated_at)
    SELECT id, {ws}, 'Benchmark post ' || i, 'published', ts, ts, false,
           ['bench', 'tag' || (i % 20)], [], '{{}}', 'api', NULL, ts, ts
    FROM bench_new;
INSERT INTO post_destinations (id, post_id, workspace_id, account_id, platform, status,
                               platform_post_id, attempts, published_at, created_at,
                               updated_at)
    SELECT 'dst_0' || lpad(i::VARCHAR, 25, '0'), id, {ws}, account_id, platform,
           'published', 'ext' || i, 1, ts, ts, ts
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
DELETE FROM mart_account_daily WHERE workspace_id = {ws};
INSERT INTO mart_account_daily
    SELECT {ws}, current_date - d::INTEGER, platform, external_id, id, 'own', 'bench',
           10000 + 10 * ({days} - d), 10, (SELECT count(*) FROM posts
                                          WHERE workspace_id = {ws}) // ({days} * 9),
           100000, 5000, 0.05
    FROM bench_accounts, range({days}) t(d);
INSERT OR REPLACE INTO mart_snapshots
    SELECT m, strftime(current_date - d::INTEGER, '%Y-%m-%d'), now()::TIMESTAMP, 0,
           now()::TIMESTAMP, 'bench'
    FROM (VALUES ('mart_post_daily'), ('mart_account_daily')) v(m), range({days}) t(d);
INSERT OR REPLACE INTO mart_snapshots
    VALUES ('mart_viral_trends', 'all', now()::TIMESTAMP, 0, now()::TIMESTAMP, 'bench');
DROP TABLE bench_new;
DROP TABLE bench_accounts;
"""  # noqa: S608 - values rendered by literal() only


def grow(store: Store, workspace_id: str, lo: int, hi: int) -> None:
    """Append posts ``lo``…``hi - 1`` and their mart rows, atomically, where the data lives."""
    if hi > lo:
        store.execute_script(grow_script(workspace_id, lo, hi))
