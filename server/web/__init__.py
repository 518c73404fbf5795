"""What the server gives a browser: the offline GraphiQL page (dev mode), the read-only
dashboard at ``/dashboard``, their static files at ``/static``, and CORS.

Every asset is served from this package (``static/``), none from a CDN: GraphiQL and
React are vendored from their npm packages (``static/vendor/README.md``). The pages are
plain HTML and JavaScript that call ``/graphql`` with a token the user gives them.
"""

from __future__ import annotations

from pathlib import Path

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from server.settings import Settings

STATIC = Path(__file__).parent / "static"
# the headers a browser client sends: the token, and the chain headers (docs/security.md)
CORS_HEADERS = ("authorization", "content-type", "x-agent-memory-execution", "x-agent-memory-tool")


def graphiql_html() -> str:
    """The GraphiQL page, loading only this server's assets."""
    return (STATIC / "graphiql.html").read_text(encoding="utf-8")


async def _dashboard(request: Request) -> Response:
    return FileResponse(STATIC / "dashboard" / "index.html", media_type="text/html")


def routes() -> list[BaseRoute]:
    return [
        Route("/dashboard", _dashboard, methods=["GET", "HEAD"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]


def middleware(settings: Settings) -> list[Middleware]:
    """CORS for the configured origins (``AGENT_MEMORY_CORS_ALLOWED_ORIGINS``); none by
    default, so a browser page of another origin cannot call the API. Preflight requests
    are answered here, before the GraphQL endpoint's own checks."""
    if not settings.cors_allowed_origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=settings.cors_allowed_origins,
            allow_methods=["GET", "POST"],
            allow_headers=list(CORS_HEADERS),
            max_age=600,
        )
    ]
