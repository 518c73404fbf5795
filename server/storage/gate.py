"""The visibility gate as SQL: :mod:`server.domain.visibility` turned into one condition.

Every memory query of an agent or an API reader filters through
:func:`record_condition`; nothing else filters by agent, session or preview. A
query that shows a record's text joins its version on :func:`version_in_force`,
and shows its status as :func:`effective_status`, so that a change another open
turn staged stays unseen until it commits (R12).

Searches filter versions with :func:`searchable_version`: the same decision,
read from the gate's answer kept on the version row (``search_scope``,
migration 0005) where no open turn is involved, and asked of
:func:`record_condition` for the rest.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    exists,
    false,
    func,
    literal_column,
    not_,
    or_,
    select,
)
from sqlalchemy.orm import aliased

from server.domain.visibility import Purpose, Reader
from server.models import MemoryRecord, MemoryVersion
from server.storage.built import built_once


def _staged_by_other(reader: Reader, r: Any) -> ColumnElement[bool]:
    """``staged_by_other``: a change staged by an open turn other than the reader's (R12)."""
    staged: ColumnElement[bool] = r.pending_turn_id.is_not(None)
    if reader.turn_id is not None:
        staged = and_(staged, r.pending_turn_id != reader.turn_id)
    return staged


def effective_status(reader: Reader, r: Any = MemoryRecord) -> ColumnElement[str]:
    """``effective_status``: the status this reader sees."""
    return case(
        (_staged_by_other(reader, r), func.coalesce(r.prior_status, r.status)), else_=r.status
    )


def version_in_force(reader: Reader, r: Any = MemoryRecord) -> ColumnElement[Any]:
    """``version_in_force``: the id of the version this reader sees; join versions on it."""
    return case(
        (
            _staged_by_other(reader, r),
            func.coalesce(r.prior_version_id, r.current_version_id),
        ),
        else_=r.current_version_id,
    )


def _exists(reader: Reader, r: Any) -> ColumnElement[bool]:
    """``exists_for``: the reader's agent's rows, committed or written by the reader's turn."""
    if reader.api or reader.turn_id is None:
        written = r.committed.is_(True)
    else:
        written = or_(r.committed.is_(True), r.turn_id == reader.turn_id)
    return and_(r.agent_id == reader.agent_id, written)


def _base(reader: Reader, r: Any) -> ColumnElement[bool]:
    """``base_visible``: R10, R11, R12 and the live half of R13."""
    if reader.api:
        return _exists(reader, r)
    return and_(_exists(reader, r), in_reach(reader, r))


def in_reach(reader: Reader, r: Any = MemoryRecord) -> ColumnElement[bool]:
    """R11 and the live half of R13 for a turn's reader: a scope it reads (its own
    session's, for session scope), and preview rows only for a preview reader. With
    ``agent_id`` and ``committed`` left aside, the rows it would see once written."""
    conds: list[ColumnElement[bool]] = []
    if not reader.preview:
        conds.append(r.preview.is_(False))
    scopes: list[ColumnElement[bool]] = []
    if "agent" in reader.read_scopes:
        scopes.append(r.scope == "AGENT")
    if "session" in reader.read_scopes and reader.session_id is not None:
        scopes.append(and_(r.scope == "SESSION", r.session_id == reader.session_id))
    conds.append(or_(*scopes) if scopes else false())
    return and_(*conds)


def _not_named_by_preview(reader: Reader, record_id: Any) -> ColumnElement[bool]:
    """R13 for a preview reader: no preview record it may see names this record in
    ``replaces``."""
    p = _naming_record()
    return not_(
        exists(
            select(p.id).where(p.replaces_id == record_id, p.preview.is_(True), _exists(reader, p))
        )
    )


@built_once
def _naming_record() -> Any:
    """The alias for "a preview record naming this one" (R13), made once: a fresh alias
    per query would make each query's statement, and its cache key, new."""
    return aliased(MemoryRecord, name="naming_record")


def record_condition(
    reader: Reader, *, purpose: Purpose, r: Any = MemoryRecord
) -> ColumnElement[bool]:
    """The SQL twin of ``visible_records``: true for the rows of ``r`` the reader may see."""
    conds = [_base(reader, r)]
    if reader.preview and not reader.api:
        conds.append(_not_named_by_preview(reader, r.id))
    if purpose is Purpose.SEARCH:
        conds.append(effective_status(reader, r) == "ACTIVE")
    if purpose is Purpose.CHANGE and not reader.api:
        writable = [r.scope == scope.upper() for scope in sorted(reader.write_scopes)]
        conds.append(or_(*writable) if writable else false())
    return and_(*conds)


def settled_reaches(reader: Reader, v: Any = MemoryVersion) -> list[ColumnElement[bool]]:
    """The settled versions (``search_scope`` set, migration 0005) a turn reader's search
    finds, one condition a scope it reads (R11): ``'AGENT'``, and ``'SESSION'`` of its
    own session. Over any rows with ``search_scope`` and ``session_id`` columns: the
    versions, and what is kept of them (the BM25 postings and statistics, migration
    0011). The scopes are rendered as constants, which the partial indexes of the
    postings name."""
    reaches: list[ColumnElement[bool]] = []
    if "agent" in reader.read_scopes:
        reaches.append(v.search_scope == literal_column("'AGENT'"))
    if "session" in reader.read_scopes and reader.session_id is not None:
        reaches.append(
            and_(v.search_scope == literal_column("'SESSION'"), v.session_id == reader.session_id)
        )
    return reaches


def not_named_by_preview(reader: Reader, record_id: Any) -> ColumnElement[bool] | None:
    """R13 for a preview turn's search: the record is named by no preview record it may
    see; None for any other reader."""
    if reader.api or not reader.preview:
        return None
    return _not_named_by_preview(reader, record_id)


def unsettled_version(reader: Reader, v: Any = MemoryVersion) -> ColumnElement[bool]:
    """The versions without a settled answer (``search_scope`` NULL: a record an open turn
    wrote or is changing, a preview record) that a search of ``reader`` may find: asked
    of the record, :func:`record_condition` with ``Purpose.SEARCH`` and
    :func:`version_in_force`. ``v`` has the version's ``id`` and ``record_id``."""
    r: Any = MemoryRecord
    # OFFSET 0 keeps the lookup a probe of the one record by its key, made only for an
    # unsettled version: without it the planner may hash every visible record of the agent
    # first, which costs what the column saves.
    record = (
        select(r.id)
        .where(
            r.id == v.record_id,
            record_condition(reader, purpose=Purpose.SEARCH, r=r),
            v.id == version_in_force(reader, r),
        )
        .offset(0)
    )
    return and_(v.search_scope.is_(None), exists(record))


def searchable_version(reader: Reader, v: Any = MemoryVersion) -> ColumnElement[bool]:
    """True for the versions of ``v`` a search of ``reader`` may find: the rows the gate
    (``Purpose.SEARCH``) admits, joined on :func:`version_in_force`, decided on the version
    row where it can be (R10-R14).

    ``v.search_scope`` (kept by the database, migration 0005) holds the gate's answer for a
    version of a record no open turn is writing or changing: ``'AGENT'`` or ``'SESSION'``
    (of ``v.session_id``), the scope whose readers find it; ``'NONE'``, found by nobody.
    Those rows are filtered on their own columns (:func:`settled_reaches`); only the rest
    (:func:`unsettled_version`) look up their record.
    """
    if reader.api:
        settled: ColumnElement[bool] = v.search_scope.in_(("AGENT", "SESSION"))
    else:
        reaches = settled_reaches(reader, v)
        settled = or_(*reaches) if reaches else false()
        named = not_named_by_preview(reader, v.record_id)
        if named is not None:
            settled = and_(settled, named)
    return and_(v.agent_id == reader.agent_id, or_(settled, unsettled_version(reader, v)))


def staged_version(v: Any = MemoryVersion, r: Any = MemoryRecord) -> ColumnElement[bool]:
    """A version an open turn staged (R12): of a record not yet committed, or the pending
    change a turn made to a committed one. No reader but that turn sees it, as a record's
    ``versions`` shows; the output uses that name it are hidden with it."""
    return or_(
        r.committed.is_(False),
        and_(r.pending_turn_id.is_not(None), r.pending_turn_id == v.turn_id),
    )
