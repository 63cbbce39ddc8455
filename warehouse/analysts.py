"""The analysts' read-only PostgreSQL role at scale: its login, the grants it holds, its attach.

``murmur analysts grant`` makes the role hold exactly :func:`grant_publishing`'s and
:func:`grant_lake_catalog`'s privileges, whatever it held before; ``murmur attach`` prints
connection strings carrying this role and its password, never the service's
(docs/security.md, "Analysts at scale").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import MetaData
from sqlalchemy.engine import make_url

from warehouse.errors import StoreError, translate
from warehouse.lake import S3, Lake
from warehouse.pubdb.schema import every_table

if TYPE_CHECKING:
    import psycopg

#: Publishing columns the analysts' role may not read: a webhook's signing secret (sealed, but
#: the ciphertext is still no analyst's), the stored replies of idempotent writes (a reply can
#: carry a minted key or a webhook's secret), and the hashes that identify API keys and
#: sign-in links. Every other column of every table is readable.
SECRET_COLUMNS: dict[str, frozenset[str]] = {
    "webhook_endpoints": frozenset({"secret"}),
    "idempotency_keys": frozenset({"response_body"}),
    "api_keys": frozenset({"key_hash"}),
    "sign_in_links": frozenset({"token_hash"}),
}
#: Column names that look like a secret: each must be in SECRET_COLUMNS or named as safe
#: here (tests/store/test_analysts.py reads every table's columns against both).
NOT_SECRET: frozenset[tuple[str, str]] = frozenset({("api_keys", "key_hint")})
SECRET_LIKE = re.compile(r"secret|hash|token|password|credential|key_hint|response_body")

# libpq parameters that authenticate the service: none reaches an analyst's string.
_CREDENTIALS = ("user", "password", "passfile", "sslpassword", "sslcert", "sslkey", "service")
# What the role holds in a database, granted by anyone: relations (whole or some columns),
# schemas, functions, and default privileges on what a role will create.
_HELD_RELATIONS = """
SELECT n.nspname, c.relname, c.relkind = 'S' FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE EXISTS (SELECT 1 FROM aclexplode(c.relacl) a WHERE a.grantee = %(oid)s)
   OR EXISTS (SELECT 1 FROM pg_attribute t, aclexplode(t.attacl) a
              WHERE t.attrelid = c.oid AND a.grantee = %(oid)s)
"""
_HELD_SCHEMAS = """
SELECT nspname FROM pg_namespace
WHERE EXISTS (SELECT 1 FROM aclexplode(nspacl) a WHERE a.grantee = %(oid)s)
"""
_HELD_FUNCTIONS = """
SELECT oid::regprocedure::text FROM pg_proc
WHERE EXISTS (SELECT 1 FROM aclexplode(proacl) a WHERE a.grantee = %(oid)s)
"""
_HELD_DEFAULTS = """
SELECT pg_get_userbyid(d.defaclrole), n.nspname, d.defaclobjtype FROM pg_default_acl d
LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace
WHERE EXISTS (SELECT 1 FROM aclexplode(d.defaclacl) a WHERE a.grantee = %(oid)s)
"""
# One grant at a time on a database: two at once would race to create the role.
_GRANT_LOCK = 0x616E616C  # "anal"


@dataclass(frozen=True)
class Login:
    """The analysts' PostgreSQL role and its password."""

    role: str
    password: str


@dataclass(frozen=True)
class Granted:
    """What one database's grant left the role: tables readable, whole or in part."""

    database: str
    tables: int
    withheld: tuple[str, ...] = ()  # table.column


def readable(metadata: MetaData = every_table) -> dict[str, list[str] | None]:
    """Each publishing table's columns the role may read; None: every column."""
    tables: dict[str, list[str] | None] = {}
    for table in metadata.sorted_tables:
        hidden = SECRET_COLUMNS.get(table.name, frozenset())
        names = [column.name for column in table.columns]
        tables[table.name] = None if not hidden else [n for n in names if n not in hidden]
    return tables


def grant_publishing(conninfo: str, login: Login) -> Granted:
    """Make ``login`` a role that reads the publishing database's tables but their secrets."""
    from psycopg import sql

    def grants(cur: psycopg.Cursor[tuple[object, ...]]) -> Granted:
        count = 0
        schemas: set[str] = set()
        for name, columns in readable().items():
            # The table as the service's search_path finds it, like every query of ours.
            found = cur.execute(
                "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE c.oid = to_regclass(%s)",
                [name],
            ).fetchone()
            if found is None:
                raise StoreError(f"the publishing database has no table {name}: run murmur migrate")
            schema = str(found[0])
            if schema not in schemas:
                schemas.add(schema)
                cur.execute(
                    sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                        sql.Identifier(schema), sql.Identifier(login.role)
                    )
                )
            target = sql.Identifier(schema, name)
            if columns is None:
                statement = sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(
                    target, sql.Identifier(login.role)
                )
            else:
                statement = sql.SQL("GRANT SELECT ({}) ON TABLE {} TO {}").format(
                    sql.SQL(", ").join(map(sql.Identifier, columns)),
                    target,
                    sql.Identifier(login.role),
                )
            cur.execute(statement)
            count += 1
        withheld = tuple(
            f"{t}.{c}" for t, cols in sorted(SECRET_COLUMNS.items()) for c in sorted(cols)
        )
        return Granted(_database(cur), count, withheld)

    return _grant(conninfo, login, grants)


def grant_lake_catalog(conninfo: str, login: Login) -> Granted:
    """Make ``login`` a role that reads the DuckLake catalog's tables, now and to come."""
    from psycopg import sql

    def grants(cur: psycopg.Cursor[tuple[object, ...]]) -> Granted:
        rows = cur.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE tablename LIKE 'ducklake%'"
            " ORDER BY 1, 2"
        ).fetchall()
        if not rows:
            raise StoreError("the lake's catalog holds no DuckLake tables yet: run murmur init")
        role = sql.Identifier(login.role)
        for schema in sorted({str(s) for s, _ in rows}):
            cur.execute(
                sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), role)
            )
            # DuckLake makes tables of its own later (inlined data, newer versions' tables):
            # the catalog holds nothing secret, so what the service creates there is readable.
            cur.execute(
                sql.SQL(
                    "ALTER DEFAULT PRIVILEGES IN SCHEMA {} GRANT SELECT ON TABLES TO {}"
                ).format(sql.Identifier(schema), role)
            )
        for in_schema, table in rows:
            cur.execute(
                sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(
                    sql.Identifier(str(in_schema), str(table)), role
                )
            )
        return Granted(_database(cur), len(rows))

    return _grant(conninfo, login, grants)


def _database(cur: psycopg.Cursor[tuple[object, ...]]) -> str:
    return str(cur.connection.info.dbname)


def _grant(
    conninfo: str, login: Login, grants: Callable[[psycopg.Cursor[tuple[object, ...]]], Granted]
) -> Granted:
    """In one transaction: the role made or set right, every privilege it held revoked, then
    ``grants`` and CONNECT; a reader never sees the role with less or more in between."""
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(conninfo) as con, con.transaction(), con.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", [_GRANT_LOCK])
            _set_role(cur, login)
            _revoke_everything(cur, login.role)
            cur.execute(
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                    sql.Identifier(_database(cur)), sql.Identifier(login.role)
                )
            )
            return grants(cur)
    except psycopg.Error as exc:
        raise translate(exc) from None


def _set_role(cur: psycopg.Cursor[tuple[object, ...]], login: Login) -> None:
    """Create the role, or make it a plain login with this password again."""
    from psycopg import sql

    found = cur.execute(
        "SELECT rolname = current_user, rolsuper, rolreplication, rolbypassrls"
        " FROM pg_roles WHERE rolname = %s",
        [login.role],
    ).fetchone()
    if found is not None and found[0]:
        raise StoreError(
            f"{login.role} is the role the service connects as: the analysts need one of their own"
        )
    # The SCRAM verifier, made here as psql's \password does: the password itself never
    # reaches the server, nor its log (log_statement = 'ddl' logs this statement).
    verifier = cur.connection.pgconn.encrypt_password(
        login.password.encode(), login.role.encode()
    ).decode()
    role = sql.Identifier(login.role)
    if found is None:
        cur.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(verifier)))
        return
    # Only a superuser may take these three away; asked only when the role holds them.
    lifted = [
        sql.SQL(word)
        for word, held in zip(
            ("NOSUPERUSER", "NOREPLICATION", "NOBYPASSRLS"), found[1:], strict=True
        )
        if held
    ]
    cur.execute(
        sql.SQL("ALTER ROLE {} WITH LOGIN NOCREATEDB NOCREATEROLE INHERIT {} PASSWORD {}").format(
            role, sql.SQL(" ").join(lifted), sql.Literal(verifier)
        )
    )
    memberships = cur.execute(
        "SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid"
        " JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %s",
        [login.role],
    ).fetchall()
    for (group,) in memberships:
        # A membership (pg_read_all_data, the service's role) would read past column grants.
        cur.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(str(group)), role))


def _revoke_everything(cur: psycopg.Cursor[tuple[object, ...]], name: str) -> None:
    """Take from the role every privilege it holds in this database, whoever granted it."""
    from psycopg import sql

    role = sql.Identifier(name)
    found = cur.execute("SELECT oid FROM pg_roles WHERE rolname = %s", [name]).fetchone()
    assert found is not None  # _set_role made it
    oid = {"oid": found[0]}
    for schema, relation, sequence in cur.execute(_HELD_RELATIONS, oid).fetchall():
        # Revoking on a table revokes its column privileges too.
        kind = "SEQUENCE" if sequence else "TABLE"
        cur.execute(
            sql.SQL("REVOKE ALL ON {} {} FROM {}").format(
                sql.SQL(kind), sql.Identifier(str(schema), str(relation)), role
            )
        )
    for (schema,) in cur.execute(_HELD_SCHEMAS, oid).fetchall():
        cur.execute(
            sql.SQL("REVOKE ALL ON SCHEMA {} FROM {}").format(sql.Identifier(str(schema)), role)
        )
    for (function,) in cur.execute(_HELD_FUNCTIONS, oid).fetchall():
        # regprocedure's text is the function's name and argument types, quoted as needed.
        cur.execute(
            sql.SQL("REVOKE ALL ON FUNCTION {} FROM {}").format(sql.SQL(str(function)), role)
        )
    kinds = {"r": "TABLES", "S": "SEQUENCES", "f": "FUNCTIONS", "T": "TYPES", "n": "SCHEMAS"}
    for owner, in_schema, objects in cur.execute(_HELD_DEFAULTS, oid).fetchall():
        where = (
            sql.SQL("IN SCHEMA {}").format(sql.Identifier(str(in_schema)))
            if in_schema
            else sql.SQL("")
        )
        cur.execute(
            sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} {} REVOKE ALL ON {} FROM {}").format(
                sql.Identifier(str(owner)), where, sql.SQL(kinds[str(objects)]), role
            )
        )
    cur.execute(
        sql.SQL("REVOKE ALL ON DATABASE {} FROM {}").format(sql.Identifier(_database(cur)), role)
    )


def publishing_conninfo(url: str) -> str | None:
    """The libpq string of the publishing database's SQLAlchemy URL; None: not PostgreSQL."""
    from warehouse.lake import publishing_target

    kind, target = publishing_target(url)
    return target if kind == "postgres" else None


def catalog_conninfo(lake: Lake) -> str:
    """The libpq string of a lake's PostgreSQL catalog."""
    return lake.catalog.split(":", 1)[1]


def analyst_publishing_url(url: str, login: Login) -> str:
    """The publishing database's URL with the analysts' role and password for the service's
    (a SQLite file's URL as it is: it has no role)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return url
    return parsed.set(username=login.role, password=login.password).render_as_string(
        hide_password=False
    )


def analyst_lake(lake: Lake, login: Login | None, s3: S3 | None) -> Lake:
    """``lake`` as the analysts reach it: their role in a PostgreSQL catalog's string, and
    their key to the files on S3."""
    catalog = lake.catalog
    if lake.kind == "postgres" and login is not None:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        parts = {
            key: value
            for key, value in conninfo_to_dict(catalog_conninfo(lake)).items()
            if key not in _CREDENTIALS
        }
        catalog = "postgres:" + make_conninfo("", **parts, user=login.role, password=login.password)
    return Lake(catalog=catalog, data=lake.data, s3=s3, relocatable=lake.relocatable)
