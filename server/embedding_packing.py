"""Packing queued texts into forward passes: pure helpers of :class:`server.embedding.Embedder`.

A batch is padded to its longest text, and padding costs as much as text: a
text joins a pass only when the padding it adds costs less than a pass of its
own (:data:`PASS_TOKENS`), so a pass may hold fewer texts than the batch size.
Lengths are token counts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

Vector = list[float]

# What a forward pass costs beyond its tokens, counted in tokens (docs/scaling.md,
# "Figures behind the code"): a text is worth a pass of its own rather than padding
# more than this many tokens.
PASS_TOKENS = 6


@dataclass(slots=True)
class Pending:
    """A queued text: the model's input ids for it, when it first arrived, whether
    someone waits on it interactively, whether it is a search's query (its own pass on
    the query graph), and everyone waiting for its vector."""

    text: str
    ids: list[int]
    arrival: int
    urgent: bool
    query: bool = False
    futures: list[asyncio.Future[tuple[Vector, int]]] = field(default_factory=list)

    @property
    def key(self) -> tuple[bool, str]:
        return (self.query, self.text)


def settle(answers: list[tuple[asyncio.Future[Any], Any]]) -> None:
    """Answer waiting requests (in their loop): a vector and its tokens, or the error
    their pass raised; a request cancelled meanwhile is skipped."""
    for fut, value in answers:
        if fut.done():
            continue
        if isinstance(value, BaseException):
            fut.set_exception(value)
        else:
            fut.set_result(value)


def nearest(queued: list[Pending], size: int) -> list[Pending]:
    """The oldest of ``queued`` (in arrival order) and up to ``size - 1`` others nearest
    its length, older first among equals, each one only if it :func:`joins` the pass."""
    anchor, rest = queued[0], queued[1:]
    length = len(anchor.ids)
    chosen, longest = [anchor], length
    for pending in sorted(rest, key=lambda p: (abs(len(p.ids) - length), p.arrival)):
        if len(chosen) == size or abs(len(pending.ids) - length) > PASS_TOKENS:
            break
        if joins(len(pending.ids), longest, len(chosen)):
            chosen.append(pending)
            longest = max(longest, len(pending.ids))
    return chosen


def passes(lengths: list[int], size: int) -> list[list[int]]:
    """Indexes of ``lengths`` (token counts) cut into passes of at most ``size`` texts,
    in order of length, each text joining the pass before it when it :func:`joins`."""
    passes: list[list[int]] = []
    longest = 0
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if passes and len(passes[-1]) < size and joins(lengths[i], longest, len(passes[-1])):
            passes[-1].append(i)
        else:
            passes.append([i])
        longest = max(longest, lengths[i]) if len(passes[-1]) > 1 else lengths[i]
    return passes


def joins(tokens: int, longest: int, texts: int) -> bool:
    """Whether a text of ``tokens`` joins a pass of ``texts`` texts padded to ``longest``:
    when the padding it adds (its own, or the others' if it is longer) costs no more
    than a pass of its own would beyond its tokens (:data:`PASS_TOKENS`)."""
    added = longest - tokens if tokens <= longest else texts * (tokens - longest)
    return added <= PASS_TOKENS
