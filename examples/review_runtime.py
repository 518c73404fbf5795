"""An agent runtime that reviews its memory at the end of every turn (R8, R50).

It drives one session of three turns against a running agent-memory server. The
model is scripted: its replies are fixed, so the example needs no network beyond the
server and prints the same decisions on every run. Each turn:

1. beginTurn, then recordEvents (the user's message and the agent's reply);
2. beginMemoryReview: the instructions and the conversation since the last review;
3. model call 1 (recorded with recordInvocation, purpose MEMORY): the candidates;
4. compareMemoryCandidates: the memories most like each candidate, with their ids;
5. model call 2: the decisions (ADD, REPLACE <id>, DELETE <id>, SKIP);
6. applyMemoryReview, then commitTurn: the review's records become visible.

Run it with a server's URL and an admin token (`make run` prints one)::

    python examples/review_runtime.py --url http://127.0.0.1:8000/graphql --token "$TOKEN"

The agent's runtime token is issued with the ``agent-memory`` command (``--am``), which
must reach the server's database.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import urllib.request
import uuid
from typing import Any

CONFIG = {
    "harness": {
        "memory": {
            "enabled": True,
            "kinds": ["fact", "event"],
            "extraction": {"every": "turn"},
        },
        "history": {"index": "messages"},
    }
}

# The conversation, and the scripted model's two replies for each turn. A decision's
# "id" of "<similar>" is the id of the first memory the comparison showed for its
# candidate: what a real model would copy from the comparison text.
TURNS: list[dict[str, Any]] = [
    {
        "user": "Hi, I'm Ada. I live in Lisbon and I'm allergic to peanuts.",
        "agent": "Nice to meet you, Ada. I'll keep peanuts out of every suggestion.",
        "candidates": [
            {"summary": "Ada lives in Lisbon", "kind": "fact"},
            {"summary": "Ada is allergic to peanuts", "content": "Said in turn 1."},
        ],
        "decisions": [{"action": "ADD"}, {"action": "ADD"}],
    },
    {
        "user": "I moved to Porto last month.",
        "agent": "Congratulations on the move to Porto!",
        "candidates": [{"summary": "Ada lives in Porto", "content": "Moved from Lisbon."}],
        "decisions": [{"action": "REPLACE", "id": "<similar>"}],
    },
    {
        "user": "Remember, I live in Porto. And the peanut allergy was a misdiagnosis.",
        "agent": "Got it: Porto, and no peanut allergy after all.",
        "candidates": [
            {"summary": "Ada lives in Porto"},
            {"summary": "Ada is not allergic to peanuts"},
            {"summary": "Ada greeted the agent"},
        ],
        "decisions": [
            {"action": "ADD"},  # a restatement: the server applies it as SKIP
            {"action": "DELETE", "id": "<similar>"},
            {"action": "SKIP"},
        ],
    },
]

BEGIN_REVIEW = """mutation($t: ID!) { beginMemoryReview(input: {turnId: $t}) {
  due reason instructions text review { id execution { id } } } }"""
COMPARE = """mutation($r: ID!, $c: [MemoryCandidateInput!]!) {
  compareMemoryCandidates(input: {reviewId: $r, candidates: $c}) {
    text candidates { candidate similar { version { recordId } } } } }"""
APPLY = """mutation($r: ID!, $d: [MemoryDecisionInput!]!, $i: ID!) {
  applyMemoryReview(input: {reviewId: $r, decisions: $d, invocationId: $i}) {
    decisions { summary action applied recordId restates
                memories { recordId status summary } } } }"""


class Client:
    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables}).encode()
        request = urllib.request.Request(
            self.url,
            data=body,
            headers={"content-type": "application/json", "authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.load(response)
        if answer.get("errors"):
            raise RuntimeError(json.dumps(answer["errors"]))
        return dict(answer["data"])


class ScriptedModel:
    """Fixed replies, in the format the review's instructions ask for."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script

    def candidates(self, instructions: str, conversation: str) -> str:
        return json.dumps({"candidates": self.script["candidates"]})

    def decisions(self, comparison: str) -> str:
        firsts = dict(re.findall(r"^candidate (\d+):.*\n- id ([0-9a-f-]{36})", comparison, re.M))
        out = []
        for n, decision in enumerate(self.script["decisions"]):
            made = {"candidate": n, **decision}
            if made.get("id") == "<similar>":
                made["id"] = firsts[str(n)]
            out.append(made)
        return json.dumps({"decisions": out})


def review_turn(runtime: Client, turn: str, model: ScriptedModel) -> list[dict[str, Any]]:
    begun = runtime(BEGIN_REVIEW, t=turn)["beginMemoryReview"]
    if not begun["due"]:
        print(f"  no review: {begun['reason']}")
        return []
    review, execution = begun["review"]["id"], begun["review"]["execution"]["id"]
    candidates = json.loads(model.candidates(begun["instructions"], begun["text"]))["candidates"]
    compared = runtime(COMPARE, r=review, c=candidates)["compareMemoryCandidates"]
    reply = json.loads(model.decisions(compared["text"]))["decisions"]
    invocation = runtime(
        "mutation($e: ID!) { recordInvocation(input: {executionId: $e, purpose: MEMORY,"
        ' model: "scripted", inputTokens: 0, outputTokens: 0}) { invocation { id } } }',
        e=execution,
    )["recordInvocation"]["invocation"]["id"]
    decisions = [
        {
            "candidate": candidates[d["candidate"]],
            "action": d["action"],
            **({"recordId": d["id"]} if "id" in d else {}),
        }
        for d in reply
    ]
    applied = runtime(APPLY, r=review, d=decisions, i=invocation)["applyMemoryReview"]
    return list(applied["decisions"])


def report(outcomes: list[dict[str, Any]]) -> None:
    for o in outcomes:
        if o["applied"] == "ADD":
            print(f"  added: {o['summary']}")
        elif o["applied"] == "REPLACE":
            print(f"  replaced: {o['recordId']} by {o['summary']}")
        elif o["applied"] == "DELETE":
            print(f"  deleted: {o['memories'][0]['summary']}")
        elif o["restates"]:
            print(f"  skipped: {o['summary']} (restates {o['restates']})")
        else:
            print(f"  skipped: {o['summary']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000/graphql")
    parser.add_argument("--token", required=True, help="an admin token")
    parser.add_argument("--am", default=shutil.which("agent-memory") or "agent-memory")
    args = parser.parse_args(argv)
    admin = Client(args.url, args.token)
    name = f"review-example-{uuid.uuid4().hex[:8]}"
    agent = admin(
        'mutation($n: String!) { createAgent(input: {namespace: "examples", name: $n})'
        " { agent { id } } }",
        n=name,
    )["createAgent"]["agent"]["id"]
    admin(
        "mutation($a: ID!, $c: JSON!) { publishAgentVersion(input: {agentId: $a, config: $c})"
        " { agentVersion { id } } }",
        a=agent,
        c=CONFIG,
    )
    command = [args.am, "token", "create", "--kind", "runtime", "--name", name]
    token = subprocess.run(
        [*command, "--agent", agent, "--quiet"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    runtime = Client(args.url, token)
    session = runtime(
        "mutation($a: ID!) { createSession(input: {agentId: $a}) { session { id } } }", a=agent
    )["createSession"]["session"]["id"]
    for n, script in enumerate(TURNS, start=1):
        turn = runtime(
            "mutation($s: ID!) { beginTurn(input: {sessionId: $s}) { turn { id } } }", s=session
        )["beginTurn"]["turn"]["id"]
        runtime(
            "mutation($t: ID!, $e: [ConversationEventInput!]!) {"
            " recordEvents(input: {turnId: $t, events: $e}) { events { id } } }",
            t=turn,
            e=[
                {"type": "USER_MESSAGE", "text": script["user"]},
                {"type": "AGENT_MESSAGE", "text": script["agent"]},
            ],
        )
        print(f"turn {n}: {script['user']}")
        report(review_turn(runtime, turn, ScriptedModel(script)))
        runtime("mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { status } } }", t=turn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
