"""Routes of the posts group."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
