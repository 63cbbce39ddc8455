"""`murmur backup` copies a live store consistently and `murmur restore` brings it back.

The backup is taken while the API takes writes and a pipeline run rewrites the marts: every
post acknowledged before the backup began is in the copy, the copy's lake reads whole
(`murmur doctor --deep`), and the media come back byte for byte.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from core.settings import Settings
from pipelines.importers.runner import run_import
from pipelines.run import RunSummary, run_all
from tests.posts.helpers import PNG, upload
from tests.support import HANG_SECONDS, new_tenant, run_murmur, start_server
from warehouse.rows import fetch_value

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


def test_a_backup_of_a_live_store_restores_everything_acknowledged(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "live")
    settings.ensure_dirs()
    run_import(
        DATASETS / "youtube_trending_us.csv",
        "youtube-trending",
        settings=settings,
        workspace_id=None,
        kind="own",
        progress=False,
    )
    live = start_server(settings)
    tenant = new_tenant(live)
    stop = threading.Event()
    acknowledged: list[tuple[int, str]] = []  # (backups begun before the 201, post id)
    begun = [0]

    def write() -> None:
        n = 0
        while not stop.is_set():
            seen = begun[0]
            n += 1
            answer = tenant.api.post("/posts", json={"text": f"post {n}", "platforms": ["x"]})
            assert answer.status_code == 201, answer.text
            acknowledged.append((seen, answer.json()["data"]["post_id"]))

    run: list[RunSummary] = []
    try:
        media = tenant.api.ok(upload(tenant.api, PNG), 201)
        writer = threading.Thread(target=write)
        pipeline = threading.Thread(
            target=lambda: run.append(
                run_all(settings, now=datetime(2018, 2, 1, tzinfo=UTC), ingest=False)
            )
        )
        writer.start()
        pipeline.start()
        while len(acknowledged) < 20:  # the writes are under way
            assert writer.is_alive()
            threading.Event().wait(0.05)
        before = {post for _, post in acknowledged}
        begun[0] = 1
        copy = tmp_path / "backup"
        backed = run_murmur(settings, "backup", str(copy))
        assert backed.returncode == 0, backed.stdout + backed.stderr
        stop.set()
        writer.join(HANG_SECONDS)
        pipeline.join(HANG_SECONDS)
        assert run
        assert run[0].success
    finally:
        stop.set()
        tenant.api.close()
        live.stop()
    assert "Backed up" in backed.stdout

    restored = Settings(data_dir=tmp_path / "restored")
    brought = run_murmur(restored, "restore", str(copy))
    assert brought.returncode == 0, brought.stdout + brought.stderr
    doctor = run_murmur(restored, "doctor", "--deep")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    with restored.open_store() as store:
        kept = set(
            store.read(
                lambda cur: [
                    row[0]
                    for row in cur.execute(
                        "SELECT id FROM posts WHERE workspace_id = ?", [tenant.workspace_id]
                    ).fetchall()
                ]
            )
        )
        with store.analytics() as cur:
            snapshots = fetch_value(cur, "SELECT count(*) FROM raw_engagement_snapshots")
    assert before <= kept  # nothing acknowledged before the backup began is missing
    with settings.open_store() as store, store.analytics() as cur:
        assert snapshots == fetch_value(cur, "SELECT count(*) FROM raw_engagement_snapshots")
    assert snapshots > 10_000  # the import's readings
    stored = restored.media_dir / f"{media['id']}.png"
    assert stored.read_bytes() == PNG
    assert oct(stored.stat().st_mode & 0o777) == oct(0o600)

    refused = run_murmur(restored, "restore", str(copy))
    assert refused.returncode == 1
    assert "holds a store already" in refused.stderr
