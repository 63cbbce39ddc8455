"""The whole product on loopback: the simulator, the API hosting a fresh store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import uvicorn

from domain.workspaces.keys import mint_key
from domain.workspaces.service import bootstrap_test_workspace
from tests.servers import StoreSettings
from tests.support import Api, LiveServer, start_server, start_simulator
from warehouse import workspaces as ws_repo
from warehouse.rows import Cursor

# The simulated world's "now" for these tests: fixed, so that every run sees one history.
T0 = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)


@dataclass
class Simulator:
    root: str
    server: uvicorn.Server
    admin: httpx.Client

    def now(self) -> datetime:
        body = self.admin.get("/_sim/clock").json()
        return datetime.fromisoformat(body["now"].replace("Z", "+00:00"))

    def advance(self, seconds: float) -> None:
        self.admin.post("/_sim/clock", json={"advance_seconds": seconds}).raise_for_status()


@dataclass
class Product:
    """The simulator, and the API on a store of its own, with a key for the test workspace."""

    sim: Simulator
    server: LiveServer
    api: Api
    workspace_id: str


@pytest.fixture
def product(tmp_path: Path, store_settings: StoreSettings) -> Iterator[Product]:
    running = start_simulator(7)
    root = running.root
    admin = httpx.Client(base_url=root, timeout=30)
    admin.post("/_sim/clock", json={"now": T0.isoformat()}).raise_for_status()
    settings = store_settings(tmp_path / "data", platforms_url=root)
    live = start_server(settings)

    def setup(cur: Cursor) -> tuple[str, str]:
        ws_id = bootstrap_test_workspace(cur)
        ws = ws_repo.get_workspace(cur, ws_id)
        assert ws is not None
        minted = mint_key(cur, organization_id=ws.organization_id, workspace_ids=[ws_id])
        return ws_id, minted.key

    ws_id, key = live.store.run(setup)
    api = Api(live.base_url, key)
    try:
        yield Product(Simulator(root, running.server, admin), live, api, ws_id)
    finally:
        api.close()
        live.stop()
        running.stop()
        admin.close()
