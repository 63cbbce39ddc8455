"""The dashboard as the API process serves it: static, same-origin only, keyless, unmetered."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest

from api.dashboard.router import ASSETS, STATIC, VERSION
from benchmarks.servers import ssl_context
from tests.support import LiveServer

PAGE = "/dashboard/"
ASSETS_ROOT = f"/dashboard/assets/{VERSION}"
SCRIPTS = STATIC / "js"


def _get(server: LiveServer, path: str, **headers: str) -> httpx.Response:
    return httpx.get(
        server.base_url + path,
        headers=headers,
        timeout=30,
        follow_redirects=False,
        verify=ssl_context(),
    )


def _policy(response: httpx.Response) -> dict[str, list[str]]:
    policy = response.headers["Content-Security-Policy"]
    return {
        d.split()[0]: d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d.strip()
    }


def _assert_locked_down(response: httpx.Response, *, metered: bool = False) -> None:
    policy = _policy(response)
    assert policy["default-src"] == ["'self'"]
    for directive in ("script-src", "style-src", "connect-src", "img-src", "font-src"):
        assert policy[directive] == ["'self'"], directive
    every = " ".join(" ".join(v) for v in policy.values())
    assert "unsafe" not in every
    assert "*" not in every
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    # Browsers that ignore frame-ancestors still refuse to frame it (issue 50, point 7).
    assert policy["frame-ancestors"] == ["'none'"]
    assert response.headers["X-Frame-Options"] == "DENY"
    # The files are not API calls: no budget spent, no rate headers (a path that is no file
    # is counted, as any unknown path is).
    assert ("X-RateLimit-Limit" in response.headers) is metered


def test_the_root_and_the_bare_path_redirect_to_the_page(server: LiveServer) -> None:
    for path in ("/", "/dashboard"):
        answer = _get(server, path)
        assert answer.status_code == 307, path
        assert answer.headers["Location"] == PAGE
        _assert_locked_down(answer)


def test_the_page_is_html_under_a_same_origin_policy_and_revalidated(server: LiveServer) -> None:
    answer = _get(server, PAGE)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    _assert_locked_down(answer)
    assert answer.headers["Cache-Control"] == "no-cache"
    again = _get(server, PAGE, **{"If-None-Match": answer.headers["ETag"]})
    assert again.status_code == 304
    _assert_locked_down(again)
    # No inline script or style, no handler attribute: the policy would refuse them anyway.
    page = answer.text
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page)
    assert "<style" not in page
    assert not re.search(r"\son[a-z]+=", page)
    assert "style=" not in page


def test_every_asset_is_served_from_here_and_cached_by_version(server: LiveServer) -> None:
    page = _get(server, PAGE).text
    linked = re.findall(r"""(?:src|href)=["']([^"'#]+)["']""", page)
    assert linked
    assert not [u for u in linked if "//" in u], "the page reaches outside this server"
    assert all(u.startswith(ASSETS_ROOT + "/") for u in linked), linked
    # The modules import each other by relative paths, which stay under the version.
    imported = {
        (path.parent / name).resolve().relative_to(STATIC).as_posix()
        for path in SCRIPTS.rglob("*.js")
        for name in re.findall(r"""from\s+['"](\.{1,2}/[^'"]+)['"]""", path.read_text())
    }
    assert "js/api.js" in imported
    wanted = {u.removeprefix(ASSETS_ROOT + "/") for u in linked} | imported
    assert wanted <= set(ASSETS), wanted - set(ASSETS)
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for name in sorted(ASSETS):
        answer = _get(server, f"{ASSETS_ROOT}/{name}")
        assert answer.status_code == 200, name
        assert answer.content == (STATIC / name).read_bytes(), name
        suffix = Path(name).suffix
        if suffix in types:
            assert answer.headers["Content-Type"].startswith(types[suffix]), name
        assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        _assert_locked_down(answer)
    # Another version's URL (a page loaded before a restart) gets today's file, uncached.
    stale = _get(server, "/dashboard/assets/0000000000000000/js/main.js")
    assert stale.status_code == 200
    assert stale.headers["Cache-Control"] == "no-cache"
    _assert_locked_down(stale, metered=True)


def test_an_unknown_asset_is_a_404_under_the_same_policy(server: LiveServer) -> None:
    for name in ("js/nope.js", "../router.py", "..%2F..%2Fapp.py", "index.html"):
        answer = _get(server, f"{ASSETS_ROOT}/{name}")
        assert answer.status_code == 404, name
        _assert_locked_down(answer, metered=True)


def test_the_dashboard_needs_no_key_and_is_not_in_the_openapi_document(
    server: LiveServer,
) -> None:
    assert _get(server, PAGE, Authorization="Bearer sk_test_nonsense").status_code == 200
    document = httpx.get(server.base_url + "/api/public/v1/openapi.json", timeout=30).json()
    assert not [p for p in document["paths"] if "dashboard" in p or p == "/"]
    assert "Dashboard" not in {t for op in document["paths"].values() for t in op.get("tags", [])}


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.rglob("*.js")))
def test_no_script_of_ours_parses_markup_or_evaluates_text(script: str) -> None:
    """Platform text reaches the page as text nodes only (docs/dashboard.md)."""
    source = next(SCRIPTS.rglob(script)).read_text()
    for banned in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "setAttribute('style'",
        "createContextualFragment",
    ):
        assert banned not in source, f"{script} uses {banned}"


def test_the_vendored_chart_library_is_the_pinned_release() -> None:
    """`make dashboard-assets` writes these files from npm's uplot tarball, and this list."""
    vendor = STATIC / "vendor" / "uplot"
    sums = {
        name: digest
        for digest, name in (
            line.split() for line in (vendor / "SHA256SUMS").read_text().splitlines() if line
        )
    }
    assert set(sums) == {"uPlot.iife.min.js", "uPlot.min.css", "LICENSE"}
    for name, digest in sums.items():
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
    assert "MIT" in (vendor / "LICENSE").read_text()
