"""Database access: the engine (embedded or external PostgreSQL), sessions, and the
start-up checks an operator needs (pgvector present, schema migrated)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from server.embedded import EmbeddedPostgres
from server.errors import DomainError
from server.session import SerialSession
from server.settings import Settings

_log = logging.getLogger(__name__)


class DatabaseSetupError(DomainError):
    code = "DATABASE_UNAVAILABLE"


def normalise_url(url: str | URL) -> URL:
    """Accept ``postgres://``, ``postgresql://`` or ``postgresql+psycopg://``."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.drivername in ("postgres", "postgresql", "postgresql+psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


@dataclass
class Database:
    """Owns the embedded server (if any) and the async engine."""

    settings: Settings
    url: URL | None = None
    engine: AsyncEngine | None = None
    sessionmaker: async_sessionmaker[AsyncSession] | None = None
    _embedded: EmbeddedPostgres | None = field(default=None, repr=False)

    def resolve_url(self) -> URL:
        """Start the embedded server when no URL is configured; return the URL."""
        if self.url is None:
            if self.settings.database_url:
                self.url = normalise_url(self.settings.database_url)
            else:
                self._embedded = EmbeddedPostgres(
                    self.settings.data_dir, database=self.settings.database_name
                )
                self.url = self._embedded.start()
        return self.url

    async def connect(self) -> None:
        url = self.resolve_url()
        self.engine = create_async_engine(
            url,
            pool_size=self.settings.pool_size,
            max_overflow=self.settings.pool_size,
            pool_pre_ping=True,
            connect_args={"options": f"-c statement_timeout={self.settings.statement_timeout_ms}"},
        )
        self.sessionmaker = async_sessionmaker(
            self.engine, class_=SerialSession, expire_on_commit=False
        )
        await self.check()

    async def check(self) -> None:
        """Fail early with an instruction when pgvector or the schema is missing."""
        assert self.engine is not None
        try:
            async with self.engine.connect() as conn:
                available = await conn.scalar(
                    text("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
                )
        except Exception as exc:
            raise DatabaseSetupError(f"cannot reach PostgreSQL: {exc.__class__.__name__}") from exc
        if not available:
            raise DatabaseSetupError(
                "the PostgreSQL server has no pgvector extension: install pgvector 0.8 "
                "(e.g. the postgresql-18-pgvector package) and run `agent-memory migrate`"
            )
        if not self.settings.dev:
            await self._warn_if_privileged()

    async def _warn_if_privileged(self) -> None:
        """Outside dev mode, the app role should be neither superuser nor BYPASSRLS
        (docs/security.md, "Database roles")."""
        assert self.engine is not None
        async with self.engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles "
                        "WHERE rolname = current_user"
                    )
                )
            ).first()
        if row is not None and (row[1] or row[2]):
            _log.warning(
                "connected to PostgreSQL as %s, a %s role: give the server a role that is "
                "neither superuser nor BYPASSRLS (see docs/security.md)",
                row[0],
                "superuser" if row[1] else "BYPASSRLS",
            )

    async def ping(self) -> bool:
        if self.engine is None:
            return False
        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        assert self.sessionmaker is not None, "Database.connect() was not awaited"
        async with self.sessionmaker() as session:
            yield session

    async def dispose(self) -> None:
        if self.engine is not None:
            await self.engine.dispose()
            self.engine = None

    def stop(self) -> None:
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None
