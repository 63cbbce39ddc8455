"""The API's docs page works offline: its assets come from this server, and a browser renders it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

import httpx
import pytest

from tests.support import LiveServer

DOCS = "/api/public/v1/docs"


def _page(server: LiveServer) -> str:
    answer = httpx.get(server.base_url + DOCS, timeout=30)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    return answer.text


def test_every_asset_of_the_page_is_served_here(server: LiveServer) -> None:
    page = _page(server)
    urls = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page)
    urls += re.findall(r"""url:\s*["']([^"']+)["']""", page)  # the document Swagger loads
    assert urls
    assert not [u for u in urls if "//" in u], "the page reaches outside this server"
    for url in urls:
        answer = httpx.get(server.base_url + url, timeout=30)
        assert answer.status_code == 200, url
        assert answer.content, url


def test_the_docs_page_cannot_be_framed_by_any_origin(server: LiveServer) -> None:
    """The docs page and its OAuth redirect page refuse every frame, old browsers' too."""
    for path in (DOCS, f"{DOCS}/oauth2-redirect"):
        answer = httpx.get(server.base_url + path, timeout=30)
        assert answer.status_code == 200, path
        assert answer.headers["X-Frame-Options"] == "DENY", path
        assert answer.headers["Content-Security-Policy"] == "frame-ancestors 'none'", path
        assert answer.headers["X-Content-Type-Options"] == "nosniff", path


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_a_browser_without_network_renders_the_operations(server: LiveServer) -> None:
    browser = _chromium()
    if browser is None:
        # `make test` installs Debian's chromium (the Makefile's `browser` target).
        assert not os.environ.get("CI"), "CI runs `make test`, which installs chromium"
        pytest.skip("no chromium on this machine: `make browser` installs it")
    with tempfile.TemporaryDirectory() as profile:
        rendered = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",  # the suite may run as root (CI containers)
                "--disable-gpu",
                "--disable-dev-shm-usage",
                f"--user-data-dir={profile}",
                # Every name resolves to nothing but the loopback: no request leaves the machine.
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--virtual-time-budget=20000",
                "--dump-dom",
                server.base_url + DOCS,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    dom = rendered.stdout
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    # Swagger UI names each operation's block after its tag and operationId.
    operations = set(re.findall(r'id="operations-[^"]*?-([a-z_]+)"', dom))
    assert {"create_post", "list_posts", "get_unified_analytics", "list_viral_trends"} <= (
        operations
    ), dom[:2000]
    assert len(operations) >= 50
