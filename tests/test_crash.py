"""Crash safety (R12, R24): ``kill -9`` of the server and of its PostgreSQL while
writers commit turns, then a restart. Every turn whose commitTurn was answered is
committed with its memory (nothing lost); every call that was cut off, retried with
its idempotency key, completes once (nothing duplicated)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.test_serve import ROOT, _cli, _env, _free_port, _postmaster

WRITERS = 4
CRASHES = 3
WRITE_SECONDS = 2.5

CREATE_AGENT = (
    'mutation { createAgent(input: {namespace: "crash", name: "writer"}) { agent { id } } }'
)
PUBLISH = """mutation($a: ID!) { publishAgentVersion(input: {agentId: $a, config: {harness:
  {memory: {enabled: true, tools: ["add_memory"]}}}}) { agentVersion { id } } }"""
SESSION = "mutation($a: ID!) { createSession(input: {agentId: $a}) { session { id } } }"
BEGIN = """mutation($s: ID!, $k: String!) {
  beginTurn(input: {sessionId: $s, idempotencyKey: $k}) { turn { id } } }"""
ADD = """mutation($t: ID!, $m: String!, $k: String!) {
  addMemory(input: {turnId: $t, summary: $m, idempotencyKey: $k}) { memories { recordId } } }"""
COMMIT = """mutation($t: ID!, $k: String!) {
  commitTurn(input: {turnId: $t, idempotencyKey: $k}) { turn { id status } } }"""
TURNS = """query($s: ID!, $after: String) { session(id: $s) {
  turns(first: 100, after: $after) { edges { node { id status } }
                                      pageInfo { hasNextPage endCursor } } } }"""
RECORDS = """query($a: ID!, $s: ID!, $after: String) { agent(id: $a) {
  memoryRecords(first: 100, after: $after, filter: {sessionId: $s}) {
    edges { node { status current { summary } } } pageInfo { hasNextPage endCursor } } } }"""


class Cut(Exception):
    """The server went away before it answered."""


@dataclass
class Server:
    data_dir: Path
    cwd: Path
    process: subprocess.Popen[str] | None = None
    url: str = ""

    def start(self) -> None:
        port = _free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
            cwd=self.cwd,
            env={
                **_env(AGENT_MEMORY_DATA_DIR=str(self.data_dir), AGENT_MEMORY_LOG_LEVEL="warning"),
                "PYTHONPATH": str(ROOT),
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"serve exited: {self.process.communicate()[1][-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        pytest.fail("the server did not become healthy")

    def kill_9(self) -> None:
        """SIGKILL the server and its worker processes, its PostgreSQL's postmaster and
        every backend, as a power cut would, and wait until none of them runs. The
        workers go first: left alone a moment, one would answer UNAVAILABLE instead of
        being cut off."""
        assert self.process is not None
        postmaster = _postmaster(self.data_dir)
        assert postmaster is not None
        backends = _children(postmaster)
        workers = [pid for pid in _children(self.process.pid) if pid != postmaster]
        for pid in (*workers, self.process.pid, postmaster, *backends):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        assert self.process.stderr is not None
        self.process.stderr.close()
        # gone from the process table, not a zombie: PostgreSQL's next start takes a
        # zombie postmaster for a live one that holds its socket
        deadline = time.monotonic() + 60
        while any(Path(f"/proc/{pid}").exists() for pid in (postmaster, *backends, *workers)):
            assert time.monotonic() < deadline, "the killed PostgreSQL was not reaped"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.communicate()


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


@dataclass
class Writer:
    """One session's runtime: turn i begins, adds "writer w fact i" and commits, each
    call with its own idempotency key."""

    number: int
    session: str
    next: int = 0
    acknowledged: dict[int, str] = field(default_factory=dict)  # turn i -> turn id
    cut_off: int | None = None  # the turn whose calls were cut off

    def keys(self, i: int) -> tuple[str, str, str]:
        return (f"b-{self.number}-{i}", f"a-{self.number}-{i}", f"c-{self.number}-{i}")

    def summary(self, i: int) -> str:
        return f"writer {self.number} fact {i}"

    async def turn(self, client: httpx.AsyncClient, i: int) -> None:
        begin, add, commit = self.keys(i)
        turn = (await _call(client, BEGIN, s=self.session, k=begin))["beginTurn"]["turn"]["id"]
        await _call(client, ADD, t=turn, m=self.summary(i), k=add)
        done = (await _call(client, COMMIT, t=turn, k=commit))["commitTurn"]["turn"]
        assert done["id"] == turn and done["status"].upper() == "COMMITTED"
        self.acknowledged[i] = turn

    async def run(self, client: httpx.AsyncClient, until: float) -> None:
        while time.monotonic() < until:
            i = self.next
            self.next += 1
            try:
                await self.turn(client, i)
            except Cut:
                self.cut_off = i
                return


async def _call(client: httpx.AsyncClient, query: str, **variables: Any) -> Any:
    try:
        response = await client.post("/graphql", json={"query": query, "variables": variables})
    except httpx.TransportError as exc:
        raise Cut from exc
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


async def _pages(client: httpx.AsyncClient, query: str, path: list[str], **v: Any) -> list[Any]:
    nodes: list[Any] = []
    after = None
    while True:
        page = await _call(client, query, after=after, **v)
        for key in path:
            page = page[key]
        nodes.extend(edge["node"] for edge in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            return nodes
        after = page["pageInfo"]["endCursor"]


def _reader(cwd: Path, data_dir: Path) -> str:
    """A client token that reads the namespace's sessions and memory (R71)."""
    settings = {"cwd": cwd, "AGENT_MEMORY_DATA_DIR": str(data_dir)}
    token = _cli("token", "create", "--kind", "client", "--name", "reader", "--quiet", **settings)
    assert token.returncode == 0, token.stderr
    steps = [
        ("policy", "create", "crash", "reader"),
        ("policy", "grant", "crash", "reader", "SELECT", "crash.Agent"),
        ("policy", "grant", "crash", "reader", "SELECT", "crash.Session"),
        ("policy", "grant", "crash", "reader", "SELECT", "crash.AgentMemory.indexes.*"),
        ("policy", "grant", "crash", "reader", "SELECT", "crash.AgentMemory.document"),
        ("policy", "bind", "crash", "reader", "--principal", token.stdout.strip()[:12]),
    ]
    for step in steps:
        done = _cli(*step, **settings)
        assert done.returncode == 0, done.stderr
    return token.stdout.strip()


def _client(server: Server, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url, headers={"authorization": f"Bearer {token}"}, timeout=60
    )


@pytest.mark.slow
async def test_kill_9_loses_no_committed_turn_and_retries_duplicate_nothing(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    created = _cli("migrate", cwd=tmp_path, AGENT_MEMORY_DATA_DIR=str(data_dir))
    assert created.returncode == 0, created.stderr
    admin = _cli(
        "token",
        "create",
        "--kind",
        "admin",
        "--name",
        "crash",
        "--quiet",
        cwd=tmp_path,
        AGENT_MEMORY_DATA_DIR=str(data_dir),
    )
    assert admin.returncode == 0, admin.stderr
    server = Server(data_dir, tmp_path)
    server.start()
    try:
        async with _client(server, admin.stdout.strip()) as client:
            agent = (await _call(client, CREATE_AGENT))["createAgent"]["agent"]["id"]
            await _call(client, PUBLISH, a=agent)
            runtime = _cli(
                "token",
                "create",
                "--kind",
                "runtime",
                "--name",
                "crash-runtime",
                "--agent",
                agent,
                "--quiet",
                cwd=tmp_path,
                AGENT_MEMORY_DATA_DIR=str(data_dir),
            )
            assert runtime.returncode == 0, runtime.stderr
            reader = _reader(tmp_path, data_dir)
            sessions = [(await _call(client, SESSION, a=agent)) for _ in range(WRITERS)]
        writers = [Writer(n, s["createSession"]["session"]["id"]) for n, s in enumerate(sessions)]
        for _ in range(CRASHES):
            async with _client(server, runtime.stdout.strip()) as client:
                until = time.monotonic() + WRITE_SECONDS
                running = [asyncio.create_task(w.run(client, until + 60)) for w in writers]
                await asyncio.sleep(max(0.0, until - time.monotonic()))
                server.kill_9()
                await asyncio.gather(*running)
            assert all(w.cut_off is not None for w in writers)
            server.start()
            async with _client(server, runtime.stdout.strip()) as client:
                for w in writers:  # the cut-off calls, retried with their keys
                    assert w.cut_off is not None
                    await w.turn(client, w.cut_off)
                    w.cut_off = None
        async with _client(server, reader) as client:
            for w in writers:
                assert len(w.acknowledged) == w.next >= CRASHES
                turns = await _pages(client, TURNS, ["session", "turns"], s=w.session)
                assert {t["status"].upper() for t in turns} == {"COMMITTED"}
                # nothing lost, no extra turn
                assert sorted(t["id"] for t in turns) == sorted(w.acknowledged.values())
                records = await _pages(
                    client, RECORDS, ["agent", "memoryRecords"], a=agent, s=w.session
                )
                summaries = sorted(r["current"]["summary"] for r in records)
                assert summaries == sorted(w.summary(i) for i in range(w.next))  # once each
                assert {r["status"] for r in records} == {"ACTIVE"}
    finally:
        server.stop()
