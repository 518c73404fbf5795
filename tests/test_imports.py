"""Every module of resolvers/ and server/ imports on its own: no module depends on
another of ours having been imported first (no import circle). One fresh interpreter
loads the third-party libraries, then forks a child per module, which starts with
none of ours loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHECK = """
import importlib, os, sys, traceback
for library in ("sqlalchemy", "sqlmodel", "strawberry", "starlette", "psycopg", "graphql"):
    importlib.import_module(library)
failed = []
for module in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(module)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed.append(module)
print("failed:", " ".join(failed))
sys.exit(1 if failed else 0)
"""


def _modules() -> list[str]:
    found = []
    for package in ("resolvers", "server"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join(parts))
    return found


def test_every_module_imports_alone() -> None:
    modules = _modules()
    assert "resolvers.types.turns" in modules and "server.app" in modules
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _CHECK, *modules],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
