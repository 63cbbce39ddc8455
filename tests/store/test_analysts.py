"""Analysts at scale read with their own credentials, which may only read (issue 32).

Everything is real: a service role of its own with a password (CREATEROLE, no superuser), two
databases it owns with PUBLIC's default privileges taken away, a moto server that checks keys
and IAM policies (auth on once its users are made), ``murmur analysts grant`` and ``murmur
attach`` as subprocesses, and the printed SQL run by DuckDB in a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import psycopg
import pytest
from psycopg import sql

from benchmarks.servers import ScaleServers, s3_server
from core.settings import Settings
from domain.workspaces.service import bootstrap_test_workspace
from tests.support import HANG_SECONDS, run_murmur
from warehouse.analysts import NOT_SECRET, SECRET_COLUMNS, SECRET_LIKE
from warehouse.pubdb.schema import every_table

# One worker runs the module: its shared fixture is built once, not on each worker.
pytestmark = pytest.mark.xdist_group(__name__)

SERVICE_PASSWORD = "service's own s3cret"
ANALYST_PASSWORD = "analyst's p@ss"
READ_ONLY_POLICY = ["s3:GetObject", "s3:ListBucket"]

# The analyst's session: the printed SQL (READ_ONLY kept, or taken away to ask PostgreSQL
# and the object store themselves), then each probe's rows or error.
ANALYST = """
import json, re, sys
import duckdb
from warehouse.extensions import load_extension

attach, probes = json.load(sys.stdin)
con = duckdb.connect()
for name in ("postgres", "ducklake", "httpfs"):
    load_extension(con, name)
report = {}
try:
    con.execute(re.sub(r"(INSTALL|LOAD) \\w+;", "", attach))
except duckdb.Error as exc:
    report["attach"] = str(exc)
for name, statement in probes.items():
    try:
        report[name] = {"rows": [list(r) for r in con.execute(statement).fetchall()]}
    except duckdb.Error as exc:
        report[name] = {"error": str(exc)}
print(json.dumps(report, default=str))
"""


@dataclass(frozen=True)
class CheckedS3:
    """A moto server that checks every request's key and its user's IAM policy."""

    endpoint: str
    keys: dict[str, tuple[str, str]]  # user: (key id, secret)
    bucket: str


@pytest.fixture(scope="module")
def checked_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CheckedS3]:
    # A server of its own: the session's takes any key, and other tests rely on that.
    with s3_server(tmp_path_factory.mktemp("moto-iam")) as endpoint:
        url = f"http://{endpoint}"
        # Before auth is on, moto takes any key: these calls make the users and the bucket.
        made = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", **made)
        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **made)
        bucket = "lake-" + uuid.uuid4().hex[:12]
        s3.create_bucket(Bucket=bucket)
        keys = {}
        for user, actions in (("service", ["s3:*"]), ("analyst", READ_ONLY_POLICY)):
            iam.create_user(UserName=user)
            policy = {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": actions,
                        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                    }
                ],
            }
            iam.put_user_policy(UserName=user, PolicyName="lake", PolicyDocument=json.dumps(policy))
            key = iam.create_access_key(UserName=user)["AccessKey"]
            keys[user] = (str(key["AccessKeyId"]), str(key["SecretAccessKey"]))
        # From now on every request is authenticated and authorized (moto's reset-auth).
        httpx.post(f"{url}/moto-api/reset-auth", content=b"0", timeout=30).raise_for_status()
        yield CheckedS3(endpoint, keys, bucket)


@pytest.fixture
def store(tmp_path: Path, scale_servers: ScaleServers, checked_s3: CheckedS3) -> Settings:
    """A scale store owned by a service role with a password, on the checking moto server."""
    postgres = scale_servers.postgres
    name = "t" + uuid.uuid4().hex[:12]
    service, analyst = f"svc_{name}", f"analyst_{name}"
    with psycopg.connect(postgres.dsn("postgres"), autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(
                sql.Identifier(service), sql.Literal(SERVICE_PASSWORD)
            )
        )
    for database in (f"{name}_pub", f"{name}_lake"):
        postgres.create_database(database)
        with psycopg.connect(postgres.dsn("postgres"), autocommit=True) as admin:
            # PUBLIC's CONNECT and TEMP taken away: the analyst's attach works with what
            # `murmur analysts grant` gives it, and needs no temporary tables (measured).
            admin.execute(
                sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                    sql.Identifier(database), sql.Identifier(service)
                )
            )
            admin.execute(
                sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(database))
            )
    key_id, secret = checked_s3.keys["service"]
    analyst_key, analyst_secret = checked_s3.keys["analyst"]
    return Settings(
        data_dir=tmp_path / "data",
        publishing_url=postgres.url(f"{name}_pub", service, SERVICE_PASSWORD),
        lake_catalog=f"postgres:{postgres.dsn(f'{name}_lake', service, SERVICE_PASSWORD)}",
        lake_data=f"s3://{checked_s3.bucket}/{name}/",
        s3_endpoint=checked_s3.endpoint,
        s3_key_id=key_id,
        s3_secret=secret,
        s3_use_ssl=False,
        analyst_role=analyst,
        analyst_password=ANALYST_PASSWORD,
        analyst_s3_key_id=analyst_key,
        analyst_s3_secret=analyst_secret,
    )


def _murmur(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_murmur(settings, *args)
    assert done.returncode == 0, done.stderr
    return done


def _init(settings: Settings) -> None:
    """What `murmur init` does (the store and its test workspace), in this process: a
    `murmur` process costs ~1 CPU-s more, and the tests are of grant and attach."""
    with settings.open_store() as opened:
        opened.run(bootstrap_test_workspace)


def _session(attach: str, probes: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", ANALYST],
        input=json.dumps([attach, probes]),
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _as_owner(settings: Settings, statement: str, *, lake: bool = False) -> None:
    """A statement run as the service's role, in the publishing database or the catalog."""
    from warehouse.analysts import catalog_conninfo, publishing_conninfo

    dsn = catalog_conninfo(settings.lake) if lake else publishing_conninfo(settings.pub_url)
    assert dsn is not None
    with psycopg.connect(dsn, autocommit=True) as owner:
        owner.execute(statement)


def test_the_printed_sql_holds_only_the_analysts_credentials_which_only_read(
    store: Settings, checked_s3: CheckedS3
) -> None:
    _init(store)
    _murmur(store, "keys", "create", "--name", "analysed")
    with store.open_lakehouse() as lake:
        lake.execute_script("CREATE TABLE probe AS SELECT 7 AS n;")
    granted = _murmur(store, "analysts", "grant").stdout
    assert "webhook_endpoints.secret" in granted, granted

    printed = _murmur(store, "attach").stdout
    # None of the service's credentials, nor its role's name; the analysts' role and key.
    # (The passwords hold a quote, which the printed string escapes: "own s3cret" is plain.)
    for secret in ("own s3cret", store.s3_secret, store.s3_key_id, "svc_"):
        assert str(secret) not in printed
    assert f"user={store.analyst_role}" in printed
    assert checked_s3.keys["analyst"][0] in printed

    bucket = f"s3://{checked_s3.bucket}/"
    reads = _session(
        printed,
        {
            "posts": "SELECT count(*) FROM pub.workspaces",
            "lake": "SELECT n FROM lake.probe",
            "joined": "SELECT count(*) FROM pub.workspaces w, lake.probe",
            "keys": "SELECT name FROM pub.api_keys",
            "endpoints": "SELECT id, url FROM pub.webhook_endpoints",
            "secret": "SELECT secret FROM pub.webhook_endpoints",
            "raw_secret": "SELECT * FROM postgres_query('pub',"
            " 'SELECT secret FROM webhook_endpoints')",
            "replies": "SELECT response_body FROM pub.idempotency_keys",
            "key_hash": "SELECT key_hash FROM pub.api_keys",
        },
    )
    assert "attach" not in reads, reads
    assert reads["posts"]["rows"][0][0] >= 1
    assert reads["lake"] == {"rows": [[7]]}
    assert reads["joined"]["rows"][0][0] >= 1
    assert ["analysed"] in reads["keys"]["rows"], reads["keys"]
    assert reads["endpoints"] == {"rows": []}
    for withheld in ("secret", "raw_secret", "replies", "key_hash"):
        assert "permission denied" in reads[withheld].get("error", ""), reads[withheld]

    # READ_ONLY taken out of the printed SQL: PostgreSQL and the object store refuse.
    writable = printed.replace(", READ_ONLY", "")
    assert writable != printed
    writes = _session(
        writable,
        {
            "insert": "INSERT INTO pub.organizations VALUES ('org_x', 'x', now()::TIMESTAMP)",
            "delete": "DELETE FROM pub.workspaces",
            "update": "UPDATE pub.api_keys SET name = 'mine'",
            "raw": "CALL postgres_execute('pub', 'CREATE TABLE pwned (x int)')",
            "lake": "INSERT INTO lake.probe VALUES (8)",
            "s3": f"COPY (SELECT 1 AS x) TO '{bucket}{store.analyst_role}.parquet'",
        },
    )
    for statement in ("insert", "delete", "update", "raw"):
        assert "permission denied" in writes[statement].get("error", ""), writes
    # A writable DuckLake attach is refused at once, or its commit is: by PostgreSQL.
    lake_refusal = writes.get("attach", "") + writes["lake"].get("error", "")
    assert "permission denied" in lake_refusal, writes
    assert "AccessDenied" in writes["s3"].get("error", ""), writes["s3"]
    with store.open_lakehouse() as lake:
        assert lake.run(lambda cur: cur.execute("SELECT n FROM probe").fetchall()) == [(7,)]


def test_grant_sets_drift_right_and_runs_again(store: Settings) -> None:
    _init(store)
    role = sql.Identifier(str(store.analyst_role))
    with psycopg.connect(_owner_dsn(store), autocommit=True) as owner:
        # A role made by hand, over-privileged; `grant` must leave it what it gives, no more.
        owner.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEDB PASSWORD 'old'").format(role))
        owner.execute(sql.SQL("GRANT pg_read_all_data TO {}").format(role))
        owner.execute(sql.SQL("GRANT INSERT, UPDATE ON posts TO {}").format(role))
        owner.execute(sql.SQL("GRANT SELECT (secret) ON webhook_endpoints TO {}").format(role))
        owner.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(role))
        owner.execute(sql.SQL("ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO {}").format(role))
    for _ in range(2):  # twice: the second run finds its own grants and keeps them
        _murmur(store, "analysts", "grant")
    with psycopg.connect(_owner_dsn(store), autocommit=True) as owner:
        name = str(store.analyst_role)
        held = owner.execute(
            "SELECT rolcreatedb, rolcanlogin, (SELECT count(*) FROM pg_auth_members m"
            " WHERE m.member = r.oid) FROM pg_roles r WHERE rolname = %s",
            [name],
        ).fetchone()
        assert held == (False, True, 0)
        privileges = owner.execute(
            "SELECT has_table_privilege(%(r)s, 'posts', 'INSERT'),"
            " has_table_privilege(%(r)s, 'posts', 'UPDATE'),"
            " has_table_privilege(%(r)s, 'posts', 'SELECT'),"
            " has_column_privilege(%(r)s, 'webhook_endpoints', 'secret', 'SELECT'),"
            " has_column_privilege(%(r)s, 'webhook_endpoints', 'url', 'SELECT'),"
            " has_schema_privilege(%(r)s, 'public', 'CREATE'),"
            " has_database_privilege(%(r)s, current_database(), 'TEMP'),"
            " has_database_privilege(%(r)s, current_database(), 'CONNECT'),"
            " (SELECT count(*) FROM pg_default_acl d, aclexplode(d.defaclacl) a"
            "  WHERE a.grantee = (SELECT oid FROM pg_roles WHERE rolname = %(r)s))",
            {"r": name},
        ).fetchone()
        assert privileges == (False, False, True, False, True, False, False, True, 0)
        # A table a later migration adds is not readable until `grant` runs again.
        owner.execute("CREATE TABLE later_secrets (token text)")
        assert owner.execute(
            "SELECT has_table_privilege(%s, 'later_secrets', 'SELECT')", [name]
        ).fetchone() == (False,)
    # Whereas what DuckLake makes in its catalog later is readable (default privileges there).
    _as_owner(store, "CREATE TABLE ducklake_later (x int)", lake=True)
    _as_owner(
        store,
        f"DO $$ BEGIN IF NOT has_table_privilege('{store.analyst_role}', 'ducklake_later',"
        " 'SELECT') THEN RAISE 'not readable'; END IF; END $$",
        lake=True,
    )


def _owner_dsn(settings: Settings) -> str:
    from warehouse.analysts import publishing_conninfo

    dsn = publishing_conninfo(settings.pub_url)
    assert dsn is not None
    return dsn


def test_the_services_own_role_is_refused_as_the_analysts(store: Settings) -> None:
    _init(store)
    service = store.model_copy(update={"analyst_role": f"svc_{str(store.analyst_role)[8:]}"})
    done = run_murmur(service, "analysts", "grant")
    assert done.returncode == 1
    assert "the role the service connects as" in done.stderr, done.stderr


def test_attach_at_scale_without_the_analysts_credentials_refuses(
    store: Settings, tmp_path: Path
) -> None:
    bare = store.model_copy(
        update={
            "analyst_role": None,
            "analyst_password": None,
            "analyst_s3_key_id": None,
            "analyst_s3_secret": None,
        }
    )
    done = run_murmur(bare, "attach")
    assert done.returncode == 1
    assert not done.stdout
    for name in ("ROLE", "PASSWORD", "S3_KEY_ID", "S3_SECRET"):
        assert f"MURMUR_ANALYST_{name}" in done.stderr, done.stderr
    assert "murmur analysts grant" in done.stderr
    assert "own s3cret" not in done.stderr
    assert str(store.s3_secret) not in done.stderr
    # The key alone missing: only the key is asked for.
    keyless = store.model_copy(update={"analyst_s3_key_id": None, "analyst_s3_secret": None})
    done = run_murmur(keyless, "attach")
    assert done.returncode == 1
    assert "MURMUR_ANALYST_S3_KEY_ID" in done.stderr
    assert "ANALYST_ROLE" not in done.stderr
    # Embedded: nothing to grant (file permissions are the boundary); attach as before.
    embedded = Settings(data_dir=tmp_path / "embedded")
    done = run_murmur(embedded, "analysts", "grant")
    assert done.returncode == 1
    assert "nothing to grant" in done.stderr, done.stderr
    assert run_murmur(embedded, "attach").returncode == 0


def test_every_secret_looking_column_is_withheld_or_named_safe() -> None:
    for table in every_table.sorted_tables:
        for column in table.columns:
            if SECRET_LIKE.search(column.name) and (table.name, column.name) not in NOT_SECRET:
                assert column.name in SECRET_COLUMNS.get(table.name, ()), (table, column)
    for table_name, columns in SECRET_COLUMNS.items():
        assert columns <= set(every_table.tables[table_name].columns.keys())
