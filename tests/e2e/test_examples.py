"""The example runtime runs against a real server process and reviews as it says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import URL

ROOT = Path(__file__).resolve().parents[2]


def _admin_token(am: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [am, "token", "create", "--kind", "admin", "--name", "examples", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_review_runtime_example(server: str, database_url: URL) -> None:
    """R50 end to end: two facts added, one replaced by its correction, a restatement
    skipped, a fact shown wrong deleted, small talk skipped."""
    am = str(Path(sys.executable).parent / "agent-memory")
    env = {
        **os.environ,
        "AGENT_MEMORY_DATABASE_URL": database_url.render_as_string(hide_password=False),
        "PYTHONPATH": str(ROOT),
    }
    token = _admin_token(am, env)
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "review_runtime.py"),
            *("--url", f"{server}/graphql"),
            *("--token", token, "--am", am),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines() if line.startswith("  ")]
    assert lines[:2] == ["added: Ada lives in Lisbon", "added: Ada is allergic to peanuts"]
    assert lines[2].startswith("replaced: ") and lines[2].endswith(" by Ada lives in Porto")
    assert lines[3].startswith("skipped: Ada lives in Porto (restates ")
    assert lines[4:] == ["deleted: Ada is allergic to peanuts", "skipped: Ada greeted the agent"]
