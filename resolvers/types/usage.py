"""What model calls used and cost (:mod:`server.domain.usage`): totals of a turn, a
session or an agent, by model, and an agent's work day by day."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

import strawberry

from server.domain.usage import ModelTotals, Price, Totals
from server.services.usage import Day

_COST = (
    "In the currency of the server's price table (AGENT_MEMORY_MODEL_PRICES, per million "
    "tokens); null when the table prices none of the calls."
)
_LATENCY = (
    "The latencies the runtime gave (recordInvocation's latencyMs), added up; null when "
    "no call gave one."
)


@strawberry.type(name="ModelUsage", description="The model calls of one model.")
class ModelUsageType:
    totals: strawberry.Private[ModelTotals]
    prices: strawberry.Private[Mapping[str, Price]]

    @strawberry.field(description="The model's name, as recorded.")
    def model(self) -> str:
        return self.totals.model

    @strawberry.field(description="How many calls.")
    def calls(self) -> int:
        return self.totals.calls

    @strawberry.field(description="Tokens the model read.")
    def input_tokens(self) -> int:
        return self.totals.input_tokens

    @strawberry.field(description="Tokens the model wrote.")
    def output_tokens(self) -> int:
        return self.totals.output_tokens

    @strawberry.field(description=_LATENCY)
    def latency_ms(self) -> int | None:
        return self.totals.latency_ms if self.totals.timed else None

    @strawberry.field(description=_COST)
    def cost(self) -> float | None:
        return self.totals.cost(self.prices)


@strawberry.type(
    name="Usage",
    description="Model calls added up: those the runtime recorded (purposes TURN and "
    "MEMORY); the server's own embeddings (EMBED), which no limit counts, are not.",
)
class UsageType:
    totals: strawberry.Private[Totals]

    @classmethod
    def of(cls, rows: list[ModelTotals], prices: Mapping[str, Price]) -> UsageType:
        return cls(totals=Totals.of(rows, prices))

    @strawberry.field(description="How many model calls.")
    def calls(self) -> int:
        return self.totals.calls

    @strawberry.field(description="Tokens the models read.")
    def input_tokens(self) -> int:
        return self.totals.input_tokens

    @strawberry.field(description="Tokens the models wrote.")
    def output_tokens(self) -> int:
        return self.totals.output_tokens

    @strawberry.field(description=_LATENCY)
    def latency_ms(self) -> int | None:
        return self.totals.latency_ms

    @strawberry.field(description=_COST + " Only the priced calls are counted: see unpricedCalls.")
    def cost(self) -> float | None:
        return self.totals.cost

    @strawberry.field(description="How many calls are of a model the price table does not name.")
    def unpriced_calls(self) -> int:
        return self.totals.unpriced_calls

    @strawberry.field(description="The same, model by model, the most used first.")
    def by_model(self) -> list[ModelUsageType]:
        return [ModelUsageType(totals=m, prices=self.totals.prices) for m in self.totals.by_model]


@strawberry.type(name="DayActivity", description="An agent's work on one UTC day.")
class DayActivityType:
    found: strawberry.Private[Day]

    @strawberry.field(description="The day (UTC).")
    def day(self) -> date:
        return self.found.day

    @strawberry.field(description="Turns begun, every attempt.")
    def turns(self) -> int:
        return self.found.turns

    @strawberry.field(description="Model calls the runtime recorded.")
    def calls(self) -> int:
        return self.found.calls

    @strawberry.field(description="Tokens the models read.")
    def input_tokens(self) -> int:
        return self.found.input_tokens

    @strawberry.field(description="Tokens the models wrote.")
    def output_tokens(self) -> int:
        return self.found.output_tokens


@strawberry.type(name="DayMemory", description="An agent's memory on one UTC day.")
class DayMemoryType:
    found: strawberry.Private[Day]

    @strawberry.field(description="The day (UTC).")
    def day(self) -> date:
        return self.found.day

    @strawberry.field(description="Memory records its committed turns created.")
    def records(self) -> int:
        return self.found.records
