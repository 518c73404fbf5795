"""Database access: the engine (embedded or external PostgreSQL), sessions, and the
start-up checks an operator needs (pgvector present, schema migrated)."""

from __future__ import annotations

import asyncio
import logging
import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import psycopg
from sqlalchemy import event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.engine.interfaces import AdaptedConnection
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from server.embedded import EmbeddedPostgres
from server.models._columns import register_types
from server.session import SerialSession
from server.settings import Settings
from server.startup import check_database, is_citus
from server.storage.owners import session_info

_log = logging.getLogger(__name__)


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
    _checked: bool = field(default=False, repr=False)
    citus: bool = field(default=False, repr=False)  # a Citus coordinator, found by check()
    # a server's role is warned about (docs/security.md, "Database roles"); a command of
    # the CLI runs an operator's task as whichever role it is given, and says nothing
    warn_role: bool = True

    def resolve_url(self, *, create: bool = True) -> URL:
        """Start the embedded server when no URL is configured; return the URL. With
        ``create=False`` the embedded server must exist already."""
        if self.url is None:
            if self.settings.database_url:
                self.url = normalise_url(self.settings.database_url)
            else:
                self._embedded = EmbeddedPostgres(
                    self.settings.data_dir, database=self.settings.database_name
                )
                self.url = self._embedded.start(create=create)
        return self.url

    async def connect(self) -> None:
        url = self.resolve_url()
        self.engine = create_async_engine(
            url,
            pool_size=self.settings.pool_size,
            max_overflow=self.settings.pool_size,
            connect_args={"options": f"-c statement_timeout={self.settings.statement_timeout_ms}"},
        )
        event.listen(self.engine.sync_engine, "connect", _register_types)
        event.listen(self.engine.sync_engine, "checkout", _refuse_closed)
        if not self._checked:
            await asyncio.to_thread(self.check)
        self.sessionmaker = async_sessionmaker(
            self.engine,
            class_=SerialSession,
            expire_on_commit=False,
            info=session_info(citus=self.citus),
        )

    def check(self) -> None:
        """Fail early with an instruction when the database is unreachable or has no
        pgvector (:func:`server.startup.check_database`); once is enough."""
        privileged = check_database(self.resolve_url())
        self.citus = is_citus(self.resolve_url())
        self._checked = True
        if privileged and self.warn_role and not self.settings.dev:
            _log.warning(
                "connected to PostgreSQL as %s: give the server a role that is neither "
                "superuser nor BYPASSRLS (see docs/security.md)",
                privileged,
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


def _register_types(connection: AdaptedConnection, _record: object) -> None:
    """A new connection learns pgvector's adapters (and the project's binary arrays)."""
    connection.run_async(register_types)


def _refuse_closed(connection: AdaptedConnection, _record: object, _proxy: object) -> None:
    """A pooled connection the server has closed is replaced before use, without a round
    trip (no ``pool_pre_ping``: a ``SELECT 1`` before every request).

    An idle connection has nothing to read: PostgreSQL speaks only when asked, so a
    readable socket means the server ended the session (a restart, a terminated backend:
    its FATAL message and end of file), or, rarely, a parameter it reports changed; the
    pool then opens a fresh connection in its place (``DisconnectionError``). A
    connection lost without a word (a network cut) fails its first statement instead,
    and SQLAlchemy then replaces every connection of the pool older than the failure.
    """
    driver = connection.driver_connection
    try:
        if driver is None or driver.closed:
            raise DisconnectionError("the connection is closed")
        readable, _, _ = select.select([driver.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.Error) as exc:  # no socket any more
        raise DisconnectionError("the connection is closed") from exc
    if readable:
        raise DisconnectionError("the server closed the connection while it was idle")
