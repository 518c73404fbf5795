"""The README's walkthrough runs as written against a real server process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import URL

ROOT = Path(__file__).resolve().parents[2]


def _walkthrough() -> str:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    scripts = [b for b in blocks if "createAgent" in b]
    assert scripts, "the README lost its walkthrough"
    return scripts[0]


def test_readme_walkthrough_runs_as_written(server: str, database_url: URL) -> None:
    done = subprocess.run(
        ["bash", "-e", "-c", _walkthrough()],
        env={
            **os.environ,
            "URL": f"{server}/graphql",
            # the walkthrough's CLI calls use the server's database
            "AGENT_MEMORY_DATABASE_URL": database_url.render_as_string(hide_password=False),
            "AM": str(Path(sys.executable).parent / "agent-memory"),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '"errors"' not in out, out
    assert '"status":"SUPERSEDED"' in out  # the replaced record, read back
    assert '"status":"ROLLED_BACK","memories":[]' in out  # rollback left nothing
    # the review: the restated preference is skipped, the new fact added
    assert '"action":"ADD","applied":"SKIP"' in out
    assert '"summary":"Banks at the Baixa branch","status":"ACTIVE"' in out
    assert "Always confirm identity" in done.stderr  # the preview turn's pinned line
