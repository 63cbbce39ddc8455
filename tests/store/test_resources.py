"""The soft-deleted workspace resources' one set of statements, against a real store."""

from __future__ import annotations

import pytest

from warehouse import resources
from warehouse import workspaces as ws_repo
from warehouse.inbox import AutomationRow
from warehouse.rows import Cursor
from warehouse.store import Store
from warehouse.webhooks import EndpointRow


def _workspace(cur: Cursor, name: str) -> str:
    return ws_repo.create_workspace(
        cur, ws_repo.create_organization(cur, name), name, approval_required=False
    )


def _rule(cur: Cursor, workspace_id: str, name: str, enabled: bool) -> str:
    values = {
        "name": name,
        "enabled": enabled,
        "trigger_type": "keyword",
        "phrases": ["price"],
        "intent": None,
        "action": "tag",
        "action_params": "{}",
    }
    return resources.insert(cur, AutomationRow, "iau", workspace_id, values)


def test_found_listed_changed_and_deleted_within_the_workspace_only(fresh_store: Store) -> None:
    with fresh_store.transaction() as cur:
        ours, theirs = _workspace(cur, "Ours"), _workspace(cur, "Theirs")
        first = _rule(cur, ours, "first", enabled=True)
        second = _rule(cur, ours, "second", enabled=False)
        third = _rule(cur, ours, "third", enabled=True)
        _rule(cur, theirs, "elsewhere", enabled=True)

        assert resources.get(cur, AutomationRow, theirs, first) is None
        listed = resources.page(cur, AutomationRow, ours, after=None, limit=10)
        assert [row.id for row in listed] == [third, second, first]  # newest first
        enabled = resources.page(
            cur, AutomationRow, ours, after=None, limit=10, equal={"enabled": True}
        )
        assert [row.name for row in enabled] == ["third", "first"]
        assert [
            row.id for row in resources.page(cur, AutomationRow, ours, after=third, limit=1)
        ] == [second]

        assert resources.update(cur, AutomationRow, ours, first, {"name": "renamed"})
        assert not resources.update(cur, AutomationRow, theirs, first, {"name": "stolen"})
        changed = resources.get(cur, AutomationRow, ours, first)
        assert changed is not None
        assert changed.name == "renamed"
        assert changed.updated_at >= changed.created_at

        assert resources.delete(cur, AutomationRow, ours, first)
        assert resources.get(cur, AutomationRow, ours, first) is None
        assert not resources.delete(cur, AutomationRow, ours, first)  # already gone
        assert not resources.update(cur, AutomationRow, ours, first, {"name": "revived"})
        assert [
            row.id for row in resources.page(cur, AutomationRow, ours, after=None, limit=10)
        ] == [
            third,
            second,
        ]
        # The row stays, with one instant for its deletion and its last change.
        cur.execute(
            "SELECT name, deleted_at = updated_at FROM inbox_automations WHERE id = ?", [first]
        )
        assert cur.fetchone() == ("renamed", True)


def test_a_delete_sets_what_it_is_given_in_the_same_statement(fresh_store: Store) -> None:
    with fresh_store.transaction() as cur:
        ws = _workspace(cur, "Hooks")
        values = {
            "url": "https://hooks.example/murmur",
            "secret": "whsec_x",
            "description": None,
            "event_types": ["post.published"],
            "enabled": True,
        }
        endpoint = resources.insert(cur, EndpointRow, "whk", ws, values)
        assert endpoint.startswith("whk_")
        assert resources.delete(cur, EndpointRow, ws, endpoint, {"enabled": False})
        cur.execute(
            "SELECT enabled, deleted_at IS NOT NULL FROM webhook_endpoints WHERE id = ?", [endpoint]
        )
        assert cur.fetchone() == (False, True)


def test_a_column_the_row_type_lacks_is_refused_before_any_sql(fresh_store: Store) -> None:
    with fresh_store.transaction() as cur:
        ws = _workspace(cur, "Typos")
        rule = _rule(cur, ws, "rule", enabled=True)
        with pytest.raises(ValueError, match="inbox_automations has no column nmae"):
            resources.update(cur, AutomationRow, ws, rule, {"nmae": "x"})
        with pytest.raises(ValueError, match="has no column id; DROP"):
            resources.page(cur, AutomationRow, ws, after=None, limit=1, equal={"id; DROP": 1})
