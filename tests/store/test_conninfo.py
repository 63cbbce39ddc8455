"""The publishing database's libpq string, built from its SQLAlchemy URL (issue 32, point 7).

A user name or password holding ``@``, ``/``, ``:``, a space, a quote or a backslash is
percent-encoded in the URL; the key=value string DuckDB's postgres extension reads must
quote it, or the value ends at the space and the rest is read as keys of its own.
"""

from __future__ import annotations

import uuid

import duckdb
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

from benchmarks.servers import ScaleServers
from warehouse.errors import StoreError
from warehouse.lake import attach_publishing, attach_publishing_sql, publishing_target

ODD_USER = "ana lyst@corp/eu:1 'x' \\"
ODD_PASSWORD = "p@ss/w:rd with spaces 'and' \\ backslash"


def _url(user: str, password: str | None, database: str, port: int = 5432) -> str:
    url = URL.create(
        "postgresql+psycopg",
        username=user,
        password=password,
        host="127.0.0.1",
        port=port,
        database=database,
    )
    return url.render_as_string(hide_password=False)


def test_odd_credentials_are_quoted_in_the_libpq_string() -> None:
    kind, target = publishing_target(_url(ODD_USER, ODD_PASSWORD, "pub db"))
    assert kind == "postgres"
    assert conninfo_to_dict(target) == {
        "host": "127.0.0.1",
        "port": "5432",
        "user": ODD_USER,
        "password": ODD_PASSWORD,
        "dbname": "pub db",
    }
    # The ATTACH statement carries the string as one SQL literal.
    statement = attach_publishing_sql(_url(ODD_USER, ODD_PASSWORD, "pub"))
    assert statement.startswith("ATTACH '")
    assert statement.endswith("' AS pub (TYPE postgres, READ_ONLY)")


def test_a_role_with_an_odd_name_attaches(scale_servers: ScaleServers) -> None:
    postgres = scale_servers.postgres
    database = "t" + uuid.uuid4().hex[:12] + "_pub"
    postgres.create_database(database)
    role = f"{ODD_USER} {uuid.uuid4().hex[:6]}"
    quoted = '"' + role.replace('"', '""') + '"'
    with psycopg.connect(postgres.dsn(database), autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(ODD_PASSWORD)
            )
        )
        admin.execute("CREATE TABLE greetings (word text)")
        admin.execute("INSERT INTO greetings VALUES ('hello')")
        admin.execute(f"GRANT SELECT ON greetings TO {quoted}")
    con = duckdb.connect()
    try:
        # The server checks the password (SCRAM): it arrives whole, quoted as libpq reads it.
        attach_publishing(con, _url(role, ODD_PASSWORD, database, postgres.port))
        assert con.execute("SELECT word FROM pub.greetings").fetchall() == [("hello",)]
        assert con.execute(
            "SELECT current_user FROM postgres_query('pub', 'SELECT current_user')"
        ).fetchall() == [(role,)]
    finally:
        con.close()


def test_a_failed_attach_does_not_tell_the_password(scale_servers: ScaleServers) -> None:
    postgres = scale_servers.postgres
    con = duckdb.connect()
    try:
        with pytest.raises(StoreError) as refused:
            attach_publishing(con, _url("nobody", ODD_PASSWORD, "no_such_db", postgres.port))
    finally:
        con.close()
    told = str(refused.value)
    assert "no_such_db" in told  # the error still says what failed
    assert "p@ss" not in told, told
    assert "backslash" not in told, told
    # Nor does a logged traceback: the engine's own error is not chained to it.
    assert refused.value.__cause__ is None
    assert refused.value.__suppress_context__
