"""Real data on a live server, written through the generated client: the CLI's tokens
and policies, an agent whose records have several versions, and a dashboard token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from agent_memory_client import (
    AddMemoryInput,
    BeginTurnInput,
    Client,
    CommitTurnInput,
    CreateAgentInput,
    CreateSessionInput,
    DeleteMemoryInput,
    LabelInput,
    PublishAgentVersionInput,
)
from sqlalchemy.engine import URL

ROOT = Path(__file__).resolve().parents[2]

CONFIG = {
    "harness": {
        "memory": {
            "enabled": True,
            "scope": {"read": ["session", "agent"], "write": ["session", "agent"]},
            "kinds": ["fact", "event", "guidance"],
            "tools": ["add_memory", "read_memory", "delete_memory", "search_memory"],
            "labels": {"customer_id": {"number": 5, "description": "The customer."}},
            "pinned": {"max_tokens": 2000},
            "extraction": {"every": "turn"},
        },
        "history": {"index": "messages"},
    }
}


_BATCH = """
import contextlib, io, json, sys
from server.cli import main
for args in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(args)
    if status:
        sys.exit(f"agent-memory {' '.join(args)}: exit status {status}")
    print(json.dumps(out.getvalue().strip()))
"""


def am(database_url: URL, *commands: list[str]) -> list[str]:
    """Runs agent-memory CLI commands against the live server's database, in one process
    (each would load the server's modules again); their stdouts."""
    done = subprocess.run(
        [sys.executable, "-c", _BATCH, json.dumps(commands)],
        env={
            **os.environ,
            "AGENT_MEMORY_DATABASE_URL": database_url.render_as_string(hide_password=False),
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def client(server: str, token: str) -> Client:
    return Client(url=f"{server}/graphql", headers={"authorization": f"Bearer {token}"})


@dataclass
class Seeded:
    namespace: str
    # ids as the API gives them, and takes them: the objects' UUIDs as text
    agent_id: str
    agent_name: str
    session_id: str
    runtime_token: str
    replaced_id: str  # "Prefers email", replaced by "Prefers phone calls after 5pm"
    correction_id: str  # the correction: its record has 1 version, the old one 2
    deleted_id: str  # "Asked about fees once": versions ACTIVE, then DELETED


def seed(server: str, database_url: URL) -> Seeded:
    """An agent, a session and one committed turn that added, replaced and deleted."""
    namespace = f"e2e{uuid.uuid4().hex[:8]}"
    [admin] = am(database_url, ["token", "create", "--kind", "admin", "--name", "e2e", "--quiet"])
    with client(server, admin) as api:
        agent = api.create_agent(
            CreateAgentInput(namespace=namespace, name="advisor")
        ).create_agent.agent
        api.publish_agent_version(PublishAgentVersionInput(agent_id=agent.id, config=CONFIG))
    [runtime] = am(
        database_url,
        [
            *("token", "create", "--kind", "runtime", "--name", f"{namespace}-runtime"),
            *("--agent", str(agent.id), "--quiet"),
        ],
    )
    with client(server, runtime) as api:
        session = api.create_session(
            CreateSessionInput(agent_id=agent.id, external_id="chat-1")
        ).create_session.session
        turn = api.begin_turn(BeginTurnInput(session_id=session.id)).begin_turn.turn

        def add(summary: str, **more: object) -> str:
            payload = api.add_memory(AddMemoryInput(turn_id=turn.id, summary=summary, **more))
            return payload.add_memory.memories[0].record_id

        customer = [LabelInput(name="customer_id", value="C-42")]
        old = add("Prefers email", kind="fact", labels=customer)
        new = add("Prefers phone calls after 5pm", kind="fact", replaces=old)
        temp = add("Asked about fees once", kind="event")
        api.delete_memory(DeleteMemoryInput(turn_id=turn.id, id=temp))
        add("Banks at the Baixa branch", kind="fact", labels=customer)
        api.commit_turn(CommitTurnInput(turn_id=turn.id))
    return Seeded(
        namespace=namespace,
        agent_id=agent.id,
        agent_name=agent.name,
        session_id=session.id,
        runtime_token=runtime,
        replaced_id=old,
        correction_id=new,
        deleted_id=temp,
    )


def dashboard_token(database_url: URL, namespace: str) -> str:
    """A client token whose policy reads the namespace's agents, memory and sessions."""
    policy = f"dashboard-{uuid.uuid4().hex[:6]}"
    resources = ("Agent", "AgentMemory.indexes.*", "AgentMemory.document", "Session")
    *_, token = am(
        database_url,
        ["policy", "create", namespace, policy],
        *(["policy", "grant", namespace, policy, "SELECT", f"{namespace}.{r}"] for r in resources),
        ["token", "create", "--kind", "client", "--name", policy, "--quiet"],
    )
    am(database_url, ["policy", "bind", namespace, policy, "--principal", token[:12]])
    return token
