"""Routes of the approvals group."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
