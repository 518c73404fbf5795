"""The cost limit of a GraphQL document (docs/security.md): the fields it may resolve,
counted before any resolver runs, where a connection asked for ``first: n`` multiplies
what is under it by n."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
)
from strawberry.extensions import SchemaExtension

from resolvers.errors import refusal
from server.errors import BadInputError
from server.settings import Settings


def _argument(field: FieldNode, name: str, variables: Mapping[str, Any]) -> Any:
    """The value of an argument that multiplies what a field returns (a connection's
    ``first``, a search's ``limit``): a literal or a variable's; ``None`` otherwise."""
    for argument in field.arguments or ():
        if argument.name.value != name:
            continue
        value = argument.value
        if isinstance(value, IntValueNode):
            return int(value.value)
        if isinstance(value, VariableNode):
            return variables.get(value.name.value)
        return None
    return None


class _Cost:
    """Counts the fields a document may resolve: a field under a connection asked for
    ``first: n`` counts n times (once per node), nested connections multiply."""

    def __init__(
        self,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        *,
        maximum: int,
        max_page_size: int,
    ) -> None:
        self.fragments = fragments
        self.variables = variables
        self.maximum = maximum
        self.max_page_size = max_page_size
        self.total = 0

    def walk(self, selection_set: SelectionSetNode, times: int, seen: frozenset[str]) -> None:
        for selection in selection_set.selections:
            if self.total > self.maximum:
                return
            if isinstance(selection, FieldNode):
                self.total += times
                if selection.selection_set is not None:
                    self.walk(selection.selection_set, times * self._multiplier(selection), seen)
            elif isinstance(selection, InlineFragmentNode):
                self.walk(selection.selection_set, times, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.fragments.get(name)
                if fragment is not None and name not in seen:
                    self.walk(fragment.selection_set, times, seen | {name})

    def _multiplier(self, field: FieldNode) -> int:
        first = _argument(field, "first", self.variables)
        if isinstance(first, int) and not isinstance(first, bool):
            if not 1 <= first <= self.max_page_size:
                raise BadInputError(
                    f"first must be from 1 to {self.max_page_size}", field=field.name.value
                )
            return first
        limit = _argument(field, "limit", self.variables)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 1:
            return min(limit, self.max_page_size)
        return 1


def document_cost(
    document: Any,
    variables: Mapping[str, Any] | None,
    *,
    maximum: int,
    max_page_size: int,
) -> int:
    """The cost of the costliest operation of a parsed document; stops counting once
    past ``maximum``. Raises BAD_INPUT for a ``first`` outside 1..max_page_size."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    worst = 0
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            # a variable left out takes its default (`$first: Int = 100`): count that
            given = {**_defaults(definition), **(variables or {})}
            cost = _Cost(fragments, given, maximum=maximum, max_page_size=max_page_size)
            cost.walk(definition.selection_set, 1, frozenset())
            worst = max(worst, cost.total)
    return worst


def _defaults(operation: OperationDefinitionNode) -> dict[str, Any]:
    """The integer defaults of the operation's variables (the only ones that multiply)."""
    return {
        d.variable.name.value: int(d.default_value.value)
        for d in operation.variable_definitions or ()
        if isinstance(d.default_value, IntValueNode)
    }


def cost_limiter(settings: Settings) -> Callable[[], SchemaExtension]:
    """An extension that refuses a valid document whose cost is over the limit, or whose
    ``first`` is out of range, after validation and before execution."""

    class QueryCostLimiter(SchemaExtension):
        def on_execute(self) -> Iterator[None]:
            context = self.execution_context
            if context.result is None and context.graphql_document is not None:
                try:
                    cost = document_cost(
                        context.graphql_document,
                        context.variables,
                        maximum=settings.max_query_cost,
                        max_page_size=settings.max_page_size,
                    )
                    if cost > settings.max_query_cost:
                        raise BadInputError(
                            f"the query may resolve more than {settings.max_query_cost} fields; "
                            "ask for smaller pages or fewer nested connections",
                            field="first",
                        )
                except BadInputError as exc:
                    context.result = refusal(exc)
            yield

    return QueryCostLimiter
