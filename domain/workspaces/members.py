"""Workspace members: who works in a workspace and with which role (schemas and service)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints, field_validator
from pydantic_core import PydanticCustomError

from domain.errors import InvalidState, NotFound, ValidationFailed, found
from domain.pagination import PageRequest
from domain.schemas import Deleted, Model, Page, UtcDatetime, from_row
from warehouse import workspaces as repo
from warehouse.rows import Cursor

Role = Literal["owner", "admin", "editor", "reviewer", "viewer"]

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


def _email(value: str) -> str:
    value = value.strip().lower()
    if len(value) > 254 or not _EMAIL.match(value):
        raise PydanticCustomError("invalid_email", "Not an email address like name@example.com.")
    return value


class Member(BaseModel):
    id: str = Field(examples=["mem_01j9z3k5v8d2q4x6y7w8e9r0t1"])
    workspace_id: str
    email: str
    name: str | None
    role: Role
    created_at: UtcDatetime
    updated_at: UtcDatetime


class MemberCreate(Model):
    email: str = Field(description="Lower-cased; unique among the workspace's live members.")
    name: Name | None = None
    role: Role

    @field_validator("email")
    @classmethod
    def _check_email(cls, value: str) -> str:
        return _email(value)


class MemberUpdate(Model):
    role: Role | None = Field(default=None, description="The workspace keeps at least one owner.")
    name: Name | None = Field(default=None, description="`null` clears the name.")


def member_out(row: repo.MemberRow) -> Member:
    return from_row(Member, row)


def _workspace(key_workspaces: tuple[str, ...], workspace_id: str) -> str:
    """The path's workspace, which must be one of the key's (else NOT_FOUND, never a leak)."""
    if workspace_id not in key_workspaces:
        raise NotFound.resource("workspace", workspace_id)
    return workspace_id


def _member(cur: Cursor, workspace_id: str, member_id: str) -> repo.MemberRow:
    return found(repo.get_member(cur, workspace_id, member_id), "member", member_id)


def list_members(
    cur: Cursor,
    key_workspaces: tuple[str, ...],
    workspace_id: str,
    role: str | None,
    page: PageRequest,
) -> Page[Member]:
    ws = _workspace(key_workspaces, workspace_id)
    rows = repo.list_members(cur, ws, role=role, after=page.after_value(), limit=page.fetch)
    return page.page(rows, member_out, lambda r: [r.id])


def get_member(
    cur: Cursor, key_workspaces: tuple[str, ...], workspace_id: str, member_id: str
) -> Member:
    ws = _workspace(key_workspaces, workspace_id)
    return member_out(_member(cur, ws, member_id))


def create_member(
    cur: Cursor, key_workspaces: tuple[str, ...], workspace_id: str, body: MemberCreate
) -> Member:
    ws = _workspace(key_workspaces, workspace_id)
    repo.serialize_on_workspace(cur, ws)
    if repo.find_member_by_email(cur, ws, body.email) is not None:
        raise InvalidState(f"{body.email!r} is already a member of this workspace.")
    member_id = repo.insert_member(cur, ws, body.email, body.name, body.role)
    return member_out(_member(cur, ws, member_id))


def update_member(
    cur: Cursor,
    key_workspaces: tuple[str, ...],
    workspace_id: str,
    member_id: str,
    body: MemberUpdate,
) -> Member:
    ws = _workspace(key_workspaces, workspace_id)
    given = body.model_fields_set
    if not given:
        raise ValidationFailed.on("body", "empty", "Send at least one of role, name.")
    if "role" in given and body.role is None:
        raise ValidationFailed.on("role", "not_nullable", "role cannot be null.")
    row = _member(cur, ws, member_id)
    repo.serialize_on_workspace(cur, ws)
    role: str = body.role if body.role is not None else row.role
    name = body.name if "name" in given else row.name
    if row.role == "owner" and role != "owner" and repo.count_owners(cur, ws) <= 1:
        raise InvalidState("The workspace's last owner cannot be demoted; promote another first.")
    repo.update_member(cur, ws, member_id, role=role, name=name)
    return member_out(_member(cur, ws, member_id))


def remove_member(
    cur: Cursor, key_workspaces: tuple[str, ...], workspace_id: str, member_id: str
) -> Deleted:
    ws = _workspace(key_workspaces, workspace_id)
    row = _member(cur, ws, member_id)
    repo.serialize_on_workspace(cur, ws)
    if row.role == "owner" and repo.count_owners(cur, ws) <= 1:
        raise InvalidState("The workspace's last owner cannot be removed; promote another first.")
    repo.remove_member(cur, ws, member_id)
    return Deleted(id=member_id)
