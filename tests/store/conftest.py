"""The two profiles of the new store (ADR 0002): embedded files, and servers at scale.

``profile`` runs a test on each: ``embedded`` is SQLite and a DuckLake with a SQLite catalog
in the test's temporary directory; ``scale`` is PostgreSQL and a DuckLake with a PostgreSQL
catalog and its Parquet on S3, on servers started once per test process (``scale_servers``
in tests/conftest.py), with a database pair and a bucket of the test's own.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.servers import (
    ANALYST,
    ANALYST_PASSWORD,
    ANALYST_S3_KEY,
    ScaleServers,
    create_bucket,
)
from warehouse.analysts import Login, grant_lake_catalog, grant_publishing
from warehouse.lake import S3, Lake
from warehouse.pubdb.engine import sqlite_url


@dataclass(frozen=True)
class Profile:
    """Where one test's store lives: the publishing database's URL and the lake."""

    name: str
    pub_url: str
    lake: Lake
    # The SQLAlchemy URL an analyst reads the publishing database with.
    analyst_url: str
    # The lake as the analyst attaches it (at scale: as the analyst's role).
    analyst_lake: Lake
    # At scale: the two databases (publishing, lake catalog) as their owner reaches them.
    owner_dsns: tuple[str, ...] = ()


@pytest.fixture(params=["embedded", "scale"])
def profile(request: pytest.FixtureRequest, tmp_path: Path) -> Profile:
    if request.param == "embedded":
        url = sqlite_url(tmp_path / "publishing.sqlite")
        lake = Lake.under(tmp_path)
        return Profile("embedded", url, lake, analyst_url=url, analyst_lake=lake)
    servers: ScaleServers = request.getfixturevalue("scale_servers")
    name = "t" + uuid.uuid4().hex[:12]
    servers.postgres.create_database(f"{name}_pub")
    servers.postgres.create_database(f"{name}_lake")
    create_bucket(servers.s3_endpoint, name)
    # moto checks no credentials: any key is let in (ADR 0002, "Not measured").
    s3 = S3(endpoint=servers.s3_endpoint, key_id="murmur", secret="murmur", use_ssl=False)
    lake = Lake(f"postgres:{servers.postgres.dsn(f'{name}_lake')}", f"s3://{name}/lake/", s3)
    # The analysts' role and key, as `murmur attach` prints them (tests/store/test_analysts.py
    # checks what the key may do on a server that checks keys).
    key_id, secret = ANALYST_S3_KEY
    analyst_s3 = S3(endpoint=servers.s3_endpoint, key_id=key_id, secret=secret, use_ssl=False)
    analyst_lake = Lake(
        f"postgres:{servers.postgres.dsn(f'{name}_lake', ANALYST, ANALYST_PASSWORD)}",
        lake.data,
        analyst_s3,
    )
    return Profile(
        "scale",
        servers.postgres.url(f"{name}_pub"),
        lake,
        analyst_url=servers.postgres.url(f"{name}_pub", ANALYST, ANALYST_PASSWORD),
        analyst_lake=analyst_lake,
        owner_dsns=(servers.postgres.dsn(f"{name}_pub"), servers.postgres.dsn(f"{name}_lake")),
    )


def grant_analyst(profile: Profile, *, lake: bool = True) -> None:
    """What `murmur analysts grant` does: the analysts' role reads (only) the publishing
    tables but their secrets, and (``lake``: the test made one) the lake's catalog."""
    if not profile.owner_dsns:
        return
    login = Login(ANALYST, ANALYST_PASSWORD)
    publishing, catalog = profile.owner_dsns
    grant_publishing(publishing, login)
    if lake:
        grant_lake_catalog(catalog, login)
