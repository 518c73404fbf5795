"""A real server process for the end-to-end tests (README walkthrough, examples)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import URL

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(database_url: URL) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "AGENT_MEMORY_DATABASE_URL": database_url.render_as_string(hide_password=False),
        "AGENT_MEMORY_PORT": str(port),
        "AGENT_MEMORY_DEV": "1",
        "HF_HUB_OFFLINE": "1",
        # the README's model priced, per million tokens; the server's own embedding not
        "AGENT_MEMORY_MODEL_PRICES": '{"your-model": {"input": 2, "output": 10}}',
        # the code under test, wherever the console script was installed from
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
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
