"""Callers and tokens for tests: the all-powerful test caller the ``api`` fixture acts
as, and real principals with bearer tokens for HTTP tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from resolvers.context import Context, Credentials, make_context
from server.domain.grants import PRIVILEGES, Chain, Link, Policy
from server.services import auth, policies
from server.services.chain import Caller, RuntimeBinding
from server.settings import Settings


def full_caller() -> Caller:
    """An admin that is also the runtime of every agent and holds every privilege on
    every resource: what the tests of other features need, so they test their rule and
    not the grants."""
    everything = Policy.parse("everything", [(p, "*") for p in PRIVILEGES])
    return Caller(
        name="tests",
        chain=Chain((Link("client", "tests", (everything,)),)),
        kind="admin",
        admin=True,
        runtime=RuntimeBinding(every_agent=True),
    )


def context_for(
    api: Any,
    *,
    settings: Settings | None = None,
    identity: Caller | None = None,
    credentials: Credentials | None = None,
) -> Context:
    return make_context(
        database=api.database,
        embedder=api.embedder,
        settings=settings or api.settings,
        identity=identity,
        credentials=credentials,
    )


async def bearer(
    api: Any,
    *,
    kind: str,
    name: str = "test",
    namespace: str | None = None,
    agent_id: str | uuid.UUID | None = None,
    grants: tuple[tuple[str, str], ...] = (),
) -> str:
    """Issue a real token (committed), optionally with one policy of ``grants`` bound."""
    agent = uuid.UUID(str(agent_id)) if agent_id else None
    async with api.database.session() as db:
        issued = await auth.create_principal(
            db, kind=kind, name=name, namespace=namespace, agent_id=agent
        )
        if grants:
            ns, policy = f"p{uuid.uuid4().hex[:12]}", "granted"
            await policies.create_policy(db, namespace=ns, name=policy)
            for privilege, pattern in grants:
                await policies.add_grant(
                    db, namespace=ns, name=policy, privilege=privilege, pattern=pattern
                )
            await policies.bind(
                db,
                namespace=ns,
                name=policy,
                subject_type="principal",
                subject=str(issued.principal.id),
            )
        await db.commit()
    return issued.token


async def run_as(
    api: Any,
    token: str | None,
    query: str,
    *,
    execution: str | None = None,
    tool: str | None = None,
    **variables: Any,
) -> Any:
    """Run an operation as the bearer of ``token`` (and the chain headers), through the
    schema's own authentication: the token is looked up, its policies loaded."""
    credentials = Credentials(token=token, execution=execution, tool=tool) if token else None
    context = context_for(api, credentials=credentials)
    return await api.schema.execute(query, variable_values=variables or None, context_value=context)


def codes(result: Any) -> list[str]:
    return [str((e.extensions or {}).get("code")) for e in result.errors or []]


@contextmanager
def statements(database: Any) -> Iterator[list[str]]:
    """Every SQL statement the engine sends inside the block."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    event.listen(database.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(database.engine.sync_engine, "before_cursor_execute", record)
