"""What one request does inside the server, counted rather than timed: the statements and
round trips it sends to PostgreSQL, and the modules of the project it passes through.

- :class:`Wire`: read from libpq's trace of every connection the database's pool hands
  out while it counts, so a statement counts however it was sent (SQLAlchemy or
  psycopg, one at a time or pipelined). A *statement* is one ``Execute`` or simple
  ``Query`` message, the ``BEGIN`` psycopg sends before a transaction's first statement
  aside; a *round trip* is each time the server waits for the database's answer before
  it sends again (a pipeline's statements and its ``COMMIT`` are one).
- :func:`followed`: the modules of ``server/`` and ``resolvers/`` whose functions run
  while a root resolver runs (its own calls, the tasks it starts, their callbacks),
  and how often the call goes back into a module it had already left (a callback, a
  helper called again from below). A coroutine resumed is not a new call. The leaves
  every path calls are not counted (:data:`LEAVES`: the pure rules of
  ``server/domain/``, the tables of ``server/models/``, ``server/session.py``, the lock
  around each database call, and ``server/database.py``, the pool's check of a
  connection it hands out): a reader follows the path past them.

``bench request-path`` prints both for a search and a turn; tests bound them.
"""

from __future__ import annotations

import dis
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from psycopg import pq
from sqlalchemy import event

from server.database import Database

ROOT = Path(__file__).resolve().parents[1]
_PROJECT = tuple(f"{ROOT / top}{os.sep}" for top in ("server", "resolvers"))
LEAVES = ("server/domain/", "server/models/", "server/session.py", "server/database.py")
_GENERATOR = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE..., CO_ASYNC_GEN


@dataclass
class Wire:
    """What was sent to PostgreSQL while counting: each statement's SQL, the round trips,
    and the rows the database sent back."""

    statements: list[str] = field(default_factory=list)
    round_trips: int = 0
    rows: int = 0

    def read(self, trace: str, prepared: dict[str, str]) -> None:
        """Count one connection's ``trace``; ``prepared``: the statements it had prepared
        before, by name (the trace names them only; each connection has its own names)."""
        names = dict(prepared)
        sql = "?"
        sending = False
        lines: list[str] = []
        for line in trace.splitlines():  # a statement's text may span lines
            if line.startswith(("F\t", "B\t")) or not lines:
                lines.append(line)
            else:
                lines[-1] += " " + line.strip()
        for line in lines:
            parts = line.split("\t")
            if len(parts) < 3:
                continue
            direction, message = parts[0], parts[2]
            detail = parts[3].strip() if len(parts) > 3 else ""
            if direction == "F":
                if not sending:
                    self.round_trips += 1
                    sending = True
                if message == "Parse":
                    name, _, rest = detail.partition(" ")
                    sql = " ".join(rest[1 : rest.rfind('"')].split())
                    names[name] = sql
                elif message == "Bind":
                    statement = detail.split(" ")[1] if " " in detail else '""'
                    sql = names.get(statement, sql if statement == '""' else "?")
                elif message == "Execute" and sql != "BEGIN":  # in a pipeline, BEGIN is parsed
                    self.statements.append(sql)
                elif message == "Query" and detail != '"BEGIN"':
                    self.statements.append(detail.strip('"'))
            elif direction == "B":
                sending = False
                self.rows += message == "DataRow"


@contextmanager
def counted(database: Database) -> Iterator[Wire]:
    """The statements and round trips sent through ``database``'s pool while the block
    runs (connections taken from the pool inside it)."""
    engine = database.engine
    assert engine is not None
    wire = Wire()
    traces: list[tuple[int, str, dict[str, str]]] = []  # one per checkout, in order
    traced: dict[Any, int] = {}

    def checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        connection = dbapi_connection.driver_connection
        prepared = {
            f'"{name.decode()}"': " ".join(query.decode().split())
            for (query, _types), name in connection._prepared._names.items()
        }
        fd, path = tempfile.mkstemp(prefix="agent-memory-wire-")
        traces.append((fd, path, prepared))
        pgconn = connection.pgconn
        pgconn.trace(fd)
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        traced[pgconn] = fd

    def checkin(dbapi_connection: Any, _record: Any) -> None:
        if dbapi_connection is not None:
            pgconn = dbapi_connection.driver_connection.pgconn
            if traced.pop(pgconn, None) is not None:
                pgconn.untrace()

    event.listen(engine.sync_engine, "checkout", checkout)
    event.listen(engine.sync_engine, "checkin", checkin)
    try:
        yield wire
    finally:
        event.remove(engine.sync_engine, "checkout", checkout)
        event.remove(engine.sync_engine, "checkin", checkin)
        for pgconn in traced:
            pgconn.untrace()
        for fd, path, prepared in traces:
            os.close(fd)
            wire.read(Path(path).read_text(), prepared)
            os.unlink(path)


@dataclass
class Followed:
    """The modules a call passed through, in the order it first entered them, and the
    calls that went back into one it had already left: (module, function, from)."""

    modules: list[str] = field(default_factory=list)
    returns: list[tuple[str, str, str]] = field(default_factory=list)


def _module(frame: FrameType | None) -> str | None:
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_PROJECT):
            here = name[len(str(ROOT)) + 1 :]
            if not here.startswith(LEAVES):
                return here
        frame = frame.f_back
    return None


def _finished(frame: FrameType) -> bool:
    """Whether ``frame`` returns for good (a coroutine's frame also "returns" each time it
    waits: then it is at a yield)."""
    if frame.f_code.co_flags & _GENERATOR == 0:
        return True
    return dis.opname[frame.f_code.co_code[frame.f_lasti]] == "RETURN_VALUE"


@contextmanager
def followed(module: str, function: str) -> Iterator[Followed]:
    """The path of the next call of ``function`` in ``module`` (a path from the root, e.g.
    ``resolvers/search.py``) made while the block runs, on this thread."""
    path = Followed()
    root: list[FrameType] = []
    seen: set[int] = set()
    kept: list[FrameType] = []  # the frames of coroutines seen, so that ids stay unique

    def profile(frame: FrameType, kind: str, arg: Any) -> None:
        if kind == "return" and root and frame is root[0]:
            if _finished(frame):
                root.append(frame)  # the root returned: follow no more
            return
        if kind != "call" or len(root) > 1:
            return
        name = frame.f_code.co_filename
        if not name.startswith(_PROJECT):
            return
        if frame.f_code.co_flags & _GENERATOR:
            if id(frame) in seen:
                return  # resumed, not called
            seen.add(id(frame))
            kept.append(frame)
        here = name[len(str(ROOT)) + 1 :]
        if here.startswith(LEAVES):
            return
        if not root:
            if here != module or frame.f_code.co_name != function:
                return
            root.append(frame)
        caller = _module(frame.f_back)
        if here == caller:
            return
        if here in path.modules:
            path.returns.append((here, frame.f_code.co_name, caller or "-"))
        else:
            path.modules.append(here)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield path
    finally:
        sys.setprofile(previous)
