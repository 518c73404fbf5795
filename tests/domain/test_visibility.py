"""The visibility gate as plain rules (R10-R14, R21): every combination, against an oracle.

The table crosses every fact the gate reads about one record with every kind of
reader. The expected outcome comes from :func:`expected`, written from DESIGN.md
and the spec on its own terms, not from :mod:`server.domain.visibility`. Named
cases below cover the rules that need more than one record.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from enum import Enum

import pytest

from server.domain.visibility import (
    Purpose,
    Reader,
    RecordFacts,
    effective_status,
    version_in_force,
    visible_records,
)

AGENT = uuid.UUID(int=1)
OTHER_AGENT = uuid.UUID(int=2)
SESSION = uuid.UUID(int=11)
OTHER_SESSION = uuid.UUID(int=12)
READER_TURN = uuid.UUID(int=21)
OTHER_TURN = uuid.UUID(int=22)
COMMITTED_TURN = uuid.UUID(int=23)

SCOPE_CONFIGS: tuple[frozenset[str], ...] = (
    frozenset({"session"}),
    frozenset({"agent"}),
    frozenset({"session", "agent"}),
)


class Where(Enum):
    """Where the record was written, seen from the reader's session."""

    SAME_SESSION = "same session"
    OTHER_SESSION = "other session"
    NO_READER_SESSION = "reader without session, record of a session"
    SESSIONLESS = "reader and record without session"


class Writer(Enum):
    COMMITTED = "committed"
    OWN_OPEN_TURN = "the reader's own open turn"
    OTHER_OPEN_TURN = "another open turn"


class Staged(Enum):
    """A status change on the record not yet committed: by whom."""

    NONE = "no staged change"
    BY_READER = "staged by the reader's turn"
    BY_OTHER = "staged by another open turn"


# (status in the row, staged change): a staged change always starts from ACTIVE.
STATUS_STATES: tuple[tuple[str, Staged], ...] = (
    ("ACTIVE", Staged.NONE),
    *((status, staged) for status in ("SUPERSEDED", "DELETED") for staged in Staged),
)


@dataclass(frozen=True)
class Case:
    scope: str
    where: Where
    record_preview: bool
    status: str
    staged: Staged
    writer: Writer

    def record(self, *, agent_id: uuid.UUID = AGENT) -> RecordFacts:
        session = {
            Where.SAME_SESSION: SESSION,
            Where.OTHER_SESSION: OTHER_SESSION,
            Where.NO_READER_SESSION: OTHER_SESSION,
            Where.SESSIONLESS: None,
        }[self.where]
        turn = {
            Writer.COMMITTED: COMMITTED_TURN,
            Writer.OWN_OPEN_TURN: READER_TURN,
            Writer.OTHER_OPEN_TURN: OTHER_TURN,
        }[self.writer]
        pending = {Staged.NONE: None, Staged.BY_READER: READER_TURN, Staged.BY_OTHER: OTHER_TURN}
        return RecordFacts(
            id=uuid.uuid4(),
            agent_id=agent_id,
            scope=self.scope,
            session_id=session,
            status=self.status,
            preview=self.record_preview,
            committed=self.writer is Writer.COMMITTED,
            turn_id=turn,
            pending_turn_id=pending[self.staged],
            prior_status=None if self.staged is Staged.NONE else "ACTIVE",
        )


CASES = [
    Case(scope, where, record_preview, status, staged, writer)
    for scope, where, record_preview, (status, staged), writer in itertools.product(
        ("SESSION", "AGENT"), Where, (False, True), STATUS_STATES, Writer
    )
]


def turn_reader(
    *, where: Where, preview: bool, read: frozenset[str], write: frozenset[str]
) -> Reader:
    session = None if where in (Where.NO_READER_SESSION, Where.SESSIONLESS) else SESSION
    return Reader.for_turn(
        agent_id=AGENT,
        session_id=session,
        turn_id=READER_TURN,
        preview=preview,
        read_scopes=read,
        write_scopes=write,
    )


def expected(
    case: Case,
    *,
    reader_preview: bool,
    read: frozenset[str],
    write: frozenset[str],
    purpose: Purpose,
) -> bool:
    """What DESIGN.md and the spec say a turn's reader sees of one record of its agent."""
    # R12: another open turn's record does not exist yet for anyone else.
    if case.writer is Writer.OTHER_OPEN_TURN:
        return False
    # R13: a live turn never recalls, searches, reads or deletes a preview record.
    if case.record_preview and not reader_preview:
        return False
    # R11: AGENT records need agent in scope.read; SESSION records need session in
    # scope.read and the very session that wrote them (no session has no session scope).
    if case.scope == "AGENT" and "agent" not in read:
        return False
    if case.scope == "SESSION" and ("session" not in read or case.where is not Where.SAME_SESSION):
        return False
    # R12: until it commits, a status change staged by another turn is not seen.
    seen_status = "ACTIVE" if case.staged is Staged.BY_OTHER else case.status
    # R14: recall, search and the pinned list see ACTIVE records; read_memory any status.
    if purpose is Purpose.SEARCH and seen_status != "ACTIVE":
        return False
    # R21: replace and delete reach only the scopes the agent writes.
    return not (purpose is Purpose.CHANGE and case.scope.lower() not in write)


@pytest.mark.parametrize("purpose", list(Purpose), ids=lambda p: p.name)
@pytest.mark.parametrize("write", SCOPE_CONFIGS, ids=lambda s: "write=" + "+".join(sorted(s)))
@pytest.mark.parametrize("read", SCOPE_CONFIGS, ids=lambda s: "read=" + "+".join(sorted(s)))
@pytest.mark.parametrize("reader_preview", [False, True], ids=["live", "preview"])
@pytest.mark.parametrize(
    "reader_where",
    [Where.SAME_SESSION, Where.NO_READER_SESSION],
    ids=["with-session", "no-session"],
)
def test_r11_r14_r21_every_record_shape_for_every_turn_reader(
    reader_where: Where,
    reader_preview: bool,
    read: frozenset[str],
    write: frozenset[str],
    purpose: Purpose,
) -> None:
    """R11-R14, R21: one record of the reader's agent, in every shape, for a turn reader
    of every read/write configuration, live or preview, with or without a session."""
    reader = turn_reader(where=reader_where, preview=reader_preview, read=read, write=write)
    cases = [
        c
        for c in CASES
        if (c.where in (Where.NO_READER_SESSION, Where.SESSIONLESS))
        == (reader_where is Where.NO_READER_SESSION)
    ]
    assert len(cases) == len(CASES) // 2
    mismatches = []
    for case in cases:
        record = case.record()
        got = visible_records(reader, [record], purpose=purpose) == [record]
        want = expected(
            case, reader_preview=reader_preview, read=read, write=write, purpose=purpose
        )
        if got != want:
            mismatches.append(f"{case}: gate says {got}, rules say {want}")
    assert mismatches == []


@pytest.mark.parametrize("purpose", list(Purpose), ids=lambda p: p.name)
@pytest.mark.parametrize("reader_preview", [False, True], ids=["live", "preview"])
def test_r10_another_agents_record_is_never_visible(reader_preview: bool, purpose: Purpose) -> None:
    """R10: whatever its shape and whoever reads, another agent's record never shows."""
    everything = frozenset({"session", "agent"})
    readers = [
        turn_reader(
            where=Where.SAME_SESSION, preview=reader_preview, read=everything, write=everything
        ),
        turn_reader(
            where=Where.NO_READER_SESSION, preview=reader_preview, read=everything, write=everything
        ),
        Reader.for_api(agent_id=AGENT),
    ]
    for reader, case in itertools.product(readers, CASES):
        record = case.record(agent_id=OTHER_AGENT)
        assert visible_records(reader, [record], purpose=purpose) == [], (reader, case)
    # The same shapes of the reader's own agent do show, so the check above can fail.
    assert any(visible_records(readers[0], [case.record()], purpose=purpose) for case in CASES)


@pytest.mark.parametrize("purpose", list(Purpose), ids=lambda p: p.name)
def test_r25_r71_api_reader_sees_every_committed_record_never_uncommitted(
    purpose: Purpose,
) -> None:
    """R25, R71 with R12: an API reader (Reader.for_api) sees every committed record of its
    agent, any scope, session, status, preview or live; an uncommitted one never. A search
    still keeps to ACTIVE records (R14), and an API reader has no turn, so every staged
    change is another turn's: it sees the prior status."""
    reader = Reader.for_api(agent_id=AGENT)
    for case in CASES:
        record = case.record()
        seen_status = "ACTIVE" if case.staged is not Staged.NONE else case.status
        want = case.writer is Writer.COMMITTED and (
            purpose is not Purpose.SEARCH or seen_status == "ACTIVE"
        )
        assert (visible_records(reader, [record], purpose=purpose) == [record]) is want, case


def test_table_covers_every_combination() -> None:
    """The table is the full product the rules range over (not a sample)."""
    assert len(CASES) == 2 * len(Where) * 2 * len(STATUS_STATES) * len(Writer) == 336
    assert len(set(CASES)) == len(CASES)


# -- named cases: rules that need more than one record ----------------------------------


def _record(
    *,
    scope: str = "AGENT",
    session: uuid.UUID | None = SESSION,
    status: str = "ACTIVE",
    preview: bool = False,
    committed: bool = True,
    turn: uuid.UUID = COMMITTED_TURN,
    replaces: uuid.UUID | None = None,
    pending: uuid.UUID | None = None,
    prior: str | None = None,
    agent: uuid.UUID = AGENT,
) -> RecordFacts:
    return RecordFacts(
        id=uuid.uuid4(),
        agent_id=agent,
        scope=scope,
        session_id=session,
        status=status,
        preview=preview,
        committed=committed,
        turn_id=turn,
        replaces_id=replaces,
        pending_turn_id=pending,
        prior_status=prior,
    )


def _reader(
    *,
    preview: bool,
    session: uuid.UUID | None = SESSION,
    turn: uuid.UUID = READER_TURN,
    read: tuple[str, ...] = ("session", "agent"),
    write: tuple[str, ...] = ("session", "agent"),
) -> Reader:
    return Reader.for_turn(
        agent_id=AGENT,
        session_id=session,
        turn_id=turn,
        preview=preview,
        read_scopes=read,
        write_scopes=write,
    )


def _ids(reader: Reader, records: list[RecordFacts], purpose: Purpose) -> set[uuid.UUID]:
    return {r.id for r in visible_records(reader, records, purpose=purpose)}


@pytest.mark.parametrize("purpose", list(Purpose), ids=lambda p: p.name)
def test_r13_preview_record_naming_a_record_hides_it_from_preview_readers_only(
    purpose: Purpose,
) -> None:
    """R13, R22: a preview turn replaces or deletes a live record by writing a preview record
    that names it; preview readers then no longer see the live record, live readers do
    (and never see the preview record)."""
    live = _record()
    replacement = _record(preview=True, replaces=live.id)
    marker_target = _record()
    marker = _record(preview=True, status="DELETED", replaces=marker_target.id)
    records = [live, replacement, marker_target, marker]

    assert _ids(_reader(preview=False), records, purpose) == {live.id, marker_target.id}
    preview_sees = _ids(_reader(preview=True), records, purpose)
    assert live.id not in preview_sees and marker_target.id not in preview_sees
    assert replacement.id in preview_sees
    assert (marker.id in preview_sees) is (purpose is not Purpose.SEARCH)
    # The API reader is neither: it sees every committed record (a search, the ACTIVE ones).
    api_sees = _ids(Reader.for_api(agent_id=AGENT), records, purpose)
    everything = {r.id for r in records}
    assert api_sees == (everything - {marker.id} if purpose is Purpose.SEARCH else everything)


def test_r13_hiding_follows_the_naming_record_across_scopes_and_sessions() -> None:
    """R13: like a live replacement, which supersedes its target for every reader, a preview
    record hides what it names from every preview reader, whatever the naming record's scope
    or session, and whatever that reader's scope.read."""
    target = _record(scope="AGENT", session=OTHER_SESSION)
    naming = _record(scope="SESSION", session=OTHER_SESSION, preview=True, replaces=target.id)
    for read in (("agent",), ("session", "agent")):
        reader = _reader(preview=True, read=read)
        assert target.id not in _ids(reader, [target, naming], Purpose.READ), read
        assert target.id in _ids(reader, [target], Purpose.READ), read
    assert _ids(_reader(preview=False), [target, naming], Purpose.READ) == {target.id}


def test_r12_preview_record_of_another_open_turn_hides_nothing() -> None:
    """R12, R13: an uncommitted preview record exists only for its own turn, so only that
    turn stops seeing the record it names; a rollback would leave no trace elsewhere."""
    target = _record()
    naming = _record(preview=True, committed=False, turn=OTHER_TURN, replaces=target.id)
    assert _ids(_reader(preview=True), [target, naming], Purpose.READ) == {target.id}
    own = _reader(preview=True, turn=OTHER_TURN)
    assert _ids(own, [target, naming], Purpose.READ) == {naming.id}


def test_r13_live_record_naming_a_record_hides_nothing() -> None:
    """R13, R21: only a preview record hides what it names; a live replacement works by
    superseding its target, which stays readable."""
    target = _record(status="SUPERSEDED")
    naming = _record(replaces=target.id)
    for preview in (False, True):
        reader = _reader(preview=preview)
        assert _ids(reader, [target, naming], Purpose.READ) == {target.id, naming.id}
        assert _ids(reader, [target, naming], Purpose.SEARCH) == {naming.id}


@pytest.mark.parametrize("new_status", ["SUPERSEDED", "DELETED"])
def test_r12_status_change_staged_by_another_open_turn_is_not_seen(new_status: str) -> None:
    """R12: a change staged by an open turn is seen by that turn only; everyone else sees
    the prior status (ACTIVE) until the turn commits."""
    record = _record(status=new_status, pending=OTHER_TURN, prior="ACTIVE")
    other = _reader(preview=False)
    assert _ids(other, [record], Purpose.SEARCH) == {record.id}
    assert _ids(other, [record], Purpose.CHANGE) == {record.id}
    staging = _reader(preview=False, turn=OTHER_TURN)
    assert _ids(staging, [record], Purpose.SEARCH) == set()
    assert _ids(staging, [record], Purpose.READ) == {record.id}
    api = Reader.for_api(agent_id=AGENT)
    assert _ids(api, [record], Purpose.SEARCH) == {record.id}
    committed = _record(status=new_status)
    assert _ids(other, [committed], Purpose.SEARCH) == set()


def test_r10_records_of_another_agent_never_visible_nor_hiding() -> None:
    """R10: another agent's records are invisible to every reader, and a preview record of
    another agent cannot hide this agent's records."""
    mine = _record()
    theirs = _record(agent=OTHER_AGENT, preview=True, replaces=mine.id)
    for reader in (_reader(preview=False), _reader(preview=True), Reader.for_api(agent_id=AGENT)):
        for purpose in Purpose:
            assert _ids(reader, [mine, theirs], purpose) == {mine.id}
    stranger = Reader.for_api(agent_id=OTHER_AGENT)
    assert _ids(stranger, [mine], Purpose.READ) == set()


def test_r12_r25_api_reader_sees_committed_records_in_any_status_never_uncommitted() -> None:
    """R25, R71: the API reader sees every committed record of its agent, preview or live, in
    any status (a change staged by an open turn shows its prior status); R12: never an
    uncommitted record, even one another turn is about to commit."""
    api = Reader.for_api(agent_id=AGENT)
    committed = [
        _record(status=status, preview=preview, scope=scope, session=session)
        for status in ("ACTIVE", "SUPERSEDED", "DELETED")
        for preview in (False, True)
        for scope, session in (("AGENT", None), ("SESSION", SESSION))
    ]
    replaced = _record()
    naming = _record(preview=True, replaces=replaced.id)
    open_ = _record(committed=False, turn=OTHER_TURN)
    everything = [*committed, replaced, naming, open_]
    assert _ids(api, everything, Purpose.READ) == {r.id for r in everything} - {open_.id}
    assert _ids(api, everything, Purpose.CHANGE) == {r.id for r in everything} - {open_.id}
    active = {r.id for r in everything if r.status == "ACTIVE"} - {open_.id}
    assert _ids(api, everything, Purpose.SEARCH) == active


def test_r11_reader_without_session_never_sees_session_records() -> None:
    """R2, R11: an agent without a session has no session scope, even if a misconfigured
    reader lists it and the record carries no session either."""
    reader = _reader(preview=False, session=None, read=("session", "agent"))
    orphan = _record(scope="SESSION", session=None)
    agent_wide = _record(scope="AGENT", session=None)
    assert _ids(reader, [orphan, agent_wide], Purpose.READ) == {agent_wide.id}


@pytest.mark.parametrize("staged", list(Staged), ids=lambda s: s.name)
@pytest.mark.parametrize("api", [False, True], ids=["turn", "api"])
def test_r12_status_and_version_in_force_follow_who_staged_the_change(
    staged: Staged, api: bool
) -> None:
    """R12, R25: a reader sees the status and version a change staged by another open turn
    replaces (a rollback removes the staged version); the staging turn sees its own change.
    An API reader has no turn: every staged change is another's."""
    current, prior = uuid.uuid4(), uuid.uuid4()
    pending = {Staged.NONE: None, Staged.BY_READER: READER_TURN, Staged.BY_OTHER: OTHER_TURN}
    record = RecordFacts(
        id=uuid.uuid4(),
        agent_id=AGENT,
        scope="AGENT",
        session_id=None,
        status="ACTIVE" if staged is Staged.NONE else "DELETED",
        preview=False,
        committed=True,
        turn_id=COMMITTED_TURN,
        pending_turn_id=pending[staged],
        prior_status=None if staged is Staged.NONE else "ACTIVE",
        current_version_id=current,
        prior_version_id=None if staged is Staged.NONE else prior,
    )
    reader = Reader.for_api(agent_id=AGENT) if api else _reader(preview=False)
    sees_prior = staged is Staged.BY_OTHER or (api and staged is not Staged.NONE)
    assert effective_status(reader, record) == ("ACTIVE" if sees_prior else record.status)
    assert version_in_force(reader, record) == (prior if sees_prior else current)
