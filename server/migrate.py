"""Run Alembic migrations programmatically (``agent-memory migrate``, tests, start-up)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import URL

_ROOT = Path(__file__).resolve().parent.parent


def alembic_config(url: URL | str) -> Config:
    ini = _ROOT / "alembic.ini"
    cfg = Config(str(ini)) if ini.exists() else Config()
    cfg.set_main_option("script_location", str(_ROOT / "migrations"))
    cfg.attributes["url"] = url if isinstance(url, str) else url.render_as_string(False)
    return cfg


def upgrade(url: URL | str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: URL | str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)
