"""The exceptions of both clients: agent_memory_client's classes,
re-exported, so that one except clause catches what either client raises."""

from agent_memory_client.exceptions import (
    GraphQLClientError,
    GraphQLClientGraphQLError,
    GraphQLClientGraphQLMultiError,
    GraphQLClientHttpError,
    GraphQLClientInvalidMessageFormat,
    GraphQLClientInvalidResponseError,
    Response,
)

__all__ = [
    "GraphQLClientError",
    "GraphQLClientGraphQLError",
    "GraphQLClientGraphQLMultiError",
    "GraphQLClientHttpError",
    "GraphQLClientInvalidMessageFormat",
    "GraphQLClientInvalidResponseError",
    "Response",
]
