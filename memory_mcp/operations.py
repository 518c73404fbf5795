"""The GraphQL operations an MCP request runs, in process, as its caller.

Every MCP request becomes one or more operations of the server's own schema, executed
with a context made as ``/graphql`` makes one (``resolvers.context.make_context``) but
with the caller the endpoint already authenticated, under the same wall-clock limit
(``AGENT_MEMORY_QUERY_TIMEOUT_MS``, lifted at the first COMMIT). So a call meets the
same extensions as over HTTP (the limits, the storable-text check, the ownership
check and access gate, the error mapping) and is counted in the same metrics, under
its operation's name (``McpSearchMemory``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from resolvers.context import make_context
from resolvers.deadline import Deadline
from resolvers.errors import mask_uncoded
from server.database import Database
from server.embedding import Embedder
from server.errors import DomainError
from server.services.callers import Callers
from server.services.chain import Caller
from server.settings import Settings


@dataclass(frozen=True, slots=True)
class Answer:
    """An operation's data, or its first error's message and extensions (its code,
    its field)."""

    data: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    extensions: dict[str, Any] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        return self.message is not None

    @classmethod
    def of_error(cls, error: DomainError) -> Answer:
        return cls(message=error.message, extensions=error.extensions())


def mutation(name: str, field_name: str, input_type: str, selection: str) -> str:
    """A one-field mutation document taking its input as ``$input``."""
    return (
        f"mutation {name}($input: {input_type}!) "
        f"{{ {field_name}(input: $input) {{ {selection} }} }}"
    )


BEGIN_TURN = mutation("McpBeginTurn", "beginTurn", "BeginTurnInput", "turn { id }")
COMMIT_TURN = mutation("McpCommitTurn", "commitTurn", "CommitTurnInput", "turn { id }")
ROLLBACK_TURN = mutation("McpRollbackTurn", "rollbackTurn", "RollbackTurnInput", "turn { id }")
CREATE_SESSION = mutation(
    "McpCreateSession", "createSession", "CreateSessionInput", "session { id }"
)
_CONFIG = "sessionless latestVersion { config }"
AGENT_CONFIG = f"query McpAgent($id: ID!) {{ agent(id: $id) {{ {_CONFIG} }} }}"
SESSION_CONFIG = f"query McpSession($id: ID!) {{ session(id: $id) {{ agent {{ {_CONFIG} }} }} }}"
SESSION_BY_EXTERNAL_ID = (
    "query McpSessionByExternalId($id: ID!, $externalId: String!) { agent(id: $id) { "
    "session(externalId: $externalId) { id } } }"
)
TURN_CONFIG = (
    "query McpTurn($id: ID!) { turn(id: $id) { status agent { sessionless } "
    "agentVersion { config } } }"
)


class Operations:
    """Runs operations of the schema for callers the endpoint authenticated."""

    def __init__(
        self,
        schema: Any,
        *,
        database: Database,
        embedder: Embedder,
        settings: Settings,
        callers: Callers | None = None,
    ) -> None:
        self.schema = schema
        self.database = database
        self.embedder = embedder
        self.settings = settings
        self.callers = callers or Callers()  # the server's kept callers (one lookup a request)

    async def run(self, caller: Caller, document: str, variables: dict[str, Any]) -> Answer:
        limit = self.settings.query_timeout_ms
        deadline = Deadline(limit / 1000)
        context = make_context(
            database=self.database,
            embedder=self.embedder,
            settings=self.settings,
            identity=caller,
            callers=self.callers,
            deadline=deadline,
        )
        try:
            async with deadline.enforced():
                result = await self.schema.execute(
                    document, variable_values=variables, context_value=context
                )
        except TimeoutError:
            return Answer(
                message=f"the request took longer than {limit} ms", extensions={"code": "TIMEOUT"}
            )
        finally:
            await context.close()  # already closed unless the limit cut the operation
        if result.errors:
            error = mask_uncoded(result.errors)[0]
            return Answer(message=error.message, extensions=dict(error.extensions or {}))
        return Answer(data=dict(result.data or {}))
