"""Workspaces and accounts: reads confined to the key, and the test workspace of a new install."""

from __future__ import annotations

from domain.errors import ValidationFailed, found
from domain.pagination import PageRequest
from domain.schemas import Page, from_row
from domain.workspaces.schemas import Account, Workspace
from warehouse import analytics as analytics_repo
from warehouse import workspaces as repo
from warehouse.rows import Cursor

TEST_ACCOUNTS = {
    "x": ("murmur_test", "Murmur Test"),
    "instagram": ("murmur.test", "Murmur Test"),
    "facebook": ("MurmurTest", "Murmur Test Page"),
    "linkedin": ("murmur-test", "Murmur Test Company"),
    "tiktok": ("murmur.test", "Murmur Test"),
    "youtube": ("@murmurtest", "Murmur Test Channel"),
    "threads": ("murmur.test", "Murmur Test"),
    "bluesky": ("murmur-test.bsky.social", "Murmur Test"),
    "pinterest": ("murmurtest", "Murmur Test Boards"),
}

# Competitors of the simulated world, tracked by the test workspace so that its competitor
# analytics have something to show from the first run.
TEST_COMPETITORS = (("x", "chirply"), ("youtube", "buzzhive"), ("bluesky", "postpilot.bsky.social"))


def workspace_out(row: repo.WorkspaceRow) -> Workspace:
    return from_row(Workspace, row)


def account_out(row: repo.AccountRow) -> Account:
    return from_row(Account, row)


def list_workspaces(cur: Cursor, ids: list[str], page: PageRequest) -> Page[Workspace]:
    rows = repo.list_workspaces(cur, ids, page.after_value(), page.fetch)
    return page.page(rows, workspace_out, lambda r: [r.id])


def get_workspace(cur: Cursor, workspace_id: str) -> Workspace:
    return workspace_out(found(repo.get_workspace(cur, workspace_id), "workspace", workspace_id))


def list_accounts(
    cur: Cursor, workspace_id: str, platform: str | None, page: PageRequest
) -> Page[Account]:
    rows = repo.list_accounts(
        cur, workspace_id, platform=platform, after=page.after_value(), limit=page.fetch
    )
    return page.page(rows, account_out, lambda r: [r.id])


def get_account(cur: Cursor, workspace_id: str, account_id: str) -> Account:
    return account_out(
        found(repo.get_account(cur, workspace_id, account_id), "account", account_id)
    )


def resolve_destination(cur: Cursor, workspace_id: str, ref: str, field: str) -> repo.AccountRow:
    """A destination given as an account id or as a platform name with one account."""
    return choose_destination(repo.list_accounts(cur, workspace_id), ref, field)


def choose_destination(accounts: list[repo.AccountRow], ref: str, field: str) -> repo.AccountRow:
    """The account ``ref`` names among ``accounts``: an acc_ id, or a platform with one account."""
    if ref.startswith("acc_"):
        for row in accounts:
            if row.id == ref:
                return row
        raise ValidationFailed.on(field, "unknown_account", f"No account {ref!r} here.")
    matches = [a for a in accounts if a.platform == ref]
    if len(matches) != 1:
        choices = ", ".join(m.id for m in matches) or "none connected"
        raise ValidationFailed.on(
            field,
            "ambiguous_platform" if matches else "no_account",
            f"{ref!r} must name one connected account; choices: {choices}.",
        )
    return matches[0]


def bootstrap_test_workspace(cur: Cursor) -> str:
    """Create the test organization, workspace and one test account per platform, once."""
    existing = repo.find_test_workspace(cur)
    if existing is not None:
        ws_id: str = existing.id
    else:
        org = repo.first_organization(cur)
        org_id = org.id if org else repo.create_organization(cur, "Murmur")
        ws_id = repo.create_workspace(cur, org_id, "Test workspace", is_test=True)
        # Only when the workspace is new: a competitor the user stops tracking stays untracked.
        for platform, handle in TEST_COMPETITORS:
            analytics_repo.insert_competitor(cur, ws_id, platform, handle)
    have = {row.platform for row in repo.list_accounts(cur, ws_id)}
    for platform, (handle, display) in TEST_ACCOUNTS.items():
        if platform not in have:
            repo.insert_account(
                cur, ws_id, platform, handle, display, f"test-{platform}-{handle}", is_test=True
            )
    return ws_id
