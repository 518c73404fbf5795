"""Reading an ``EXPLAIN (FORMAT JSON)`` plan the same way on one PostgreSQL and on Citus
(``make test-citus``), where a router query's plan is the plan its one task ran on the
agent's shard (docs/scaling.md, "Distributing by agent")."""

from __future__ import annotations

import re
from typing import Any


def node_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan the database that held the rows ran: ``plan`` itself on one node; on
    Citus, the remote plan of the router query's one task."""
    distributed = plan.get("Distributed Query")
    if distributed is None:
        return plan
    tasks = distributed["Job"]["Tasks"]
    assert len(tasks) == 1, f"{len(tasks)} tasks: not a router query"
    remote = tasks[0]["Remote Plan"]
    while isinstance(remote, list):
        remote = remote[0]
    return dict(remote["Plan"])


def names(name: str | None, relation: str) -> bool:
    """True when ``name`` (a plan's relation or index name) is ``relation``, or one of its
    Citus shards (``relation_102008``)."""
    return name is not None and re.fullmatch(rf"{re.escape(relation)}(_\d+)?", name) is not None
