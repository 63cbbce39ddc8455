"""Typed rows at the repository boundary: each one matches its table, and reads back as written."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
import types
import typing
from datetime import date, datetime
from typing import Any

import duckdb
import pytest

import warehouse
from tests.store.old_schema import migrate
from warehouse import posts, publishing
from warehouse import workspaces as ws_repo
from warehouse.ids import utcnow
from warehouse.pubdb.schema import added
from warehouse.rows import TableRow
from warehouse.store import Store

# The Python types a column of each DuckDB type may be handed out as.
PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "VARCHAR": (str,),
    "BOOLEAN": (bool,),
    "INTEGER": (int,),
    "BIGINT": (int,),
    "DOUBLE": (float,),
    "TIMESTAMP": (datetime,),
    "DATE": (date,),
    "VARCHAR[]": (list,),
    "JSON": (dict, list),  # parsed
}


def _row_types() -> list[type[TableRow]]:
    for module in pkgutil.iter_modules(warehouse.__path__):
        importlib.import_module(f"warehouse.{module.name}")
    found: list[type[TableRow]] = []
    pending = list(TableRow.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        # dataclass(slots=True) replaces the class it decorates; the module holds the new one.
        if getattr(sys.modules[cls.__module__], cls.__name__, None) is cls:
            found.append(cls)
    return sorted(found, key=lambda cls: cls.__qualname__)


# SQLAlchemy's types of the tables new since ADR 0002, as DuckDB would name them.
_SQL_KINDS = {
    "String": "VARCHAR",
    "DateTime": "TIMESTAMP",
    "Integer": "INTEGER",
    "BigInteger": "BIGINT",
    "Double": "DOUBLE",
    "Boolean": "BOOLEAN",
    "JSON": "JSON",
}


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """(the type without None, whether None is allowed)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0], len(args) < len(typing.get_args(hint))
    return hint, False


def test_the_repositories_hand_out_typed_rows() -> None:
    names = {cls.__name__ for cls in _row_types()}
    assert {"PostRow", "DestinationRow", "AccountRow", "QueueRow", "EndpointRow"} <= names


@pytest.mark.parametrize(
    "row_type", _row_types(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}"
)
def test_a_row_type_matches_its_table(row_type: type[TableRow]) -> None:
    # The tables as DuckDB typed them (the old store's migrations): the publishing
    # database has each column as they did (tests/store/test_pubdb.py).
    with duckdb.connect() as con:
        migrate(con)
        cur = con.cursor()
        cur.execute(
            "SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns"
            " WHERE table_name = ?",
            [row_type.TABLE],
        )
        table = {name: (kind, nullable) for name, kind, nullable in cur.fetchall()}
    if not table and row_type.TABLE in added.tables:
        # A table new since ADR 0002: the publishing database's own definition is the truth.
        table = {
            c.name: (_SQL_KINDS[type(c.type).__name__], bool(c.nullable))
            for c in added.tables[row_type.TABLE].columns
        }
    assert table, f"no table {row_type.TABLE!r}"
    hints = typing.get_type_hints(row_type)
    for field in dataclasses.fields(typing.cast(Any, row_type)):
        assert field.name in table, f"{row_type.__name__}.{field.name}: no such column"
        kind, nullable = table[field.name]
        python, optional = _unwrap(hints[field.name])
        expected = PYTHON_TYPES[kind]
        origin = typing.get_origin(python) or python  # list[str] -> list; a StrEnum is a str
        assert issubclass(origin, expected), (field.name, kind, python)
        # A nullable column is Optional, unless the row turns NULL into an empty container.
        if nullable and not {list, dict} & set(expected):
            assert optional, f"{row_type.__name__}.{field.name} can be NULL"


def test_rows_read_back_as_written(fresh_store: Store) -> None:
    def work(cur: Any) -> tuple[Any, ...]:
        org = ws_repo.create_organization(cur, "Rows")
        ws = ws_repo.create_workspace(cur, org, "Rows", approval_required=True)
        account = ws_repo.insert_account(cur, ws, "x", "rows", "Rows", "x-1", follower_count=7)
        new = posts.NewPost(
            workspace_id=ws,
            text="typed",
            status=posts.PostStatus.SCHEDULED,
            scheduled_at=utcnow(),
            approval_required=False,
            tags=["a", "b"],
            media_ids=[],
            platform_options={"x": {"reply_settings": "following"}},
            created_by="key_rows",
        )
        inserted = posts.insert_posts(cur, [new])[0]
        posts.insert_destinations(cur, inserted.id, ws, [(account, "x")])
        read = posts.get_post(cur, ws, inserted.id)
        destinations = posts.destinations_of(cur, [inserted.id])[inserted.id]
        choices = posts.destination_choices(cur, ws)
        state = publishing.post_status(cur, inserted.id)
        return inserted, read, destinations, choices, state

    inserted, read, destinations, (approval, accounts), state = fresh_store.run(work)
    assert read == inserted
    assert read.tags == ["a", "b"]
    assert read.platform_options == {"x": {"reply_settings": "following"}}
    assert read.approval_required is False
    assert read.canceled_at is None
    assert [(d.platform, d.status, d.attempts) for d in destinations] == [("x", "pending", 0)]
    assert approval is True
    assert [(a.handle, a.follower_count, a.status) for a in accounts] == [("rows", 7, "active")]
    assert state == publishing.PostState(read.id, "scheduled", None, read.scheduled_at)
