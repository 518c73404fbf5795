"""Alembic environment: the URL comes from the caller (``server.migrate``) or the settings.
On a database Citus distributes, a migration's new table is placed as it is created
(:mod:`server.citus.migrating`, imported for its operations)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

import server.citus.migrating  # noqa: F401  (the Citus forms of create_table, ...)
from server.migrate import refuse_losses
from server.models import metadata

config = context.config


def _url() -> str:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        from server.database import Database
        from server.settings import Settings

        url = Database(Settings()).resolve_url()
    if not isinstance(url, str):
        url = url.render_as_string(hide_password=False)
    return url


def run_migrations_offline() -> None:
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
            refuse_losses()  # inside the one transaction: a refused downgrade changes nothing
        return
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()
            refuse_losses()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
