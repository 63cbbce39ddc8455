"""The session's store profile (``--store-profile``) is where the service's tests really run.

``make test`` runs the API, worker, pipeline and analyst suites a second time with
``--store-profile=scale``; this test checks, by reading each engine with its own driver,
that the session server's posts then land in PostgreSQL and its lake's files in the bucket.
"""

from __future__ import annotations

import sqlite3
import uuid

import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.posts.helpers import post_body
from tests.servers import s3_keys
from tests.support import LiveServer, Tenant


def _post_texts(server: LiveServer, post_id: str) -> list[str]:
    """The post's text as the publishing database's own driver reads it."""
    url = make_url(server.settings.pub_url)
    if url.get_backend_name() == "postgresql":
        dsn = f"host={url.host} port={url.port} user={url.username} dbname={url.database}"
        with psycopg.connect(dsn) as con:
            rows = con.execute("SELECT text FROM posts WHERE id = %s", [post_id]).fetchall()
    else:
        with sqlite3.connect(f"file:{url.database}?mode=ro", uri=True) as con:
            rows = con.execute("SELECT text FROM posts WHERE id = ?", [post_id]).fetchall()
    return [row[0] for row in rows]


def test_the_api_and_the_pipeline_write_where_the_profile_says(
    request: pytest.FixtureRequest, server: LiveServer, tenant: Tenant
) -> None:
    scale = request.config.getoption("--store-profile") == "scale"
    text = f"profile {uuid.uuid4().hex}"
    post = tenant.api.ok(tenant.api.post("/posts", json=post_body(text=text, draft=True)), 201)
    assert _post_texts(server, post["id"]) == [text]
    assert server.settings.pub_url.startswith("postgresql" if scale else "sqlite")

    table = f"profile_{uuid.uuid4().hex[:8]}"
    lake = server.lake
    lake.execute_script(f"CREATE TABLE {table} (i INTEGER NOT NULL);")
    lake.run(lambda cur: cur.execute(f"INSERT INTO {table} SELECT range FROM range(5000)"))  # noqa: S608 - a generated name
    settings = server.settings
    if scale:
        assert settings.lake.s3 is not None
        bucket = settings.lake.data.removeprefix("s3://").split("/", 1)[0]
        assert any(
            key.endswith(".parquet") and f"/{table}/" in key
            for key in s3_keys(settings.lake.s3.endpoint, bucket)
        )
        assert settings.lake.catalog.startswith("postgres:")
    else:
        assert any((settings.data_dir / "lake").rglob(f"{table}/*.parquet"))
        assert settings.lake.catalog.startswith("sqlite:")
