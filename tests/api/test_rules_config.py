"""Memory configuration rules R1-R8 as publishAgentVersion enforces them.

A version's config is validated when it is published: a config that breaks a
rule is refused with INVALID_CONFIG, ``extensions.field`` names the offending
setting, and no version is stored.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from tests.api.scenario import PUBLISH, Scenario, memory_config
from tests.conftest import Api

VERSION = """
query($id: ID!) {
  agentVersion(id: $id) { id number config effectiveMemoryConfig agent { id } }
}"""
VERSIONS = "query($id: ID!) { agent(id: $id) { versions { number } latestVersion { number } } }"

AGENT_SCOPES = {"read": ["agent"], "write": ["agent"]}


def harness(memory: dict[str, Any] | None = None, **rest: Any) -> dict[str, Any]:
    inner = dict(rest)
    if memory is not None:
        inner["memory"] = memory
    return {"model": "some-model", "harness": inner}


def enabled(**settings: Any) -> dict[str, Any]:
    return harness({"enabled": True, **settings})


async def version_numbers(api: Api, agent: str) -> list[int]:
    data = await api.ok(VERSIONS, id=agent)
    return sorted(v["number"] for v in data["agent"]["versions"])


async def effective(api: Api, s: Scenario, config: dict[str, Any]) -> dict[str, Any]:
    published = await s.publish(config)
    data = await api.ok(VERSION, id=published["id"])
    return dict(data["agentVersion"]["effectiveMemoryConfig"])


async def refused(api: Api, s: Scenario, config: Any) -> tuple[str, dict[str, Any]]:
    """Publish ``config``, expect INVALID_CONFIG, and check no version was stored."""
    before = await version_numbers(api, s.agent_id)
    message, ext = await api.error(PUBLISH, agent=s.agent_id, config=config)
    assert ext["code"] == "INVALID_CONFIG", (message, ext)
    assert await version_numbers(api, s.agent_id) == before
    return message, ext


# One row per way to break R1-R8: (rule, config, sessionless, field the error names).
INVALID: list[tuple[str, dict[str, Any], bool, str]] = [
    ("R1", harness({"enabled": "yes"}), False, "harness.memory.enabled"),
    ("R2", enabled(), True, "harness.memory.scope.read"),
    (
        "R2",
        enabled(scope={"read": ["agent"], "write": ["session"]}),
        True,
        "harness.memory.scope.write",
    ),
    ("R2", enabled(scope={"read": ["team"]}), False, "harness.memory.scope.read"),
    ("R2", enabled(scope={"write": []}), False, "harness.memory.scope.write"),
    ("R2", enabled(scpoe={"read": ["agent"]}), False, "harness.memory.scpoe"),
    ("R3", enabled(kinds=[]), False, "harness.memory.kinds"),
    ("R3", enabled(kinds=["Fact"]), False, "harness.memory.kinds"),
    ("R3", enabled(kinds=["fact", "fact"]), False, "harness.memory.kinds"),
    (
        "R4",
        enabled(labels={"customer_id": {"number": 4, "description": "d"}}),
        False,
        "harness.memory.labels.customer_id.number",
    ),
    (
        "R4",
        enabled(labels={"customer_id": {"number": 19, "description": "d"}}),
        False,
        "harness.memory.labels.customer_id.number",
    ),
    (
        "R4",
        enabled(
            labels={"a": {"number": 5, "description": "d"}, "b": {"number": 5, "description": "d"}}
        ),
        False,
        "harness.memory.labels.b.number",
    ),
    (
        "R4",
        enabled(labels={"customer_id": {"number": 5}}),
        False,
        "harness.memory.labels.customer_id.description",
    ),
    (
        "R4",
        enabled(labels={"Customer": {"number": 5, "description": "d"}}),
        False,
        "harness.memory.labels.Customer",
    ),
    ("R5", enabled(tools=["write_memory"]), False, "harness.memory.tools"),
    ("R5", enabled(tools="add_memory"), False, "harness.memory.tools"),
    ("R6", enabled(search={"mode": "semantic"}), False, "harness.memory.search.mode"),
    ("R6", enabled(search={"max_results": 0}), False, "harness.memory.search.max_results"),
    ("R6", enabled(search={"min_score": 1.5}), False, "harness.memory.search.min_score"),
    ("R6", enabled(search={"min_score": True}), False, "harness.memory.search.min_score"),
    ("R7", enabled(pinned={"max_tokens": 0}), False, "harness.memory.pinned.max_tokens"),
    ("R7", enabled(pinned={}), False, "harness.memory.pinned.max_tokens"),
    ("R8", enabled(extraction={"every": "hour"}), False, "harness.memory.extraction.every"),
    (
        "R8",
        enabled(extraction={"every": {"messages": 0}}),
        False,
        "harness.memory.extraction.every.messages",
    ),
    ("R8", enabled(extraction={"prompt": "  "}), False, "harness.memory.extraction.prompt"),
    (
        "R60",
        harness({"enabled": True, "scope": AGENT_SCOPES}, history={"index": "messages"}),
        True,
        "harness.history",
    ),
    ("R60", harness(history={"index": "everything"}), False, "harness.history.index"),
]


@pytest.fixture(scope="module")
async def unpublished(api: Api) -> dict[bool, Scenario]:
    """An agent with sessions and one without, neither with a version: every refused
    publish must leave them so."""
    agents = {flag: Scenario(api) for flag in (False, True)}
    for flag, s in agents.items():
        await s.agent(sessionless=flag)
    return agents


@pytest.mark.parametrize(
    ("rule", "config", "sessionless", "field"),
    INVALID,
    ids=[
        f"{rule}-{field.removeprefix('harness.')}-{i}"
        for i, (rule, _, _, field) in enumerate(INVALID)
    ],
)
async def test_r1_to_r8_invalid_config_is_refused_naming_the_field(
    api: Api,
    unpublished: dict[bool, Scenario],
    rule: str,
    config: dict[str, Any],
    sessionless: bool,
    field: str,
) -> None:
    """R1-R8: each broken setting gives INVALID_CONFIG with ``extensions.field`` naming
    it and a message that names it too; no version is stored."""
    message, ext = await refused(api, unpublished[sessionless], config)
    assert ext["field"] == field
    assert field.rsplit(".", 1)[-1] in message


async def test_r1_disabled_memory_publishes_and_offers_no_tool(api: Api) -> None:
    """R1: a disabled config is valid, and its effective config offers no tool at all,
    not even search_memory."""
    s = Scenario(api)
    await s.agent()
    cfg = await effective(api, s, harness({"enabled": False, "tools": ["add_memory"]}))
    assert cfg["enabled"] is False
    assert cfg["tools"] == []


async def test_r1_settings_of_a_disabled_config_are_still_validated(api: Api) -> None:
    """R1: a typo is caught when it is written, not on the day memory is switched on."""
    s = Scenario(api)
    await s.agent()
    _, ext = await refused(api, s, harness({"enabled": False, "search": {"mode": "fuzzy"}}))
    assert ext["field"] == "harness.memory.search.mode"


async def test_r2_scopes_default_to_session(api: Api) -> None:
    """R2: scope.read and scope.write both default to ["session"]."""
    s = Scenario(api)
    await s.agent()
    cfg = await effective(api, s, enabled())
    assert cfg["scope"] == {"read": ["session"], "write": ["session"]}


async def test_r2_sessionless_agent_must_read_and_write_agent_scope(api: Api) -> None:
    """R2: an agent without sessions publishes only with both scopes set to ["agent"];
    the refusal says why."""
    s = Scenario(api)
    await s.agent(sessionless=True)
    message, ext = await refused(
        api, s, enabled(scope={"read": ["session", "agent"], "write": ["agent"]})
    )
    assert ext["field"] == "harness.memory.scope.read"
    assert "without sessions" in message
    cfg = await effective(api, s, enabled(scope=AGENT_SCOPES))
    assert cfg["scope"] == {"read": ["agent"], "write": ["agent"]}


async def test_r2_sessionless_agent_with_memory_disabled_keeps_defaults(api: Api) -> None:
    """R2 gates on R1: a session-less agent without memory needs no scope setting."""
    s = Scenario(api)
    await s.agent(sessionless=True)
    published = await s.publish(harness({"enabled": False}))
    assert published["number"] == 1


async def test_r3_kinds_default_and_custom_kinds_replace_them(api: Api) -> None:
    """R3: kinds default to guidance, fact, event, reference; a declared list replaces them."""
    s = Scenario(api)
    await s.agent()
    assert (await effective(api, s, enabled()))["kinds"] == [
        "guidance",
        "fact",
        "event",
        "reference",
    ]
    assert (await effective(api, s, enabled(kinds=["note", "decision"])))["kinds"] == [
        "note",
        "decision",
    ]


async def test_r4_labels_are_published_with_number_and_description(api: Api) -> None:
    """R4: a label is name -> {number 5..18, description}; both ends of the range are valid."""
    s = Scenario(api)
    await s.agent()
    labels = {
        "customer_id": {"number": 5, "description": "The customer the memory is about."},
        "region": {"number": 18, "description": "Sales region."},
    }
    assert (await effective(api, s, enabled(labels=labels)))["labels"] == labels


async def test_r4_later_version_must_keep_every_label(api: Api) -> None:
    """R4: dropping a label an earlier version declared is refused at publish time."""
    s = Scenario(api)
    await s.agent(memory_config(labels={"customer_id": {"number": 5, "description": "c"}}))
    message, ext = await refused(api, s, memory_config(labels={}))
    assert ext["field"] == "harness.memory.labels.customer_id"
    assert "earlier version" in message


async def test_r4_later_version_must_keep_the_label_number(api: Api) -> None:
    """R4: a kept label keeps its number."""
    s = Scenario(api)
    await s.agent(memory_config(labels={"customer_id": {"number": 5, "description": "c"}}))
    message, ext = await refused(
        api, s, memory_config(labels={"customer_id": {"number": 6, "description": "c"}})
    )
    assert ext["field"] == "harness.memory.labels.customer_id.number"
    assert "number 5" in message


async def test_r4_new_label_cannot_take_an_earlier_labels_number(api: Api) -> None:
    """R4: stored values are tied to the number, so a new label may not reuse it."""
    s = Scenario(api)
    await s.agent(memory_config(labels={"customer_id": {"number": 5, "description": "c"}}))
    _, ext = await refused(
        api,
        s,
        memory_config(
            labels={
                "customer_id": {"number": 6, "description": "c"},
                "account": {"number": 5, "description": "a"},
            }
        ),
    )
    assert ext["field"].startswith("harness.memory.labels.")


async def test_r4_later_version_may_add_labels_and_change_descriptions(api: Api) -> None:
    """R4: adding labels (and rewording a description) is allowed."""
    s = Scenario(api)
    await s.agent(memory_config(labels={"customer_id": {"number": 5, "description": "c"}}))
    published = await s.publish(
        memory_config(
            labels={
                "customer_id": {"number": 5, "description": "The customer, by CRM id."},
                "account": {"number": 6, "description": "a"},
            }
        )
    )
    assert published["number"] == 2


async def test_r4_label_rule_spans_every_earlier_version(api: Api) -> None:
    """R4: a label declared by version 1 must survive a version 2 that dropped nothing,
    and a disabled version 3 must still keep both labels."""
    s = Scenario(api)
    first = {"a": {"number": 5, "description": "a"}}
    both = {**first, "b": {"number": 6, "description": "b"}}
    await s.agent(memory_config(labels=first))
    await s.publish(memory_config(labels=both))
    _, ext = await refused(api, s, memory_config(labels=first))
    assert ext["field"] == "harness.memory.labels.b"
    _, ext = await refused(api, s, harness({"enabled": False}))
    assert ext["field"] == "harness.memory.labels.a"
    published = await s.publish(harness({"enabled": False, "labels": both}))
    assert published["number"] == 3


async def test_r4_label_rule_is_per_agent(api: Api) -> None:
    """R4 compares versions of one agent only: another agent may use the same numbers."""
    one, two = Scenario(api), Scenario(api)
    await one.agent(memory_config(labels={"customer_id": {"number": 5, "description": "c"}}))
    await two.agent(memory_config(labels={"ticket": {"number": 5, "description": "t"}}))
    assert await version_numbers(api, two.agent_id) == [1]


async def test_r5_search_memory_is_always_offered_when_enabled(api: Api) -> None:
    """R5: tools lists the write tools; search_memory is there regardless."""
    s = Scenario(api)
    await s.agent()
    assert (await effective(api, s, enabled()))["tools"] == ["search_memory"]
    assert (await effective(api, s, enabled(tools=["delete_memory", "add_memory"])))["tools"] == [
        "add_memory",
        "delete_memory",
        "search_memory",
    ]


async def test_r6_search_defaults_and_bounds(api: Api) -> None:
    """R6: hybrid, 5 results and a min_score by default; min_score accepts -1 and 1."""
    s = Scenario(api)
    await s.agent()
    search = (await effective(api, s, enabled()))["search"]
    assert search["mode"] == "hybrid" and search["max_results"] == 5
    assert -1 <= search["min_score"] <= 1
    low = await effective(api, s, enabled(search={"mode": "lexical", "min_score": -1}))
    assert low["search"] == {"mode": "lexical", "max_results": 5, "min_score": -1.0}
    high = await effective(api, s, enabled(search={"mode": "vector", "min_score": 1}))
    assert high["search"]["min_score"] == 1.0


async def test_r7_pinned_budget_is_optional(api: Api) -> None:
    """R7: without pinned there is no budget; with it, max_tokens is kept."""
    s = Scenario(api)
    await s.agent()
    assert (await effective(api, s, enabled()))["pinned"] is None
    assert (await effective(api, s, enabled(pinned={"max_tokens": 2000})))["pinned"] == {
        "max_tokens": 2000
    }


async def test_r8_extraction_defaults_and_message_counts(api: Api) -> None:
    """R8: every defaults to "turn"; {"messages": N} and a replacement prompt are kept."""
    s = Scenario(api)
    await s.agent()
    assert (await effective(api, s, enabled()))["extraction"] == {"prompt": None, "every": "turn"}
    custom = await effective(
        api, s, enabled(extraction={"prompt": "Keep only decisions.", "every": {"messages": 4}})
    )
    assert custom["extraction"] == {"prompt": "Keep only decisions.", "every": {"messages": 4}}


async def test_config_outside_memory_and_history_belongs_to_the_runtime(api: Api) -> None:
    """Keys the server does not own are stored as published and not validated."""
    s = Scenario(api)
    await s.agent()
    config = {"model": "m", "temperature": 0.2, "harness": {"skills": ["x"], "memory": None}}
    published = await s.publish(config)
    data = await api.ok(VERSION, id=published["id"])
    assert data["agentVersion"]["config"] == config
    assert data["agentVersion"]["effectiveMemoryConfig"]["enabled"] is False


async def test_config_must_be_an_object(api: Api) -> None:
    """A config that is not a JSON object is bad input; nothing is stored."""
    s = Scenario(api)
    await s.agent()
    _, ext = await api.error(PUBLISH, agent=s.agent_id, config=["harness"])
    assert ext["code"] == "BAD_INPUT"
    _, ext = await refused(api, s, {"harness": 5})
    assert ext["field"] == "harness"
    assert await version_numbers(api, s.agent_id) == []


async def test_refused_version_does_not_use_up_a_number(api: Api) -> None:
    """Versions are numbered 1, 2, ... with no gap left by a refused publish."""
    s = Scenario(api)
    await s.agent(enabled())
    await refused(api, s, enabled(kinds=[]))
    assert (await s.publish(enabled()))["number"] == 2
    assert await version_numbers(api, s.agent_id) == [1, 2]


async def test_publish_for_unknown_agent_is_not_found(api: Api) -> None:
    """Publishing needs an existing agent."""
    _, ext = await api.error(PUBLISH, agent=str(uuid.uuid4()), config=enabled())
    assert ext["code"] == "NOT_FOUND"


async def test_r4_concurrent_versions_cannot_give_one_number_to_two_labels(api: Api) -> None:
    """R4 under concurrency: two versions published at once, each adding a different label
    with the same number: exactly one is stored, the other is INVALID_CONFIG."""
    s = Scenario(api)
    base = {"customer_id": {"number": 5, "description": "c"}}
    await s.agent(memory_config(labels=base))
    results = await asyncio.gather(
        *(
            api.execute(
                PUBLISH,
                agent=s.agent_id,
                config=memory_config(labels={**base, name: {"number": 6, "description": name}}),
            )
            for name in ("region", "account")
        )
    )
    codes = sorted(r.errors[0].extensions["code"] if r.errors else "OK" for r in results)
    assert codes == ["INVALID_CONFIG", "OK"]
    assert await version_numbers(api, s.agent_id) == [1, 2]


async def test_concurrent_publishes_get_distinct_numbers(api: Api) -> None:
    """Versions published at once are numbered without gaps or duplicates."""
    s = Scenario(api)
    await s.agent()
    results = await asyncio.gather(
        *(api.execute(PUBLISH, agent=s.agent_id, config=enabled()) for _ in range(4))
    )
    assert all(r.errors is None for r in results), [r.errors for r in results]
    assert sorted(r.data["publishAgentVersion"]["agentVersion"]["number"] for r in results) == [
        1,
        2,
        3,
        4,
    ]
