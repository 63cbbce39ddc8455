"""What the tests add to the scale profile's servers (benchmarks/servers.py starts them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Protocol

import httpx

from core.settings import Settings


def s3_keys(endpoint: str, bucket: str) -> list[str]:
    """The keys of the bucket's objects (the first 1,000 listed)."""
    listing = httpx.get(f"http://{endpoint}/{bucket}?list-type=2", timeout=30)
    listing.raise_for_status()
    return re.findall(r"<Key>([^<]+)</Key>", listing.text)


class StoreSettings(Protocol):
    """Settings of a new, empty store of the session's profile, with ``options`` on top."""

    def __call__(self, data_dir: Path, **options: Any) -> Settings: ...
