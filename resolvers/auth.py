"""Authentication of a GraphQL operation, and the API's memory deletion (R70, R71).

The HTTP layer hands the bearer token and the chain headers to the context;
:class:`Authentication` turns them into the caller (principal and policy
chain) after the document has passed parsing, validation and the limits of
:mod:`resolvers.security`, and before any resolver runs. So a refused document
costs no database work, and no resolver ever runs for an unknown, revoked or
expired token (UNAUTHENTICATED, HTTP 401).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Annotated

import strawberry
from graphql import ExecutionResult, GraphQLError
from strawberry.extensions import SchemaExtension

from resolvers.context import Context, Info
from resolvers.types.base import MutationResult
from resolvers.types.memory import MemoryRecordType
from server.errors import BadInputError, DomainError, UnauthenticatedError
from server.services import memory_api
from server.services.callers import Callers
from server.services.chain import Caller


async def authenticate(context: Context) -> Caller:
    """The caller the context's credentials name: one indexed lookup when the server
    kept it (:mod:`server.services.callers`), a few more when it is built."""
    credentials = context.credentials
    if credentials is None:
        raise UnauthenticatedError("send a token: Authorization: Bearer <token>")
    execution_id: uuid.UUID | None = None
    if credentials.execution:
        try:
            execution_id = uuid.UUID(credentials.execution)
        except ValueError:
            raise BadInputError(
                "X-Agent-Memory-Execution must be an execution id", field="execution"
            ) from None
    callers = context.callers or Callers(size=0)
    return await callers.caller(
        context.db,
        token=credentials.token,
        execution_id=execution_id,
        tool=credentials.tool or None,
    )


class Authentication(SchemaExtension):
    """Resolves the caller before execution; a failure is the operation's only error."""

    async def on_execute(self) -> AsyncIterator[None]:
        execution = self.execution_context
        context = execution.context
        if execution.result is None and getattr(context, "identity", None) is None:
            try:
                if not isinstance(context, Context):
                    raise UnauthenticatedError("send a token: Authorization: Bearer <token>")
                context.identity = await authenticate(context)
            except Exception as exc:
                if isinstance(exc, UnauthenticatedError) and context is not None:
                    response = getattr(context, "response", None)
                    if response is not None:
                        response.status_code = 401
                        response.headers["www-authenticate"] = "Bearer"
                # a domain error keeps its message and code; anything else (the
                # database is down) is masked as INTERNAL by resolvers.errors
                message = exc.message if isinstance(exc, DomainError) else str(exc)
                execution.result = ExecutionResult(
                    data=None, errors=[GraphQLError(message, original_error=exc)]
                )
        yield


@strawberry.input(description="The memory record to delete.")
class DeleteAgentMemoryInput:
    id: uuid.UUID = strawberry.field(description="The record's id.")


@strawberry.type(description="The memory record deleted.")
class DeleteAgentMemoryPayload(MutationResult):
    record: MemoryRecordType = strawberry.field(
        description="The record, now deleted; it and its versions stay readable."
    )


@strawberry.type
class ApiMutation:
    @strawberry.mutation(
        # R71
        description="Delete a memory record through the API: it leaves recall and search; "
        "it and its versions stay readable, the deletion a new version written by the "
        "caller. Needs SELECT and UPDATE on <namespace>.AgentMemory.indexes.* and "
        "<namespace>.AgentMemory.document; without them, FORBIDDEN (NOT_FOUND, as for an "
        "unknown id, to a caller that may not read the record)."
    )
    async def delete_agent_memory(
        self,
        info: Info,
        input: Annotated[
            DeleteAgentMemoryInput, strawberry.argument(description="The record to delete.")
        ],
    ) -> DeleteAgentMemoryPayload:
        caller = info.context.identity
        async with info.context.unit() as db:
            record = await memory_api.delete_record(
                db,
                record_id=input.id,
                principal_id=caller.principal_id if caller else None,
                caller=info.context.caller,
            )
        return DeleteAgentMemoryPayload(record=MemoryRecordType(row=record))
