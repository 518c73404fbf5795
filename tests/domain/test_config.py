"""Tests of server.domain.config: agent version config validation (R1-R8, R60)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.domain.config import (
    DEFAULT_KINDS,
    DEFAULT_MIN_SCORE,
    WRITE_TOOLS,
    ExtractionConfig,
    HarnessConfig,
    HistoryConfig,
    Label,
    MemoryConfig,
    SearchConfig,
    memory_config_to_json,
    parse_config,
)
from server.domain.config_versions import validate_new_version
from server.errors import InvalidConfigError

ENABLED: dict[str, Any] = {"enabled": True}
AGENT_ONLY: dict[str, Any] = {"enabled": True, "scope": {"read": ["agent"], "write": ["agent"]}}


def config(memory: Any = None, history: Any = None, **harness: Any) -> dict[str, Any]:
    """A whole version config, as a runtime would send it."""
    if memory is not None:
        harness["memory"] = memory
    if history is not None:
        harness["history"] = history
    return {"model": "some-model", "harness": harness}


def memory(**overrides: Any) -> MemoryConfig:
    return parse_config(config({**ENABLED, **overrides}), sessionless=False).memory


def rejected(raw: Any, *, sessionless: bool = False) -> InvalidConfigError:
    with pytest.raises(InvalidConfigError) as caught:
        parse_config(raw, sessionless=sessionless)
    return caught.value


def label(number: Any, description: Any = "d") -> dict[str, Any]:
    return {"number": number, "description": description}


def declare(numbers: Mapping[str, int]) -> dict[str, Any]:
    """A config whose memory declares the labels ``name: number``."""
    return config({**ENABLED, "labels": {name: label(n) for name, n in numbers.items()}})


def version(**numbers: int) -> HarnessConfig:
    """An earlier, already validated version declaring the labels ``name=number``."""
    return parse_config(declare(numbers), sessionless=False)


# Defaults and what is ignored


@pytest.mark.parametrize("raw", [None, {}, {"harness": {}}, config(), {"harness": None}])
def test_no_memory_means_disabled_with_defaults_and_no_history(raw: Any) -> None:
    parsed = parse_config(raw, sessionless=False)
    assert parsed == HarnessConfig(memory=MemoryConfig(enabled=False), history=None)
    assert not parsed.memory.allows_tool("search_memory")


def test_memory_object_without_enabled_is_disabled() -> None:
    assert not parse_config(config({"kinds": ["note"]}), sessionless=False).memory.enabled


def test_enabled_memory_defaults() -> None:
    cfg = memory()
    assert cfg.enabled
    assert cfg.read_scopes == cfg.write_scopes == frozenset({"session"})
    assert cfg.kinds == DEFAULT_KINDS == ("guidance", "fact", "event", "reference")
    assert dict(cfg.labels) == {}
    assert cfg.tools == frozenset({"search_memory"})
    assert cfg.search == SearchConfig(mode="hybrid", max_results=5, min_score=0.3)
    assert DEFAULT_MIN_SCORE == 0.3
    assert cfg.pinned_max_tokens is None
    assert cfg.extraction == ExtractionConfig(prompt=None, every_messages=None)


def test_null_counts_as_absent() -> None:
    nulls = {k: None for k in ("scope", "kinds", "labels", "tools", "search", "pinned")}
    assert memory(**nulls, extraction={"prompt": None, "every": None}) == memory()


def test_runtime_keys_outside_memory_and_history_are_ignored() -> None:
    raw = config(ENABLED, tools=["web_search"], max_turns=3)
    raw["temperature"] = 0.2
    assert parse_config(raw, sessionless=False).memory == memory()


# Accepted values


@pytest.mark.parametrize(
    ("overrides", "read", "expected"),
    [
        ({"scope": {"read": ["session", "agent"]}}, lambda m: m.read_scopes, {"session", "agent"}),
        ({"scope": {"read": ["agent"]}}, lambda m: m.write_scopes, {"session"}),
        ({"scope": {"write": ["agent"]}}, lambda m: m.write_scopes, {"agent"}),
        ({"kinds": ["note", "todo_2"]}, lambda m: m.kinds, ("note", "todo_2")),
        ({"kinds": ["a" + "b" * 39]}, lambda m: m.kinds, ("a" + "b" * 39,)),
        ({"search": {"mode": "lexical"}}, lambda m: m.search.mode, "lexical"),
        ({"search": {"mode": "vector"}}, lambda m: m.search.mode, "vector"),
        ({"search": {"max_results": 1}}, lambda m: m.search.max_results, 1),
        ({"search": {"max_results": 100}}, lambda m: m.search.max_results, 100),
        ({"search": {"min_score": -1}}, lambda m: m.search.min_score, -1.0),
        ({"search": {"min_score": 1}}, lambda m: m.search.min_score, 1.0),
        ({"search": {"min_score": 0.75}}, lambda m: m.search.min_score, 0.75),
        ({"pinned": {"max_tokens": 1}}, lambda m: m.pinned_max_tokens, 1),
        ({"pinned": {"max_tokens": 100_000}}, lambda m: m.pinned_max_tokens, 100_000),
        ({"extraction": {"prompt": "Keep facts."}}, lambda m: m.extraction.prompt, "Keep facts."),
        ({"extraction": {"every": "turn"}}, lambda m: m.extraction.every_messages, None),
        ({"extraction": {"every": {"messages": 1}}}, lambda m: m.extraction.every_messages, 1),
        ({"extraction": {"every": {"messages": 40}}}, lambda m: m.extraction.every_messages, 40),
        ({"labels": {"c": label(5, "Who.")}}, lambda m: dict(m.labels), {"c": Label(5, "Who.")}),
        (
            {"labels": {"a": label(18, "A"), "b": label(6, "B")}},
            lambda m: dict(m.labels),
            {"a": Label(18, "A"), "b": Label(6, "B")},
        ),
    ],
)
def test_accepted_values(
    overrides: dict[str, Any], read: Callable[[MemoryConfig], Any], expected: Any
) -> None:
    assert read(memory(**overrides)) == expected


def test_min_score_is_a_float_even_when_given_an_integer() -> None:
    assert isinstance(memory(search={"min_score": 0}).search.min_score, float)


def test_disabled_memory_still_validates_its_settings() -> None:
    error = rejected(config({"enabled": False, "search": {"mode": "fuzzy"}}))
    assert error.field == "harness.memory.search.mode"


# Rejected values: each names the offending field


M = "harness.memory"


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"enabled": "yes"}, f"{M}.enabled", 'must be true or false, got "yes"'),
        ({"enabled": 1}, f"{M}.enabled", "got 1"),
        ({"scope": ["session"]}, f"{M}.scope", "must be an object"),
        ({"scope": {"read": []}}, f"{M}.scope.read", "non-empty list"),
        ({"scope": {"read": "session"}}, f"{M}.scope.read", 'got "session"'),
        ({"scope": {"read": ["global"]}}, f"{M}.scope.read", 'got "global"'),
        ({"scope": {"write": ["agent", "agent"]}}, f"{M}.scope.write", '"agent" more than once'),
        ({"scope": {"write": ["Session"]}}, f"{M}.scope.write", 'got "Session"'),
        ({"kinds": []}, f"{M}.kinds", "non-empty list"),
        ({"kinds": ["fact", "fact"]}, f"{M}.kinds", '"fact" more than once'),
        ({"kinds": [""]}, f"{M}.kinds", "kinds[0]"),
        ({"kinds": ["fact", "Fact"]}, f"{M}.kinds", "kinds[1] must be a name"),
        ({"kinds": ["9lives"]}, f"{M}.kinds", 'got "9lives"'),
        ({"kinds": ["has space"]}, f"{M}.kinds", 'got "has space"'),
        ({"kinds": ["fact\n"]}, f"{M}.kinds", 'got "fact\\n"'),
        ({"kinds": ["a" * 41]}, f"{M}.kinds", "kinds[0] must be a name"),
        ({"kinds": [3]}, f"{M}.kinds", "got 3"),
        ({"kinds": "fact"}, f"{M}.kinds", "list"),
        ({"tools": "add_memory"}, f"{M}.tools", "list"),
        ({"tools": ["add_memroy"]}, f"{M}.tools", 'got "add_memroy"'),
        ({"tools": ["search_history"]}, f"{M}.tools", 'got "search_history"'),
        ({"tools": ["add_memory", "add_memory"]}, f"{M}.tools", "more than once"),
        ({"search": "hybrid"}, f"{M}.search", "must be an object"),
        (
            {"search": {"mode": "semantic"}},
            f"{M}.search.mode",
            'one of "hybrid", "lexical", "vector"',
        ),
        ({"search": {"max_results": 0}}, f"{M}.search.max_results", "from 1 to 100, got 0"),
        ({"search": {"max_results": 101}}, f"{M}.search.max_results", "got 101"),
        ({"search": {"max_results": 5.0}}, f"{M}.search.max_results", "got 5.0"),
        ({"search": {"max_results": True}}, f"{M}.search.max_results", "got true"),
        ({"search": {"min_score": 1.01}}, f"{M}.search.min_score", "from -1 to 1, got 1.01"),
        ({"search": {"min_score": -2}}, f"{M}.search.min_score", "got -2"),
        ({"search": {"min_score": "0.5"}}, f"{M}.search.min_score", 'got "0.5"'),
        ({"search": {"min_score": False}}, f"{M}.search.min_score", "got false"),
        ({"search": {"min_score": math.nan}}, f"{M}.search.min_score", "got NaN"),
        ({"search": {"min_score": math.inf}}, f"{M}.search.min_score", "got Infinity"),
        ({"pinned": 2000}, f"{M}.pinned", "must be an object"),
        ({"pinned": {}}, f"{M}.pinned.max_tokens", "is required"),
        ({"pinned": {"max_tokens": 0}}, f"{M}.pinned.max_tokens", "from 1 to 100000, got 0"),
        ({"pinned": {"max_tokens": 100_001}}, f"{M}.pinned.max_tokens", "got 100001"),
        ({"pinned": {"max_tokens": "2000"}}, f"{M}.pinned.max_tokens", 'got "2000"'),
        ({"extraction": {"prompt": ""}}, f"{M}.extraction.prompt", "non-empty string"),
        ({"extraction": {"prompt": "   "}}, f"{M}.extraction.prompt", "non-empty string"),
        ({"extraction": {"prompt": ["keep"]}}, f"{M}.extraction.prompt", 'got ["keep"]'),
        (
            {"extraction": {"every": "message"}},
            f"{M}.extraction.every",
            '"turn" or {"messages": N}',
        ),
        ({"extraction": {"every": 3}}, f"{M}.extraction.every", "got 3"),
        ({"extraction": {"every": {}}}, f"{M}.extraction.every.messages", "is required"),
        (
            {"extraction": {"every": {"messages": 0}}},
            f"{M}.extraction.every.messages",
            "at least 1",
        ),
        ({"extraction": {"every": {"messages": "2"}}}, f"{M}.extraction.every.messages", 'got "2"'),
        ({"labels": []}, f"{M}.labels", "must be an object"),
        ({"labels": {"Customer": label(5)}}, f"{M}.labels.Customer", 'label "Customer" must'),
        ({"labels": {"c": 5}}, f"{M}.labels.c", "must be an object, got 5"),
        ({"labels": {"c": {"description": "d"}}}, f"{M}.labels.c.number", "is required"),
        ({"labels": {"c": label(4)}}, f"{M}.labels.c.number", "from 5 to 18, got 4"),
        ({"labels": {"c": label(19)}}, f"{M}.labels.c.number", "got 19"),
        ({"labels": {"c": label(True)}}, f"{M}.labels.c.number", "got true"),
        ({"labels": {"c": label(5.0)}}, f"{M}.labels.c.number", "got 5.0"),
        ({"labels": {"c": label("5")}}, f"{M}.labels.c.number", 'got "5"'),
        ({"labels": {"c": {"number": 5}}}, f"{M}.labels.c.description", "is required"),
        ({"labels": {"c": label(5, "")}}, f"{M}.labels.c.description", "non-empty"),
        ({"labels": {"c": label(5, 7)}}, f"{M}.labels.c.description", "got 7"),
        (
            {"labels": {"a": label(7), "b": label(7)}},
            f"{M}.labels.b.number",
            "7 is taken by label a",
        ),
    ],
)
def test_rejected_values_name_the_field(
    overrides: dict[str, Any], field: str, fragment: str
) -> None:
    error = rejected(config({**ENABLED, **overrides}))
    assert error.field == field
    assert error.extensions() == {"code": "INVALID_CONFIG", "field": field}
    assert fragment in error.message
    assert error.message.startswith(field) or "label" in error.message


def test_wrong_type_message_reads_well() -> None:
    error = rejected(config({"search": {"max_results": "ten"}}))
    assert error.message == (
        'harness.memory.search.max_results must be an integer from 1 to 100, got "ten"'
    )


@pytest.mark.parametrize(
    ("overrides", "field", "suggestion"),
    [
        ({"scpoe": {}}, f"{M}.scpoe", "did you mean scope?"),
        ({"label": {}}, f"{M}.label", "did you mean labels?"),
        ({"colour": "red"}, f"{M}.colour", "harness.memory takes enabled, extraction"),
        ({"scope": {"reads": ["agent"]}}, f"{M}.scope.reads", "did you mean read?"),
        ({"search": {"limit": 3}}, f"{M}.search.limit", "max_results"),
        ({"pinned": {"max_token": 9}}, f"{M}.pinned.max_token", "did you mean max_tokens?"),
        ({"extraction": {"promt": "x"}}, f"{M}.extraction.promt", "did you mean prompt?"),
        ({"extraction": {"every": {"message": 2}}}, f"{M}.extraction.every.message", "messages"),
        ({"labels": {"c": {**label(5), "type": "id"}}}, f"{M}.labels.c.type", "takes descr"),
    ],
)
def test_unknown_keys_inside_memory_are_rejected(
    overrides: dict[str, Any], field: str, suggestion: str
) -> None:
    error = rejected(config({**ENABLED, **overrides}))
    assert error.field == field
    assert "is not a setting" in error.message
    assert suggestion in error.message


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([], ""),
        ("harness", ""),
        ({"harness": ["memory"]}, "harness"),
        (config(memory=True), "harness.memory"),
        (config(memory=["enabled"]), "harness.memory"),
        (config(history="messages"), "harness.history"),
    ],
)
def test_objects_that_are_not_objects(raw: Any, field: str) -> None:
    error = rejected(raw)
    assert error.field == field
    assert "must be an object" in error.message


# Sessionless agents (R2, R64)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({}, f"{M}.scope.read"),
        ({"scope": {"read": ["agent"]}}, f"{M}.scope.write"),
        ({"scope": {"write": ["agent"]}}, f"{M}.scope.read"),
        ({"scope": {"read": ["agent", "session"], "write": ["agent"]}}, f"{M}.scope.read"),
        ({"scope": {"read": ["agent"], "write": ["session", "agent"]}}, f"{M}.scope.write"),
    ],
)
def test_sessionless_agent_must_read_and_write_agent_scope_only(
    overrides: dict[str, Any], field: str
) -> None:
    error = rejected(config({**ENABLED, **overrides}), sessionless=True)
    assert error.field == field
    assert "an agent without sessions" in error.message
    assert 'must set harness.memory.scope.read and harness.memory.scope.write to ["agent"]' in (
        error.message
    )


def test_sessionless_agent_with_agent_scope_is_accepted() -> None:
    cfg = parse_config(config(AGENT_ONLY), sessionless=True).memory
    assert cfg.read_scopes == cfg.write_scopes == frozenset({"agent"})


@pytest.mark.parametrize("memory_settings", [None, {"enabled": False}])
def test_sessionless_rule_applies_only_when_memory_is_enabled(memory_settings: Any) -> None:
    assert not parse_config(config(memory_settings), sessionless=True).memory.enabled


def test_session_agent_may_use_agent_only_scope() -> None:
    assert parse_config(config(AGENT_ONLY), sessionless=False).memory.write_scopes == {"agent"}


# History (R60, R64)


@pytest.mark.parametrize("index", ["messages", "messages_and_tools"])
def test_history_index(index: str) -> None:
    parsed = parse_config(config(history={"index": index}), sessionless=False)
    assert parsed.history == HistoryConfig(index=index)  # type: ignore[arg-type]
    assert parsed.memory == MemoryConfig(enabled=False)


@pytest.mark.parametrize(
    ("history", "field", "fragment"),
    [
        ({}, "harness.history.index", "is required"),
        ({"index": "tools"}, "harness.history.index", 'one of "messages", "messages_and_tools"'),
        ({"index": ["messages"]}, "harness.history.index", 'got ["messages"]'),
        ({"index": "messages", "limit": 3}, "harness.history.limit", "is not a setting"),
    ],
)
def test_history_rejected(history: dict[str, Any], field: str, fragment: str) -> None:
    error = rejected(config(history=history))
    assert error.field == field
    assert fragment in error.message


def test_history_on_sessionless_agent_is_rejected() -> None:
    error = rejected(config(AGENT_ONLY, history={"index": "messages"}), sessionless=True)
    assert error.field == "harness.history"
    assert "an agent without sessions has no history" in error.message


# Tools offered (R1, R5)


@pytest.mark.parametrize(
    ("tools", "offered"),
    [
        (None, {"search_memory"}),
        ([], {"search_memory"}),
        (["search_memory"], {"search_memory"}),
        (["add_memory"], {"search_memory", "add_memory"}),
        (["add_memory", "delete_memory"], {"search_memory", "add_memory", "delete_memory"}),
        (sorted(WRITE_TOOLS), {"search_memory", *WRITE_TOOLS}),
    ],
)
def test_tools_offered(tools: list[str] | None, offered: set[str]) -> None:
    cfg = memory(tools=tools)
    assert cfg.tools == offered
    for name in ["search_memory", *WRITE_TOOLS, "search_history"]:
        assert cfg.allows_tool(name) == (name in offered)


def test_disabled_memory_offers_no_tool_even_when_listed() -> None:
    cfg = parse_config(config({"enabled": False, "tools": ["add_memory"]}), sessionless=False)
    assert cfg.memory.tools == frozenset()
    assert not cfg.memory.allows_tool("add_memory")
    assert not cfg.memory.allows_tool("search_memory")


# Labels across versions (R4)


@pytest.mark.parametrize(
    ("previous", "new"),
    [
        ([], {"customer_id": 5}),
        ([{"customer_id": 5}], {"customer_id": 5}),
        ([{"customer_id": 5}], {"customer_id": 5, "order_id": 6}),
        (
            [{"customer_id": 5}, {"customer_id": 5, "order_id": 6}],
            {"order_id": 6, "customer_id": 5},
        ),
        ([{}], {"order_id": 18}),
    ],
)
def test_labels_kept_or_added_are_accepted(
    previous: list[dict[str, int]], new: dict[str, int]
) -> None:
    earlier = [version(**labels) for labels in previous]
    parsed = validate_new_version(declare(new), sessionless=False, previous=earlier)
    assert {name: kept.number for name, kept in parsed.memory.labels.items()} == new


@pytest.mark.parametrize(
    ("previous", "new", "field", "fragment"),
    [
        (
            [{"customer_id": 5}],
            {"customer_id": 6},
            f"{M}.labels.customer_id.number",
            "label customer_id must keep number 5",
        ),
        (
            [{"customer_id": 5, "order_id": 6}],
            {"customer_id": 5},
            f"{M}.labels.order_id",
            "label order_id (number 6) was declared by an earlier version and must be kept",
        ),
        (
            [{"customer_id": 5}, {"customer_id": 5, "order_id": 6}],
            {"order_id": 6},
            f"{M}.labels.customer_id",
            "label customer_id (number 5)",
        ),
        (
            [{"customer_id": 5}],
            {"client_id": 5},
            f"{M}.labels.client_id.number",
            "label client_id cannot take number 5: an earlier version gave it to label customer_id",
        ),
        (
            [{"customer_id": 5}, {"customer_id": 5, "order_id": 6}],
            {"customer_id": 5, "order_id": 6, "invoice_id": 6},
            f"{M}.labels.invoice_id.number",
            "6 is taken by label order_id",
        ),
        ([{"customer_id": 5}], {}, f"{M}.labels.customer_id", "must be kept"),
    ],
)
def test_labels_renumbered_dropped_or_reused_are_rejected(
    previous: list[dict[str, int]], new: dict[str, int], field: str, fragment: str
) -> None:
    earlier = [version(**labels) for labels in previous]
    with pytest.raises(InvalidConfigError) as caught:
        validate_new_version(declare(new), sessionless=False, previous=earlier)
    assert caught.value.field == field
    assert fragment in caught.value.message


def test_dropping_memory_entirely_still_must_keep_labels() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        validate_new_version(config(), sessionless=False, previous=[version(customer_id=5)])
    assert caught.value.field == f"{M}.labels.customer_id"


def test_validate_new_version_also_parses() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        validate_new_version(config({"enabled": 1}), sessionless=False, previous=[])
    assert caught.value.field == f"{M}.enabled"


# Immutability and the normalised form


def test_config_is_immutable_and_hashable() -> None:
    cfg = memory(labels={"customer_id": {"number": 5, "description": "The customer."}})
    same = memory(labels={"customer_id": {"number": 5, "description": "The customer."}})
    assert cfg == same and hash(cfg) == hash(same) and len({cfg, same}) == 1
    assert cfg != memory(labels={"customer_id": {"number": 6, "description": "The customer."}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.enabled = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        cfg.labels["order_id"] = Label(6, "x")  # type: ignore[index]


def test_parsed_config_does_not_share_the_input() -> None:
    declared = {"c": label(5)}
    cfg = memory(labels=declared)
    declared["d"] = label(6)
    assert list(cfg.labels) == ["c"]


def test_memory_config_to_json_is_the_normalised_form() -> None:
    cfg = memory(
        scope={"read": ["agent", "session"], "write": ["agent"]},
        labels={"b": {"number": 9, "description": "B"}, "a": {"number": 6, "description": "A"}},
        tools=["delete_memory", "add_memory"],
        search={"min_score": 0},
        pinned={"max_tokens": 2000},
        extraction={"every": {"messages": 4}},
    )
    assert memory_config_to_json(cfg) == {
        "enabled": True,
        "scope": {"read": ["session", "agent"], "write": ["agent"]},
        "kinds": ["guidance", "fact", "event", "reference"],
        "labels": {"a": {"number": 6, "description": "A"}, "b": {"number": 9, "description": "B"}},
        "tools": ["add_memory", "delete_memory", "search_memory"],
        "search": {"mode": "hybrid", "max_results": 5, "min_score": 0.0},
        "pinned": {"max_tokens": 2000},
        "extraction": {"prompt": None, "every": {"messages": 4}},
    }
    assert list(memory_config_to_json(cfg)["labels"]) == ["a", "b"]


def test_memory_config_to_json_of_disabled_memory() -> None:
    out = memory_config_to_json(MemoryConfig(enabled=False))
    assert out["enabled"] is False
    assert out["tools"] == []
    assert out["pinned"] is None
    assert out["extraction"] == {"prompt": None, "every": "turn"}


# Property: every valid config survives a round trip through its normalised form.

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
SCOPES = st.lists(st.sampled_from(["session", "agent"]), min_size=1, max_size=2, unique=True)
OPTIONAL: Mapping[str, st.SearchStrategy[Any]] = {
    "enabled": st.booleans(),
    "scope": st.fixed_dictionaries({}, optional={"read": SCOPES, "write": SCOPES}),
    "kinds": st.lists(NAMES, min_size=1, max_size=5, unique=True),
    "labels": st.lists(
        st.tuples(NAMES, st.integers(5, 18), st.text(min_size=1).filter(str.strip)),
        max_size=5,
        unique_by=(lambda t: t[0], lambda t: t[1]),
    ).map(lambda ts: {name: {"number": n, "description": d} for name, n, d in ts}),
    "tools": st.lists(st.sampled_from(sorted(WRITE_TOOLS | {"search_memory"})), unique=True),
    "search": st.fixed_dictionaries(
        {},
        optional={
            "mode": st.sampled_from(["hybrid", "lexical", "vector"]),
            "max_results": st.integers(1, 100),
            "min_score": st.floats(-1, 1) | st.integers(-1, 1),
        },
    ),
    "pinned": st.fixed_dictionaries({"max_tokens": st.integers(1, 100_000)}),
    "extraction": st.fixed_dictionaries(
        {},
        optional={
            "prompt": st.text(min_size=1).filter(str.strip),
            "every": st.just("turn") | st.fixed_dictionaries({"messages": st.integers(1, 10**6)}),
        },
    ),
}


@settings(database=None, max_examples=200)
@given(st.fixed_dictionaries({}, optional=dict(OPTIONAL)))
def test_round_trip_through_normalised_form(overrides: dict[str, Any]) -> None:
    cfg = parse_config(config(overrides), sessionless=False).memory
    again = parse_config(config(memory_config_to_json(cfg)), sessionless=False).memory
    assert again == cfg
    assert memory_config_to_json(again) == memory_config_to_json(cfg)


@settings(database=None)
@given(st.integers().filter(lambda n: not 1 <= n <= 100))
def test_max_results_out_of_range_is_always_rejected(n: int) -> None:
    assert rejected(config({"search": {"max_results": n}})).field == f"{M}.search.max_results"
