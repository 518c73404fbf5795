"""A search or a recall and what it records, in one statement (R12, R26, R41-R43).

The statement of a ``search_memory`` call with a query, and of a recall, built once per
shape and sent through psycopg with its values as parameters (``$n``: no text converted
per call), its rows read as plain dataclasses (:mod:`server.models.rows`):

- ``scope``: the call's turn held open for the call (``FOR KEY SHARE``, as
  :func:`server.services.turn_scope.open_turn` holds it) with its calling execution
  and model call, and whether they are what a tool call needs (``ok``);
- ``ranked``: the ranking of :mod:`server.memory_search.statement`, as text, its values
  by name; ``found``: each hit's version and record, best first;
- a recall's repeat check (R42): the digest of the versions found
  (:func:`server.memory_search.recall.version_set_digest`, computed alike) and the
  conversation's recorded recall of that digest (``repeat``, one index probe); a recall
  is recorded (``recording``) when it found something that was not put before the
  conversation yet; a search always is;
- ``output``: the call's output, each record as :meth:`Found.to_json` writes it;
- ``allocated``, ``execution``, ``usage``, ``events``, ``uses``: what the call records,
  as :mod:`server.services.tool_ledger` writes it for every tool call: its execution
  (input and output; a recall's digest), the query embedding's ``embed`` usage and its
  ``usage`` event (on the caller's execution when a recall is not recorded), the
  ``tool.result`` event, one RETRIEVED use per version found; nothing unless the turn
  is open and the caller may call the tool.

The caller knows the turn's facts (its configuration, its reader:
:func:`server.services.turn_scope.known_turn`) before it sends anything. A search sends
the ranking's generic plan setting, then the statement. A recall first locks its
conversation (the caller's execution row, ``FOR NO KEY UPDATE``), in a statement that
also sets the generic plan, so that its repeat check, in the next statement, sees every
earlier recall of the conversation. Both go in one round trip
(psycopg's pipeline mode): the database runs them in order. A call the statement refuses
(the turn is closed, the caller is another turn's) wrote nothing; the error says why, as
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
    """The records found, best first; the call's execution as written (None: a recall
    not recorded), and for a recall that repeats, the earlier recall it repeats."""

    items: list[Found]
    execution: ExecutionRow | None
    repeat_of: ExecutionRow | None = None


@dataclass(frozen=True, slots=True)
class Recall:
    """What makes a call a recall: its marking in the output (R44)."""

    kind: str
    notice: str


@dataclass(frozen=True, slots=True)
class _Shape:
    by_caller: bool
    invocation: bool
    embedded: bool
    recall: bool


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

# the call's turn and caller, as open_scope finds them
_CALLER_IS = {
    True: "c.id = %(call_caller)s",
    False: "c.turn_id = t.id AND c.kind = 'turn'",
}

_HOLD = """SELECT {setting}
FROM turns t
JOIN executions c ON c.agent_id = t.agent_id AND {caller_is}
WHERE t.id = %(call_turn)s AND t.agent_id = %(call_agent)s
FOR KEY SHARE OF t FOR NO KEY UPDATE OF c"""
"""A recall's conversation held until its transaction ends (R42): one recall of a
conversation at a time."""

_STATEMENT = """WITH scope AS MATERIALIZED (
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
),{repeat}
output AS (
  SELECT jsonb_build_object({marking}'records', coalesce(jsonb_agg(jsonb_build_object(
    'id', f.r_id, 'version', f.id, 'scope', f.r_scope, 'kind', f.kind,
    'summary', f.summary, 'content', f.content, 'labels', f.labels,
    'createdAt', {created_at}, 'score', f.score) ORDER BY f.rank), '[]'::jsonb)) AS value
  FROM found f
),
planned AS (
  SELECT e.*, row_number() OVER (ORDER BY e.type = 'tool.result') AS n
  FROM ({events}) AS e (id, type, payload, tool_name, execution_id)
),
allocated AS (
  UPDATE turns SET event_seq = event_seq + (SELECT count(*) FROM planned)
  WHERE id = %(call_turn)s AND agent_id = %(call_agent)s AND EXISTS (SELECT FROM planned)
  RETURNING event_seq
),
execution AS (
  INSERT INTO executions (id, agent_id, turn_id, parent_id, kind, name, status, input,
                          output, created_at, ended_at, recall_digest)
  SELECT %(call_execution)s, %(call_agent)s, %(call_turn)s, recording.caller, 'tool',
         %(call_name)s, 'succeeded', %(call_input)s, (SELECT value FROM output),
         statement_timestamp(), statement_timestamp(), {digest}
  FROM recording
  RETURNING {execution}
),{usage}
events AS (
  INSERT INTO transcript_events (id, agent_id, turn_id, execution_id, sequence, type,
                                 payload, tool_name)
  SELECT p.id, %(call_agent)s, %(call_turn)s, p.execution_id,
         a.event_seq - (SELECT count(*) FROM planned) + p.n, p.type, p.payload, p.tool_name
  FROM allocated a, planned p
),
uses AS (
  INSERT INTO output_uses (id, agent_id, execution_id, kind, memory_version_id, rank)
  SELECT (%(call_uses)s::uuid[])[f.rank], %(call_agent)s, %(call_execution)s, 'RETRIEVED',
         f.id, f.rank
  FROM found f, recording
)
SELECT s.status, s.caller_kind, s.caller_here, s.invocation_ok, e.*, {repeated}, f.*
FROM scope s
LEFT JOIN execution e ON true{repeat_join}
LEFT JOIN found f ON EXISTS (SELECT FROM ok)
ORDER BY f.rank"""

_SEARCHED = """
recording AS (SELECT caller FROM ok),"""
"""A search is recorded whatever it found."""

_RECALLED = """
digest AS (
  SELECT count(*) AS n,
         sha256(coalesce(string_agg(uuid_send(f.id), ''::bytea ORDER BY f.id), ''::bytea))
           AS value
  FROM found f
),
repeat AS MATERIALIZED (
  SELECT {execution}
  FROM executions e, ok, digest d
  WHERE e.agent_id = %(call_agent)s AND e.parent_id = ok.caller
    AND e.recall_digest = d.value AND d.n > 0
  ORDER BY e.created_at
  LIMIT 1
),
recording AS (
  SELECT ok.caller FROM ok, digest d WHERE d.n > 0 AND NOT EXISTS (SELECT FROM repeat)
),"""
"""A recall is recorded when it found versions not put before the conversation yet."""

_USAGE = """
usage AS (
  INSERT INTO invocations (id, agent_id, execution_id, purpose, model, input_tokens,
                           output_tokens, counted)
  SELECT %(call_invocation_made)s, %(call_agent)s,
         CASE WHEN EXISTS (SELECT FROM recording) THEN %(call_execution)s ELSE ok.caller END,
         'embed', %(call_model)s, %(call_tokens)s, 0, false
  FROM ok
),"""
"""The query's embedding (R43): on the call's execution, or on its caller's when a recall
is not recorded."""

_USAGE_EVENT = """SELECT %(call_usage_event)s::uuid, 'usage', %(call_usage)s::jsonb, NULL,
         CASE WHEN EXISTS (SELECT FROM recording) THEN %(call_execution)s ELSE ok.caller END
  FROM ok"""
_RESULT_EVENT = """SELECT %(call_result_event)s::uuid, 'tool.result', (SELECT value FROM output),
         %(call_name)s, %(call_execution)s::uuid
  FROM recording"""


@built_once
def _compiled(ranking: Any) -> tuple[str, dict[str, Any]]:
    """The ranking statement's text, with its placeholders by name, and its constants."""
    compiled = ranking.compile(dialect=_DIALECT)
    return compiled.string, dict(compiled.params)


def _numbered(sql: str, defaults: dict[str, Any] | None = None) -> _Text:
    """``sql`` with ``%(name)s`` placeholders as ``$n`` (a compiled statement's literal
    ``%%`` as ``%``)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _Text(_NAME.sub(number, sql).replace("%%", "%"), tuple(names), defaults or {})


@built_once
def _hold(by_caller: bool, generic: bool) -> _Text:
    setting = "set_config('plan_cache_mode', 'force_generic_plan', true)" if generic else "1"
    return _numbered(_HOLD.format(setting=setting, caller_is=_CALLER_IS[by_caller]))


@built_once
def _text(shape: _Shape, ranking: Any) -> _Text:
    ranking_sql, defaults = _compiled(ranking)
    version = ", ".join(f"v.{c.strip()}" for c in VersionRow.COLUMNS.split(","))
    record = ", ".join(f"r.{c.strip()} AS r_{c.strip()}" for c in RecordRow.COLUMNS.split(","))
    events = [_USAGE_EVENT] if shape.embedded else []
    events.append(_RESULT_EVENT)
    repeat_columns = ", ".join(f"e.{c.strip()}" for c in ExecutionRow.COLUMNS.split(","))
    nulls = ", ".join("NULL" for _ in range(width(ExecutionRow)))
    sql = _STATEMENT.format(
        invocation_ok=(
            "EXISTS (SELECT FROM invocations i WHERE i.id = %(call_invocation)s"
            " AND i.agent_id = %(call_agent)s AND i.execution_id = c.id)"
            if shape.invocation
            else "true"
        ),
        caller_is=_CALLER_IS[shape.by_caller],
        ranking=ranking_sql,
        version=version,
        record=record,
        repeat=_RECALLED.format(execution=repeat_columns) if shape.recall else _SEARCHED,
        marking="'kind', %(call_kind)s::text, 'notice', %(call_notice)s::text, "
        if shape.recall
        else "",
        created_at=_ISO.format(t="f.created_at"),
        events="\n  UNION ALL ".join(events),
        digest="(SELECT value FROM digest)" if shape.recall else "NULL",
        execution=ExecutionRow.COLUMNS,
        usage=_USAGE if shape.embedded else "",
        repeated="r.*" if shape.recall else nulls,
        repeat_join="\nLEFT JOIN repeat r ON true" if shape.recall else "",
    )
    return _numbered(sql, defaults)


async def run(
    db: AsyncSession,
    *,
    facts: TurnFacts,
    call: Call,
    query: MemoryQuery,
    tokens: int | None,
    model: str,
    recall: Recall | None = None,
) -> Searched:
    """Rank ``query`` for the call's turn and record the call, in one statement; what it
    found and recorded. Raises what :func:`server.services.turn_scope.open_scope` raises
    for a turn that is not open or a caller that may not call the tool, and then nothing
    was written."""
    if query.mode != "lexical" and query.path is None:
        query = replace(query, path=await path_of(db, facts.agent_id))
    ranking, values = ranking_statement(facts.reader, query, now=datetime.now(UTC))
    shape = _Shape(
        by_caller=call.caller_id is not None,
        invocation=call.invocation_id is not None,
        embedded=tokens is not None,
        recall=recall is not None,
    )
    text = _text(shape, ranking)
    given = _values(facts, call, query, values, tokens, model, recall)
    generic = not on_citus(db)  # Citus cannot plan it generic (docs/scaling.md)
    hold = _hold(shape.by_caller, generic) if recall is not None else None

    async def send(connection: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
        first, cursor = AsyncRawCursor(connection), AsyncRawCursor(connection)
        async with connection.pipeline():  # one round trip
            if hold is not None:
                await first.execute(hold.sql, hold.values(given), prepare=True)
            elif generic:
                await first.execute(_GENERIC_PLAN)
            await cursor.execute(text.sql, text.values(given), prepare=True)
        return await cursor.fetchall()

    assert isinstance(db, SerialSession)
    rows = await db.on_driver(send)
    _refused(rows, call)
    first = rows[0]
    execution = _execution(first[_EXECUTION:_REPEAT])
    if execution is not None:
        remember(db, execution.id, execution.agent_id)  # the call's answer names it
    return Searched(
        items=[_found(row) for row in rows if row[_FOUND] is not None],
        execution=execution,
        repeat_of=_execution(first[_REPEAT:_FOUND]),
    )


def _values(
    facts: TurnFacts,
    call: Call,
    query: MemoryQuery,
    ranking: dict[str, Any],
    tokens: int | None,
    model: str,
    recall: Recall | None,
) -> dict[str, Any]:
    given: dict[str, Any] = {
        **ranking,
        "q": None if query.vector is None else Vector(list(query.vector)),
        "call_turn": call.turn_id,
        "call_agent": facts.agent_id,
        "call_caller": call.caller_id,
        "call_invocation": call.invocation_id,
        "call_execution": uuid.uuid4(),
        "call_name": SEARCH_TOOL,
        "call_input": Jsonb(call.input),
        "call_result_event": uuid.uuid4(),
        "call_uses": [uuid.uuid4() for _ in range(query.limit)],
    }
    if "filter_labels" in given:
        given["filter_labels"] = Jsonb(given["filter_labels"])
    if recall is not None:
        given.update(call_kind=recall.kind, call_notice=recall.notice)
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
    return given


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


_EXECUTION = 4
_REPEAT = _EXECUTION + width(ExecutionRow)
_FOUND = _REPEAT + width(ExecutionRow)
_RECORD = _FOUND + width(VersionRow)
_SCORES = _RECORD + width(RecordRow)


def _execution(columns: tuple[Any, ...]) -> ExecutionRow | None:
    return None if columns[0] is None else ExecutionRow(*columns)


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


__all__ = ["Call", "Recall", "Searched", "run"]
