"""`GET /ui/`: the plugin's sidebar served as a web page (issue 7).

The files are the plugin's own (`plugin/content/` in the repository, or the directory named by
the `ui_dir` setting, `ZOCRATES_UI_DIR`), so the web page and the Zotero pane run the very same
code. The static files need no token: the page asks for one, keeps it in sessionStorage and
sends it as a Bearer header to the API routes, never in a URL. Only files under the content directory with a known type are
served; `vendor/` (markdown-it, KaTeX) is produced by `npm ci` / `make plugin` in `plugin/`, and
a missing build is answered with a 503 that says so.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from zocrates_gateway.deps import SettingsDep
from zocrates_gateway.errors import ApiError

router = APIRouter(include_in_schema=False)

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
# The page runs only its own scripts and talks only to this gateway.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def content_dir(configured: Path | None = None) -> Path:
    """`configured` (the `ui_dir` setting), else the checkout's plugin/content."""
    if configured:
        return Path(configured).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "plugin" / "content"
        if (candidate / "sidebar.html").is_file():
            return candidate
    return here.parents[5] / "plugin" / "content"


def _file(relative: str, ui_dir: Path | None) -> FileResponse:
    root = content_dir(ui_dir)
    path = (root / relative).resolve()
    if (
        not path.is_relative_to(root)
        or path.suffix not in _TYPES
        or any(p.startswith(".") for p in path.relative_to(root).parts)
    ):
        raise ApiError(404, "not_found", f"No UI file {relative!r}.")
    if not path.is_file():
        if relative.startswith("vendor/"):
            raise ApiError(
                503,
                "ui_not_built",
                f"The web UI's vendored libraries are missing ({relative}); run `make plugin` "
                "(or `npm ci` in plugin/) once.",
            )
        if not (root / "sidebar.html").is_file():
            raise ApiError(
                503,
                "ui_not_found",
                f"The plugin's sidebar files were not found at {root}; set ZOCRATES_UI_DIR.",
            )
        raise ApiError(404, "not_found", f"No UI file {relative!r}.")
    return FileResponse(path, media_type=_TYPES[path.suffix], headers=_HEADERS)


@router.get("/ui")
async def ui_root() -> RedirectResponse:
    return RedirectResponse("/ui/", status_code=308)


@router.get("/ui/")
async def ui_index(settings: SettingsDep) -> FileResponse:
    """The sidebar page."""
    return _file("sidebar.html", settings.ui_dir)


@router.get("/ui/{relative:path}")
async def ui_file(relative: str, settings: SettingsDep) -> FileResponse:
    """The page's scripts, styles and fonts."""
    return _file(relative, settings.ui_dir)
