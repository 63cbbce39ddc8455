"""Every paginated list reads its page through an index, in order: no sort, no scan (issue 33).

Each list of ``benchmarks.lists`` (the GET endpoints' warehouse functions) is called on a
seeded SQLite store with a cursor that keeps the statements it runs; each statement's
``EXPLAIN QUERY PLAN`` must then search an index by the list's owner (its workspace, queue or
endpoint) and sort nothing for its ORDER BY. Before migration 0004 they sorted every row of
the workspace, and "? IS NULL OR id < ?" left a deep page to read all the rows before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from benchmarks.lists import ListSpec, layout_for, open_seeded, specs
from warehouse.rows import Cursor
from warehouse.seeding import Layout
from warehouse.store import Store

ROWS = 200
# A table read whole (json_each, a list parameter's rows, is not a table).
TABLE_SCAN = re.compile(r"SCAN (?!json_each)\w+")
# An index range bounded by a value (the cursor's) beside the owner's.
BOUNDED = re.compile(r"[<>]\(?\?")
# The index search of a list's owner, as SQLite's plan spells it.
OWNER_SEARCH = re.compile(
    r"SEARCH \w+ USING (COVERING )?INDEX \w+ \((workspace_id|queue_id|endpoint_id)=\?"
)


class Recording:
    """A real cursor that also keeps every statement it runs, with its parameters."""

    def __init__(self, cur: Cursor) -> None:
        self.cur = cur
        self.statements: list[tuple[str, list[Any]]] = []

    @property
    def dialect(self) -> Any:
        return self.cur.dialect

    @property
    def description(self) -> Any:
        return self.cur.description

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None, /) -> Any:
        assert not isinstance(params, dict)
        self.statements.append((sql, list(params or [])))
        return self.cur.execute(sql, params)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.cur.fetchone()

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.cur.fetchall()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Layout]]:
    layout = layout_for(ROWS)
    with open_seeded(tmp_path_factory.mktemp("lists") / "data", layout) as store:
        yield store, layout


def _plans(store: Store, spec: ListSpec, after: Any) -> list[list[str]]:
    def work(cur: Cursor) -> list[list[str]]:
        recording = Recording(cur)
        assert len(spec.read(recording, after)) > 0
        return [
            [str(row[-1]) for row in cur.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()]
            for sql, params in recording.statements
        ]

    return store.read(work)


LISTS = [spec.name for spec in specs(layout_for(1))]


@pytest.mark.parametrize("page", ["first", "deep"])
@pytest.mark.parametrize("name", LISTS)
def test_a_page_is_read_through_an_index_in_order(
    seeded: tuple[Store, Layout], name: str, page: str
) -> None:
    store, layout = seeded
    spec = next(s for s in specs(layout) if s.name == name)
    after = spec.deep(layout, ROWS) if page == "deep" else None
    plans = _plans(store, spec, after)
    assert plans
    for plan in plans:
        assert not [step for step in plan if "TEMP B-TREE" in step], plan
        assert not [step for step in plan if TABLE_SCAN.match(step)], plan
        searches = [step for step in plan if OWNER_SEARCH.search(step)]
        assert searches, plan
        if after is not None:
            # A deep page starts at its cursor: the owner's rows before it are not read.
            assert [step for step in searches if BOUNDED.search(step)], plan
