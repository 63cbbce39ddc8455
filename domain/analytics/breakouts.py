"""Breakouts: the API's pages of mart_breakouts, and the ``analytics.breakout`` event, once each."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from domain.analytics import definitions
from domain.analytics.breakouts_schemas import Band, Breakout, BreakoutEvidence, Breakouts
from domain.analytics.service import (
    _evidence,
    _json,
    _utc,
    account_keys,
    kept_provenance,
    read_snapshot,
)
from domain.pagination import PageRequest
from warehouse import breakouts as repo
from warehouse import provenance as provenance_repo
from warehouse import webhooks as webhooks_repo
from warehouse import workspaces as ws_repo
from warehouse.ids import new_id
from warehouse.rows import Cursor, Row
from warehouse.store import Transaction

EVENT = "analytics.breakout"
MART = "mart_breakouts"

Accounts = dict[tuple[str, str], ws_repo.AccountRow]


def accounts_of(cur: Cursor, workspace_id: str) -> Accounts:
    """The workspace's connected accounts by platform and platform-side id."""
    return {(a.platform, a.external_id): a for a in ws_repo.list_accounts(cur, workspace_id)}


def breakout_out(row: Row, accounts: Accounts) -> Breakout:
    """A mart row as the API and the webhook event give it."""
    account = accounts.get((row["platform"], row["account_external_id"]))
    evidence = _evidence(_json(row["evidence"]))
    windows = [
        {**w, "band": Band(low=w["band"][0], high=w["band"][1])} for w in evidence["windows"]
    ]
    expected = float(row["expected"])
    return Breakout(
        id=row["id"],
        platform=row["platform"],
        account_id=None if account is None else account.id,
        account_external_id=row["account_external_id"],
        handle=None if account is None else account.handle,
        external_id=row["external_id"],
        post_id=row["post_id"],
        published_at=_utc(row["published_at"]),
        started_at=_utc(row["started_at"]),
        last_breakout_at=_utc(row["last_breakout_at"]),
        ongoing=bool(row["ongoing"]),
        observed=float(row["observed"]),
        expected=expected,
        band=Band(low=float(row["band_low"]), high=float(row["band_high"])),
        multiple=float(row["observed"]) / expected if expected else None,
        peak_observed=float(row["peak_observed"]),
        peak_expected=float(row["peak_expected"]),
        evidence=BreakoutEvidence.model_validate({**evidence, "windows": windows}),
    )


def list_breakouts(
    txn: Transaction,
    workspace_id: str,
    platform: str | None,
    account_id: str | None,
    since: datetime | None,
    page: PageRequest,
) -> Breakouts:
    """The workspace's breakouts, newest first."""
    external_ids = None
    if account_id is not None:
        platform, external_ids = account_keys(txn, workspace_id, account_id)
    naive_since = None if since is None else _utc(since).replace(tzinfo=None)
    rows = repo.list_breakouts(
        txn.analytics,
        workspace_id,
        platform=platform,
        external_ids=external_ids,
        since=naive_since,
        after=page.after,
        limit=page.fetch,
    )
    accounts = accounts_of(txn.cur, workspace_id)
    found_page = page.page(
        rows,
        lambda r: breakout_out(r, accounts),
        lambda r: [r["started_at"].isoformat(), r["id"]],
    )
    scope = provenance_repo.Scope(
        workspace_id,
        kinds=("own",),
        platform=platform,
        accounts=None if external_ids is None else tuple(external_ids),
        source_days=definitions.BREAKOUT_LOOKBACK_DAYS,
    )
    return Breakouts(
        items=found_page.items,
        pagination=found_page.pagination,
        snapshot=read_snapshot(txn.analytics, [MART]),
        provenance=kept_provenance(txn, scope, definitions.BREAKOUTS),
    )


def alert_key(row: Row) -> str:
    """What makes a breakout's event the same one: the breakout's stable id."""
    return f"{EVENT}:{row['id']}"


def send_breakouts(cur: Cursor, rows: list[Row], now: datetime) -> int:
    """Enqueue one ``analytics.breakout`` event per breakout in ``rows`` not sent before, in
    the transaction that records it (a re-run, or a second pipeline, sends nothing); how many."""
    sent = webhooks_repo.alerted(cur, [alert_key(r) for r in rows])
    by_key: dict[str, tuple[webhooks_repo.Alert, dict[str, Any]]] = {}
    accounts: dict[str, Accounts] = {}
    for row in rows:
        key = alert_key(row)
        if key in sent or key in by_key:
            continue
        ws = row["workspace_id"]
        if ws not in accounts:
            accounts[ws] = accounts_of(cur, ws)
        payload = {"breakout": breakout_out(row, accounts[ws]).model_dump(mode="json")}
        by_key[key] = (webhooks_repo.Alert(key, ws, EVENT, row["id"], new_id("evt")), payload)
    return webhooks_repo.send_once(cur, list(by_key.values()), now)
