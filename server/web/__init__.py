"""What the server gives a browser: the offline GraphiQL page (dev mode), the read-only
dashboard at ``/dashboard``, their static files at ``/static``, the security headers of
every answer, and CORS.

Every asset is served from this package (``static/``), none from a CDN: GraphiQL and
React are vendored from their npm packages (``static/vendor/README.md``). The pages are
plain HTML and JavaScript that call ``/graphql`` with a token the user gives them: no
inline script or style, so the Content-Security-Policy allows this server's own files
only (:data:`CSP`). GraphiQL's files are served in dev mode only, as its page is; the
vendored licenses always.
"""

from __future__ import annotations

from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.settings import Settings

STATIC = Path(__file__).parent / "static"
# the headers a browser client sends: the token, and the chain headers (docs/security.md)
CORS_HEADERS = ("authorization", "content-type", "x-agent-memory-execution", "x-agent-memory-tool")
# scripts, styles, images, fonts and calls from this server only; no plugin, no frame
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
# GraphiQL's own files (static/): dev mode only, as its page
_GRAPHIQL = ("graphiql.", "vendor/")
_ALWAYS = ("vendor/licenses/",)


def graphiql_html() -> str:
    """The GraphiQL page, loading only this server's assets."""
    return (STATIC / "graphiql.html").read_text(encoding="utf-8")


async def _dashboard(request: Request) -> Response:
    return FileResponse(STATIC / "dashboard" / "index.html", media_type="text/html")


class _Static(StaticFiles):
    """``static/``, without GraphiQL's files outside dev mode."""

    def __init__(self, *, dev: bool) -> None:
        super().__init__(directory=STATIC)
        self.dev = dev

    async def get_response(self, path: str, scope: Scope) -> Response:
        name = path.replace("\\", "/").lstrip("/")
        if not self.dev and name.startswith(_GRAPHIQL) and not name.startswith(_ALWAYS):
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)


def routes(settings: Settings) -> list[BaseRoute]:
    return [
        Route("/dashboard", _dashboard, methods=["GET", "HEAD"]),
        Mount("/static", app=_Static(dev=settings.dev), name="static"),
    ]


class SecurityHeaders:
    """Every answer says: this server's own scripts, styles and calls only
    (:data:`CSP`), never in a frame (``X-Frame-Options: DENY``), and no guessing of
    content types."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["content-security-policy"] = CSP
                headers["x-frame-options"] = "DENY"
                headers["x-content-type-options"] = "nosniff"
            await send(message)

        await self.app(scope, receive, send_with_headers)


def middleware(settings: Settings) -> list[Middleware]:
    """The security headers; CORS for the configured origins
    (``AGENT_MEMORY_CORS_ALLOWED_ORIGINS``), none by default, so a browser page of
    another origin cannot call the API. Preflight requests are answered here, before the
    GraphQL endpoint's own checks."""
    headers = Middleware(SecurityHeaders)
    if not settings.cors_allowed_origins:
        return [headers]
    return [
        headers,
        Middleware(
            CORSMiddleware,
            allow_origins=settings.cors_allowed_origins,
            allow_methods=["GET", "POST"],
            allow_headers=list(CORS_HEADERS),
            max_age=600,
        ),
    ]
