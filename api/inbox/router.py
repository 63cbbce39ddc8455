"""Routes of the inbox group."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
