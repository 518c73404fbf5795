"""A search and what it records, in one statement (R12, R26, R41, R43).

The statement of a ``search_memory`` call with a query, built once per shape and sent
through psycopg with its values as parameters (``$n``, no text converted per call), its
rows read as plain dataclasses (:mod:`server.models.rows`):

- ``scope``: the call's turn held open for the call (``FOR KEY SHARE``, as
  :func:`server.services.turn_scope.open_turn` holds it) with its calling execution
  and model call, and whether they are what a tool call needs (``ok``);
- ``ranked``: the ranking of :mod:`server.memory_search.statement`, as text, its values
  by name; ``found``: each hit's version and record, best first;
- ``output``: the call's output, each record as :meth:`Found.to_json` writes it;
- ``allocated``, ``execution``, ``usage``, ``events``, ``uses``: what the call records,
  as :mod:`server.services.tool_ledger` writes it for every tool call: its execution
  (input and output), the query embedding's ``embed`` usage and its ``usage`` event, the
  ``tool.result`` event, one RETRIEVED use per version found; written only when the
  turn is open and the caller may call the tool.

The caller knows the turn's facts (its configuration, its reader:
:func:`server.services.turn_scope.known_turn`) before it sends anything, so the
statement goes with the ranking's generic plan setting in one round trip, and the
turn's state is checked where it is held. A call the statement refuses (the turn is
closed, the caller is another turn's) wrote nothing; the error says why, as
:func:`server.services.turn_scope.open_scope` says it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pgvector import Vector
from psycopg import AsyncConnection, AsyncRawCursor
from psycopg.types.json import Jsonb
from sqlalchemy.dialects.postgresql import psycopg as postgresql_psycopg
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.config import SEARCH_TOOL
from server.errors import BadInputError, ConflictError, NotFoundError
from server.memory_search.ranking import Found, path_of
from server.memory_search.statement import GENERIC_PLAN, MemoryQuery, ranking_statement
from server.models.rows import ExecutionRow, RecordRow, VersionRow, width
from server.services.turn_scope import TurnFacts
from server.session import SerialSession
from server.storage.built import built_once
from server.storage.owners import on_citus, remember

_DIALECT = postgresql_psycopg.dialect()  # type: ignore[no-untyped-call]
_NAME = re.compile(r"%\((\w+)\)s")
_GENERIC_PLAN = str(GENERIC_PLAN)


@dataclass(frozen=True, slots=True)
class Call:
    """Who calls: the turn, the calling execution (None: the turn's own) and the model
    call that asked, as the tool's input names them; and what it asked."""

    turn_id: uuid.UUID
    caller_id: uuid.UUID | None
    invocation_id: uuid.UUID | None
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Searched:
    """The call's execution as written, and the records it found, best first."""

    execution: ExecutionRow
    items: list[Found]


@dataclass(frozen=True, slots=True)
class _Shape:
    by_caller: bool
    invocation: bool
    embedded: bool


@dataclass(frozen=True, slots=True)
class _Text:
    """A statement with ``$n`` placeholders, the names they stand for, and the values of
    the names the caller does not give (a preset's constants)."""

    sql: str
    names: tuple[str, ...]
    defaults: dict[str, Any]

    def values(self, given: dict[str, Any]) -> list[Any]:
        return [given[n] if n in given else self.defaults[n] for n in self.names]


_ISO = """to_char({t}, 'YYYY-MM-DD"T"HH24:MI:SS')
  || CASE WHEN extract(microseconds FROM {t})::bigint % 1000000 = 0 THEN ''
          ELSE to_char({t}, '.US') END
  || to_char({t}, 'TZH:TZM')"""
"""A timestamp as Python's ``datetime.isoformat()`` writes it."""

_SEARCH = """WITH scope AS MATERIALIZED (
  SELECT t.status, c.id AS caller, c.kind AS caller_kind, c.turn_id = t.id AS caller_here,
         {invocation_ok} AS invocation_ok
  FROM turns t
  LEFT JOIN executions c ON c.agent_id = t.agent_id AND {caller_is}
  WHERE t.id = %(call_turn)s AND t.agent_id = %(call_agent)s
  FOR KEY SHARE OF t
),
ok AS (
  SELECT caller FROM scope
  WHERE status = 'open' AND caller_here AND caller_kind <> 'tool' AND invocation_ok
),
ranked AS ({ranking}),
found AS MATERIALIZED (
  SELECT {version}, {record}, ranked.score, ranked.cosine, ranked.lexical,
         ranked.meaning, ranked.keywords,
         row_number() OVER (ORDER BY ranked.score DESC, ranked.created_at DESC, ranked.key)
           AS rank
  FROM ranked
  JOIN memory_versions v ON v.id = ranked.key AND v.agent_id = %(call_agent)s
  JOIN memory_records r ON r.id = v.record_id AND r.agent_id = v.agent_id
),
output AS (
  SELECT jsonb_build_object('records', coalesce(jsonb_agg(jsonb_build_object(
    'id', f.r_id, 'version', f.id, 'scope', f.r_scope, 'kind', f.kind,
    'summary', f.summary, 'content', f.content, 'labels', f.labels,
    'createdAt', {created_at}, 'score', f.score) ORDER BY f.rank), '[]'::jsonb)) AS value
  FROM found f
),
allocated AS (
  UPDATE turns SET event_seq = event_seq + {events}
  WHERE id = %(call_turn)s AND agent_id = %(call_agent)s AND EXISTS (SELECT FROM ok)
  RETURNING event_seq
),
execution AS (
  INSERT INTO executions (id, agent_id, turn_id, parent_id, kind, name, status, input,
                          output, created_at, ended_at)
  SELECT %(call_execution)s, %(call_agent)s, %(call_turn)s, ok.caller, 'tool',
         %(call_name)s, 'succeeded', %(call_input)s, (SELECT value FROM output),
         statement_timestamp(), statement_timestamp()
  FROM ok
  RETURNING {execution}
),{usage}
events AS (
  INSERT INTO transcript_events (id, agent_id, turn_id, execution_id, sequence, type,
                                 payload, tool_name)
  SELECT e.id, %(call_agent)s, %(call_turn)s, %(call_execution)s,
         a.event_seq - {events} + e.n, e.type, e.payload, e.tool_name
  FROM allocated a, ({event_rows}) AS e (id, n, type, payload, tool_name)
),
uses AS (
  INSERT INTO output_uses (id, agent_id, execution_id, kind, memory_version_id, rank)
  SELECT (%(call_uses)s::uuid[])[f.rank], %(call_agent)s, %(call_execution)s, 'RETRIEVED',
         f.id, f.rank
  FROM found f, ok
)
SELECT s.status, s.caller_kind, s.caller_here, s.invocation_ok, e.*, f.*
FROM scope s
LEFT JOIN execution e ON true
LEFT JOIN found f ON e.id IS NOT NULL
ORDER BY f.rank
"""

_USAGE = """
usage AS (
  INSERT INTO invocations (id, agent_id, execution_id, purpose, model, input_tokens,
                           output_tokens, counted)
  SELECT %(call_invocation_made)s, %(call_agent)s, %(call_execution)s, 'embed',
         %(call_model)s, %(call_tokens)s, 0, false
  FROM ok
),"""


@built_once
def _compiled(ranking: Any) -> tuple[str, dict[str, Any]]:
    """The ranking statement's text, with its placeholders by name, and its constants."""
    compiled = ranking.compile(dialect=_DIALECT)
    return compiled.string, dict(compiled.params)


@built_once
def _text(shape: _Shape, ranking: Any) -> _Text:
    ranking_sql, defaults = _compiled(ranking)
    columns = {
        "version": ", ".join(f"v.{c.strip()}" for c in VersionRow.COLUMNS.split(",")),
        "record": ", ".join(
            f"r.{c.strip()} AS r_{c.strip()}" for c in RecordRow.COLUMNS.split(",")
        ),
    }
    events = 2 if shape.embedded else 1
    result = (
        "(%(call_result_event)s::uuid, {n}, 'tool.result', (SELECT value FROM output),"
        " %(call_name)s)"
    )
    usage_event = "(%(call_usage_event)s::uuid, 1, 'usage', %(call_usage)s::jsonb, NULL)"
    rows = (
        f"VALUES {usage_event}, {result.format(n=2)}"
        if shape.embedded
        else (f"VALUES {result.format(n=1)}")
    )
    sql = _SEARCH.format(
        invocation_ok=(
            "EXISTS (SELECT FROM invocations i WHERE i.id = %(call_invocation)s"
            " AND i.agent_id = t.agent_id AND i.execution_id = c.id)"
            if shape.invocation
            else "true"
        ),
        caller_is=(
            "c.id = %(call_caller)s" if shape.by_caller else "c.turn_id = t.id AND c.kind = 'turn'"
        ),
        ranking=ranking_sql,
        created_at=_ISO.format(t="f.created_at"),
        events=events,
        execution=ExecutionRow.COLUMNS,
        usage=_USAGE if shape.embedded else "",
        event_rows=rows,
        **columns,
    )
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    # the compiled ranking writes a literal % as %%; the placeholders become $n
    numbered = _NAME.sub(number, sql).replace("%%", "%")
    return _Text(numbered, tuple(names), defaults)


async def search(
    db: AsyncSession,
    *,
    facts: TurnFacts,
    call: Call,
    query: MemoryQuery,
    tokens: int | None,
    model: str,
) -> Searched:
    """Rank ``query`` for the call's turn and record the call, in one statement; the
    execution as written and the records found. Raises what
    :func:`server.services.turn_scope.open_scope` raises for a turn that is not open or a
    caller that may not call the tool, and then nothing was written."""
    reader = facts.reader
    if query.mode != "lexical" and query.path is None:
        query = replace(query, path=await path_of(db, reader.agent_id))
    ranking, values = ranking_statement(reader, query, now=datetime.now(UTC))
    shape = _Shape(
        by_caller=call.caller_id is not None,
        invocation=call.invocation_id is not None,
        embedded=tokens is not None,
    )
    text = _text(shape, ranking)
    execution_id = uuid.uuid4()
    given: dict[str, Any] = {
        **values,
        "q": None if query.vector is None else Vector(list(query.vector)),
        "call_turn": call.turn_id,
        "call_agent": facts.agent_id,
        "call_caller": call.caller_id,
        "call_invocation": call.invocation_id,
        "call_execution": execution_id,
        "call_name": SEARCH_TOOL,
        "call_input": Jsonb(call.input),
        "call_result_event": uuid.uuid4(),
        "call_uses": [uuid.uuid4() for _ in range(query.limit)],
    }
    if "filter_labels" in given:
        given["filter_labels"] = Jsonb(given["filter_labels"])
    if tokens is not None:
        made = uuid.uuid4()
        given.update(
            call_invocation_made=made,
            call_model=model,
            call_tokens=tokens,
            call_usage_event=uuid.uuid4(),
            # named, and valued, as the Invocation type shows them
            call_usage=Jsonb(
                {
                    "purpose": "EMBED",
                    "model": model,
                    "inputTokens": tokens,
                    "invocationId": str(made),
                    "counted": False,
                }
            ),
        )
    generic = not on_citus(db)  # Citus cannot plan it generic (docs/scaling.md)

    async def send(connection: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
        cursor = AsyncRawCursor(connection)
        if generic:
            await cursor.execute(_GENERIC_PLAN)
        await cursor.execute(text.sql, text.values(given), prepare=True)
        return await cursor.fetchall()

    assert isinstance(db, SerialSession)
    rows = await db.on_driver(send)
    _refused(rows, call)
    execution = ExecutionRow(*rows[0][4 : 4 + width(ExecutionRow)])
    remember(db, execution.id, execution.agent_id)  # the call's answer names it
    return Searched(
        execution=execution, items=[_found(row) for row in rows if row[_FOUND] is not None]
    )


def _refused(rows: Sequence[tuple[Any, ...]], call: Call) -> None:
    """The error of a call the statement did not record, as ``open_scope`` says it."""
    if not rows:
        raise NotFoundError(f"no turn with id {call.turn_id}")
    status, caller_kind, caller_here, invocation_ok = rows[0][:4]
    if status != "open":
        raise ConflictError(f"turn {call.turn_id} is {status}, not open")
    if call.caller_id is not None:
        if not caller_here:
            raise NotFoundError(f"no execution {call.caller_id} in this turn")
        if caller_kind == "tool":
            raise BadInputError("a native tool call cannot call tools", field="executionId")
    if not invocation_ok:
        raise NotFoundError(
            f"no invocation {call.invocation_id} in the calling execution", field="invocationId"
        )


_FOUND = 4 + width(ExecutionRow)
_RECORD = _FOUND + width(VersionRow)
_SCORES = _RECORD + width(RecordRow)


def _found(row: tuple[Any, ...]) -> Found:
    score, cosine, lexical, meaning, keywords = row[_SCORES : _SCORES + 5]
    return Found(
        version=VersionRow(*row[_FOUND:_RECORD]),
        record=RecordRow(*row[_RECORD:_SCORES]),
        score=float(score),
        cosine=None if cosine is None else float(cosine),
        lexical=None if lexical is None else float(lexical),
        terms=None if meaning is None else (float(meaning), float(keywords)),
    )


__all__ = ["Call", "Searched", "search"]
