"""Run Alembic migrations programmatically (``agent-memory migrate``, tests, start-up),
and place the migrated schema on Citus (``agent-memory migrate --citus``).

A downgrade never destroys data unless told to: each step that would drop rows it
cannot carry to the older schema says what, counted before it runs
(:func:`note_losses`), and the run refuses at its end, rolled back whole (every step
runs in one transaction), naming all of it (:class:`DataLossError`), unless ``force``
(``agent-memory migrate REV --down --force``; ``alembic -x force=true downgrade ...``).
Which steps are lossy is in docs/operations.md, "Downgrades".
"""

from __future__ import annotations

from pathlib import Path

from alembic import command, context, op
from alembic.config import Config
from sqlalchemy import create_engine, pool, text
from sqlalchemy.engine import URL

from server.errors import DomainError

_ROOT = Path(__file__).resolve().parent.parent
FORCE = "force"  # the config attribute that lets a downgrade destroy what it must
_LOSSES = "losses"


class DataLossError(DomainError):
    """A downgrade would destroy data; nothing was changed."""

    code = "DATA_LOSS"


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


def downgrade(url: URL | str, revision: str, *, force: bool = False) -> None:
    """Downgrade to ``revision``; refused (:class:`DataLossError`, nothing changed) if a
    step would destroy data, unless ``force``."""
    cfg = alembic_config(url)
    cfg.attributes[FORCE] = force
    cfg.attributes["target"] = revision
    command.downgrade(cfg, revision)


def note_losses(revision: str, counts: dict[str, str]) -> None:
    """Called by a downgrade step before it changes anything: for each thing it destroys
    (``"memory reviews"``), the SQL that counts it. What is there is noted for
    :func:`refuse_losses`."""
    attributes = context.config.attributes
    bind = op.get_bind()
    for what, count in counts.items():
        found = int(bind.execute(text(count)).scalar() or 0)
        if found:
            attributes.setdefault(_LOSSES, []).append(f"{found} {what} ({revision})")


def refuse_losses() -> None:
    """At the end of a run (env.py, inside its transaction): the downgrade is refused
    and rolled back if a step noted a loss and the run is not forced."""
    attributes = context.config.attributes
    lost = attributes.pop(_LOSSES, [])
    forced = attributes.get(FORCE) or context.get_x_argument(as_dictionary=True).get(FORCE)
    if lost and not forced:
        raise DataLossError(
            f"downgrading to {attributes.get('target') or context.get_revision_argument()} "
            "would destroy "
            f"{'; '.join(lost)}. Nothing was changed; pass --force to downgrade anyway"
        )


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
