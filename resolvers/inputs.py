"""One check for every string a client sends, at the GraphQL boundary.

PostgreSQL's ``text`` and ``jsonb`` hold neither NUL nor a lone surrogate
(``server.domain.text``). Rather than each resolver or service checking its own
strings, the arguments of every field of the operation are coerced as the
executor will coerce them, and every string in them, as well as every string and
key nested in a JSON scalar, is checked before anything runs. A string that
cannot be stored is ``BAD_INPUT`` naming the argument path (``after``,
``filter.labels[0].value``; inside a mutation's ``input`` object, the path from it:
``events[1].text``, ``config.harness.k\\u0000``), in dev mode too. A field added later is covered
without doing anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    BREAK,
    SKIP,
    DocumentNode,
    FieldNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    get_operation_ast,
    visit,
)
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from strawberry.extensions import SchemaExtension

from resolvers.errors import refusal
from server.domain.text import first_unstorable, storable
from server.errors import BadInputError


class _Arguments(Visitor):
    """Walks one operation (and the fragments of the document) with the schema's types,
    and stops at the first argument holding text that cannot be stored."""

    def __init__(
        self,
        type_info: TypeInfo,
        operation: OperationDefinitionNode,
        variables: VariableValues,
    ) -> None:
        super().__init__()
        self.type_info = type_info
        self.operation = operation
        self.variables = variables
        self.found: str | None = None

    def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> Any:
        return None if node is self.operation else SKIP

    def enter_field(self, node: FieldNode, *_: Any) -> Any:
        definition = self.type_info.get_field_def()
        if definition is None or not node.arguments:
            return None
        try:
            values = get_argument_values(definition, node, self.variables)
        except GraphQLError:
            return None  # the executor reports an argument that does not coerce
        for name, value in values.items():
            # a mutation's one ``input`` object stands for its arguments: its fields are
            # named as the services name them (``summary``, ``events[0].text``)
            self.found = first_unstorable(value, "" if name == "input" else name)
            if self.found is not None:
                return BREAK
        return None


def unstorable_argument(
    schema: GraphQLSchema,
    document: DocumentNode,
    variables: Mapping[str, Any] | None,
    operation_name: str | None,
    query: str | None = None,
) -> str | None:
    """The path of the first argument of the operation holding a NUL or a lone
    surrogate, after coercion; ``None`` if there is none (or if the variables do not
    coerce, which the executor then reports).

    Arguments are made of the variables, the document's literals and the schema's
    defaults: when no variable holds such text and the document's text (``query``)
    cannot spell it, there is nothing to look for, and the walk (about a millisecond)
    is skipped."""
    if (
        query is not None
        and "\\u" not in query  # a literal spells a NUL only as an escape
        and storable(query)
        and first_unstorable(variables or {}) is None
    ):
        return None
    operation = get_operation_ast(document, operation_name)
    if operation is None:
        return None
    coerced = get_variable_values(
        schema, operation.variable_definitions or (), dict(variables or {})
    )
    if isinstance(coerced, list):
        return None
    type_info = TypeInfo(schema)
    arguments = _Arguments(type_info, operation, coerced)
    visit(document, TypeInfoVisitor(type_info, arguments))
    return arguments.found


class StorableText(SchemaExtension):
    """Refuses, before any resolver runs, an operation whose arguments hold text that
    PostgreSQL cannot store (see the module docstring)."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        if context.result is None and context.graphql_document is not None:
            at = unstorable_argument(
                context.schema._schema,
                context.graphql_document,
                context.variables,
                context.operation_name,
                context.query,
            )
            if at is not None:
                error = BadInputError(
                    f"{at} must be text without NUL characters or lone surrogates", field=at
                )
                context.result = refusal(error)
        yield
