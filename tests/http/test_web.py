"""What a browser gets: the offline GraphiQL page (dev mode), the dashboard page and its
static files, and CORS for the configured origins only."""

from __future__ import annotations

import re

import httpx
import pytest
from starlette.applications import Starlette

from server.app import create_app
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.auth_helpers import full_caller

DASH = "https://dash.example.com"
PREFLIGHT = {
    "origin": DASH,
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type",
}
QUERY = {"query": "{ namespaces }"}


def _app(
    settings: Settings, database: Database, embedder: Embedder, **overrides: object
) -> Starlette:
    changed = settings.model_copy(update=overrides)
    return create_app(changed, database=database, embedder=embedder, caller=full_caller())


def _client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_graphiql_page_loads_only_this_servers_assets(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    async with _client(_app(settings, database, embedder, dev=True)) as client:
        page = await client.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources and all(s.startswith("/static/") for s in sources), sources
        for source in sources:
            asset = await client.get(source)
            assert asset.status_code == 200, source


async def test_graphiql_is_dev_mode_only(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Outside dev mode neither GraphiQL's page nor any of its files is served (item 8
    of issue 22: /static/graphiql.html was); their licenses stay readable."""
    async with _client(_app(settings, database, embedder, dev=False)) as client:
        page = await client.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 405
        assert "GraphiQL" not in page.text
        for asset in (
            "graphiql.html",
            "graphiql.js",
            "graphiql.css",
            "vendor/graphiql.min.js",
            "vendor/graphiql.min.css",
            "vendor/react.production.min.js",
            "vendor/react-dom.production.min.js",
            "./graphiql.html",
            "dashboard/../graphiql.html",
            "vendor/../graphiql.js",
        ):
            assert (await client.get(f"/static/{asset}")).status_code == 404, asset
        assert (await client.get("/static/vendor/licenses/graphiql-LICENSE")).status_code == 200


async def test_every_page_allows_only_this_servers_scripts_and_no_frame(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Item 8 of issue 22: the dashboard (and every other answer) sends a
    Content-Security-Policy of this server's own scripts, styles, calls and images, no
    frame, and X-Frame-Options DENY; its pages hold no inline script or style."""
    for dev in (False, True):
        async with _client(_app(settings, database, embedder, dev=dev)) as client:
            pages = [await client.get("/dashboard")]
            if dev:
                pages.append(await client.get("/graphql", headers={"accept": "text/html"}))
            for page in pages:
                assert page.status_code == 200
                policy = page.headers["content-security-policy"]
                for directive in (
                    "script-src 'self'",
                    "style-src 'self'",
                    "connect-src 'self'",
                    "img-src 'self'",
                    "frame-ancestors 'none'",
                ):
                    assert directive in policy
                assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
                assert page.headers["x-frame-options"] == "DENY"
                assert page.headers["x-content-type-options"] == "nosniff"
                assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page.text), "inline script"
                assert "<style" not in page.text and " style=" not in page.text
            api = await client.post("/graphql", json=QUERY)
            assert api.headers["x-frame-options"] == "DENY"


async def test_dashboard_page_and_vendored_licenses_are_served(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    async with _client(_app(settings, database, embedder, dev=False)) as client:
        page = await client.get("/dashboard")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        for source in re.findall(r'(?:src|href)="([^"]+)"', page.text):
            assert (await client.get(source)).status_code == 200, source
        for name in ("graphiql", "react", "react-dom"):
            license = await client.get(f"/static/vendor/licenses/{name}-LICENSE")
            assert license.status_code == 200 and "MIT License" in license.text
        assert (await client.get("/static/../server/settings.py")).status_code == 404


async def test_no_cors_headers_by_default(
    settings: Settings, database: Database, embedder: Embedder
) -> None:
    """Default: no origin is allowed, so a page of another origin cannot read answers."""
    async with _client(_app(settings, database, embedder)) as client:
        preflight = await client.options("/graphql", headers=PREFLIGHT)
        assert "access-control-allow-origin" not in preflight.headers
        answer = await client.post("/graphql", json=QUERY, headers={"origin": DASH})
        assert answer.status_code == 200
        assert "access-control-allow-origin" not in answer.headers


async def test_cors_allows_the_configured_origins_with_preflight(
    settings: Settings, database: Database, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_CORS_ALLOWED_ORIGINS", f"{DASH}/, http://localhost:5173")
    configured = Settings(database_url=settings.database_url)
    assert configured.cors_allowed_origins == [DASH, "http://localhost:5173"]
    app = _app(settings, database, embedder, cors_allowed_origins=configured.cors_allowed_origins)
    async with _client(app) as client:
        preflight = await client.options("/graphql", headers=PREFLIGHT)
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == DASH
        assert "POST" in preflight.headers["access-control-allow-methods"]
        allowed = preflight.headers["access-control-allow-headers"].lower()
        assert "authorization" in allowed and "content-type" in allowed
        answer = await client.post("/graphql", json=QUERY, headers={"origin": DASH})
        assert answer.status_code == 200 and "namespaces" in answer.json()["data"]
        assert answer.headers["access-control-allow-origin"] == DASH
        other = await client.options(
            "/graphql", headers={**PREFLIGHT, "origin": "https://evil.example"}
        )
        assert other.status_code == 400
        assert "access-control-allow-origin" not in other.headers
