"""The dashboard's page and assets: static files, no key, not in OpenAPI, not rate limited.

The page is a client of the public API only (docs/dashboard.md). Its files are read once,
when this module is imported; their URLs carry a hash of them all, so a browser may keep an
asset for a year and still never runs a script of an older page against a newer one.
"""

from __future__ import annotations

import hashlib
import mimetypes
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from api.errors import error_response

STATIC = Path(__file__).parent / "static"
PAGE = "/dashboard/"

# Only this origin: no inline script or style, no eval, no remote image, font or request.
# Platform thumbnails are remote, so the page links to them instead (docs/dashboard.md).
CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
# X-Frame-Options too: browsers that predate frame-ancestors (or ignore it) refuse to frame.
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
# The page names its assets by version, so it must be checked on every load; a versioned
# asset never changes under its URL.
PAGE_CACHE = "no-cache"
ASSET_CACHE = "public, max-age=31536000, immutable"

_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    "": "text/plain; charset=utf-8",  # LICENSE
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


def _asset(body: bytes, name: str) -> Asset:
    suffix = Path(name).suffix
    content_type = _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
    return Asset(body, content_type, f'"{hashlib.sha256(body).hexdigest()[:32]}"')


# The page's module scripts, in the order index.html lists them, and what js/early.js imports
# when it runs (first: it starts the overview's calls).
ENTRIES = ("js/early.js", "js/views/overview-calls.js", "js/main.js")
# A static import or re-export of one of our modules: `from './x.js'` (never `import('./x.js')`).
_STATIC_IMPORT = re.compile(
    r"""^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"](\.{1,2}/[^'"]+)['"]""", re.M
)


def _imported(files: dict[str, bytes], entries: tuple[str, ...]) -> list[str]:
    """The modules ``entries`` import statically, themselves included: each entry's graph in
    turn, breadth first, so the first entry's modules are asked for first."""
    order: list[str] = []
    for entry in entries:
        queue = [entry]
        while queue:
            name = queue.pop(0)
            if name in order or name not in files:
                continue
            order.append(name)
            base = PurePosixPath(name).parent
            for spec in _STATIC_IMPORT.findall(files[name].decode("utf-8")):
                queue.append(posixpath.normpath(str(base / spec)))
    return order


def _load() -> tuple[str, dict[str, Asset], Asset]:
    """Every file under static/ by its relative path, their version, and the page itself."""
    files = {
        path.relative_to(STATIC).as_posix(): path.read_bytes()
        for path in sorted(STATIC.rglob("*"))
        if path.is_file() and path.name != "index.html"
    }
    digest = hashlib.sha256()
    for name, body in files.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
    version = digest.hexdigest()[:16]
    assets = {name: _asset(body, name) for name, body in files.items()}
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    # The modules import each other three levels deep: preloaded, the first view's arrive in
    # one round trip after the page instead of four (the bench's dashboard row). Only those
    # its entries import: the other views' are fetched later (js/main.js).
    preloads = "\n".join(
        f'  <link rel="modulepreload" href="{{{{assets}}}}/{name}">'
        for name in _imported(files, ENTRIES)
    )
    page = page.replace("{{modulepreload}}", preloads)
    page = page.replace("{{assets}}", f"/dashboard/assets/{version}")
    return version, assets, _asset(page.encode(), "index.html")


VERSION, ASSETS, INDEX = _load()
ASSETS_ROOT = f"/dashboard/assets/{VERSION}"

# What the edge middleware neither rate-limits nor gives X-RateLimit-* headers: static files
# are not API calls (an asset of another version is, like any other path).
PATHS = frozenset({"/", "/dashboard", PAGE, *(f"{ASSETS_ROOT}/{name}" for name in ASSETS)})

router = APIRouter(tags=["Dashboard"], include_in_schema=False)


def _send(request: Request, asset: Asset, cache: str) -> Response:
    headers = {**SECURITY_HEADERS, "Cache-Control": cache, "ETag": asset.etag}
    if asset.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.content_type, headers=headers)


def _redirect() -> Response:
    return RedirectResponse(PAGE, status_code=307, headers=SECURITY_HEADERS)


@router.api_route("/", methods=["GET", "HEAD"])
async def root() -> Response:
    """The dashboard is the server's front page."""
    return _redirect()


@router.api_route("/dashboard", methods=["GET", "HEAD"])
async def dashboard_without_slash() -> Response:
    """The page's assets and routes are relative to /dashboard/."""
    return _redirect()


@router.api_route(PAGE, methods=["GET", "HEAD"])
async def page(request: Request) -> Response:
    """The single page (HTML); its views are routed by the URL's fragment."""
    return _send(request, INDEX, PAGE_CACHE)


@router.api_route("/dashboard/assets/{version}/{name:path}", methods=["GET", "HEAD"])
async def asset(request: Request, version: str, name: str) -> Response:
    """A script, style sheet or vendored file; looked up by name, never on the file system."""
    found = ASSETS.get(name)
    if found is None:
        return _not_found(name)
    # A page of an earlier version (before a restart) still gets today's files, uncached.
    return _send(request, found, ASSET_CACHE if version == VERSION else PAGE_CACHE)


@router.api_route("/dashboard/{rest:path}", methods=["GET", "HEAD"])
async def elsewhere(rest: str) -> Response:
    """Nothing else lives under /dashboard/ (the views are in the fragment): 404."""
    return _not_found(rest)


def _not_found(name: str) -> Response:
    return error_response(
        404, "NOT_FOUND", f"No dashboard file {name!r}.", headers=SECURITY_HEADERS
    )
