"""Workspaces & accounts: list workspaces, manage members, discover connected accounts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.deps import AccountsRead, IdPath, PlatformFilter, WorkspacesRead, WorkspacesWrite
from api.pagination import PageParams
from api.routing import MurmurRoute
from api.schemas import Envelope, ok
from domain.errors import NotFound
from domain.schemas import Deleted, Page
from domain.workspaces import members, service
from domain.workspaces.schemas import Account, Workspace

router = APIRouter(tags=["Workspaces & accounts"], route_class=MurmurRoute)


@router.get("/workspaces", response_model=Envelope[Page[Workspace]])
def list_workspaces(ctx: WorkspacesRead, page: PageParams) -> Envelope[Page[Workspace]]:
    """List the workspaces this key can act in, newest first."""
    data = service.list_workspaces(ctx.tx, list(ctx.key.workspace_ids), page)
    return ok(data)


@router.get("/workspaces/{workspace_id}", response_model=Envelope[Workspace])
def get_workspace(ctx: WorkspacesRead, workspace_id: IdPath) -> Envelope[Workspace]:
    """Get one workspace this key can act in."""
    if workspace_id not in ctx.key.workspace_ids:
        raise NotFound.resource("workspace", workspace_id)
    return ok(service.get_workspace(ctx.tx, workspace_id))


@router.get("/accounts", response_model=Envelope[Page[Account]])
def list_accounts(
    ctx: AccountsRead,
    page: PageParams,
    platform: PlatformFilter = None,
) -> Envelope[Page[Account]]:
    """List the workspace's connected publishing accounts."""
    data = service.list_accounts(ctx.tx, ctx.workspace_id, platform, page)
    return ok(data)


@router.get("/accounts/{account_id}", response_model=Envelope[Account])
def get_account(ctx: AccountsRead, account_id: IdPath) -> Envelope[Account]:
    """Get one connected account."""
    return ok(service.get_account(ctx.tx, ctx.workspace_id, account_id))


# -- members -----------------------------------------------------------------------------------

WorkspacePath = Annotated[str, Path(max_length=64, description="One of the key's workspaces.")]


@router.get("/workspaces/{workspace_id}/members", response_model=Envelope[Page[members.Member]])
def list_members(
    ctx: WorkspacesRead,
    workspace_id: WorkspacePath,
    page: PageParams,
    role: Annotated[members.Role | None, Query(description="Only this role.")] = None,
) -> Envelope[Page[members.Member]]:
    """List the workspace's live members, newest first."""
    return ok(members.list_members(ctx.tx, ctx.key.workspace_ids, workspace_id, role, page))


@router.post(
    "/workspaces/{workspace_id}/members",
    response_model=Envelope[members.Member],
    status_code=201,
)
def create_member(
    ctx: WorkspacesWrite, workspace_id: WorkspacePath, body: members.MemberCreate
) -> Envelope[members.Member]:
    """Add a member to the workspace."""
    return ok(members.create_member(ctx.tx, ctx.key.workspace_ids, workspace_id, body))


@router.get(
    "/workspaces/{workspace_id}/members/{member_id}", response_model=Envelope[members.Member]
)
def get_member(
    ctx: WorkspacesRead, workspace_id: WorkspacePath, member_id: IdPath
) -> Envelope[members.Member]:
    """Get one live member."""
    return ok(members.get_member(ctx.tx, ctx.key.workspace_ids, workspace_id, member_id))


@router.patch(
    "/workspaces/{workspace_id}/members/{member_id}", response_model=Envelope[members.Member]
)
def update_member(
    ctx: WorkspacesWrite,
    workspace_id: WorkspacePath,
    member_id: IdPath,
    body: members.MemberUpdate,
) -> Envelope[members.Member]:
    """Change a member's role or name; the last owner cannot be demoted."""
    return ok(members.update_member(ctx.tx, ctx.key.workspace_ids, workspace_id, member_id, body))


@router.delete("/workspaces/{workspace_id}/members/{member_id}", response_model=Envelope[Deleted])
def remove_member(
    ctx: WorkspacesWrite, workspace_id: WorkspacePath, member_id: IdPath
) -> Envelope[Deleted]:
    """Remove a member (kept for the audit trail); the last owner cannot be removed."""
    return ok(members.remove_member(ctx.tx, ctx.key.workspace_ids, workspace_id, member_id))
