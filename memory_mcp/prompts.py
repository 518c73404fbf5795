"""The ``recall`` prompt: the host's recall before a model call (R42-R44).

Recall is not the model's to call: the host runs it before each model call with the
turn's current work as the query, and puts what it found before the model. In MCP
that is a prompt, which the host (or its user) asks for, not a tool the model
chooses. ``prompts/get recall {query}`` runs the ``recall`` mutation in the call's
turn, recorded as GraphQL records it, the repeat rule included (an earlier recall of
the same conversation that put exactly these versions before the model is not
recorded again), and answers one user message: the ``<memory>`` block marked as data,
or a line saying nothing was found.

Offered when memory is enabled (R1); its description and its argument's are the
``recall`` mutation's and ``RecallInput.query``'s.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLInputObjectType, GraphQLObjectType, GraphQLSchema
from mcp import types

from memory_mcp.operations import mutation
from memory_mcp.results import RECALL_SELECTION
from server.domain.config import HarnessConfig

RECALL = "recall"
RECALL_DOCUMENT = mutation("McpRecall", "recall", "RecallInput", RECALL_SELECTION)
NOTHING = "No memory records matched the current work."


def offered(schema: GraphQLSchema, config: HarnessConfig) -> list[types.Prompt]:
    if not config.memory.enabled:
        return []
    root = schema.mutation_type
    arguments = schema.get_type("RecallInput")
    assert isinstance(root, GraphQLObjectType)
    assert isinstance(arguments, GraphQLInputObjectType)
    query = arguments.fields["query"]
    return [
        types.Prompt(
            name=RECALL,
            description=root.fields["recall"].description,
            arguments=[
                types.PromptArgument(name="query", description=query.description, required=True)
            ],
        )
    ]


def recalled(answer: dict[str, Any]) -> types.GetPromptResult:
    """The recall's answer as the message the host puts before the model."""
    text = answer["text"] or NOTHING
    return types.GetPromptResult(
        description=answer["notice"],
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )
