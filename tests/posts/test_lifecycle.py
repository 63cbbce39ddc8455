"""The post's one lifecycle: the table of moves, and a store that refuses every other move."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from warehouse import posts, publishing
from warehouse import workspaces as ws_repo
from warehouse.ids import utcnow
from warehouse.posts import EDITABLE, LIVE, MOVES, SETTLED, PostStatus
from warehouse.store import Store

S = PostStatus


def test_every_status_has_its_moves_and_the_ends_have_none() -> None:
    assert set(MOVES) == set(PostStatus)
    for status in (*SETTLED, S.CANCELED):
        assert MOVES[status] == frozenset(), status
    for status, targets in MOVES.items():
        assert status not in targets, "staying put is not a move"


def test_every_status_is_reached_from_a_draft() -> None:
    seen, frontier = {S.DRAFT}, [S.DRAFT]
    while frontier:
        for target in MOVES[frontier.pop()]:
            if target not in seen:
                seen.add(target)
                frontier.append(target)
    assert seen == set(PostStatus)


def test_the_named_sets_agree_with_the_moves() -> None:
    # What can be edited or canceled is what can still move to canceled.
    assert {s for s in PostStatus if S.CANCELED in MOVES[s]} == EDITABLE
    # The worker claims live posts, and every live post settles one of three ways.
    assert {s for s in PostStatus if S.PUBLISHING in MOVES[s] | {s}} == LIVE
    for status in LIVE:
        assert MOVES[status] >= SETTLED


def test_sources_are_the_statuses_a_move_may_start_from() -> None:
    assert set(posts.sources(S.CANCELED)) == EDITABLE | {S.CANCELED}
    assert set(posts.sources(S.PUBLISHING)) == LIVE
    assert set(posts.sources(S.DRAFT)) == {S.DRAFT, S.PENDING_APPROVAL, S.SCHEDULED}


def test_the_documented_table_is_the_table() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "publishing.md").read_text()
    table = doc.split("| from | to | made by |", 1)[1].split("\n\n", 1)[0]
    documented: dict[PostStatus, frozenset[PostStatus]] = {}
    for line in table.strip().splitlines()[1:]:  # after the |---| row
        starts, targets, _ = (cell.strip() for cell in line.strip().strip("|").split("|"))
        moves = (
            frozenset()
            if targets == "—"
            else frozenset(PostStatus(t.strip()) for t in targets.split(","))
        )
        for start in starts.split(","):
            documented[PostStatus(start.strip())] = moves
    assert documented == MOVES


def test_the_store_makes_exactly_the_moves_of_the_table(fresh_store: Store) -> None:
    pairs = list(itertools.product(PostStatus, PostStatus))

    def work(cur: Any) -> list[tuple[PostStatus, PostStatus, bool, PostStatus]]:
        org = ws_repo.create_organization(cur, "Moves")
        ws = ws_repo.create_workspace(cur, org, "Moves")
        new = [
            posts.NewPost(ws, f"{a} to {b}", a, utcnow(), False, [], [], {}, "key_moves")
            for a, b in pairs
        ]
        rows = posts.insert_posts(cur, new)
        outcomes = []
        for row, (_, to) in zip(rows, pairs, strict=True):
            moved = posts.move(cur, row.id, to, canceled_at=utcnow())
            state = publishing.post_status(cur, row.id)
            assert state is not None
            outcomes.append((row.status, to, moved, PostStatus(state.status)))
        return outcomes

    for start, to, moved, now in fresh_store.run(work):
        allowed = to in MOVES[start] or to == start
        assert moved is allowed, (start, to)
        assert now == (to if allowed else start), (start, to)


def test_an_edit_is_refused_once_the_post_left_the_editable_states(fresh_store: Store) -> None:
    def work(cur: Any) -> tuple[bool, bool]:
        org = ws_repo.create_organization(cur, "Edits")
        ws = ws_repo.create_workspace(cur, org, "Edits")
        post_id = posts.insert_post(
            cur, posts.NewPost(ws, "text", S.SCHEDULED, utcnow(), False, [], [], {}, "key_e")
        )
        edit: dict[str, Any] = {
            "text": "edited",
            "scheduled_at": utcnow(),
            "tags": [],
            "media_ids": [],
            "platform_options": {},
        }
        before = posts.update_post(cur, post_id, status=S.SCHEDULED, was=S.SCHEDULED, **edit)
        assert posts.move(cur, post_id, S.PUBLISHING)  # the worker claimed it meanwhile
        after = posts.update_post(cur, post_id, status=S.SCHEDULED, was=S.SCHEDULED, **edit)
        return before, after

    assert fresh_store.run(work) == (True, False)


def test_a_decision_on_a_post_edited_since_it_was_read_moves_nothing(fresh_store: Store) -> None:
    def work(cur: Any) -> tuple[bool, bool, str]:
        org = ws_repo.create_organization(cur, "Decisions")
        ws = ws_repo.create_workspace(cur, org, "Decisions")
        post_id = posts.insert_post(
            cur, posts.NewPost(ws, "text", S.PENDING_APPROVAL, None, True, [], [], {}, "key_d")
        )
        read = posts.get_post(cur, ws, post_id)
        assert read is not None
        # An author's edit commits between a reviewer's read and decision.
        edit: dict[str, Any] = {"scheduled_at": None, "tags": [], "media_ids": []}
        assert posts.update_post(
            cur,
            post_id,
            text="rewritten",
            status=S.PENDING_APPROVAL,
            was=S.PENDING_APPROVAL,
            platform_options={},
            **edit,
        )
        stale = posts.move(cur, post_id, S.SCHEDULED, unchanged_since=read.updated_at)
        now = posts.get_post(cur, ws, post_id)
        assert now is not None
        fresh = posts.move(cur, post_id, S.SCHEDULED, unchanged_since=now.updated_at)
        return stale, fresh, now.text

    assert fresh_store.run(work) == (False, True, "rewritten")
