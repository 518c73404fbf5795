"""The README's walkthrough runs as written against a real server process."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import URL

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _walkthrough() -> str:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    scripts = [b for b in blocks if "createAgent" in b]
    assert scripts, "the README lost its walkthrough"
    return scripts[0]


@pytest.fixture(scope="module")
def server(database_url: URL) -> object:
    port = _free_port()
    env = {
        **os.environ,
        "AGENT_MEMORY_DATABASE_URL": database_url.render_as_string(hide_password=False),
        "AGENT_MEMORY_PORT": str(port),
        "AGENT_MEMORY_DEV": "1",
        "HF_HUB_OFFLINE": "1",
    }
    exe = shutil.which("agent-memory", path=str(Path(sys.executable).parent)) or "agent-memory"
    proc = subprocess.Popen(
        [exe, "serve", "--no-migrate"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}")
            time.sleep(0.5)
        else:
            pytest.fail("server did not become healthy in 60 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


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
    assert '"status":"rolled_back","memories":[]' in out  # rollback left nothing
    assert "Always confirm identity" in done.stderr  # the preview turn's pinned line
