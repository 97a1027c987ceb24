"""`/ui/`: the plugin's sidebar files, served without a token and nothing else (issue 7)."""

from __future__ import annotations

import httpx
import pytest

from zocrates_gateway.app import create_app
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.routes import ui


@pytest.fixture
async def client():
    # The static routes need no bus: no lifespan, so no NATS connection is made.
    app = create_app(GatewaySettings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ui.test") as c:
        yield c


async def test_the_page_and_its_modules_are_served_without_a_token(client):
    page = await client.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'src="sidebar/main.js"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    module = await client.get("/ui/sidebar/main.js")
    assert module.status_code == 200 and module.headers["content-type"].startswith("text/javascript")
    assert (await client.get("/ui/core/citations.js")).status_code == 200
    assert (await client.get("/ui", follow_redirects=False)).headers["location"] == "/ui/"


@pytest.mark.parametrize(
    "path",
    [
        "/ui/../../pyproject.toml",
        "/ui/%2e%2e/%2e%2e/README.md",
        "/ui/zotero/../../manifest.json",
        "/ui/sidebar/../../package.json",
        "/ui/.hidden.js",
        "/ui/nope.js",
    ],
)
async def test_nothing_outside_the_sidebar_files_is_served(client, path):
    assert (await client.get(path)).status_code == 404


async def test_missing_vendored_libraries_say_how_to_build_them(tmp_path, monkeypatch):
    (tmp_path / "sidebar.html").write_text("<!doctype html>")
    monkeypatch.setenv("ZOCRATES_UI_DIR", str(tmp_path))
    settings = GatewaySettings()  # the directory is a setting, read when the gateway starts
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(settings)), base_url="http://ui.test"
    ) as client:
        response = await client.get("/ui/vendor/katex.mjs")
    assert response.status_code == 503
    assert "make plugin" in response.json()["error"]["message"]
    assert ui.content_dir(settings.ui_dir) == tmp_path.resolve()
