"""The one typed request context, built by one factory for the server and the tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from strawberry.types import Info as _Info

from resolvers.loaders import Loaders
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings


@dataclass
class Context:
    """Per operation: one database session (opened on first use), fresh dataloaders."""

    database: Database
    embedder: Embedder
    settings: Settings
    request: Any = None
    caller: str = "anonymous"
    _session: AsyncSession | None = field(default=None, repr=False)
    _loaders: Loaders | None = field(default=None, repr=False)

    @property
    def db(self) -> AsyncSession:
        if self._session is None:
            assert self.database.sessionmaker is not None
            self._session = self.database.sessionmaker()
        return self._session

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            self._loaders = Loaders(self.db)
        return self._loaders

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[AsyncSession]:
        """One mutation: commit on success, roll back on any error."""
        db = self.db
        try:
            yield db
            await db.commit()
        except BaseException:
            await db.rollback()
            raise
        finally:
            if self._loaders is not None:
                self._loaders.clear()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def make_context(
    *, database: Database, embedder: Embedder, settings: Settings, request: Any = None
) -> Context:
    return Context(database=database, embedder=embedder, settings=settings, request=request)


Info = _Info[Context, None]
