"""Dashboard queries: thin lookups by id or name (by id: through
:func:`resolvers.nodes.read_node`, as ``node`` reads).

A lookup that can fail is nullable: a NOT_FOUND (an unknown id, or one the caller may
not read) nulls that one field (its error, with its code, is in ``errors``), not the
whole answer."""

from __future__ import annotations

import uuid
from typing import Annotated, cast

import strawberry

from resolvers.context import Info
from resolvers.grants import Resource, decide
from resolvers.kinds import Kind
from resolvers.nodes import read_node
from resolvers.permissions import CanListAgents
from resolvers.types.agents import AgentType, AgentVersionType, SessionType
from resolvers.types.memory import MemoryRecordType
from resolvers.types.pages import After, Connection, First
from resolvers.types.turns import ExecutionType, TurnType
from server.errors import BadInputError, NotFoundError
from server.services import reads


@strawberry.type
class Query:
    @strawberry.field(
        description="An agent, by id or by namespace and name; NOT_FOUND when there is none, "
        "BAD_INPUT when neither is given. A name the caller may not read is answered as one "
        "that does not exist (names are guessable, ids are not)."
    )
    async def agent(
        self,
        info: Info,
        id: Annotated[
            uuid.UUID | None,
            strawberry.argument(
                description="The agent's id; null: look it up by namespace and name."
            ),
        ] = None,
        namespace: Annotated[
            str | None, strawberry.argument(description="The agent's namespace, with name.")
        ] = None,
        name: Annotated[
            str | None, strawberry.argument(description="The agent's name, with namespace.")
        ] = None,
    ) -> AgentType | None:
        """An agent by id, or by namespace and name. A name the caller may not read is
        answered as a name that does not exist: names are guessable, ids are not."""
        if id is not None:
            return cast(AgentType, await read_node(info.context, Kind.AGENT, id))
        if namespace is None or name is None:
            missing = "name" if namespace is not None else "namespace" if name is not None else "id"
            raise BadInputError("pass id, or namespace and name", field=missing)
        row = await reads.agent_by_name(info.context.db, namespace=namespace, name=name)
        if (
            row is None
            or not (await decide(info.context, Resource.AGENT, row.id, namespace)).allowed
        ):
            raise NotFoundError(f"no agent {namespace}.{name}")
        return AgentType(row=row)

    @strawberry.field(
        description="The agents of a namespace, newest first. Needs SELECT on "
        "<namespace>.Agent; without it, FORBIDDEN.",
        permission_classes=[CanListAgents],
    )
    async def agents(
        self,
        info: Info,
        namespace: Annotated[str, strawberry.argument(description="The namespace.")],
        first: First,
        after: After = None,
    ) -> Connection[AgentType]:
        """The agents of a namespace, newest first."""
        return await Connection.read(
            info,
            reads.list_agents,
            lambda a: AgentType(row=a),
            namespace=namespace,
            first=first,
            after=after,
        )

    @strawberry.field(description="A version of an agent's configuration, by id.")
    async def agent_version(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The version's id.")],
    ) -> AgentVersionType | None:
        return cast(AgentVersionType, await read_node(info.context, Kind.AGENT_VERSION, id))

    @strawberry.field(description="A session, by id.")
    async def session(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The session's id.")],
    ) -> SessionType | None:
        return cast(SessionType, await read_node(info.context, Kind.SESSION, id))

    @strawberry.field(description="A turn, by id.")
    async def turn(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The turn's id.")],
    ) -> TurnType | None:
        return cast(TurnType, await read_node(info.context, Kind.TURN, id))

    @strawberry.field(description="An execution, by id.")
    async def execution(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The execution's id.")],
    ) -> ExecutionType | None:
        return cast(ExecutionType, await read_node(info.context, Kind.EXECUTION, id))

    @strawberry.field(
        # R25, R71
        description="A committed memory record in any status, with its versions and who "
        "wrote each. Needs SELECT on <namespace>.AgentMemory.indexes.* and "
        "<namespace>.AgentMemory.document."
    )
    async def agent_memory(
        self,
        info: Info,
        id: Annotated[uuid.UUID, strawberry.argument(description="The record's id.")],
    ) -> MemoryRecordType | None:
        return cast(MemoryRecordType, await read_node(info.context, Kind.MEMORY_RECORD, id))
