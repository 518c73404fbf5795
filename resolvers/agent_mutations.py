"""The administrators' mutations: agents, their versions and their sessions.

Each maps its input to one call of :mod:`server.services.agents` inside one transaction
(``Context.unit``) and answers the row it wrote; none takes an idempotency key.
"""

from __future__ import annotations

import uuid
from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.permissions import CanManageAgents
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.base import MutationResult
from server.services import agents


@strawberry.input(description="A new agent.")
class CreateAgentInput:
    namespace: str = strawberry.field(
        description="The namespace it belongs to; grants are given per namespace."
    )
    name: str = strawberry.field(description="Its name, unique in the namespace.")
    sessionless: bool | None = strawberry.field(
        default=None,
        description="An agent without sessions: its memory is agent scope only. Null or "
        "omitted: false.",
    )

    def __post_init__(self) -> None:
        # null is the default (false), for the request a replay repeats too
        if self.sessionless is None:
            self.sessionless = False


@strawberry.input(description="A new version of an agent's configuration.")
class PublishAgentVersionInput:
    agent_id: uuid.UUID = strawberry.field(description="The agent.")
    config: JSON = strawberry.field(
        description='The version\'s configuration: {"harness": {"memory": ..., "history": '
        "...}}; validated, and INVALID_CONFIG naming the bad field when it is not valid."
    )
    label: str | None = strawberry.field(
        default=None, description="A label for people reading the versions; null: none."
    )


@strawberry.input(description="A new session of an agent.")
class CreateSessionInput:
    agent_id: uuid.UUID = strawberry.field(description="The agent; it must have sessions.")
    external_id: str | None = strawberry.field(
        default=None,
        description="The caller's own id for the session (a chat thread's, a ticket's), up "
        "to 200 characters; unique per agent: a second session of the agent naming it is "
        "CONFLICT. Agent.session(externalId:) finds it. Null: none.",
    )


@strawberry.type(description="The agent created.")
class CreateAgentPayload(MutationResult):
    agent: AgentType = strawberry.field(description="The new agent.")


@strawberry.type(description="The version published.")
class PublishAgentVersionPayload(MutationResult):
    agent_version: AgentVersionType = strawberry.field(description="The new version.")


@strawberry.type(description="The session created.")
class CreateSessionPayload(MutationResult):
    session: SessionType = strawberry.field(description="The new session.")


@strawberry.type
class AgentMutation:
    @strawberry.mutation(
        description="Create an agent. Needs INSERT on <namespace>.Agent (or an admin); "
        "without it, FORBIDDEN.",
        permission_classes=[CanManageAgents],
    )
    async def create_agent(
        self,
        info: Info,
        input: Annotated[CreateAgentInput, strawberry.argument(description="The agent.")],
    ) -> CreateAgentPayload:
        async with info.context.unit() as db:
            agent = await agents.create_agent(
                db, namespace=input.namespace, name=input.name, sessionless=bool(input.sessionless)
            )
        return CreateAgentPayload(agent=AgentType(row=agent))

    @strawberry.mutation(
        description="Publish an immutable version of an agent's configuration, numbered "
        "after the last; its config is validated first. Needs INSERT on <namespace>.Agent "
        "(or an admin); without it, FORBIDDEN (NOT_FOUND, as for an unknown agent, to a "
        "caller that may not read the agent)."
    )
    async def publish_agent_version(
        self,
        info: Info,
        input: Annotated[PublishAgentVersionInput, strawberry.argument(description="The version.")],
    ) -> PublishAgentVersionPayload:
        async with info.context.unit() as db:
            version = await agents.publish_version(
                db, agent_id=input.agent_id, config=input.config, label=input.label
            )
        return PublishAgentVersionPayload(agent_version=AgentVersionType(row=version))

    @strawberry.mutation(
        description="Open a session of an agent. Needs the agent's own runtime, an admin, "
        "or INSERT on <namespace>.Session; without it, FORBIDDEN (NOT_FOUND, as for an "
        "unknown agent, to a caller that may not read the agent)."
    )
    async def create_session(
        self,
        info: Info,
        input: Annotated[CreateSessionInput, strawberry.argument(description="The session.")],
    ) -> CreateSessionPayload:
        async with info.context.unit() as db:
            session = await agents.create_session(
                db, agent_id=input.agent_id, external_id=input.external_id
            )
        return CreateSessionPayload(session=SessionType(row=session))
