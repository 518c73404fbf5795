"""The BM25 index (migration 0011; R12-R14, R41, R62): its postings and statistics
follow every write in the statement or transaction that makes it, and a search's
keyword leg reads a bounded part of it, whatever the number of matches.

The statistics are checked against a recount from the versions (or parts) themselves;
the postings against :func:`server.domain.bm25.impact` of each document's own terms.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from dataclasses import replace
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

from server.domain import bm25
from server.domain.ranking_presets import DEFAULT_PRESET, FusionPreset
from server.domain.visibility import Reader
from server.memory_search import ranking as memory_ranking
from server.storage import bm25 as storage_bm25
from server.storage.reaches import memory_postings as memory_postings_of
from tests.api.history_scenario import HistoryScenario, agent, history_config, user
from tests.api.plans import names, node_plan
from tests.api.scenario import Scenario, memory_config
from tests.conftest import Api


async def _rows(api: Api, sql: str, **params: Any) -> list[Any]:
    async with api.database.session() as db:
        return list((await db.execute(text(sql), params)).all())


async def memory_stats(api: Api, agent_id: str) -> Counter[tuple[str, str, str | None]]:
    """``memory_term_stats`` of the agent: (term, scope, session) -> documents."""
    rows = await _rows(
        api,
        "SELECT term, search_scope, session_id::text, docs FROM memory_term_stats"
        " WHERE agent_id = :a AND docs <> 0",
        a=agent_id,
    )
    return Counter({(t, s, sess): d for t, s, sess, d in rows})


async def memory_recount(api: Api, agent_id: str) -> Counter[tuple[str, str, str | None]]:
    """The same, counted from the settled versions themselves."""
    rows = await _rows(
        api,
        "SELECT v.search_scope, CASE WHEN v.search_scope = 'SESSION' THEN v.session_id::text END,"
        " tsvector_to_array(v.search_tsv) FROM memory_versions v"
        " WHERE v.agent_id = :a AND v.search_scope IN ('AGENT', 'SESSION')",
        a=agent_id,
    )
    counted: Counter[tuple[str, str, str | None]] = Counter()
    for scope, session, terms in rows:
        counted[("", scope, session)] += 1
        for term in terms:
            counted[(term, scope, session)] += 1
    return counted


async def memory_postings(api: Api, agent_id: str) -> dict[str, tuple[str | None, set[str]]]:
    """Each version's postings: its reach and its terms."""
    rows = await _rows(
        api,
        "SELECT version_id::text, search_scope, array_agg(term) FROM memory_postings"
        " WHERE agent_id = :a GROUP BY 1, 2",
        a=agent_id,
    )
    return {v: (scope, set(terms)) for v, scope, terms in rows}


async def version_of(api: Api, record: str) -> list[tuple[str, int, str | None]]:
    """A record's versions: (id, number, search_scope)."""
    rows = await _rows(
        api,
        "SELECT id::text, number, search_scope FROM memory_versions WHERE record_id = :r"
        " ORDER BY number",
        r=record,
    )
    return [(v, n, s) for v, n, s in rows]


async def _check_memory_index(api: Api, agent_id: str) -> None:
    """The invariants: the statistics equal a recount; every version that some search may
    find (search_scope not 'NONE') has its postings, with its reach; no other has any."""
    assert await memory_stats(api, agent_id) == await memory_recount(api, agent_id)
    versions = await _rows(
        api,
        "SELECT id::text, search_scope, tsvector_to_array(search_tsv) FROM memory_versions"
        " WHERE agent_id = :a",
        a=agent_id,
    )
    postings = await memory_postings(api, agent_id)
    want = {v: (scope, set(terms)) for v, scope, terms in versions if scope != "NONE"}
    assert postings == want


async def test_r12_r14_postings_and_statistics_follow_every_change_of_a_record(
    api: Api,
) -> None:
    """R12, R14: a record an open turn writes has postings of no settled reach and counts
    in no statistics; its commit settles both; a rollback leaves nothing; a superseded or
    deleted record leaves the search, and its terms leave the counts."""
    s = Scenario(api)
    agent_id = await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    session = await s.session()
    turn = await s.turn(session)
    kept = await s.add_id(turn, "The walrus colony sleeps on the northern beach")
    [(version, _, scope)] = await version_of(api, kept)
    assert scope is None and (await memory_postings(api, agent_id))[version][0] is None
    assert await memory_stats(api, agent_id) == Counter()
    await s.commit(turn)
    assert (await memory_postings(api, agent_id))[version][0] == "SESSION"
    stats = await memory_stats(api, agent_id)
    assert stats[("walrus", "SESSION", session)] == 1 and stats[("", "SESSION", session)] == 1
    await _check_memory_index(api, agent_id)

    # a turn that rolls back leaves no posting and no count (R12)
    turn = await s.turn(session)
    gone = await s.add_id(turn, "A walrus tusk grows all its life", scope="AGENT")
    await s.add(turn, "Walrus calves stay with their mothers", replaces=kept)
    await s.rollback(turn)
    assert await version_of(api, gone) == []
    await _check_memory_index(api, agent_id)
    assert (await memory_postings(api, agent_id))[version][0] == "SESSION"

    # replaced (R21) and deleted: the old versions leave the search and the counts (R14)
    turn = await s.turn(session)
    newer = await s.add_id(turn, "The walrus colony moved to the southern beach", replaces=kept)
    agent_wide = await s.add_id(turn, "Walruses dive for clams", scope="AGENT")
    await s.commit(turn)
    turn = await s.turn(session)
    await s.api.ok(
        "mutation($t: ID!, $id: ID!) { deleteMemory(input: {turnId: $t, id: $id}) "
        "{ execution { id } } }",
        t=turn,
        id=agent_wide,
    )
    await s.commit(turn)
    postings = await memory_postings(api, agent_id)
    assert all(s_ != "NONE" for s_, _ in postings.values())
    assert [v for v, *_ in await version_of(api, kept) if v in postings] == []
    assert [v for v, *_ in await version_of(api, agent_wide) if v in postings] == []
    [(current, _, _)] = await version_of(api, newer)
    assert postings[current][0] == "SESSION"
    stats = await memory_stats(api, agent_id)
    assert stats[("", "SESSION", session)] == 1 and stats[("", "AGENT", None)] == 0
    assert stats[("clam", "AGENT", None)] == 0 and stats[("southern", "SESSION", session)] == 1
    await _check_memory_index(api, agent_id)


async def test_r13_a_preview_record_stays_out_of_the_counts(api: Api) -> None:
    """R13: a preview turn's record keeps unsettled postings (found through the full gate,
    by preview turns only) and is counted in no statistics, committed or not."""
    s = Scenario(api)
    agent_id = await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    session = await s.session()
    await s.committed("Otters hold hands while sleeping", session)
    turn = await s.turn(session, preview=True)
    rehearsal = await s.add_id(turn, "Otters keep a favourite stone", scope="AGENT")
    await s.commit(turn)
    [(version, _, scope)] = await version_of(api, rehearsal)
    assert scope is None and (await memory_postings(api, agent_id))[version][0] is None
    assert ("stone", "AGENT", None) not in await memory_stats(api, agent_id)
    await _check_memory_index(api, agent_id)


async def test_concurrent_writers_of_one_agent_never_deadlock_on_the_counts(api: Api) -> None:
    """Eight turns of one agent, each writing records whose words overlap in different
    orders, commit at the same time: every commit succeeds (the statistics are changed at
    commit, in term order) and the counts equal a recount."""
    s = Scenario(api)
    agent_id = await s.agent(memory_config(read=["session", "agent"], write=["session", "agent"]))
    words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "granite", "heath"]
    turns = []
    for i in range(8):
        session = await s.session()
        turn = await s.turn(session)
        for j in range(3):
            picked = words[i:] + words[:i]
            await s.add(
                turn,
                " ".join(picked[j::2] if j % 2 else reversed(picked)),
                scope="AGENT" if j == 1 else "SESSION",
            )
        turns.append(turn)
    await asyncio.gather(*(s.commit(t) for t in turns))
    stats = await memory_stats(api, agent_id)
    assert stats[("", "AGENT", None)] == 8
    await _check_memory_index(api, agent_id)


async def test_r41_each_posting_holds_the_bm25_impact_of_its_term(api: Api) -> None:
    """R41: a posting's impact is :func:`server.domain.bm25.impact` of the term's count
    in the version and the version's length, bit for bit (migration 0011's
    ``bm25_impact`` is the same formula, with any constants); history's postings too."""
    s = Scenario(api)
    agent_id = await s.agent(memory_config(read=["agent"], write=["agent"]))
    await s.committed(
        "Walrus walrus walrus: the walrus colony sleeps on a beach",
        await s.session(),
        content="Counted on the beach at dawn by the ranger of the northern reserve.",
    )
    rows = await _rows(
        api,
        "SELECT p.term, p.impact, u.tf, (SELECT sum(coalesce(array_length(x.positions, 1), 1))"
        " FROM unnest(v.search_tsv) x)::int FROM memory_postings p"
        " JOIN memory_versions v ON v.id = p.version_id AND v.agent_id = p.agent_id,"
        " LATERAL (SELECT coalesce(array_length(positions, 1), 1) AS tf FROM unnest(v.search_tsv)"
        " WHERE lexeme = p.term) u WHERE p.agent_id = :a",
        a=agent_id,
    )
    assert len(rows) == 9  # beach colony count dawn northern ranger reserv sleep walrus
    assert all(impact == bm25.impact(tf, dl) for _, impact, tf, dl in rows)
    assert {t: tf for t, _, tf, _ in rows}["walrus"] == 4
    for p in (bm25.BM25, bm25.Bm25(k1=1.2, b=0.75, avgdl=15.0)):
        grid = await _rows(
            api,
            "SELECT tf, dl, bm25_impact(tf, dl, :k1, :b, :avgdl) FROM generate_series(1, 6) tf,"
            " generate_series(1, 400, 7) dl",
            k1=p.k1,
            b=p.b,
            avgdl=p.avgdl,
        )
        assert all(value == bm25.impact(tf, dl, p) for tf, dl, value in grid)


async def test_r62_history_postings_and_statistics_follow_kept_parts(api: Api) -> None:
    """R61, R62: a committed turn's parts get their postings and count in their session's
    statistics (live and preview apart); a rolled-back turn keeps nothing."""
    s = HistoryScenario(api)
    await s.agent(history_config("messages"))
    session = await s.session()
    await s.committed_turn(session, user("The lighthouse keeper feeds the gulls"), agent("Noted."))
    await s.committed_turn(session, user("Gulls circle the lighthouse at dusk"))
    turn = await s.turn(session)
    await s.record(turn, user("Nothing of this turn is kept"))
    await s.rollback(turn)
    rows = await _rows(
        api,
        "SELECT term, preview, docs FROM history_term_stats WHERE session_id = :s",
        s=session,
    )
    stats = {(t, p): d for t, p, d in rows}
    recount: Counter[tuple[str, bool]] = Counter()
    for preview, terms in await _rows(
        api,
        "SELECT preview, tsvector_to_array(search_tsv) FROM history_parts WHERE session_id = :s",
        s=session,
    ):
        recount[("", preview)] += 1
        for term in terms:
            recount[(term, preview)] += 1
    assert stats == dict(recount)
    assert stats[("", False)] == 3 and stats[("lighthous", False)] == 2
    assert ("kept", False) not in stats
    postings = await _rows(
        api,
        "SELECT count(*) FROM history_postings p"
        " JOIN history_parts h ON h.id = p.part_id AND h.agent_id = p.agent_id"
        " WHERE h.session_id = :s",
        s=session,
    )
    lexemes = await _rows(
        api,
        "SELECT sum(length(search_tsv)) FROM history_parts WHERE session_id = :s",
        s=session,
    )
    assert postings[0][0] == lexemes[0][0]
    impacts = await _rows(
        api,
        "SELECT p.impact, u.tf, (SELECT sum(coalesce(array_length(x.positions, 1), 1))"
        " FROM unnest(h.search_tsv) x)::int FROM history_postings p"
        " JOIN history_parts h ON h.id = p.part_id AND h.agent_id = p.agent_id,"
        " LATERAL (SELECT coalesce(array_length(positions, 1), 1) AS tf FROM unnest(h.search_tsv)"
        " WHERE lexeme = p.term) u WHERE h.session_id = :s",
        s=session,
    )
    assert impacts and all(i == bm25.impact(tf, dl) for i, tf, dl in impacts)


# -- the work of the keyword leg ----------------------------------------------------------


async def _bulk_records(api: Api, s: Scenario, count: int, body: str) -> None:
    """``count`` committed AGENT-scope records of the agent, each ``body`` plus a number,
    written in one statement (as a bulk load would)."""
    [(execution, agent_version, turn)] = await _rows(
        api,
        "SELECT execution_id, agent_version_id, turn_id FROM memory_versions"
        " WHERE agent_id = :a LIMIT 1",
        a=s.agent_id,
    )
    params = {
        "a": s.agent_id,
        "t": turn,
        "n": count,
        "body": body,
        "e": execution,
        "v": agent_version,
    }
    async with api.database.session() as db:
        await db.execute(
            text(
                "CREATE TEMP TABLE bulk ON COMMIT DROP AS SELECT gen_random_uuid() AS record,"
                " gen_random_uuid() AS version, n FROM generate_series(1, :n) n"
            ),
            params,
        )
        await db.execute(
            text(
                "INSERT INTO memory_records (id, agent_id, scope, status, preview, pinned,"
                " turn_id, committed, current_version_id)"
                " SELECT record, :a, 'AGENT', 'ACTIVE', false, false, :t, true, version FROM bulk"
            ),
            params,
        )
        await db.execute(
            text(
                "INSERT INTO memory_versions (id, record_id, agent_id, number, status, summary,"
                " kind, labels, embedding, execution_id, agent_version_id, turn_id)"
                " SELECT version, record, :a, 1, 'ACTIVE', :body || ' ' || n, 'fact', '{}',"
                # a vector of its own for each (a graph of thousands of equal vectors
                # leaves the rest of the table's HNSW index hard to reach)
                " ('[' || array_to_string(ARRAY(SELECT sin(n * 7.0 + i) FROM"
                " generate_series(1, 384) i), ',') || ']')::vector, :e, :v, :t FROM bulk"
            ),
            params,
        )
        await db.commit()


async def _plan(
    api: Api, reader: Reader, query: str, preset: FusionPreset = DEFAULT_PRESET, **filters: Any
) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of the ranking statement in lexical mode."""
    stmt, values = memory_ranking.ranking_statement(
        reader,
        memory_ranking.MemoryQuery(
            query, None, "lexical", 0.0, 10, memory_ranking.Filters(**filters), preset=preset
        ),
    )
    compiled = stmt.compile(dialect=PGDialect_psycopg())
    async with api.database.session() as db:
        raw = await (await db.connection()).get_raw_connection()
        cur = raw.driver_connection.cursor()  # type: ignore[union-attr]
        await cur.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + str(compiled),
            compiled.construct_params(values),
        )
        (plan,) = await cur.fetchone()  # type: ignore[misc]
    found = plan if isinstance(plan, list) else json.loads(plan)
    return node_plan(found[0]["Plan"])


def _read(node: dict[str, Any], relation: str) -> int:
    """Rows the plan read from ``relation``'s scans, loops counted."""
    own = 0
    if names(node.get("Relation Name"), relation):
        own = int(node["Actual Rows"] * node["Actual Loops"])
    return own + sum(_read(child, relation) for child in node.get("Plans", []))


async def test_r41_the_keyword_legs_work_does_not_grow_with_the_matches(api: Api) -> None:
    """R41: two agents whose every record holds the query's word, one with five times the
    records of the other. Within the budget the keyword leg reads every posting of the
    word (each record's exact score, no probe a record); beyond it (a budget of 8 pools
    here) both read the same number of postings (the word's best ``budget`` pools, then
    one probe for each of the first ``2 * pool`` by the sum so far) and about the same
    buffers. The same search filtered by kind, which reads every match, reads five times
    the versions."""
    readers = []
    for count in (600, 3000):
        s = Scenario(api)
        await s.agent(memory_config(read=["agent"], write=["agent"]))
        await s.committed("The first walrus note", await s.session())
        await _bulk_records(api, s, count, "walrus sighting on the northern beach")
        readers.append(
            Reader.for_turn(
                agent_id=uuid.UUID(s.agent_id),
                session_id=None,
                turn_id=uuid.uuid4(),
                preview=False,
                read_scopes=("agent",),
                write_scopes=("agent",),
            )
        )
    # as a settled table is: its visibility map set, so index-only scans read no heap
    async with api.database.engine.connect() as conn:  # type: ignore[union-attr]
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text("VACUUM ANALYZE memory_postings"))
    every = [await _plan(api, r, "walrus") for r in readers]
    assert [_read(p, "memory_postings") for p in every] == [601, 3001]
    small_budget = replace(DEFAULT_PRESET, seeking=replace(DEFAULT_PRESET.seeking, budget=8))
    small, large = [await _plan(api, r, "walrus", small_budget) for r in readers]
    pool = DEFAULT_PRESET.pool_size(10)
    reads = small_budget.seeking.budget * pool
    assert reads < 600
    assert _read(small, "memory_postings") == _read(large, "memory_postings") == reads + 2 * pool
    buffers = [p["Shared Hit Blocks"] + p["Shared Read Blocks"] for p in (small, large)]
    assert buffers[1] <= 1.3 * buffers[0], buffers
    every_match = [await _plan(api, r, "walrus", kind="fact") for r in readers]
    assert _read(every_match[1], "memory_versions") >= 4.5 * _read(
        every_match[0], "memory_versions"
    )


async def test_r41_each_term_reads_what_the_rule_says(api: Api) -> None:
    """R41: the statement's reading of each term (``w.depth``, NULL for all of it) is
    :func:`server.domain.bm25.reading` of the reader's counts: within the budget every
    posting, beyond it the rare word whole and the common ones their shares."""
    s = Scenario(api)
    await s.agent(memory_config(read=["agent"], write=["agent"]))
    session = await s.session()
    for i in range(3):
        await s.committed(f"kelp washed up on the beach, heap {i}", session)
    await _bulk_records(api, s, 600, "walrus sighting on the northern beach")
    reader = Reader.for_turn(
        agent_id=uuid.UUID(s.agent_id),
        session_id=None,
        turn_id=uuid.uuid4(),
        preview=False,
        read_scopes=("agent",),
        write_scopes=("agent",),
    )
    query = "kelp and walrus on the beach"
    pool = DEFAULT_PRESET.pool_size(10)
    for budget, whole in ((200, True), (8, False)):
        seeking = replace(DEFAULT_PRESET.seeking, budget=budget)
        w = storage_bm25.weights(memory_postings_of(reader), query, seeking=seeking, pool=pool)
        async with api.database.session() as db:
            rows = (await db.execute(select(w.c.term, w.c.depth, w.c.whole))).all()
            dfs = {
                t: int(df)
                for t, df in (
                    await db.execute(
                        text(
                            "SELECT term, docs FROM memory_term_stats WHERE agent_id = :a"
                            " AND search_scope = 'AGENT' AND term = ANY(:t)"
                        ),
                        {"a": s.agent_id, "t": sorted(r[0] for r in rows)},
                    )
                ).all()
            }
        dfs = {t: dfs.get(t, 0) for t, _, _ in rows}
        assert dfs == {"beach": 603, "kelp": 3, "walrus": 600}
        expected = bm25.reading(dfs, 603, seeking, pool)
        assert expected.whole is whole and all(r[2] is whole for r in rows)
        depths = {t: depth for t, depth, _ in rows}
        assert depths == (dict.fromkeys(dfs) if whole else expected.depths)
