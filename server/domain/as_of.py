"""An agent's memory as it stood at a moment (R12, R25): what a listing shows with
``asOf``.

A record's versions are kept for ever (R25) and are written in order; a version comes
into force when it becomes visible to others: when the turn that wrote it commits
(R12), or, for a deletion through the API (R71), when that deletion is made. A turn
that rolled back or failed left no version (its rows were removed), and a turn still
open has published nothing yet. So the memory at a moment ``at`` is:

- the records whose first version was in force by ``at`` (a record created later did
  not exist yet);
- each as its newest version in force by ``at``: its status, text, kind and labels
  then; its versions up to that one;
- replaced by the record that superseded it only if it was SUPERSEDED by then.

At a turn, the moment is the turn's beginning and the reader is that turn's
(:meth:`server.domain.visibility.Reader.for_turn`, with nothing written yet): the
records it could see then, by the visibility rules (R10, R11, R13), in any status.
At a time, the reader is the API's: every record of the agent, as the listing shows.

This module is the reference; :mod:`server.storage.as_of` is the same rule in SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar


@dataclass(frozen=True, slots=True)
class VersionFacts:
    """What the rule needs of a version: its number, and when it came into force (the
    commit of its turn, or its deletion through the API); None while not in force (its
    turn is open)."""

    number: int
    in_force_from: datetime | None


V = TypeVar("V", bound=VersionFacts)


def in_force_by(version: VersionFacts, at: datetime) -> bool:
    """Whether the version was in force by ``at``."""
    return version.in_force_from is not None and version.in_force_from <= at


def version_at(versions: Iterable[V], at: datetime) -> V | None:
    """The version of a record in force at ``at``: its newest one in force by then;
    None when the record did not exist yet."""
    standing = [v for v in versions if in_force_by(v, at)]
    return max(standing, key=lambda v: v.number, default=None)
