"""Workspaces & accounts: list workspaces, manage members, discover connected accounts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from api.deps import AccountsRead, WorkspacesRead
from api.pagination import PageParams
from api.errors import NotFound
from api.schemas import Envelope, Page, ok
from api.workspaces import service
from api.workspaces.schemas import Account, Platform, Workspace

router = APIRouter(tags=["Workspaces & accounts"])


@router.get("/workspaces", response_model=Envelope[Page[Workspace]])
def list_workspaces(ctx: WorkspacesRead, page: PageParams) -> Envelope[Page[Workspace]]:
    """List the workspaces this key can act in, newest first."""
    data = service.list_workspaces(ctx.tx, list(ctx.key.workspace_ids), page)
    return ok(data)


@router.get("/workspaces/{workspace_id}", response_model=Envelope[Workspace])
def get_workspace(
    ctx: WorkspacesRead, workspace_id: Annotated[str, Path(max_length=64)]
) -> Envelope[Workspace]:
    """Get one workspace this key can act in."""
    if workspace_id not in ctx.key.workspace_ids:
        raise NotFound.resource("workspace", workspace_id)
    return ok(service.get_workspace(ctx.tx, workspace_id))


@router.get("/accounts", response_model=Envelope[Page[Account]])
def list_accounts(
    ctx: AccountsRead,
    page: PageParams,
    platform: Annotated[Platform | None, Query(description="Only this platform.")] = None,
) -> Envelope[Page[Account]]:
    """List the workspace's connected publishing accounts."""
    data = service.list_accounts(ctx.tx, ctx.workspace_id, platform, page)
    return ok(data)


@router.get("/accounts/{account_id}", response_model=Envelope[Account])
def get_account(
    ctx: AccountsRead, account_id: Annotated[str, Path(max_length=64)]
) -> Envelope[Account]:
    """Get one connected account."""
    return ok(service.get_account(ctx.tx, ctx.workspace_id, account_id))
