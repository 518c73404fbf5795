"""What ``agent-memory serve`` checks before it starts anything, so that a
misconfiguration is one line naming what to change rather than a traceback from
deep inside PostgreSQL, Alembic or uvicorn (docs/operations.md, "Start-up errors"):

- the listening port is taken first, before PostgreSQL starts, and handed to
  uvicorn, so that a port in use stops nothing half-started;
- the database answers (a refused connection, an unknown database or a refused
  login say so), and pgvector is available, before any migration runs.
"""

from __future__ import annotations

import socket

import psycopg
from sqlalchemy.engine import URL

from server.errors import DomainError

NO_PGVECTOR = (
    "the PostgreSQL server has no pgvector extension: install pgvector 0.8 "
    "(e.g. the postgresql-18-pgvector package) and run `agent-memory migrate`"
)


class StartupError(DomainError):
    """A setting or the machine keeps the server from starting."""

    code = "STARTUP_FAILED"


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` for uvicorn (which listens on it)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise StartupError(
            f"cannot listen on {host}: {exc.strerror}; check AGENT_MEMORY_HOST"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = "is in use" if exc.errno == 98 else f"cannot be used ({exc.strerror})"
        raise StartupError(
            f"port {port} on {host} {reason}: stop the other server or choose another port "
            "(--port or AGENT_MEMORY_PORT)"
        ) from None
    sock.set_inheritable(True)
    return sock


def _where(url: URL) -> str:
    host = url.host or url.query.get("host") or "localhost"
    return f"{host}{f':{url.port}' if url.port else ''}/{url.database or ''}"


def _reason(exc: psycopg.Error) -> str:
    """The server's or libpq's own reason, on one line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:  # libpq puts the server's message after a "FATAL:" prefix
        if "FATAL:" in line:
            return line.split("FATAL:", 1)[1].strip()
    text = lines[0] if lines else exc.__class__.__name__
    return text.removeprefix("connection failed:").strip().split(": ", 1)[-1]


def is_citus(url: URL) -> bool:
    """True when the database at ``url`` is a Citus coordinator (docs/scaling.md): some
    statements take another form there."""
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        with psycopg.connect(dsn, connect_timeout=10) as conn:
            found = conn.execute(
                "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"
            ).fetchone()
    except psycopg.Error:
        return False
    return bool(found and found[0])


def check_database(url: URL) -> str | None:
    """Connect once and check pgvector. Returns what makes the role privileged
    ("superuser" or "BYPASSRLS", docs/security.md "Database roles"), or None."""
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    try:
        with psycopg.connect(dsn, connect_timeout=10) as conn:
            available = conn.execute(
                "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            role = conn.execute(
                "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles "
                "WHERE rolname = current_user"
            ).fetchone()
    except psycopg.Error as exc:
        raise StartupError(
            f"cannot connect to PostgreSQL at {_where(url)}: {_reason(exc)}; "
            "check DATABASE_URL (or unset it to use the embedded server)"
        ) from None
    if not available or not available[0]:
        raise StartupError(NO_PGVECTOR)
    if role is None or not (role[1] or role[2]):
        return None
    return f"{role[0]}, a {'superuser' if role[1] else 'BYPASSRLS'} role"
