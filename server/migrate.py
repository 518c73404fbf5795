"""Run Alembic migrations programmatically (``agent-memory migrate``, tests, start-up),
and place the migrated schema on Citus (``agent-memory migrate --citus``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import URL

_ROOT = Path(__file__).resolve().parent.parent


def alembic_config(url: URL | str) -> Config:
    ini = _ROOT / "alembic.ini"
    cfg = Config(str(ini)) if ini.exists() else Config()
    cfg.set_main_option("script_location", str(_ROOT / "migrations"))
    cfg.attributes["url"] = url if isinstance(url, str) else url.render_as_string(False)
    return cfg


def upgrade(url: URL | str, revision: str = "head") -> None:
    """Upgrade to ``revision``. On a database Citus distributes already, a migration's new
    table, unique index or foreign key takes the form Citus accepts
    (:mod:`server.citus.migrating`); :func:`distribute` after it places what is left."""
    command.upgrade(alembic_config(url), revision)


def downgrade(url: URL | str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def on_citus(url: URL | str) -> bool:
    """True when the database is a Citus coordinator that distributes this schema already
    (``agent-memory migrate --citus`` ran): every later upgrade places its tables too."""
    from server.citus.distribute import is_citus, placed_tables  # noqa: PLC0415

    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            return is_citus(conn) and bool(placed_tables(conn))
    finally:
        engine.dispose()


def distribute(url: URL | str) -> list[str]:
    """Place the migrated schema on the Citus coordinator at ``url``: the tables Citus
    does not know yet, distributed by agent or copied to every node
    (:func:`server.citus.distribute.distribute`). Returns the tables placed."""
    from server.citus.distribute import distribute as place  # noqa: PLC0415

    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            return place(conn)
    finally:
        engine.dispose()
